"""The server's plain HTTP routes: ``/health`` for load balancers, ``/metrics`` for Prometheus, ``/debug/*``.

``/health`` answers without a bearer token (``auth.PUBLIC_PATHS``) and exposes no memory;
``/metrics`` needs one when tokens are configured, and ``/debug/dump`` and ``/debug/memories``
show the bearer token's namespace only (``BearerNamespaceMiddleware`` bound it to the request).
Each route is a function of the server (``serving.ServerHost``) and the request, listed in ``ROUTES``.
"""

from __future__ import annotations

from prometheus_client import CONTENT_TYPE_LATEST, generate_latest
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response

from ..core.errors import HindsightError
from ..core.model.records import Status, Tier
from .auth import SCOPE_KEY
from .serving import Endpoint, HttpRoute, ServerHost, bind_routes

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


async def debug_dump(host: ServerHost, request: Request) -> Response:
    """The engine's human-readable dump of the token's namespace, history included."""
    namespace = bearer_namespace(host, request)
    text = await run_in_threadpool(host.engine.dump, namespace=namespace, include_history=True)
    return PlainTextResponse(text, headers={"Cache-Control": "no-store"})


async def debug_memories(host: ServerHost, request: Request) -> Response:
    """Every memory of the token's namespace, every tier and status, newest first, as JSON pages."""
    namespace = bearer_namespace(host, request)
    try:
        limit = int(request.query_params.get("limit") or 100)
        offset = int(request.query_params.get("offset") or 0)
        statuses = [s.value for s in Status]
        records = await run_in_threadpool(
            host.engine.list,
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


ROUTES: list[HttpRoute[ServerHost]] = [
    HttpRoute("/health", "GET", health),
    HttpRoute("/metrics", "GET", metrics),
    HttpRoute("/debug/dump", "GET", debug_dump),
    HttpRoute("/debug/memories", "GET", debug_memories),
]


def http_routes(host: ServerHost) -> list[tuple[str, str, Endpoint]]:
    """``ROUTES`` bound to ``host``: ``(path, method, endpoint)`` for the server's HTTP app."""
    return bind_routes(ROUTES, host)


__all__ = ["EVERY_TIER", "ROUTES", "bearer_namespace", "http_routes"]
