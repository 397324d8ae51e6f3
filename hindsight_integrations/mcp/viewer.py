"""The memory viewer at ``/ui`` and the debug endpoints at ``/debug/*`` of the HTTP server.

A person signs in with the same bearer token an agent uses; the token is posted once, checked
like the tools' ``Authorization`` header, and exchanged for a signed session cookie
(``ViewerSessions``: HttpOnly, SameSite=Strict; the token itself never appears in a URL or a
cookie). The session names the token's namespace, so every page shows that namespace only. Without a
token map (``hindsight ui`` on a laptop) the server's own namespace is shown without sign-in.

``BearerNamespaceMiddleware`` lets ``/ui`` through because the viewer authenticates by its
cookie; ``/debug/*`` stays behind the middleware and takes the bearer token's namespace.
Page HTML lives in ``viewer_pages``.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
import threading
import time
import webbrowser
from collections import Counter
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

import httpx
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, PlainTextResponse, RedirectResponse, Response

from ..core.errors import HindsightError, InvalidInputError, MemoryNotFoundError
from ..core.records import MemoryRecord, Status, Tier
from . import viewer_pages as pages
from .auth import SCOPE_KEY
from .tools import in_thread

if TYPE_CHECKING:
    from ..core.engine import MemoryEngine
    from .server import HindsightMCP

COOKIE = "hindsight_ui"
PAGE_SIZE = 50
SESSION_LIFETIME = timedelta(hours=12)  # a sign-in lasts this long
FILTER_KEYS = ("q", "tier", "kind", "status", "since", "until", "min_importance")
EVERY_TIER = [t.value for t in Tier]
NOTICES = {
    "forgotten": "Forgotten: it is no longer recalled (Restore brings it back).",
    "restored": "Restored: it is active again.",
    "accepted": "Accepted: the memory is active and what it contradicted is history.",
    "rejected": "Rejected: the memory is forgotten.",
}


class ViewerSessions:
    """Signed-in browsers as signed cookies, so every replica with the same token map accepts them.

    A cookie is ``<token fingerprint>.<expiry>.<nonce>.<signature>``: the fingerprint and the
    signature are HMACs under a key derived from the whole token map, which only the servers
    know. Nothing is kept per session, so two stateless replicas behind a load balancer (see
    docker-compose.yml) both honour a sign-in; the namespace is looked up again on every
    request, and any change to the token map changes the key and so ends every session. Signing out forgets the
    cookie in the browser and refuses it in this process until it expires.
    """

    def __init__(self, token_map: Mapping[str, str] | None, *, lifetime: timedelta = SESSION_LIFETIME) -> None:
        tokens = dict(token_map or {})
        self.lifetime = lifetime
        self._key = hashlib.sha256(b"hindsight-ui\0" + b"\0".join(sorted(t.encode() for t in tokens))).digest()
        self._tokens = [(t.encode(), self._fingerprint(t)) for t in tokens]
        self._by_fingerprint = {self._fingerprint(t): ns for t, ns in tokens.items()}
        self._signed_out: dict[str, float] = {}

    def _fingerprint(self, token: str) -> str:
        return hmac.new(self._key, b"token\0" + token.encode(), hashlib.sha256).hexdigest()[:24]

    def _sign(self, payload: str) -> str:
        return hmac.new(self._key, b"cookie\0" + payload.encode(), hashlib.sha256).hexdigest()

    def sign_in(self, presented: str) -> str | None:
        """A new session cookie for a valid token (compared in constant time against every token), else None."""
        found = None
        for token, fingerprint in self._tokens:
            if hmac.compare_digest(token, presented.strip().encode()):
                found = fingerprint
        if found is None:
            return None
        expires = int(time.time() + self.lifetime.total_seconds())
        payload = f"{found}.{expires}.{secrets.token_urlsafe(12)}"
        return f"{payload}.{self._sign(payload)}"

    def namespace(self, cookie: str | None) -> str | None:
        """The namespace of a valid, unexpired, signed-in cookie, or None."""
        if not cookie or cookie in self._signed_out:
            return None
        payload, _, signature = cookie.rpartition(".")
        if not hmac.compare_digest(signature.encode(), self._sign(payload).encode()):
            return None
        fingerprint, _, rest = payload.partition(".")
        expires = rest.partition(".")[0]
        if not expires.isdigit() or int(expires) < time.time():
            return None
        return self._by_fingerprint.get(fingerprint)

    def sign_out(self, cookie: str | None) -> None:
        """Refuse ``cookie`` from now on in this process (other replicas refuse it once it expires)."""
        if cookie and self.namespace(cookie) is not None:
            now = time.time()
            self._signed_out = {c: t for c, t in self._signed_out.items() if t > now}
            self._signed_out[cookie] = now + self.lifetime.total_seconds()


def _parse_day(value: str | None, field: str, *, end: bool = False) -> datetime | None:
    """A ``YYYY-MM-DD`` form value as the start (or, for ``end``, the last moment) of that UTC day."""
    if not value:
        return None
    try:
        day = datetime.strptime(value, "%Y-%m-%d").replace(tzinfo=UTC)
    except ValueError:
        raise InvalidInputError(field, f"{value!r} is not a date (YYYY-MM-DD)") from None
    return day + timedelta(days=1, microseconds=-1) if end else day


def list_filters(params: Mapping[str, str | None]) -> dict[str, Any]:
    """The page's filter fields as ``RecallFilters`` data; the engine validates the values."""
    filters: dict[str, Any] = {"tiers": [params["tier"]] if params.get("tier") else EVERY_TIER}
    if params.get("kind"):
        filters["kinds"] = [params["kind"]]
    if params.get("status"):
        filters["statuses"] = [params["status"]]
    since, until = _parse_day(params.get("since"), "since"), _parse_day(params.get("until"), "until", end=True)
    if since:
        filters["since"] = since
    if until:
        filters["until"] = until
    if params.get("min_importance"):
        try:
            filters["min_importance"] = float(params["min_importance"] or "")
        except ValueError:
            raise InvalidInputError("min_importance", "must be a number between 0 and 1") from None
    return filters


def register_viewer(server: HindsightMCP, engine: MemoryEngine) -> None:
    """Add the ``/ui`` pages and the ``/debug`` endpoints to ``server``'s HTTP app."""
    sessions = ViewerSessions(server.token_map)

    def viewer_namespace(request: Request) -> str | None:
        """The signed-in namespace (or the server's own one when it has no tokens); None → sign in."""
        if server.token_map is None:
            return server.namespace
        return sessions.namespace(request.cookies.get(COOKIE))

    def show(title: str, body: str, namespace: str, status_code: int = 200) -> HTMLResponse:
        return HTMLResponse(
            pages.page(title, body, namespace=namespace, signed_in=server.token_map is not None),
            status_code=status_code,
            headers={"Cache-Control": "no-store", "X-Frame-Options": "DENY"},
        )

    def to_sign_in() -> Response:
        return RedirectResponse("/ui/signin", status_code=303)

    @server.custom_route("/ui/signin", methods=["GET"])
    async def sign_in_form(request: Request) -> Response:
        """The token form (or straight to the list when already signed in / no tokens)."""
        if viewer_namespace(request) is not None:
            return RedirectResponse("/ui", status_code=303)
        return HTMLResponse(pages.sign_in(), headers={"Cache-Control": "no-store"})

    @server.custom_route("/ui/signin", methods=["POST"])
    async def sign_in(request: Request) -> Response:
        """Exchange a posted token for a session cookie; a wrong token gets the form again (401)."""
        form = await request.form()
        token = form.get("token")
        cookie = sessions.sign_in(token) if isinstance(token, str) else None
        if cookie is None:
            return HTMLResponse(pages.sign_in("That token is not valid here."), status_code=401)
        response = RedirectResponse("/ui", status_code=303)
        max_age = int(sessions.lifetime.total_seconds())
        response.set_cookie(COOKIE, cookie, max_age=max_age, httponly=True, samesite="strict", path="/ui")
        return response

    @server.custom_route("/ui/signout", methods=["POST"])
    async def sign_out(request: Request) -> Response:
        """End the session and drop the cookie."""
        sessions.sign_out(request.cookies.get(COOKIE))
        response = to_sign_in()
        response.delete_cookie(COOKIE, path="/ui")
        return response

    @server.custom_route("/ui", methods=["GET"])
    async def memory_list(request: Request) -> Response:
        """The namespace's memories (filtered, paged), or recall hits with score parts when searching."""
        namespace = viewer_namespace(request)
        if namespace is None:
            return to_sign_in()
        params = {k: request.query_params.get(k) for k in FILTER_KEYS}
        try:
            filters = list_filters(params)
            if params.get("q"):
                result = await in_thread(
                    engine.recall, params["q"] or "", namespace=namespace, filters=filters, touch=False, top_k=20
                )
                return show("Search", pages.search_results(result.hits, params), namespace)
            offset = max(0, int(request.query_params.get("offset") or 0))
            records = await in_thread(
                engine.list,
                namespace=namespace,
                filters=filters,
                include_history=True,
                limit=PAGE_SIZE + 1,
                offset=offset,
            )
            stats = await in_thread(engine.stats, namespace=namespace)
        except (HindsightError, ValueError) as exc:
            body = f'<p class="error box" id="error">{pages.esc(exc)}</p>{pages.filter_form(params)}'
            return show("Memories", body, namespace, status_code=400)
        body = pages.memory_list(
            records[:PAGE_SIZE], params, stats, offset=offset, limit=PAGE_SIZE, more=len(records) > PAGE_SIZE
        )
        return show("Memories", body, namespace)

    @server.custom_route("/ui/memory/{memory_id}", methods=["GET"])
    async def memory_page(request: Request) -> Response:
        """One memory with its provenance and history; 404 for an id the namespace does not hold."""
        namespace = viewer_namespace(request)
        if namespace is None:
            return to_sign_in()
        memory_id = request.path_params["memory_id"]
        try:
            record = await in_thread(engine.get, memory_id, namespace=namespace)
        except MemoryNotFoundError:
            return show("Not found", '<p class="error" id="error">No such memory here.</p>', namespace, 404)
        except InvalidInputError as exc:  # an id no memory can have (too long, not UTF-8)
            return show("Error", f'<p class="error" id="error">{pages.esc(exc)}</p>', namespace, 400)

        def related(rec: MemoryRecord) -> tuple[list[MemoryRecord], MemoryRecord | None, MemoryRecord | None]:
            history = engine.list(
                namespace=namespace,
                filters={"tiers": EVERY_TIER, "statuses": [Status.SUPERSEDED.value]},
                include_history=True,
                limit=10_000,
            )
            older = [r for r in history if r.superseded_by == rec.id]
            newer = _get_or_none(engine, rec.superseded_by, namespace)
            contradicted = _get_or_none(engine, rec.conflicts_with, namespace)
            return older, newer, contradicted

        older, newer, contradicted = await in_thread(related, record)
        notice = NOTICES.get(request.query_params.get("done") or "")
        body = pages.memory_detail(
            record, superseded=older, superseded_by=newer, conflicts_with=contradicted, message=notice
        )
        return show("Memory", body, namespace)

    @server.custom_route("/ui/memory/{memory_id}/{action}", methods=["POST"])
    async def memory_action(request: Request) -> Response:
        """Forget, restore (un-forget or bring back from cold storage), or review a quarantined memory."""
        namespace = viewer_namespace(request)
        if namespace is None:
            return to_sign_in()
        memory_id, action = request.path_params["memory_id"], request.path_params["action"]
        form = await request.form()
        try:
            record = await in_thread(engine.get, memory_id, namespace=namespace)
            if action == "forget":
                await in_thread(engine.forget, memory_id, namespace=namespace)
                done = "forgotten"
            elif action == "restore" and record.status is Status.ARCHIVED:
                await in_thread(engine.restore, namespace=namespace, ids=[memory_id])
                done = "restored"
            elif action == "restore":
                await in_thread(engine.unforget, memory_id, namespace=namespace)
                done = "restored"
            elif action == "review" and form.get("decision") in ("accept", "reject"):
                accept = form.get("decision") == "accept"
                await in_thread(engine.review, memory_id, accept=accept, namespace=namespace)
                done = "accepted" if accept else "rejected"
            else:
                return show("Error", '<p class="error" id="error">Unknown action.</p>', namespace, 400)
        except MemoryNotFoundError:
            return show("Not found", '<p class="error" id="error">No such memory here.</p>', namespace, 404)
        except HindsightError as exc:
            return show("Error", f'<p class="error" id="error">{pages.esc(exc)}</p>', namespace, 400)
        return RedirectResponse(f"/ui/memory/{memory_id}?done={done}", status_code=303)

    @server.custom_route("/ui/review", methods=["GET"])
    async def review_page(request: Request) -> Response:
        """Quarantined memories awaiting accept/reject, beside what each contradicts."""
        namespace = viewer_namespace(request)
        if namespace is None:
            return to_sign_in()

        def load() -> tuple[list[MemoryRecord], dict[str, MemoryRecord]]:
            held = engine.list(
                namespace=namespace,
                filters={"tiers": EVERY_TIER, "statuses": [Status.QUARANTINED.value]},
                include_history=True,
                limit=10_000,
            )
            others = {r.conflicts_with: _get_or_none(engine, r.conflicts_with, namespace) for r in held}
            return held, {k: v for k, v in others.items() if k and v is not None}

        held, contradicted = await in_thread(load)
        return show("Review", pages.review_list(held, contradicted), namespace)

    @server.custom_route("/ui/sessions", methods=["GET"])
    async def sessions_page(request: Request) -> Response:
        """Sessions holding live working memory."""
        namespace = viewer_namespace(request)
        if namespace is None:
            return to_sign_in()
        turns = await in_thread(engine.list, namespace=namespace, filters={"tiers": [Tier.WORKING.value]}, limit=10_000)
        counts = Counter(t.session_id for t in turns if t.session_id)
        return show("Sessions", pages.sessions_list(sorted(counts.items())), namespace)

    @server.custom_route("/ui/sessions/{session_id}", methods=["GET"])
    async def session_page(request: Request) -> Response:
        """A session's working window and its compression summaries."""
        namespace = viewer_namespace(request)
        if namespace is None:
            return to_sign_in()
        session_id = request.path_params["session_id"]

        def load() -> tuple[list[MemoryRecord], list[MemoryRecord]]:
            window = engine.working_window(session_id=session_id, namespace=namespace)
            summaries = engine.list(
                namespace=namespace,
                filters={"tiers": EVERY_TIER, "session_id": session_id, "kinds": ["summary"]},
                include_history=True,
                limit=10_000,
            )
            return window, sorted(summaries, key=lambda s: s.occurred_at)

        try:
            window, summaries = await in_thread(load)
        except HindsightError as exc:
            return show("Error", f'<p class="error" id="error">{pages.esc(exc)}</p>', namespace, 400)
        return show("Session", pages.session_detail(session_id, window, summaries), namespace)

    @server.custom_route("/ui/export.json", methods=["GET"])
    async def export(request: Request) -> Response:
        """The namespace's export (every status, no vectors) as a JSON download."""
        namespace = viewer_namespace(request)
        if namespace is None:
            return to_sign_in()
        data = await in_thread(engine.export, namespace=namespace, include_embeddings=False)
        return JSONResponse(
            data,
            headers={
                "Content-Disposition": f'attachment; filename="hindsight-{namespace}.json"',
                "Cache-Control": "no-store",
            },
        )

    def bearer_namespace(request: Request) -> str:
        """The namespace ``BearerNamespaceMiddleware`` bound to this request (or the server's own)."""
        if server.token_map is None:
            return server.namespace
        return str(request.scope["state"][SCOPE_KEY])

    @server.custom_route("/debug/dump", methods=["GET"])
    async def debug_dump(request: Request) -> Response:
        """The engine's human-readable dump of the token's namespace, history included."""
        text = await in_thread(engine.dump, namespace=bearer_namespace(request), include_history=True)
        return PlainTextResponse(text, headers={"Cache-Control": "no-store"})

    @server.custom_route("/debug/memories", methods=["GET"])
    async def debug_memories(request: Request) -> Response:
        """Every memory of the token's namespace, every tier and status, newest first, as JSON pages."""
        namespace = bearer_namespace(request)
        try:
            limit = int(request.query_params.get("limit") or 100)
            offset = int(request.query_params.get("offset") or 0)
            statuses = [s.value for s in Status]
            records = await in_thread(
                engine.list,
                namespace=namespace,
                filters={"tiers": EVERY_TIER, "statuses": statuses},
                include_history=True,
                limit=limit + 1,
                offset=offset,
            )
        except (HindsightError, ValueError) as exc:
            return JSONResponse({"error": "invalid_input", "message": str(exc)}, status_code=400)
        page = records[:limit]
        return JSONResponse(
            {
                "namespace": namespace,
                "offset": offset,
                "limit": limit,
                "next_offset": offset + limit if len(records) > limit else None,
                "memories": [r.model_dump(mode="json") for r in page],
            }
        )


def open_when_ready(url: str, *, health_url: str, wait_seconds: float = 120.0) -> threading.Thread:
    """Open ``url`` in the user's web browser once ``health_url`` answers (the server starts after this).

    Runs in a daemon thread because the server blocks the calling one; the embedding model
    takes a few seconds to load, and a page opened before the server listens would fail.
    """

    def wait_then_open() -> None:
        deadline = time.monotonic() + wait_seconds
        while time.monotonic() < deadline:
            try:
                if httpx.get(health_url, timeout=1.0).status_code == 200:
                    webbrowser.open(url)
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.2)

    thread = threading.Thread(target=wait_then_open, name="hindsight-open-viewer", daemon=True)
    thread.start()
    return thread


def _get_or_none(engine: MemoryEngine, memory_id: str | None, namespace: str) -> MemoryRecord | None:
    """The memory ``memory_id`` of ``namespace``, or None when there is no id or no such memory."""
    if not memory_id:
        return None
    try:
        return engine.get(memory_id, namespace=namespace)
    except MemoryNotFoundError:
        return None


__all__ = ["COOKIE", "ViewerSessions", "list_filters", "open_when_ready", "register_viewer"]
