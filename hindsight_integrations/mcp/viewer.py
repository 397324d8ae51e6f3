"""The memory viewer at ``/ui`` and the debug endpoints at ``/debug/*`` of the HTTP server.

A person signs in with the same bearer token an agent uses; the token is posted once, checked
like the tools' ``Authorization`` header, and exchanged for a signed session cookie
(``ViewerSessions``: HttpOnly, SameSite=Strict; the token itself never appears in a URL or a
cookie). The session names the token's namespace, so every page shows that namespace only. Without a
token map (``hindsight ui`` on a laptop) the server's own namespace is shown without sign-in.

A page elsewhere must not act in the signed-in person's name. ``SameSite=Strict`` does not stop
another port of the same host or a sibling subdomain (they are the same *site*), so every POST
(sign-in, sign-out, forget, restore, review) is checked twice:

- its ``Sec-Fetch-Site`` and ``Origin`` headers, when the browser sends them, must say it came
  from this server's own origin (``cross_origin``): other sites and other origins of the same
  site are refused;
- its hidden ``csrf`` field must be the HMAC of what the browser holds (``ViewerSessions.csrf_token``):
  the session cookie once signed in; before that (the sign-in form) and without tokens, a signed
  pre-session cookie (``PRE_COOKIE``). A client that sends neither header is held to this alone.

Refusals are a readable 403 page, logged as security events. Tokens are derived, not stored, so
stateless replicas with the same token map accept each other's. Signing out revokes the session
for every replica sharing the store (``core.revocations``), and wrong sign-in tokens count toward
the client's throttle of failed authentications (``throttle.AuthFailures``), as wrong bearer
tokens do.

``BearerNamespaceMiddleware`` lets ``/ui`` through because the viewer authenticates by its
cookie; ``/debug/*`` stays behind the middleware and takes the bearer token's namespace.
Page HTML lives in ``viewer_pages``.
"""

from __future__ import annotations

import functools
import hashlib
import hmac
import secrets
import threading
import time
import webbrowser
from collections import Counter
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

import httpx
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, PlainTextResponse, RedirectResponse, Response

from ..core.errors import HindsightError, InvalidInputError, MemoryNotFoundError, StoreUnavailableError
from ..core.model.records import MemoryRecord, Status, Tier
from ..core.storage.revocations import RevokedSessions
from . import viewer_pages as pages
from .auth import SCOPE_KEY
from .throttle import client_address, retry_after_header, security_event
from .tools import in_thread

if TYPE_CHECKING:
    from ..core.engine import MemoryEngine
    from .server import HindsightMCP

COOKIE = "hindsight_ui"
PRE_COOKIE = "hindsight_ui_pre"
"""Before sign-in (and on a server without tokens): what the forms' CSRF tokens are bound to."""
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
_SAME_ORIGIN = frozenset({"same-origin", "none"})  # Sec-Fetch-Site values of a page's own posts (none: the user's)


class ViewerSessions:
    """Signed-in browsers as signed cookies, so every replica with the same token map accepts them.

    A cookie is ``<token fingerprint>.<expiry>.<nonce>.<signature>``: the fingerprint and the
    signature are HMACs under a key derived from the whole token map, which only the servers
    know. Nothing is kept per session, so two stateless replicas behind a load balancer (see
    docker-compose.yml) both honour a sign-in; the namespace is looked up again on every
    request, and any change to the token map changes the key and so ends every session. Signing
    out records the session in ``revoked``, which every replica sharing the store consults.

    The same key signs pre-session cookies (``new_pre_session``) and derives the CSRF token of
    a cookie (``csrf_token``). Without tokens there is nothing to derive a shared key from, and
    nobody signs in: a random key of this process signs what it hands out.
    """

    def __init__(
        self, token_map: Mapping[str, str] | None, *, revoked: RevokedSessions, lifetime: timedelta = SESSION_LIFETIME
    ) -> None:
        tokens = dict(token_map or {})
        self.lifetime = lifetime
        self._key = (
            hashlib.sha256(b"hindsight-ui\0" + b"\0".join(sorted(t.encode() for t in tokens))).digest()
            if tokens
            else secrets.token_bytes(32)
        )
        self._tokens = [(t.encode(), self._fingerprint(t)) for t in tokens]
        self._by_fingerprint = {self._fingerprint(t): ns for t, ns in tokens.items()}
        self._revoked = revoked

    def _mac(self, label: bytes, payload: str) -> str:
        return hmac.new(self._key, label + b"\0" + payload.encode(), hashlib.sha256).hexdigest()

    def _fingerprint(self, token: str) -> str:
        return self._mac(b"token", token)[:24]

    def _sign(self, payload: str) -> str:
        return self._mac(b"cookie", payload)

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

    def _verified(self, cookie: str | None) -> tuple[str, int] | None:
        """(fingerprint, expiry) of a cookie this key signed that has not expired; None otherwise."""
        if not cookie:
            return None
        payload, _, signature = cookie.rpartition(".")
        if not hmac.compare_digest(signature.encode(), self._sign(payload).encode()):
            return None
        fingerprint, _, rest = payload.partition(".")
        expires = rest.partition(".")[0]
        if not expires.isdigit() or int(expires) < time.time():
            return None
        return fingerprint, int(expires)

    def session_id(self, cookie: str) -> str:
        """The id a signed-out session is recorded under (a digest: the store never holds a usable cookie)."""
        return self._mac(b"session", cookie)[:32]

    def namespace(self, cookie: str | None) -> str | None:
        """The namespace of a valid, unexpired, not signed-out cookie, or None (may raise StoreUnavailableError)."""
        verified = self._verified(cookie)
        if verified is None or cookie is None:
            return None
        namespace = self._by_fingerprint.get(verified[0])
        if namespace is None or self._revoked.is_revoked(self.session_id(cookie)):
            return None
        return namespace

    def sign_out(self, cookie: str | None) -> None:
        """Refuse ``cookie`` from now on, on every replica sharing the store (may raise StoreUnavailableError)."""
        verified = self._verified(cookie)
        if verified is not None and cookie is not None:
            self._revoked.revoke(self.session_id(cookie), expires_at=verified[1])

    def new_pre_session(self) -> str:
        """A signed pre-session cookie value: ``<expiry>.<nonce>.<signature>``."""
        payload = f"{int(time.time() + self.lifetime.total_seconds())}.{secrets.token_urlsafe(16)}"
        return f"{payload}.{self._mac(b'pre-session', payload)}"

    def valid_pre_session(self, value: str | None) -> bool:
        """Whether ``value`` is a pre-session cookie this key signed that has not expired."""
        if not value:
            return False
        payload, _, signature = value.rpartition(".")
        expires = payload.partition(".")[0]
        return (
            hmac.compare_digest(signature.encode(), self._mac(b"pre-session", payload).encode())
            and expires.isdigit()
            and int(expires) >= time.time()
        )

    def csrf_token(self, binding: str) -> str:
        """The CSRF token of forms served to the browser holding cookie ``binding``."""
        return self._mac(b"csrf", binding)[:40]

    def csrf_ok(self, binding: str, presented: object) -> bool:
        """Whether a posted CSRF field is ``binding``'s token (constant-time)."""
        return isinstance(presented, str) and hmac.compare_digest(presented.encode(), self.csrf_token(binding).encode())


def cross_origin(request: Request) -> str | None:
    """Why a POST did not come from one of this server's own pages, as far as the browser says; None if it did.

    Browsers send ``Sec-Fetch-Site`` (``same-origin`` for a page's own forms) and ``Origin``
    with every form post; a client that sends neither is left to the CSRF token.
    """
    site = (request.headers.get("sec-fetch-site") or "").lower()
    if site and site not in _SAME_ORIGIN:
        where = "another origin of this site" if site == "same-site" else "another site"
        return f"this request came from a page of {where} (Sec-Fetch-Site: {site[:30]}), not from this viewer"
    origin = request.headers.get("origin")
    if origin is not None:
        host = request.headers.get("host") or ""
        netloc = urlsplit(origin).netloc if origin != "null" else ""
        if not netloc or netloc.lower() != host.lower():
            return f"this request came from a page of {origin[:100]!r}, not from this viewer ({host[:100]})"
    return None


@dataclass
class Browser:
    """What the viewer knows of the browser behind one request."""

    namespace: str | None
    """The signed-in namespace (the server's own without tokens); None: sign in first."""
    binding: str
    """The cookie its CSRF tokens are bound to: the session, else the pre-session cookie."""
    new_pre_session: bool
    """Whether ``binding`` was made for this request (the response sets it): no form of it exists yet."""
    session: str | None = None
    """The session cookie, when signed in."""


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


Handler = Callable[[Request], Awaitable[Response]]


def register_viewer(server: HindsightMCP, engine: MemoryEngine) -> None:
    """Add the ``/ui`` pages and the ``/debug`` endpoints to ``server``'s HTTP app."""
    revoked = RevokedSessions(
        lambda: engine.chroma.client, cache_seconds=engine.settings.session_revocation_cache_seconds
    )
    sessions = ViewerSessions(server.token_map, revoked=revoked)
    failures = server.auth_failures
    pre_max_age = int(sessions.lifetime.total_seconds())

    def route(path: str, method: str) -> Callable[[Handler], Handler]:
        """Register a viewer route; a store that does not answer is a 503 page, not a traceback."""

        def register(handler: Handler) -> Handler:
            @functools.wraps(handler)
            async def guarded(request: Request) -> Response:
                try:
                    return await handler(request)
                except StoreUnavailableError as exc:
                    body = f'<p class="error" id="error">The memory store did not answer: {pages.esc(exc)}</p>'
                    html = pages.page("Unavailable", body, namespace=None, signed_in=False)
                    return HTMLResponse(
                        html, status_code=503, headers={"Cache-Control": "no-store", "Retry-After": "5"}
                    )

            server.custom_route(path, methods=[method])(guarded)
            return handler

        return register

    async def browser(request: Request) -> Browser:
        """Who is asking: the signed-in namespace (the server's own without tokens) and the CSRF binding."""
        pre = request.cookies.get(PRE_COOKIE)
        pre_ok = sessions.valid_pre_session(pre)
        binding = pre if pre_ok and pre else sessions.new_pre_session()
        if server.token_map is None:
            return Browser(server.namespace, binding, new_pre_session=not pre_ok)
        cookie = request.cookies.get(COOKIE)
        namespace = await in_thread(sessions.namespace, cookie) if cookie else None
        if namespace is not None and cookie is not None:
            return Browser(namespace, cookie, new_pre_session=False, session=cookie)
        return Browser(None, binding, new_pre_session=not pre_ok)

    def finish(response: Response, who: Browser) -> Response:
        """Set the pre-session cookie the page's forms were bound to, if it is new."""
        if who.new_pre_session:
            response.set_cookie(
                PRE_COOKIE, who.binding, max_age=pre_max_age, httponly=True, samesite="strict", path="/ui"
            )
        return response

    def show(title: str, body: str, who: Browser, status_code: int = 200) -> Response:
        html = pages.page(
            title,
            body,
            namespace=who.namespace,
            signed_in=server.token_map is not None,
            csrf=sessions.csrf_token(who.binding),
        )
        response = HTMLResponse(
            html, status_code=status_code, headers={"Cache-Control": "no-store", "X-Frame-Options": "DENY"}
        )
        return finish(response, who)

    def to_sign_in() -> Response:
        return RedirectResponse("/ui/signin", status_code=303)

    def refuse(request: Request, reason: str, *, signed_in: bool) -> Response:
        """403 with a page saying why; logged as a security event (headers quoted briefly, no cookie)."""
        security_event(
            "viewer_post_refused",
            client=client_address(request.scope),
            path=request.url.path,
            reason=reason,
            origin=(request.headers.get("origin") or "")[:100] or None,
            sec_fetch_site=(request.headers.get("sec-fetch-site") or "")[:30] or None,
        )
        return HTMLResponse(
            pages.refused(reason, signed_in=signed_in),
            status_code=403,
            headers={"Cache-Control": "no-store", "X-Frame-Options": "DENY"},
        )

    def forged(request: Request, who: Browser, presented: object) -> Response | None:
        """403 unless the posted CSRF field is the token of the cookie this browser holds."""
        if not who.new_pre_session and sessions.csrf_ok(who.binding, presented):
            return None
        return refuse(
            request,
            "the form's CSRF token is missing or is not the one of this browser's session: "
            "reload the viewer's page and use its form",
            signed_in=who.namespace is not None,
        )

    @route("/ui/signin", "GET")
    async def sign_in_form(request: Request) -> Response:
        """The token form (or straight to the list when already signed in / no tokens)."""
        who = await browser(request)
        if who.namespace is not None:
            return RedirectResponse("/ui", status_code=303)
        html = pages.sign_in(sessions.csrf_token(who.binding))
        return finish(HTMLResponse(html, headers={"Cache-Control": "no-store", "X-Frame-Options": "DENY"}), who)

    @route("/ui/signin", "POST")
    async def sign_in(request: Request) -> Response:
        """Exchange a posted token for a session cookie; a wrong token gets the form again (401).

        Refused first: a post from another origin or without the form's CSRF token (403; a form
        elsewhere must not sign this browser in to someone else's namespace), then a client
        whose failed authentications reached the limit (429).
        """
        if (problem := cross_origin(request)) is not None:
            return refuse(request, problem, signed_in=False)
        if server.token_map is None:
            return RedirectResponse("/ui", status_code=303)
        form = await request.form()
        pre = request.cookies.get(PRE_COOKIE)
        if not (pre and sessions.valid_pre_session(pre) and sessions.csrf_ok(pre, form.get(pages.CSRF_FIELD))):
            return refuse(
                request,
                "the sign-in form has expired or is not this viewer's own: reload the sign-in page and sign in there",
                signed_in=False,
            )
        client = client_address(request.scope)
        csrf = sessions.csrf_token(pre)
        headers = {"Cache-Control": "no-store", "X-Frame-Options": "DENY"}
        wait = failures.retry_after(client)
        if wait > 0:
            seconds = retry_after_header(wait)
            security_event(
                "auth_throttled",
                client=client,
                path=request.url.path,
                reason="too many failed authentications",
                count=failures.failures(client),
                retry_after=seconds,
            )
            return HTMLResponse(
                pages.throttled(seconds, csrf), status_code=429, headers={**headers, "Retry-After": seconds}
            )
        token = form.get("token")
        cookie = sessions.sign_in(token) if isinstance(token, str) else None
        if cookie is None:
            count = failures.record(client)
            security_event(
                "auth_failure", client=client, path=request.url.path, reason="wrong sign-in token", count=count
            )
            return HTMLResponse(pages.sign_in(csrf, "That token is not valid here."), status_code=401, headers=headers)
        response = RedirectResponse("/ui", status_code=303)
        max_age = int(sessions.lifetime.total_seconds())
        response.set_cookie(COOKIE, cookie, max_age=max_age, httponly=True, samesite="strict", path="/ui")
        response.delete_cookie(PRE_COOKIE, path="/ui")
        return response

    @route("/ui/signout", "POST")
    async def sign_out(request: Request) -> Response:
        """End the session on every replica and drop the cookie; a post from elsewhere is refused (403)."""
        if (problem := cross_origin(request)) is not None:
            return refuse(request, problem, signed_in=request.cookies.get(COOKIE) is not None)
        who = await browser(request)
        if who.session is None:
            response = to_sign_in()
            response.delete_cookie(COOKIE, path="/ui")
            return response
        form = await request.form()
        if (refused := forged(request, who, form.get(pages.CSRF_FIELD))) is not None:
            return refused
        await in_thread(sessions.sign_out, who.session)
        response = to_sign_in()
        response.delete_cookie(COOKIE, path="/ui")
        return response

    @route("/ui", "GET")
    async def memory_list(request: Request) -> Response:
        """The namespace's memories (filtered, paged), or recall hits with score parts when searching."""
        who = await browser(request)
        namespace = who.namespace
        if namespace is None:
            return to_sign_in()
        params = {k: request.query_params.get(k) for k in FILTER_KEYS}
        try:
            filters = list_filters(params)
            if params.get("q"):
                result = await in_thread(
                    engine.recall, params["q"] or "", namespace=namespace, filters=filters, touch=False, top_k=20
                )
                return show("Search", pages.search_results(result.hits, params), who)
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
            if isinstance(exc, StoreUnavailableError):
                raise
            body = f'<p class="error box" id="error">{pages.esc(exc)}</p>{pages.filter_form(params)}'
            return show("Memories", body, who, status_code=400)
        body = pages.memory_list(
            records[:PAGE_SIZE], params, stats, offset=offset, limit=PAGE_SIZE, more=len(records) > PAGE_SIZE
        )
        return show("Memories", body, who)

    @route("/ui/memory/{memory_id}", "GET")
    async def memory_page(request: Request) -> Response:
        """One memory with its provenance and history; 404 for an id the namespace does not hold."""
        who = await browser(request)
        namespace = who.namespace
        if namespace is None:
            return to_sign_in()
        memory_id = request.path_params["memory_id"]
        try:
            record = await in_thread(engine.get, memory_id, namespace=namespace)
        except MemoryNotFoundError:
            return show("Not found", '<p class="error" id="error">No such memory here.</p>', who, 404)
        except InvalidInputError as exc:  # an id no memory can have (too long, not UTF-8)
            return show("Error", f'<p class="error" id="error">{pages.esc(exc)}</p>', who, 400)

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
            record,
            superseded=older,
            superseded_by=newer,
            conflicts_with=contradicted,
            csrf=sessions.csrf_token(who.binding),
            message=notice,
        )
        return show("Memory", body, who)

    @route("/ui/memory/{memory_id}/{action}", "POST")
    async def memory_action(request: Request) -> Response:
        """Forget, restore (un-forget or bring back from cold storage), or review a quarantined memory.

        Only a post from this viewer's own page, with its CSRF token, is carried out (else 403).
        """
        if (problem := cross_origin(request)) is not None:
            return refuse(request, problem, signed_in=request.cookies.get(COOKIE) is not None)
        who = await browser(request)
        namespace = who.namespace
        if namespace is None:
            return to_sign_in()
        memory_id, action = request.path_params["memory_id"], request.path_params["action"]
        form = await request.form()
        if (refused := forged(request, who, form.get(pages.CSRF_FIELD))) is not None:
            return refused
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
                return show("Error", '<p class="error" id="error">Unknown action.</p>', who, 400)
        except MemoryNotFoundError:
            return show("Not found", '<p class="error" id="error">No such memory here.</p>', who, 404)
        except StoreUnavailableError:
            raise
        except HindsightError as exc:
            return show("Error", f'<p class="error" id="error">{pages.esc(exc)}</p>', who, 400)
        return RedirectResponse(f"/ui/memory/{memory_id}?done={done}", status_code=303)

    @route("/ui/review", "GET")
    async def review_page(request: Request) -> Response:
        """Quarantined memories awaiting accept/reject, beside what each contradicts."""
        who = await browser(request)
        namespace = who.namespace
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
        return show("Review", pages.review_list(held, contradicted, sessions.csrf_token(who.binding)), who)

    @route("/ui/sessions", "GET")
    async def sessions_page(request: Request) -> Response:
        """Sessions holding live working memory."""
        who = await browser(request)
        namespace = who.namespace
        if namespace is None:
            return to_sign_in()
        turns = await in_thread(engine.list, namespace=namespace, filters={"tiers": [Tier.WORKING.value]}, limit=10_000)
        counts = Counter(t.session_id for t in turns if t.session_id)
        return show("Sessions", pages.sessions_list(sorted(counts.items())), who)

    @route("/ui/sessions/{session_id}", "GET")
    async def session_page(request: Request) -> Response:
        """A session's working window and its compression summaries."""
        who = await browser(request)
        namespace = who.namespace
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
        except StoreUnavailableError:
            raise
        except HindsightError as exc:
            return show("Error", f'<p class="error" id="error">{pages.esc(exc)}</p>', who, 400)
        return show("Session", pages.session_detail(session_id, window, summaries), who)

    @route("/ui/export.json", "GET")
    async def export(request: Request) -> Response:
        """The namespace's export (every status, no vectors) as a JSON download."""
        namespace = (await browser(request)).namespace
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
