"""Close a connection whose request head does not arrive in time: uvicorn waits for one as long as a client likes.

uvicorn reads a request's headers before any middleware, token check included, runs, and sets
no deadline on them. 1,100 connections that each sent half a request head and stalled left a
server allowed 1,024 open files refusing every tenant, and no token was needed. ``guarded``
wraps uvicorn's HTTP protocol class so that a connection waiting for a request head (a new
connection, or one between requests) is closed when the head has not arrived within
``head_timeout`` seconds. The body that follows has a deadline of its own (``body_guard``).

Nor does uvicorn bound a head's size (with httptools; h11 stops at 16 KB): one connection sending
150 MB of small headers within those seconds grew the server by 1.1 GB, again with no token, so a
few such connections could exhaust its memory. A head past ``max_head_bytes`` (64 KB: a bearer
token, the MCP headers and a browser's cookies take a few) is answered 431 and the connection closed.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

from .throttle import security_event

HEAD_TIMEOUT_SECONDS = 10.0
MAX_HEAD_BYTES = 64 * 1024


def uvicorn_protocol() -> type[asyncio.Protocol]:
    """The HTTP protocol class uvicorn's ``http="auto"`` picks: httptools when installed, else h11."""
    try:
        import httptools  # noqa: F401
    except ImportError:
        from uvicorn.protocols.http.h11_impl import H11Protocol

        return H11Protocol
    from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

    return HttpToolsProtocol


def guarded(
    base: type[Any] | None = None, *, head_timeout: float = HEAD_TIMEOUT_SECONDS, max_head_bytes: int = MAX_HEAD_BYTES
) -> type[asyncio.Protocol]:
    """``base`` (default: ``uvicorn_protocol()``) closing connections whose request head is overdue or too large.

    A request head has arrived when the protocol starts a new request cycle (``cycle``, in both
    of uvicorn's HTTP protocols); until then, since the connection opened or its last response
    ended, the clock runs and the bytes received count against ``max_head_bytes`` (checked after
    each read, so at most one read, 256 KB, is parsed past it).
    """
    parent = base or uvicorn_protocol()

    class HeadGuard(parent):  # type: ignore[misc, valid-type]
        _head_timer: asyncio.TimerHandle | None = None
        _head_after: object = None  # the cycle the running clock waits to see replaced
        _head_bytes = 0  # received towards the next request head, since ``_counted_for`` became the cycle
        _counted_for: object = None

        def connection_made(self, transport: asyncio.BaseTransport) -> None:
            super().connection_made(transport)
            self._await_head()

        def data_received(self, data: bytes) -> None:
            cycle = self.cycle
            between_requests = cycle is None or cycle.response_complete
            if between_requests and (self._head_timer is None or self._head_after is not cycle):
                self._await_head()  # the first bytes of the next request on a kept-alive connection
            if cycle is not self._counted_for:  # a head completed since (h11 parses outside this call too)
                self._counted_for, self._head_bytes = cycle, 0
            in_head = cycle is None or not cycle.more_body  # else these bytes are (first) the request's body
            super().data_received(data)
            if self.cycle is not cycle:
                self._counted_for, self._head_bytes = self.cycle, 0
            elif in_head and not self.transport.is_closing():
                self._head_bytes += len(data)
                if self._head_bytes > max_head_bytes:
                    self._head_too_large()

        def _logged(self, event: str, reason: str) -> None:
            client = self.client
            security_event(event, client=str(client[0]) if client else "unknown", path="", reason=reason)

        def connection_lost(self, exc: Exception | None) -> None:
            if self._head_timer is not None:
                self._head_timer.cancel()
                self._head_timer = None
            super().connection_lost(exc)

        def _await_head(self) -> None:
            if self._head_timer is not None:
                self._head_timer.cancel()
            self._head_after = self.cycle
            self._head_timer = self.loop.call_later(head_timeout, self._head_overdue)

        def _head_overdue(self) -> None:
            self._head_timer = None
            if self.cycle is not self._head_after or self.transport.is_closing():
                return  # a request head arrived meanwhile
            self._logged("slow_request_head", f"no complete request head within {head_timeout:g} s; connection closed")
            self.transport.close()

        def _head_too_large(self) -> None:
            self._logged(
                "oversized_request_head", f"request head past {max_head_bytes} bytes; answered 431, connection closed"
            )
            body = json.dumps(
                {
                    "error": "request_head_too_large",
                    "message": f"the request head may hold at most {max_head_bytes} "
                    "bytes of request line and headers; send fewer or shorter headers",
                }
            ).encode()
            head = (
                "HTTP/1.1 431 Request Header Fields Too Large\r\ncontent-type: application/json\r\n"
                f"content-length: {len(body)}\r\nconnection: close\r\n\r\n"
            )
            self.transport.write(head.encode() + body)
            self.transport.close()

    HeadGuard.__name__ = HeadGuard.__qualname__ = f"HeadGuard{parent.__name__}"
    return HeadGuard


__all__ = ["HEAD_TIMEOUT_SECONDS", "MAX_HEAD_BYTES", "guarded", "uvicorn_protocol"]
