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

A namespace held back by its rate limit (``HINDSIGHT_RATE_LIMIT``, ``observability.RateLimiter``)
is a ``rate_limited`` warning naming the namespace and the limit (``RateLimitLog``), at most once
a minute per namespace: an operator sees which tenant is throttled, and a flood of refusals is
one line, counting the refusals since the last.
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


RATE_LIMIT_LOG_SECONDS = 60.0
"""How often, at most, one namespace's rate-limit refusals are logged (per allowance: calls, viewer)."""


class RateLimitLog:
    """The warnings of namespaces held back by their rate limit: the first refusal at once, then one a minute."""

    def __init__(
        self,
        per_minute: float,
        *,
        every_seconds: float = RATE_LIMIT_LOG_SECONDS,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.per_minute = per_minute
        self.every = every_seconds
        self._clock = clock
        # (namespace, allowance) → (when its last line was logged, refusals since then). Namespaces are the
        # server's own or its tokens', never chosen by a caller, so this stays as small as the token map.
        self._logged: dict[tuple[str, str], tuple[float, int]] = {}
        self._lock = threading.Lock()

    def refused(self, namespace: str, retry_after: float, *, viewer: bool = False) -> None:
        """Count one refusal of ``namespace``; log it unless its last line is less than ``every`` seconds old."""
        allowance = "viewer" if viewer else "calls"
        now = self._clock()
        with self._lock:
            logged, refused = self._logged.get((namespace, allowance), (-math.inf, 0))
            refused += 1
            if now - logged < self.every:
                self._logged[(namespace, allowance)] = (logged, refused)
                return
            self._logged[(namespace, allowance)] = (now, 0)
        log.warning(
            "rate_limited",
            extra={
                "fields": {
                    "namespace": namespace,
                    "limit_per_minute": self.per_minute,
                    "allowance": allowance,
                    "refused": refused,  # this refusal and those since the namespace's last such line
                    "retry_after_seconds": round(retry_after, 1),
                    "next_line_after_seconds": self.every,
                }
            },
        )


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


__all__ = [
    "MAX_CLIENTS",
    "RATE_LIMIT_LOG_SECONDS",
    "AuthFailures",
    "RateLimitLog",
    "client_address",
    "retry_after_header",
    "security_event",
]
