"""The server's plain HTTP routes: ``/health`` for load balancers, ``/metrics`` for Prometheus, ``/debug/*``.

``/health`` answers without a bearer token (``auth.PUBLIC_PATHS``) and exposes no memory;
``/metrics`` needs one when tokens are configured, and ``/debug/dump`` and ``/debug/memories``
show the bearer token's namespace only (``BearerNamespaceMiddleware`` bound it to the request).
Each ``/debug`` request counts against that namespace's rate limit, as a tool call does: both
read every record of it; past the limit the answer is 429 with ``Retry-After``.
Each route is a function of the server (``serving.ServerHost``) and the request, listed in ``ROUTES``.
"""

from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING

from prometheus_client import CONTENT_TYPE_LATEST, generate_latest
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response

from ..core.errors import HindsightError, InvalidInputError
from ..core.model.arguments import whole_number
from ..core.model.limits import MAX_OFFSET, MAX_PAGE
from ..core.model.records import MemoryRecord, Status, Tier
from .auth import SCOPE_KEY
from .failures import rate_limited
from .serving import Endpoint, HttpRoute, ServerHost, bind_routes
from .throttle import retry_after_header

if TYPE_CHECKING:
    from ..core.engine import MemoryEngine

EVERY_TIER = [t.value for t in Tier]


async def health(host: ServerHost, request: Request) -> Response:
    """Liveness + readiness for load balancers: the store must answer."""
    engine = host.engine
    try:
        await run_in_threadpool(engine.chroma.list_namespaces)
    except Exception as exc:  # noqa: BLE001 - any store failure means "not ready"
        return JSONResponse({"status": "unavailable", "error": f"{type(exc).__name__}: {exc}"}, status_code=503)
    return JSONResponse(
        {
            "status": "ok",
            "server": host.name,
            "embedding_model": engine.configured_model,
            "auth": host.token_map is not None,
            "stateless": host.settings.stateless_http,
        }
    )


async def metrics(host: ServerHost, request: Request) -> Response:
    """The server's Prometheus series (tool calls, latency, recall health)."""
    return Response(generate_latest(host.metrics.registry), media_type=CONTENT_TYPE_LATEST)


def bearer_namespace(host: ServerHost, request: Request) -> str:
    """The namespace ``BearerNamespaceMiddleware`` bound to this request (or the server's own)."""
    if host.token_map is None:
        return host.namespace
    return str(request.scope["state"][SCOPE_KEY])


def over_rate_limit(host: ServerHost, namespace: str) -> Response | None:
    """429 with ``Retry-After`` when ``namespace`` is past its rate limit; None (one request counted) otherwise."""
    wait = host.rate_limit_wait(namespace)
    if not wait:
        return None
    refusal, seconds = rate_limited(namespace, wait), retry_after_header(wait)
    return JSONResponse(
        {"error": refusal.kind, "message": refusal.message, "retry_after": int(seconds)},
        status_code=429,
        headers={"Retry-After": seconds, "Cache-Control": "no-store"},
    )


async def debug_dump(host: ServerHost, request: Request) -> Response:
    """The engine's human-readable dump of the token's namespace, history included."""
    namespace = bearer_namespace(host, request)
    if (refused := over_rate_limit(host, namespace)) is not None:
        return refused
    text = await run_in_threadpool(host.engine.dump, namespace=namespace, include_history=True)
    return PlainTextResponse(text, headers={"Cache-Control": "no-store"})


async def debug_memories(host: ServerHost, request: Request) -> Response:
    """Every memory of the token's namespace, every tier and status, newest first, as JSON pages."""
    namespace = bearer_namespace(host, request)
    try:
        limit = query_number(request, "limit", default=100, low=1, high=MAX_PAGE)
        offset = query_number(request, "offset", default=0, low=0, high=MAX_OFFSET)
        if (refused := over_rate_limit(host, namespace)) is not None:
            return refused
        page, more = await run_in_threadpool(page_of_everything, host.engine, namespace, limit, offset)
    except (HindsightError, ValueError) as exc:
        return JSONResponse({"error": "invalid_input", "message": str(exc)}, status_code=400)
    return JSONResponse(
        {
            "namespace": namespace,
            "offset": offset,
            "limit": limit,
            "next_offset": offset + limit if more else None,
            "memories": [r.model_dump(mode="json") for r in page],
        }
    )


def query_number(request: Request, name: str, *, default: int, low: int, high: int) -> int:
    """The whole number in query parameter ``name`` (``default`` when absent), refused naming the value sent."""
    sent = request.query_params.get(name) or str(default)
    try:
        value = int(sent)
    except ValueError:
        raise InvalidInputError(name, f"must be a whole number, got {sent[:40]!r}") from None
    return whole_number(value, name, low=low, high=high)


def page_of_everything(
    engine: MemoryEngine, namespace: str, limit: int, offset: int
) -> tuple[list[MemoryRecord], bool]:
    """``limit`` memories of every tier and status from ``offset``, newest first, and whether more follow.

    The record after the page says whether more follow. It comes with the page, except when the
    page is as large as one ``list`` call returns (``MAX_PAGE``): then it is asked for alone.
    """
    listing = partial(
        engine.list,
        namespace=namespace,
        filters={"tiers": EVERY_TIER, "statuses": [s.value for s in Status]},
        include_history=True,
    )
    if limit < MAX_PAGE:
        records = listing(limit=limit + 1, offset=offset)
        return records[:limit], len(records) > limit
    page = listing(limit=limit, offset=offset)
    following = offset + limit
    more = len(page) == limit and following <= MAX_OFFSET and bool(listing(limit=1, offset=following))
    return page, more


ROUTES: list[HttpRoute[ServerHost]] = [
    HttpRoute("/health", "GET", health),
    HttpRoute("/metrics", "GET", metrics),
    HttpRoute("/debug/dump", "GET", debug_dump),
    HttpRoute("/debug/memories", "GET", debug_memories),
]


def http_routes(host: ServerHost) -> list[tuple[str, str, Endpoint]]:
    """``ROUTES`` bound to ``host``: ``(path, method, endpoint)`` for the server's HTTP app."""
    return bind_routes(ROUTES, host)


__all__ = ["EVERY_TIER", "ROUTES", "bearer_namespace", "http_routes", "over_rate_limit", "page_of_everything"]
