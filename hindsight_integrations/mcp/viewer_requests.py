"""What every viewer page does with its request: who is asking, the page it answers with, and refusals.

``Viewer`` is the viewer of one server: its sessions (``viewer_sessions.ViewerSessions``) and
throttle of failed sign-ins, and the steps the page functions share: ``browser`` (the signed-in
namespace and the cookie the page's CSRF tokens are bound to), ``show`` (a page in the frame,
never cached or framed), ``refuse`` (a 403 page, logged as a security event), ``forged`` (the
CSRF check of a post), ``over_rate_limit`` (a 429 page past the namespace's rate limit) and
``guarded`` (a store that does not answer is a 503 page).
"""

from __future__ import annotations

from dataclasses import dataclass

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response

from ..core.errors import StoreUnavailableError
from ..core.storage.revocations import RevokedSessions
from . import viewer_pages as pages
from .serving import Endpoint, ServerHost
from .throttle import client_address, retry_after_header, security_event
from .viewer_sessions import COOKIE, PRE_COOKIE, ViewerSessions

FRAMELESS = {"Cache-Control": "no-store", "X-Frame-Options": "DENY"}
"""Headers of every viewer page: never cached (it shows memory), never inside another site's frame."""


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


class Viewer:
    """The viewer of one server: its sign-in sessions and the request steps every page shares."""

    def __init__(self, host: ServerHost) -> None:
        engine = host.engine
        revoked = RevokedSessions(
            lambda: engine.chroma.client, cache_seconds=engine.settings.session_revocation_cache_seconds
        )
        self.host = host
        self.engine = engine
        self.sessions = ViewerSessions(host.token_map, revoked=revoked)
        self.failures = host.auth_failures
        self.signed_in = host.token_map is not None
        """Whether people sign in (a token map), rather than see the server's own namespace."""

    async def browser(self, request: Request) -> Browser:
        """Who is asking: the signed-in namespace (the server's own without tokens) and the CSRF binding."""
        sessions = self.sessions
        pre = request.cookies.get(PRE_COOKIE)
        pre_ok = sessions.valid_pre_session(pre)
        binding = pre if pre_ok and pre else sessions.new_pre_session()
        if not self.signed_in:
            return Browser(self.host.namespace, binding, new_pre_session=not pre_ok)
        cookie = request.cookies.get(COOKIE)
        namespace = await run_in_threadpool(sessions.namespace, cookie) if cookie else None
        if namespace is not None and cookie is not None:
            return Browser(namespace, cookie, new_pre_session=False, session=cookie)
        return Browser(None, binding, new_pre_session=not pre_ok)

    def finish(self, response: Response, who: Browser) -> Response:
        """Set the pre-session cookie the page's forms were bound to, if it is new."""
        if who.new_pre_session:
            max_age = int(self.sessions.lifetime.total_seconds())
            response.set_cookie(PRE_COOKIE, who.binding, max_age=max_age, httponly=True, samesite="strict", path="/ui")
        return response

    def csrf(self, who: Browser) -> str:
        """The CSRF token of the forms served to ``who``."""
        return self.sessions.csrf_token(who.binding)

    def show(self, title: str, body: str, who: Browser, status_code: int = 200) -> Response:
        """``body`` in the page frame (namespace, navigation, sign-out form) for ``who``."""
        html = pages.page(title, body, namespace=who.namespace, signed_in=self.signed_in, csrf=self.csrf(who))
        return self.finish(HTMLResponse(html, status_code=status_code, headers=FRAMELESS), who)

    def error(self, title: str, message: object, who: Browser, status_code: int) -> Response:
        """A page saying what went wrong (escaped)."""
        return self.show(title, f'<p class="error" id="error">{pages.esc(message)}</p>', who, status_code)

    def over_rate_limit(self, who: Browser, namespace: str) -> Response | None:
        """A 429 page with ``Retry-After`` when ``namespace`` has used up the viewer's allowance; else None.

        Every page and action of a signed-in namespace reads the store, and anyone holding the
        token can sign in, so a script cannot use the viewer to get round the rate limit. The
        viewer's allowance is its own (``ServerHost.rate_limit_wait``): an agent held back does
        not lock its person out of their memories.
        """
        wait = self.host.rate_limit_wait(namespace, viewer=True)
        if not wait:
            return None
        seconds = retry_after_header(wait)
        message = f"Too many requests for namespace {namespace!r} in the last minute: try again in {seconds} seconds."
        response = self.error("Too many requests", message, who, 429)
        response.headers["Retry-After"] = seconds
        return response

    @staticmethod
    def to_sign_in() -> Response:
        """Off to the sign-in form."""
        return RedirectResponse("/ui/signin", status_code=303)

    def refuse(self, request: Request, reason: str, *, signed_in: bool) -> Response:
        """403 with a page saying why; logged as a security event (headers quoted briefly, no cookie)."""
        security_event(
            "viewer_post_refused",
            client=client_address(request.scope),
            path=request.url.path,
            reason=reason,
            origin=(request.headers.get("origin") or "")[:100] or None,
            sec_fetch_site=(request.headers.get("sec-fetch-site") or "")[:30] or None,
        )
        return HTMLResponse(pages.refused(reason, signed_in=signed_in), status_code=403, headers=FRAMELESS)

    def forged(self, request: Request, who: Browser, presented: object) -> Response | None:
        """403 unless the posted CSRF field is the token of the cookie this browser holds."""
        if not who.new_pre_session and self.sessions.csrf_ok(who.binding, presented):
            return None
        return self.refuse(
            request,
            "the form's CSRF token is missing or is not the one of this browser's session: "
            "reload the viewer's page and use its form",
            signed_in=who.namespace is not None,
        )

    @staticmethod
    def guarded(endpoint: Endpoint) -> Endpoint:
        """``endpoint``, except that a store that does not answer is a 503 page, not a traceback."""

        async def guarded(request: Request) -> Response:
            try:
                return await endpoint(request)
            except StoreUnavailableError as exc:
                body = f'<p class="error" id="error">The memory store did not answer: {pages.esc(exc)}</p>'
                html = pages.page("Unavailable", body, namespace=None, signed_in=False)
                return HTMLResponse(html, status_code=503, headers={"Cache-Control": "no-store", "Retry-After": "5"})

        guarded.__name__ = guarded.__qualname__ = endpoint.__name__
        guarded.__doc__ = endpoint.__doc__
        return guarded


__all__ = ["FRAMELESS", "Browser", "Viewer"]
