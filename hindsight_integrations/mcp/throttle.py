"""Failed authentications throttled per client address, and the security events the server logs.

A bearer token of 32+ random characters cannot be guessed, but nothing should let a client try
thousands a second either, or do so unnoticed. ``AuthFailures`` counts each client address's
failed authentications (a wrong bearer token on ``/mcp``, ``/debug/*``, ``/metrics``; a wrong
token in the viewer's sign-in form; not a request that presents none, like a browser's
``/favicon.ico``) in a sliding window: past
``HINDSIGHT_AUTH_FAILURE_LIMIT`` failures within ``HINDSIGHT_AUTH_FAILURE_WINDOW_SECONDS``,
every authentication from that address is answered 429 with ``Retry-After`` until the oldest
failure has left the window, before its token is even looked at (so a right guess is refused
too, and guessing gains nothing). Other addresses are not affected, and a success does not wipe
the count (a client holding one valid token could otherwise interleave it with guesses at
another's). The count is per process: N replicas allow N times the limit.

The client address is the one uvicorn reports: the peer, or the ``X-Forwarded-For`` a proxy
listed in uvicorn's ``FORWARDED_ALLOW_IPS`` (default 127.0.0.1) sets. Behind a reverse proxy on
another machine, set ``FORWARDED_ALLOW_IPS`` to it, or every client shares the proxy's count.

Every failure, throttled request and refused request is one ``security`` line on the
``hindsight.mcp`` JSON logger: client address, path, reason and count; never a presented
token, nor any part of one.
"""

from __future__ import annotations

import math
import threading
import time
from collections import OrderedDict, deque
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from starlette.types import Scope

from .observability import log, quote_briefly

if TYPE_CHECKING:
    from ..core.config import Settings

MAX_CLIENTS = 10_000
"""Client addresses remembered at once; past that the least recently failing one is forgotten."""


class AuthFailures:
    """Each client address's recent failed authentications, and whether it must wait before the next."""

    def __init__(
        self,
        limit: int,
        window_seconds: float,
        *,
        max_clients: int = MAX_CLIENTS,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if limit < 1 or window_seconds <= 0:
            raise ValueError("limit must be at least 1 and window_seconds above 0")
        self.limit = limit
        self.window = window_seconds
        self._max_clients = max_clients
        self._clock = clock
        self._failures: OrderedDict[str, deque[float]] = OrderedDict()
        self._lock = threading.Lock()

    @classmethod
    def from_settings(cls, settings: Settings) -> AuthFailures:
        """The throttle of ``HINDSIGHT_AUTH_FAILURE_LIMIT`` failures per ``HINDSIGHT_AUTH_FAILURE_WINDOW_SECONDS``."""
        return cls(settings.auth_failure_limit, settings.auth_failure_window_seconds)

    def _recent(self, client: str, now: float) -> deque[float] | None:
        stamps = self._failures.get(client)
        if stamps is None:
            return None
        while stamps and stamps[0] <= now - self.window:
            stamps.popleft()
        if not stamps:
            del self._failures[client]
            return None
        return stamps

    def retry_after(self, client: str) -> float:
        """Seconds until ``client`` may authenticate again; 0 when it may now."""
        now = self._clock()
        with self._lock:
            stamps = self._recent(client, now)
            if stamps is None or len(stamps) < self.limit:
                return 0.0
            return max(0.0, stamps[-self.limit] + self.window - now)

    def record(self, client: str) -> int:
        """Count one failure of ``client``; returns its failures within the window, this one included."""
        now = self._clock()
        with self._lock:
            stamps = self._recent(client, now)
            if stamps is None:
                stamps = self._failures[client] = deque(maxlen=self.limit)
            stamps.append(now)
            self._failures.move_to_end(client)
            while len(self._failures) > self._max_clients:
                self._failures.popitem(last=False)
            return len(stamps)

    def failures(self, client: str) -> int:
        """``client``'s failures within the window (what a refusal's log line reports)."""
        with self._lock:
            stamps = self._recent(client, self._clock())
            return 0 if stamps is None else len(stamps)


def client_address(scope: Scope) -> str:
    """The address of the client of an ASGI request (``unknown`` when the server does not say)."""
    client = scope.get("client")
    return str(client[0]) if client else "unknown"


def retry_after_header(seconds: float) -> str:
    """``Retry-After`` in whole seconds, at least 1 (a 0 would invite an immediate retry)."""
    return str(max(1, math.ceil(seconds)))


def security_event(event: str, *, client: str, path: str, reason: str, **fields: Any) -> None:
    """One ``security`` warning line on ``hindsight.mcp``; callers pass no credential, ever."""
    log.warning(
        event,
        extra={
            "fields": {"security": True, "client": client, "path": quote_briefly(path, 200), "reason": reason, **fields}
        },
    )


__all__ = ["MAX_CLIENTS", "AuthFailures", "client_address", "retry_after_header", "security_event"]
