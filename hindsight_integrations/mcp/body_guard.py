"""ASGI middleware that refuses unreadable HTTP bodies with 400/413 before the MCP SDK parses them.

The SDK answered a body nested thousands of levels deep (Python's JSON parser recursing until
it fails) or not valid UTF-8 with HTTP 500, and logged a traceback. Those are the caller's
mistakes, so they get a 400 with a JSON-RPC error saying what is wrong; a body over the size
limit gets 413 as soon as its length is known, without reading the rest.
"""

from __future__ import annotations

import json

from starlette.types import ASGIApp, Message, Receive, Scope, Send

MAX_BODY_BYTES = 4 * 1024 * 1024  # the MCP SDK's own limit for one message
MAX_JSON_DEPTH = 64  # tool arguments are a few levels deep; anything near this is not a real call


class BodyGuard:
    """Check a POST body's size, encoding and nesting, then hand the request on unchanged."""

    def __init__(self, app: ASGIApp, *, max_bytes: int = MAX_BODY_BYTES, max_depth: int = MAX_JSON_DEPTH) -> None:
        self.app = app
        self.max_bytes = max_bytes
        self.max_depth = max_depth

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Pass non-POST requests through; read, check and replay a POST body."""
        if scope["type"] != "http" or scope.get("method") != "POST":
            await self.app(scope, receive, send)
            return
        declared = dict(scope.get("headers") or []).get(b"content-length")
        if declared is not None and declared.isdigit() and int(declared) > self.max_bytes:
            await _refuse(send, 413, f"the request body is {int(declared)} bytes; the limit is {self.max_bytes}")
            return
        chunks: list[bytes] = []
        size = 0
        more = True
        while more:
            message = await receive()
            if message["type"] == "http.disconnect":
                return
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > self.max_bytes:
                await _refuse(send, 413, f"the request body is over {self.max_bytes} bytes")
                return
            chunks.append(chunk)
            more = message.get("more_body", False)
        body = b"".join(chunks)
        problem = self._problem(body)
        if problem is not None:
            await _refuse(send, 400, problem)
            return
        await self.app(scope, _replay(body), send)

    def _problem(self, body: bytes) -> str | None:
        try:
            text = body.decode("utf-8")
        except UnicodeDecodeError as exc:
            return f"the request body is not valid UTF-8 (byte {exc.start})"
        if text.count("[") + text.count("{") <= self.max_depth:
            return None  # cannot be nested deeper than the limit
        try:
            parsed = json.loads(text)
        except RecursionError:
            return f"the request body is nested more than {self.max_depth} levels deep"
        except ValueError:
            return None  # not JSON: the SDK answers that with its own parse error
        if _depth(parsed) > self.max_depth:
            return f"the request body is nested more than {self.max_depth} levels deep"
        return None


def _depth(value: object) -> int:
    """How deep objects and arrays nest in a parsed JSON value (iterative: no recursion limit)."""
    deepest = 0
    stack: list[tuple[object, int]] = [(value, 0)]
    while stack:
        item, level = stack.pop()
        if isinstance(item, dict):
            stack.extend((v, level + 1) for v in item.values())
        elif isinstance(item, list):
            stack.extend((v, level + 1) for v in item)
        else:
            continue
        deepest = max(deepest, level + 1)
    return deepest


def _replay(body: bytes) -> Receive:
    sent = False

    async def receive() -> Message:
        nonlocal sent
        if sent:
            return {"type": "http.disconnect"}
        sent = True
        return {"type": "http.request", "body": body, "more_body": False}

    return receive


async def _refuse(send: Send, status: int, message: str) -> None:
    code = -32600 if status == 413 else -32700  # JSON-RPC: invalid request / parse error
    body = json.dumps({"jsonrpc": "2.0", "id": None, "error": {"code": code, "message": message}}).encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())],
        }
    )
    await send({"type": "http.response.body", "body": body})


__all__ = ["MAX_BODY_BYTES", "BodyGuard"]
