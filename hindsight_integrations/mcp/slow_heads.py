"""Close a connection whose request head does not arrive in time: uvicorn waits for one as long as a client likes.

uvicorn reads a request's headers before any middleware, token check included, runs, and sets
no deadline on them. 1,100 connections that each sent half a request head and stalled left a
server allowed 1,024 open files refusing every tenant, and no token was needed. ``guarded``
wraps uvicorn's HTTP protocol class so that a connection waiting for a request head (a new
connection, or one between requests) is closed when the head has not arrived within
``head_timeout`` seconds. The body that follows has a deadline of its own (``body_guard``).
"""

from __future__ import annotations

import asyncio
from typing import Any

from .throttle import security_event

HEAD_TIMEOUT_SECONDS = 10.0


def uvicorn_protocol() -> type[asyncio.Protocol]:
    """The HTTP protocol class uvicorn's ``http="auto"`` picks: httptools when installed, else h11."""
    try:
        import httptools  # noqa: F401
    except ImportError:
        from uvicorn.protocols.http.h11_impl import H11Protocol

        return H11Protocol
    from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

    return HttpToolsProtocol


def guarded(base: type[Any] | None = None, *, head_timeout: float = HEAD_TIMEOUT_SECONDS) -> type[asyncio.Protocol]:
    """``base`` (default: ``uvicorn_protocol()``) closing connections whose request head is overdue.

    A request head has arrived when the protocol starts a new request cycle (``cycle``, in both
    of uvicorn's HTTP protocols); until then, since the connection opened or its last response
    ended, the clock runs.
    """
    parent = base or uvicorn_protocol()

    class HeadDeadline(parent):  # type: ignore[misc, valid-type]
        _head_timer: asyncio.TimerHandle | None = None
        _head_after: object = None  # the cycle the running clock waits to see replaced

        def connection_made(self, transport: asyncio.BaseTransport) -> None:
            super().connection_made(transport)
            self._await_head()

        def data_received(self, data: bytes) -> None:
            cycle = self.cycle
            between_requests = cycle is None or cycle.response_complete
            if between_requests and (self._head_timer is None or self._head_after is not cycle):
                self._await_head()  # the first bytes of the next request on a kept-alive connection
            super().data_received(data)

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
            client = self.client
            security_event(
                "slow_request_head",
                client=str(client[0]) if client else "unknown",
                path="",
                reason=f"no complete request head within {head_timeout:g} s; connection closed",
            )
            self.transport.close()

    HeadDeadline.__name__ = HeadDeadline.__qualname__ = f"HeadDeadline{parent.__name__}"
    return HeadDeadline


__all__ = ["HEAD_TIMEOUT_SECONDS", "guarded", "uvicorn_protocol"]
