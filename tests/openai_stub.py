"""A small OpenAI-compatible HTTP server for tests: scripted replies and injected faults.

The real ``openai`` client talks to it over HTTP on 127.0.0.1, so retries, timeouts and
parsing are exercised for real; only the paid model behind the API is replaced.
"""

from __future__ import annotations

import json
import threading
import time
from collections import deque
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from hindsight_integrations.bench.http_json import send_json


class OpenAIStub:
    """Queue replies with ``script``; each is a str (chat content), dict (raw JSON body), or a fault."""

    def __init__(self) -> None:
        self.replies: deque[Any] = deque()
        self.requests: list[dict[str, Any]] = []
        self.default_reply: str = "{}"
        stub = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                length = int(self.headers.get("content-length", 0))
                body = json.loads(self.rfile.read(length) or b"{}")
                stub.requests.append({"path": self.path, "body": body})
                reply = stub.replies.popleft() if stub.replies else stub.default_reply
                if isinstance(reply, tuple) and reply[0] == "status":
                    self._send(reply[1], {"error": {"message": f"injected {reply[1]}", "type": "server_error"}})
                    return
                if isinstance(reply, tuple) and reply[0] == "sleep":
                    time.sleep(reply[1])
                    reply = reply[2] if len(reply) > 2 else stub.default_reply
                if self.path.endswith("/embeddings"):
                    inputs = body.get("input", [])
                    data = [
                        {"object": "embedding", "index": i, "embedding": _vector(text)} for i, text in enumerate(inputs)
                    ]
                    self._send(
                        200,
                        {
                            "object": "list",
                            "data": data,
                            "model": body.get("model"),
                            "usage": {"prompt_tokens": 1, "total_tokens": 1},
                        },
                    )
                    return
                if isinstance(reply, dict):
                    self._send(200, reply)
                    return
                self._send(200, _chat(reply, body.get("model", "stub")))

            def _send(self, status: int, payload: dict[str, Any]) -> None:
                send_json(self, status, payload)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        host, port = self.server.server_address[:2]
        return f"http://{host}:{port}/v1"

    def script(self, *replies: Any) -> None:
        self.replies.extend(replies)

    def __enter__(self) -> OpenAIStub:
        self.thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.server.shutdown()
        self.server.server_close()


def _chat(content: str, model: str) -> dict[str, Any]:
    return {
        "id": "chatcmpl-stub",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
    }


def _vector(text: str, dim: int = 16) -> list[float]:
    """A deterministic bag-of-characters vector, so embeddings of equal text are equal."""
    v = [0.0] * dim
    for ch in text:
        v[ord(ch) % dim] += 1.0
    norm = sum(x * x for x in v) ** 0.5 or 1.0
    return [x / norm for x in v]
