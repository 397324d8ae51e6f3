"""What the tools, resources, HTTP routes and viewer need of the server they run in, and nothing more.

``ServerHost`` is that need as a protocol: the engine, the namespace rules (the server's own
namespace, the token map, how the caller's namespace is resolved), the metrics, the throttle of
failed sign-ins, the per-namespace rate limit and where an upkeep run is reported. ``app.HindsightMCP`` provides it; the
modules that serve requests depend on this protocol alone, never on the server module, so
the server can import them without a circle.

The pieces are plain module-level functions taking the host first (``handler(host, request)``),
listed in tables that the server binds to itself (``bind_routes``), Starlette-style.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Generic, Protocol, TypeVar

from ..core.errors import InvalidInputError
from .auth import current_namespace

if TYPE_CHECKING:
    from mcp.server.fastmcp.server import Settings as FastMCPSettings
    from starlette.requests import Request
    from starlette.responses import Response

    from ..core.engine import MemoryEngine
    from ..core.upkeep.runner import UpkeepReport
    from .observability import ServerMetrics
    from .throttle import AuthFailures


class ServerHost(Protocol):
    """What a request handler may use of the server: ``app.HindsightMCP`` is one."""

    @property
    def engine(self) -> MemoryEngine:
        """The engine every tool and page serves."""
        ...

    @property
    def namespace(self) -> str:
        """The server's own namespace: every caller's when there are no tokens."""
        ...

    @property
    def token_map(self) -> dict[str, str] | None:
        """Bearer token → namespace (HTTP with auth), or None: one namespace for everyone."""
        ...

    @property
    def metrics(self) -> ServerMetrics:
        """The ``/metrics`` series."""
        ...

    @property
    def auth_failures(self) -> AuthFailures:
        """Failed authentications per client address, shared by the bearer check and the viewer's sign-in."""
        ...

    @property
    def name(self) -> str:
        """The server's name, as announced to MCP clients."""
        ...

    @property
    def settings(self) -> FastMCPSettings[Any]:
        """The MCP SDK's server settings (``stateless_http``...)."""
        ...

    def resolve_namespace(self) -> str:
        """The namespace of the MCP request being served (the server's own, or the bearer token's)."""
        ...

    def record_upkeep(self, report: UpkeepReport, *, trigger: str, **context: Any) -> None:
        """Log and count one namespace's upkeep run."""
        ...

    def rate_limit_wait(self, namespace: str, *, viewer: bool = False) -> float:
        """Count one request of ``namespace`` against its rate limit: 0 to go ahead, else the seconds to wait.

        ``viewer``: a page of the viewer, which has an allowance of its own (``app.HindsightMCP``).
        """
        ...


def call_namespace() -> str:
    """The namespace ``HindsightMCP.call_tool`` bound to this tool call."""
    namespace = current_namespace.get()
    if namespace is None:  # only reachable if a tool is invoked outside HindsightMCP.call_tool
        raise InvalidInputError("namespace", "no namespace bound to this call")
    return namespace


H = TypeVar("H")
Endpoint = Callable[["Request"], Awaitable["Response"]]
"""What Starlette routes a request to."""


@dataclass(frozen=True)
class HttpRoute(Generic[H]):
    """One HTTP route of a table: ``handler(owner, request)`` answers ``method`` requests to ``path``."""

    path: str
    method: str
    handler: Callable[[H, Request], Awaitable[Response]]


def bind_routes(
    routes: Iterable[HttpRoute[H]], owner: H, *, around: Callable[[Endpoint], Endpoint] | None = None
) -> list[tuple[str, str, Endpoint]]:
    """``(path, method, endpoint)`` of each route, its handler bound to ``owner`` (and wrapped by ``around``)."""
    bound = []
    for route in routes:
        endpoint = _bound(route.handler, owner)
        bound.append((route.path, route.method, around(endpoint) if around else endpoint))
    return bound


def _bound(handler: Callable[[H, Request], Awaitable[Response]], owner: H) -> Endpoint:
    async def endpoint(request: Request) -> Response:
        return await handler(owner, request)

    endpoint.__name__ = endpoint.__qualname__ = handler.__name__  # the Starlette route's name
    endpoint.__doc__ = handler.__doc__
    return endpoint


__all__ = ["Endpoint", "HttpRoute", "ServerHost", "bind_routes", "call_namespace"]
