"""ASGI middleware that refuses unreadable HTTP bodies with 400/413 before the MCP SDK parses them.

The SDK answered a body nested thousands of levels deep (Python's JSON parser recursing until
it fails), holding a number longer than Python converts to an int (4,300 digits), or not valid
UTF-8 with HTTP 500, and logged a traceback. And a NaN or an infinity (``NaN``, ``Infinity``, or
``1e999``, which reads as one) became null on its way to the tool, "not given": ``update_memory``
with ``importance: NaN`` reported success and changed nothing. All of these are the caller's
mistakes, so they get a 400 with a JSON-RPC error saying what is wrong; a body over the size
limit gets 413 as soon as its length is known, without reading the rest. A body that has not
arrived in full within ``timeout`` seconds gets 408 and the connection is closed: a stalled upload
would otherwise hold its connection (and a file descriptor) for as long as the sender liked, and
enough of them left the process unable to accept anyone.
"""

from __future__ import annotations

import json
import math
import re
import sys

import anyio
from starlette.types import ASGIApp, Message, Receive, Scope, Send

MAX_BODY_BYTES = 4 * 1024 * 1024  # the MCP SDK's own limit for one message
MAX_JSON_DEPTH = 64  # tool arguments are a few levels deep; anything near this is not a real call
BODY_TIMEOUT_SECONDS = 60.0
_NOT_FINITE = re.compile(rb"NaN|Infinity|[0-9][eE]\+?[0-9]{3}")  # might hold one; parsing decides
_DIGIT_RUN = re.compile(rb"[0-9]+")  # each run read once: "[0-9]{4301}" rescans a run from each of its digits


class BodyGuard:
    """Check a POST body's size, encoding and nesting, then hand the request on unchanged."""

    def __init__(
        self,
        app: ASGIApp,
        *,
        max_bytes: int = MAX_BODY_BYTES,
        max_depth: int = MAX_JSON_DEPTH,
        timeout: float = BODY_TIMEOUT_SECONDS,
    ) -> None:
        self.app = app
        self.max_bytes = max_bytes
        self.max_depth = max_depth
        self.timeout = timeout

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Pass non-POST requests through; read, check and replay a POST body."""
        if scope["type"] != "http" or scope.get("method") != "POST":
            await self.app(scope, receive, send)
            return
        declared = dict(scope.get("headers") or []).get(b"content-length")
        if declared is not None and declared.isdigit() and int(declared) > self.max_bytes:
            await _refuse(send, 413, f"the request body is {int(declared)} bytes; the limit is {self.max_bytes}")
            return
        body: bytes | None = None
        with anyio.move_on_after(self.timeout) as deadline:
            body = await self._read(receive, send)
        if deadline.cancelled_caught:
            await _refuse(
                send,
                408,
                f"the request body did not arrive in full within {self.timeout:g} s "
                "(HINDSIGHT_BODY_TIMEOUT_SECONDS); send it in one go",
                close=True,
            )
            return
        if body is None:
            return
        problem = self._problem(body)
        if problem is not None:
            await _refuse(send, 400, problem)
            return
        await self.app(scope, _replay(body), send)

    async def _read(self, receive: Receive, send: Send) -> bytes | None:
        """The whole body; None when it was refused as too large or the client went away."""
        chunks: list[bytes] = []
        size = 0
        more = True
        while more:
            message = await receive()
            if message["type"] == "http.disconnect":
                return None
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > self.max_bytes:
                await _refuse(send, 413, f"the request body is over {self.max_bytes} bytes")
                return None
            chunks.append(chunk)
            more = message.get("more_body", False)
        return b"".join(chunks)

    def _problem(self, body: bytes) -> str | None:
        try:
            text = body.decode("utf-8")
        except UnicodeDecodeError as exc:
            return f"the request body is not valid UTF-8 (byte {exc.start})"
        long_number = _holds_long_number(body)
        if not long_number and not _NOT_FINITE.search(body) and text.count("[") + text.count("{") <= self.max_depth:
            return None  # cannot be nested deeper than the limit, nor hold a number Python will not read
        try:
            parsed = json.loads(text, parse_constant=_not_finite, parse_float=_finite)
        except _NotFinite as exc:
            return (
                f"the request body holds {exc}, a number JSON does not have (it would arrive as null, "
                "not given); send a finite number, or leave the argument out"
            )
        except RecursionError:
            return f"the request body is nested more than {self.max_depth} levels deep"
        except json.JSONDecodeError:
            return None  # not JSON: the SDK answers that with its own parse error
        except ValueError:
            return (
                f"a number in the request body has more than {sys.get_int_max_str_digits()} digits, "
                "more than the server reads; send it as a string"
            )
        if _depth(parsed) > self.max_depth:
            return f"the request body is nested more than {self.max_depth} levels deep"
        return None


def _holds_long_number(body: bytes) -> bool:
    """Whether a run of digits is longer than Python converts to an int (linear in the body's length)."""
    limit = sys.get_int_max_str_digits()
    return limit > 0 and any(run.end() - run.start() > limit for run in _DIGIT_RUN.finditer(body))


class _NotFinite(ValueError):
    pass


def _not_finite(constant: str) -> float:
    raise _NotFinite(constant)


def _finite(number: str) -> float:
    value = float(number)
    if not math.isfinite(value):
        raise _NotFinite(f"{number[:40]} (an infinity)")
    return value


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


async def _refuse(send: Send, status: int, message: str, *, close: bool = False) -> None:
    """Answer with a JSON-RPC error; ``close`` the connection too when the rest of the body may never come."""
    code = -32700 if status == 400 else -32600  # JSON-RPC: parse error / invalid request
    body = json.dumps({"jsonrpc": "2.0", "id": None, "error": {"code": code, "message": message}}).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [*headers, (b"connection", b"close")] if close else headers,
        }
    )
    await send({"type": "http.response.body", "body": body})


__all__ = ["MAX_BODY_BYTES", "BodyGuard"]
