"""The viewer's sign-in form, sign-in and sign-out: one function each, listed in ``ROUTES``.

A sign-in post is refused first when it came from elsewhere or without the form's CSRF token
(403: a form elsewhere must not sign this browser in to someone else's namespace), then when
the client's failed authentications reached the limit (429); a wrong token counts as a failed
authentication, like a wrong bearer token. Signing out revokes the session on every replica.
"""

from __future__ import annotations

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response

from . import viewer_pages as pages
from .serving import HttpRoute
from .throttle import client_address, retry_after_header, security_event
from .viewer_requests import FRAMELESS, Viewer
from .viewer_sessions import COOKIE, PRE_COOKIE, cross_origin


async def sign_in_form(viewer: Viewer, request: Request) -> Response:
    """The token form (or straight to the list when already signed in / no tokens)."""
    who = await viewer.browser(request)
    if who.namespace is not None:
        return RedirectResponse("/ui", status_code=303)
    return viewer.finish(HTMLResponse(pages.sign_in(viewer.csrf(who)), headers=FRAMELESS), who)


async def sign_in(viewer: Viewer, request: Request) -> Response:
    """Exchange a posted token for a session cookie; a wrong token gets the form again (401).

    Refused first: a post from another origin or without the form's CSRF token (403; a form
    elsewhere must not sign this browser in to someone else's namespace), then a client
    whose failed authentications reached the limit (429).
    """
    if (problem := cross_origin(request)) is not None:
        return viewer.refuse(request, problem, signed_in=False)
    if not viewer.signed_in:
        return RedirectResponse("/ui", status_code=303)
    sessions, failures = viewer.sessions, viewer.failures
    form = await request.form()
    pre = request.cookies.get(PRE_COOKIE)
    if not (pre and sessions.valid_pre_session(pre) and sessions.csrf_ok(pre, form.get(pages.CSRF_FIELD))):
        return viewer.refuse(
            request,
            "the sign-in form has expired or is not this viewer's own: reload the sign-in page and sign in there",
            signed_in=False,
        )
    client = client_address(request.scope)
    csrf = sessions.csrf_token(pre)
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
            pages.throttled(seconds, csrf), status_code=429, headers={**FRAMELESS, "Retry-After": seconds}
        )
    token = form.get("token")
    cookie = sessions.sign_in(token) if isinstance(token, str) else None
    if cookie is None:
        count = failures.record(client)
        security_event("auth_failure", client=client, path=request.url.path, reason="wrong sign-in token", count=count)
        return HTMLResponse(pages.sign_in(csrf, "That token is not valid here."), status_code=401, headers=FRAMELESS)
    response = RedirectResponse("/ui", status_code=303)
    max_age = int(sessions.lifetime.total_seconds())
    response.set_cookie(COOKIE, cookie, max_age=max_age, httponly=True, samesite="strict", path="/ui")
    response.delete_cookie(PRE_COOKIE, path="/ui")
    return response


async def sign_out(viewer: Viewer, request: Request) -> Response:
    """End the session on every replica and drop the cookie; a post from elsewhere is refused (403)."""
    if (problem := cross_origin(request)) is not None:
        return viewer.refuse(request, problem, signed_in=request.cookies.get(COOKIE) is not None)
    who = await viewer.browser(request)
    if who.session is not None:
        form = await request.form()
        if (refused := viewer.forged(request, who, form.get(pages.CSRF_FIELD))) is not None:
            return refused
        await run_in_threadpool(viewer.sessions.sign_out, who.session)
    response = viewer.to_sign_in()
    response.delete_cookie(COOKIE, path="/ui")
    return response


ROUTES: list[HttpRoute[Viewer]] = [
    HttpRoute("/ui/signin", "GET", sign_in_form),
    HttpRoute("/ui/signin", "POST", sign_in),
    HttpRoute("/ui/signout", "POST", sign_out),
]


__all__ = ["ROUTES", "sign_in", "sign_in_form", "sign_out"]
