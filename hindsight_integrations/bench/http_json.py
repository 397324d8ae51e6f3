"""The JSON replies of the benchmarks' little OpenAI-compatible servers (embeddings, scripted LLM).

Both answer the way the OpenAI API does (a JSON body with its length, an ``error`` object on
failure) and both must survive a client that hung up first: an ``openai`` client that timed out
closes its connection while the server is still writing.
"""

from __future__ import annotations

import json
import secrets
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from .closing import ClosedOnExit


def send_json(handler: BaseHTTPRequestHandler, status: int, payload: dict[str, Any]) -> None:
    """Write ``payload`` as the response to ``handler``'s request; a client already gone is not an error."""
    data = json.dumps(payload).encode()
    try:
        handler.send_response(status)
        handler.send_header("content-type", "application/json")
        handler.send_header("content-length", str(len(data)))
        handler.end_headers()
        handler.wfile.write(data)
    except (BrokenPipeError, ConnectionResetError):
        pass


def error_body(message: str, kind: str = "invalid_request_error") -> dict[str, Any]:
    """An OpenAI-style error body: what the ``openai`` client reads the message from."""
    return {"error": {"message": message, "type": kind}}


class QuietHandler(BaseHTTPRequestHandler):
    """A request handler that keeps its connection alive, sends at once and logs nothing."""

    protocol_version = "HTTP/1.1"  # keep-alive: the openai client reuses its connection
    # Headers and body go out in separate writes; with Nagle's algorithm on, the body waits for
    # the client's delayed ACK (~40 ms on Linux) on a kept-alive connection.
    disable_nagle_algorithm = True

    def log_message(self, format: str, *args: Any) -> None:
        """Say nothing: a benchmark's output is its tables."""


class LoopbackServer(ClosedOnExit):
    """Serves a ``QuietHandler`` subclass on a thread until ``close``; a context manager.

    Requests must carry ``api_key`` (random per server) as a bearer token; subclasses check it.
    """

    def __init__(self, handler: type[BaseHTTPRequestHandler], *, host: str, port: int, name: str) -> None:
        self.api_key = secrets.token_urlsafe(24)
        self._server = ThreadingHTTPServer((host, port), handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, name=name, daemon=True)
        self._thread.start()

    @property
    def base_url(self) -> str:
        """What an OpenAI client takes as ``base_url``."""
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}/v1"

    def authorised(self, handler: BaseHTTPRequestHandler) -> bool:
        """Whether ``handler``'s request carries this server's key."""
        return handler.headers.get("authorization") == f"Bearer {self.api_key}"

    def close(self) -> None:
        """Stop serving and release the port."""
        self._server.shutdown()
        self._server.server_close()
        self._thread.join()


__all__ = ["LoopbackServer", "QuietHandler", "error_body", "send_json"]
