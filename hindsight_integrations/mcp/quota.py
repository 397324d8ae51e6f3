"""What one namespace may hold of a shared HTTP server at once: requests in flight, and MCP sessions.

The rate limit counts requests as they arrive, not what they hold. A tenant could start
requests and never finish sending their bodies, each holding a connection and a file
descriptor, until the process could accept nobody (1,100 stalled uploads on a server allowed
1,024 files; ``BodyGuard`` now also ends each after a while, but a tenant could start new ones
as fast). On a ``--stateful`` server one tenant could open sessions until the MCP SDK's table
for every tenant was full (10,000 sessions, ~1 GB, then "Too many open sessions" for everyone
for the 30 minutes an idle session lives). ``NamespaceQuota`` bounds both per namespace,
answering 429 with ``Retry-After`` past either.

It also binds a stateful session to the namespace that opened it: the SDK ties a session to
its creator only through its own OAuth user, which bearer tokens here do not set, so another
tenant holding a session id could use it or end it (``DELETE``). Such a request is answered as
the SDK answers an unknown session: 404.

Opening a session is work done for a namespace (the SDK starts a task and streams for it), so
it is counted against the namespace's rate limit like a tool call: a tenant could otherwise
open, delete and open sessions without end. And the SDK's table is shared: 101 tenants at 100
sessions each would fill its 10,000 places. The server keeps ``HINDSIGHT_MAX_SESSIONS`` places
in all and reserves each namespace of the token map its share of them (``Sessions.guaranteed``):
a namespace past its share opens another only while the places others may still claim stay
free, else a 503 says the server's sessions are taken and what to do.

Which sessions the SDK still holds is read from its private table (``_server_instances``).
An SDK without it must not stop the server nor leave a tenant locked out: sessions the SDK
ends by itself (idle) would then count for ever. So every request of a known session is
tracked here too, and without that table a session is counted until it is deleted, answers
404, or has had no request in flight for longer than the idle timeout (``Sessions.idle_seconds``;
the SDK's clock starts when a request ends inside it, ours just after, so we never forget first).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Collection, Container
from dataclasses import dataclass, field

from starlette.responses import Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from .auth import SCOPE_KEY

SESSION_HEADER = b"mcp-session-id"
RETRY_SECONDS = 1
SERVER_FULL_RETRY_SECONDS = 30
ANSWER_PIECE_BYTES = 64 * 1024  # uvicorn's write buffer high-water mark
CLOSE_SESSIONS = (
    "close the sessions you no longer use (MemoryClient.close(), or DELETE /mcp with their mcp-session-id) "
    "or wait for idle ones to expire"
)


@dataclass
class Sessions:
    """The stateful sessions each namespace opened: by id, plus those whose opening request is still running.

    ``live`` says which session ids the MCP SDK still holds (it ends idle ones by itself); None, or None returned,
    when that cannot be asked, and then a session counts until it is deleted or found gone (404).
    ``server_wide`` places in all are shared by ``namespaces`` (the token map's), each guaranteed its share.
    ``idle_seconds``: after how long without a request the SDK ends a session (None: never).
    """

    live: Callable[[], Container[str] | None] | None = None
    server_wide: int | None = None
    namespaces: Collection[str] = ()
    idle_seconds: float | None = None
    owner: dict[str, str] = field(default_factory=dict)
    opening: dict[str, int] = field(default_factory=dict)
    busy: dict[str, int] = field(default_factory=dict)
    idle_since: dict[str, float] = field(default_factory=dict)

    def held(self) -> dict[str, int]:
        """Sessions each namespace holds now (opening ones included), forgetting those the SDK has ended."""
        live = self.live() if self.live is not None else None
        if live is not None:
            ended = [sid for sid in self.owner if sid not in live]
        elif self.idle_seconds is not None:
            cutoff = time.monotonic() - self.idle_seconds
            ended = [sid for sid, since in self.idle_since.items() if since < cutoff and not self.busy.get(sid)]
        else:
            ended = []
        for session_id in ended:
            self.forget(session_id)
        counts = dict(self.opening)
        for owner in self.owner.values():
            counts[owner] = counts.get(owner, 0) + 1
        return counts

    def opened(self, session_id: str, namespace: str) -> None:
        """Count a session the SDK has just opened for ``namespace``; idle from now."""
        self.owner[session_id] = namespace
        self.idle_since[session_id] = time.monotonic()

    def request_started(self, session_id: str) -> None:
        """A request of a known session is in flight: the SDK will not end it as idle meanwhile."""
        if session_id in self.owner:
            self.busy[session_id] = self.busy.get(session_id, 0) + 1

    def request_ended(self, session_id: str) -> None:
        """A request of a known session has ended: the session is idle again once none is left."""
        if (left := self.busy.pop(session_id, 0) - 1) > 0:
            self.busy[session_id] = left
        if session_id in self.owner:
            self.idle_since[session_id] = time.monotonic()

    def forget(self, session_id: str) -> None:
        """The session has ended (deleted, expired, unknown to the SDK): its place is free."""
        self.owner.pop(session_id, None)
        self.idle_since.pop(session_id, None)
        self.busy.pop(session_id, None)

    def open_count(self, namespace: str) -> int:
        """Sessions ``namespace`` holds now."""
        return self.held().get(namespace, 0)

    def guaranteed(self, per_namespace: int) -> int:
        """Sessions every namespace may open whatever the others hold: an even share of the server's places."""
        if self.server_wide is None or not self.namespaces:
            return per_namespace
        return min(per_namespace, self.server_wide // len(self.namespaces))

    def server_full_for(self, namespace: str, per_namespace: int) -> bool:
        """Whether a new session of ``namespace`` would take a place kept for another namespace's share.

        A namespace below its guaranteed share always has a place: the places not yet claimed of
        every share are counted as taken, so the total stays within ``server_wide``.
        """
        if self.server_wide is None:
            return False
        held, share = self.held(), self.guaranteed(per_namespace)
        if held.get(namespace, 0) < share:
            return False
        kept_for_others = sum(max(0, share - held.get(other, 0)) for other in self.namespaces if other != namespace)
        return sum(held.values()) + kept_for_others >= self.server_wide


class NamespaceQuota:
    """ASGI middleware (after authentication): bound a namespace's requests in flight and its stateful sessions.

    ``GET /mcp`` requests are not counted in flight: on a stateful server each session may hold
    one open event stream, and those are bounded by the sessions. Every other ``GET`` is: a
    ``/debug/dump`` whose answer is never read holds the whole namespace's text. And an answer
    counts until it is delivered, not only until it is written (``paced``): uvicorn takes a whole
    answer into its buffer at once, so a tenant that never read them held 30 dumps (~10 MB each)
    past a bound of 4.
    None for ``max_in_flight`` or ``max_sessions`` (per namespace): no such bound. ``stateful``
    False: the server keeps no sessions. ``default_namespace``: the namespace of a request no
    token named (a server without tokens: its own). ``over_rate_limit`` counts one request of a
    namespace against its rate limit, returning the 429 to answer past it (``routes.over_rate_limit``).
    ``viewer_namespace``: the namespace of a viewer request, which no token names (its session
    cookie's); without it, a signed-in viewer's exports went past the bound on requests in flight.
    """

    def __init__(
        self,
        app: ASGIApp,
        *,
        max_in_flight: int | None,
        max_sessions: int | None,
        stateful: bool = True,
        live_sessions: Callable[[], Container[str] | None] | None = None,
        idle_seconds: float | None = None,
        server_sessions: int | None = None,
        namespaces: Collection[str] = (),
        default_namespace: str | None = None,
        over_rate_limit: Callable[[str], Response | None] | None = None,
        mcp_path: str = "/mcp",
        viewer_namespace: Callable[[Scope], str | None] | None = None,
    ) -> None:
        self.app = app
        self.max_in_flight = max_in_flight
        self.in_flight: dict[str, int] = {}
        self.max_sessions = max_sessions
        self.stateful = stateful
        self.default_namespace = default_namespace
        self.over_rate_limit = over_rate_limit
        self.mcp_path = mcp_path
        self.viewer_namespace = viewer_namespace
        self.sessions = Sessions(live_sessions, server_sessions, frozenset(namespaces), idle_seconds)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Serve the request within its namespace's bounds, or refuse it before it holds anything."""
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        namespace = scope.get("state", {}).get(SCOPE_KEY) or self._namespace_of_viewer(scope) or self.default_namespace
        if namespace is None:
            await self.app(scope, receive, send)
            return
        event_stream = scope.get("method") == "GET" and scope.get("path") == self.mcp_path
        if event_stream or self.max_in_flight is None:
            await self._serve_session(namespace, scope, receive, send)
            return
        held = self.in_flight.get(namespace, 0)
        if held >= self.max_in_flight:
            await _too_many(
                send,
                "too_many_requests_in_flight",
                f"namespace {namespace!r} already has {held} requests in progress, the limit per namespace "
                "(HINDSIGHT_MAX_REQUESTS_IN_FLIGHT_PER_NAMESPACE); wait for them to finish, then send again",
            )
            return
        self.in_flight[namespace] = held + 1
        try:
            await self._serve_session(namespace, scope, receive, paced(send))
        finally:
            self.in_flight[namespace] -= 1
            if not self.in_flight[namespace]:
                del self.in_flight[namespace]

    def _namespace_of_viewer(self, scope: Scope) -> str | None:
        return self.viewer_namespace(scope) if self.viewer_namespace is not None else None

    async def _serve_session(self, namespace: str, scope: Scope, receive: Receive, send: Send) -> None:
        if not self.stateful or scope.get("path") != self.mcp_path:
            await self.app(scope, receive, send)
            return
        session_id = dict(scope.get("headers") or []).get(SESSION_HEADER, b"").decode("latin-1")
        if session_id:
            await self._serve_in_session(session_id, namespace, scope, receive, send)
        elif scope.get("method") == "POST":
            await self._open_session(namespace, scope, receive, send)
        else:
            await self.app(scope, receive, send)

    async def _serve_in_session(
        self, session_id: str, namespace: str, scope: Scope, receive: Receive, send: Send
    ) -> None:
        owner = self.sessions.owner.get(session_id)
        if owner is not None and owner != namespace:
            await _session_not_found(send)
            return
        status = 0

        async def watch(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        self.sessions.request_started(session_id)
        try:
            await self.app(scope, receive, watch)
        finally:
            self.sessions.request_ended(session_id)
        if status == 404 or (scope.get("method") == "DELETE" and 200 <= status < 300):
            self.sessions.forget(session_id)

    async def _open_session(self, namespace: str, scope: Scope, receive: Receive, send: Send) -> None:
        held = self.sessions.open_count(namespace)
        if self.max_sessions is not None and held >= self.max_sessions:
            await _too_many(
                send,
                "too_many_sessions",
                f"namespace {namespace!r} already has {held} open MCP sessions, the limit per namespace "
                f"(HINDSIGHT_MAX_SESSIONS_PER_NAMESPACE); {CLOSE_SESSIONS}",
            )
            return
        if self.max_sessions is not None and self.sessions.server_full_for(namespace, self.max_sessions):
            share, total = self.sessions.guaranteed(self.max_sessions), self.sessions.server_wide
            await _too_many(
                send,
                "server_sessions_full",
                f"the server's {total} MCP sessions (HINDSIGHT_MAX_SESSIONS) are taken, but for the {share} it keeps "
                f"for each other namespace; namespace {namespace!r} already holds {held}, its share or more. "
                f"{CLOSE_SESSIONS[0].upper()}{CLOSE_SESSIONS[1:]}; or ask the operator to raise HINDSIGHT_MAX_SESSIONS",
                status=503,
                retry_seconds=SERVER_FULL_RETRY_SECONDS,
            )
            return
        if self.over_rate_limit is not None and (refused := self.over_rate_limit(namespace)) is not None:
            await refused(scope, receive, send)
            return
        opening = self.sessions.opening
        opening[namespace] = opening.get(namespace, 0) + 1

        opened: list[str] = []

        async def record(message: Message) -> None:
            if message["type"] == "http.response.start":
                session_id = dict(message.get("headers") or []).get(SESSION_HEADER)
                if session_id:
                    opened.append(session_id.decode("latin-1"))
                    self.sessions.opened(opened[0], namespace)
                    self.sessions.request_started(opened[0])
            await send(message)

        try:
            await self.app(scope, receive, record)
        finally:
            if opened:
                self.sessions.request_ended(opened[0])
            opening[namespace] -= 1
            if not opening[namespace]:
                del opening[namespace]


def paced(send: Send) -> Send:
    """``send`` handing a large answer body on in pieces, so it returns once all but the last are delivered.

    uvicorn writes what it is sent at once and waits for the client to read only before the next
    piece; one whole body is written and the request ends, however slowly the client reads.
    """

    async def send_in_pieces(message: Message) -> None:
        body = message.get("body", b"")
        if message["type"] != "http.response.body" or len(body) <= ANSWER_PIECE_BYTES:
            await send(message)
            return
        more_body = message.get("more_body", False)
        for start in range(0, len(body), ANSWER_PIECE_BYTES):
            last = start + ANSWER_PIECE_BYTES >= len(body)
            piece = body[start : start + ANSWER_PIECE_BYTES]
            await send({"type": "http.response.body", "body": piece, "more_body": more_body or not last})

    return send_in_pieces


async def _too_many(
    send: Send, error: str, message: str, *, status: int = 429, retry_seconds: int = RETRY_SECONDS
) -> None:
    body = json.dumps({"error": error, "message": message, "retry_after": retry_seconds}).encode()
    await _answer(send, status, body, [(b"retry-after", str(retry_seconds).encode())])


async def _session_not_found(send: Send) -> None:
    error = {"jsonrpc": "2.0", "id": "server-error", "error": {"code": -32600, "message": "Session not found"}}
    await _answer(send, 404, json.dumps(error).encode(), [])


async def _answer(send: Send, status: int, body: bytes, headers: list[tuple[bytes, bytes]]) -> None:
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()), *headers],
        }
    )
    await send({"type": "http.response.body", "body": body})


__all__ = ["NamespaceQuota", "Sessions", "paced"]
