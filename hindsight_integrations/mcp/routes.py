"""The server's plain HTTP routes: ``/health`` for load balancers, ``/metrics`` for Prometheus.

``/health`` answers without a bearer token (``auth.PUBLIC_PATHS``) and exposes no memory;
``/metrics`` needs one when tokens are configured.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from .tools import in_thread

if TYPE_CHECKING:
    from ..core.engine import MemoryEngine
    from .server import HindsightMCP


def register_routes(server: HindsightMCP, engine: MemoryEngine) -> None:
    """Add ``/health`` and ``/metrics`` to ``server``'s HTTP app."""
    from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

    @server.custom_route("/health", methods=["GET"])
    async def health(request: Request) -> Response:
        """Liveness + readiness for load balancers: the store must answer."""
        try:
            await in_thread(engine.chroma.list_namespaces)
        except Exception as exc:  # noqa: BLE001 - any store failure means "not ready"
            return JSONResponse({"status": "unavailable", "error": f"{type(exc).__name__}: {exc}"}, status_code=503)
        return JSONResponse(
            {
                "status": "ok",
                "server": server.name,
                "embedding_model": engine.embedder.name,
                "auth": server.token_map is not None,
                "stateless": server.settings.stateless_http,
            }
        )

    @server.custom_route("/metrics", methods=["GET"])
    async def metrics(request: Request) -> Response:
        """The server's Prometheus series (tool calls, latency, recall health)."""
        return Response(generate_latest(server.metrics.registry), media_type=CONTENT_TYPE_LATEST)


__all__ = ["register_routes"]
