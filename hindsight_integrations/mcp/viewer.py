"""The memory viewer at ``/ui`` of the HTTP server: the pieces, and how they make one viewer.

A person signs in with the same bearer token an agent uses, exchanged once for a signed session
cookie that names the token's namespace, so every page shows that namespace only
(``viewer_sessions``). Without a token map (``hindsight ui`` on a laptop) the server's own
namespace is shown without sign-in.

A page elsewhere must not act in the signed-in person's name, so every POST (sign-in, sign-out,
forget, restore, review) is checked twice: its ``Sec-Fetch-Site`` and ``Origin`` headers, when
the browser sends them, must say it came from this server's own origin (other sites and other
origins of the same site are refused), and its hidden ``csrf`` field must be the HMAC of the
cookie the browser holds. Refusals are a readable 403 page, logged as security events; wrong
sign-in tokens count toward the client's throttle of failed authentications
(``throttle.AuthFailures``), as wrong bearer tokens do.

``BearerNamespaceMiddleware`` lets ``/ui`` through because the viewer authenticates by its
cookie; ``/debug/*`` (``routes``) stays behind the middleware and takes the bearer token's
namespace. The modules: ``viewer_sessions`` (cookies, CSRF tokens, the Origin check),
``viewer_requests`` (what every page does with its request), ``viewer_signin`` and
``viewer_memories`` (one function per page or action, each module with its route table) and
``viewer_pages`` (the HTML).
"""

from __future__ import annotations

import threading
import time
import webbrowser

import httpx

from . import viewer_memories, viewer_signin
from .serving import Endpoint, bind_routes
from .viewer_memories import list_filters
from .viewer_requests import Viewer
from .viewer_sessions import COOKIE, PRE_COOKIE, ViewerSessions

ROUTES = [*viewer_signin.ROUTES, *viewer_memories.ROUTES]
"""Every viewer route, sign-in first."""


def viewer_routes(viewer: Viewer) -> list[tuple[str, str, Endpoint]]:
    """``viewer``'s ``(path, method, endpoint)`` of each route, a store outage a 503 page."""
    return bind_routes(ROUTES, viewer, around=Viewer.guarded)


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


__all__ = [
    "COOKIE",
    "PRE_COOKIE",
    "ROUTES",
    "Viewer",
    "ViewerSessions",
    "list_filters",
    "open_when_ready",
    "viewer_routes",
]
