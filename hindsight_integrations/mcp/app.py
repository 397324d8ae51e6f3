"""``HindsightMCP``, the memory server built on the MCP SDK's FastMCP, and ``build_server``, which assembles it.

``HindsightMCP`` is what every tool call goes through: it resolves the caller's namespace
(the server's own, or the bearer token's), refuses unknown tools and arguments and
rate-limited calls, and turns every failure into a tool result the model can read
(``failures``), never a crash, with one log line and metrics per call. A resource read is held
to the same rate limit. It is the ``serving.ServerHost`` the tools, resources, routes and viewer
are served by (``/debug/*`` and the viewer's pages ask it for the rate limit too);
``build_server`` adds their tables to it.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Container, Iterable
from typing import TYPE_CHECKING, Any

from mcp.server.fastmcp import FastMCP
from mcp.server.fastmcp.exceptions import ToolError
from mcp.server.fastmcp.tools import Tool as RegisteredTool
from mcp.server.lowlevel.helper_types import ReadResourceContents
from starlette.applications import Starlette
from starlette.requests import Request, cookie_parser
from starlette.types import Scope

from ..core.config import validate_namespace
from ..core.redaction import call_text, text_summary
from . import routes, viewer
from .auth import SCOPE_KEY, VIEWER_PREFIX, BearerNamespaceMiddleware, current_namespace, validate_token_map
from .body_guard import BodyGuard
from .failures import Refusal, describe_failure, error_result, rate_limited
from .hosts import HostGuard, allowed_hosts, transport_security
from .observability import (
    RateLimiter,
    ServerMetrics,
    call_strings,
    log,
    log_upkeep,
    loggable_error,
    quote_briefly,
    summarize_arguments,
)
from .protocol import capability
from .quota import NamespaceQuota
from .resources import register_resources
from .throttle import AuthFailures, RateLimitLog
from .tool_table import register_tools
from .tools import TOOLS
from .viewer_sessions import COOKIE, ViewerSessions

if TYPE_CHECKING:
    from pydantic import AnyUrl

    from ..core.engine import MemoryEngine
    from ..core.upkeep.runner import UpkeepReport

SERVER_NAME = "hindsight-memory"
INSTRUCTIONS = (
    "Long-term memory for this user. Call retrieve_memory before answering anything that may depend on "
    "what the user said in earlier conversations (preferences, facts about them, past decisions). "
    "Call store_memory when the user states a durable preference, fact, correction or plan; do not store "
    "chit-chat. Memories are private to this user's namespace."
)


class HindsightMCP(FastMCP):
    """FastMCP with namespace resolution, uniform error results, logging and metrics per call."""

    def __init__(
        self,
        engine: MemoryEngine,
        *,
        namespace: str,
        token_map: dict[str, str] | None,
        rate_limit_per_minute: float | None = None,
        stateless: bool = True,
        json_response: bool = True,
    ) -> None:
        # FastMCP() calls logging.basicConfig(), installing a handler on the root logger of
        # whatever process embeds it (an in-process client inside someone's app); undo that.
        root = logging.getLogger()
        handlers, level = list(root.handlers), root.level
        super().__init__(
            name=SERVER_NAME,
            instructions=INSTRUCTIONS,
            log_level=engine.settings.mcp_sdk_log_level,
            stateless_http=stateless,
            json_response=json_response,
        )
        root.handlers[:] = handlers
        root.setLevel(level)
        self.settings.max_sessions = engine.settings.max_sessions  # the SDK's own bound: 503 past it
        self.settings.session_idle_timeout = engine.settings.session_idle_seconds
        self.engine = engine
        self.namespace = namespace
        self.token_map = token_map
        self.metrics = ServerMetrics()
        self.limiter = RateLimiter(rate_limit_per_minute) if rate_limit_per_minute is not None else None
        self.viewer_limiter = RateLimiter(rate_limit_per_minute) if rate_limit_per_minute is not None else None
        self.rate_limit_log = RateLimitLog(rate_limit_per_minute) if rate_limit_per_minute is not None else None
        self.auth_failures = AuthFailures.from_settings(engine.settings)
        self.allowed_hosts: list[str] | None = None
        self.viewer_sessions: ViewerSessions | None = None  # the viewer's, once its routes are added
        self.serve_on(self.settings.host)
        self._announce_namespace()

    def serve_on(self, bind_host: str) -> None:
        """Answer only the Host names of a server bound to ``bind_host`` (``hosts.allowed_hosts``), on every route.

        Called again by ``startup`` with the address it binds; sets the MCP SDK's ``/mcp`` check to
        the same list (``HostGuard`` covers the other routes).
        """
        self.allowed_hosts = allowed_hosts(
            self.engine.settings.allowed_hosts, bind_host=bind_host, auth=self.token_map is not None
        )
        self.settings.transport_security = transport_security(self.allowed_hosts)

    def _announce_namespace(self) -> None:
        """Report the session's namespace, and ``max_top_k``, in every initialize result (``protocol.CAPABILITY``).

        Every transport (stdio, streamable HTTP, in-memory) builds a session's initialize
        answer from the low-level server's ``create_initialization_options``, called in the
        task that opens the session; over HTTP that task runs in the context of the request,
        where ``BearerNamespaceMiddleware`` has bound the token's namespace. Wrapping that one
        method is therefore enough for a client to learn whose memories it serves.
        """
        lowlevel = self._mcp_server
        create = lowlevel.create_initialization_options

        def create_initialization_options(
            notification_options: Any = None, experimental_capabilities: Any = None
        ) -> Any:
            namespace = self.namespace if self.token_map is None else current_namespace.get()
            announced = capability(namespace, max_top_k=self.engine.settings.max_top_k)
            experimental = {**(experimental_capabilities or {}), **announced}
            return create(notification_options, experimental)

        lowlevel.create_initialization_options = create_initialization_options  # type: ignore[method-assign]

    # -- namespace ------------------------------------------------------------------------------
    def resolve_namespace(self) -> str:
        """The caller's namespace: the server's own one, or (with auth) the token's one, only."""
        if self.token_map is None:
            return self.namespace
        try:
            request = self._mcp_server.request_context.request
        except LookupError:
            request = None
        namespace = None
        if isinstance(request, Request):
            namespace = request.scope.get("state", {}).get(SCOPE_KEY)
        if namespace is None:
            namespace = current_namespace.get()
        if namespace is None:
            raise Refusal("unauthorized", "this call carries no authenticated namespace; send a valid bearer token")
        return namespace

    # -- dispatch -------------------------------------------------------------------------------
    async def call_tool(self, name: str, arguments: dict[str, Any]) -> Any:
        """Run tool ``name`` for the caller's namespace; every failure is an error result, logged and counted.

        Refused before the tool runs: no authenticated namespace, an unknown tool or argument
        (the message lists the accepted ones), the namespace's rate limit. While it runs, no log
        line may show the strings the call carried (``redaction.call_text``).
        """
        arguments = arguments or {}
        if self.engine.settings.log_content:
            return await self._dispatch(name, arguments)
        tool = self._tool_manager.get_tool(name)
        secrets, keep = call_strings(arguments, names=_parameter_names(tool), tool=None if tool is not None else name)
        with call_text(secrets, keep):
            return await self._dispatch(name, arguments)

    async def _dispatch(self, name: str, arguments: dict[str, Any]) -> Any:
        started = time.perf_counter()
        namespace: str | None = None
        outcome = "ok"
        error: dict[str, Any] | None = None
        result: Any = None
        try:
            namespace = self.resolve_namespace()
            self._admit(name, arguments, namespace)
            token = current_namespace.set(namespace)
            try:
                result = await self._tool_manager.call_tool(
                    name, arguments, context=self.get_context(), convert_result=True
                )
            finally:
                current_namespace.reset(token)
        except Refusal as exc:
            outcome, error = exc.kind, exc.payload()
        except ToolError as exc:
            outcome, error = describe_failure(name, exc)
        except Exception as exc:  # noqa: BLE001 - the SDK's own failures: still a readable result, never a crash
            log.exception("tool dispatch failed", extra={"fields": {"tool": name}})
            outcome, error = "internal_error", {"type": "internal_error", "message": f"{type(exc).__name__}: {exc}"}
        self._record_call(name, arguments, namespace, outcome, error, time.perf_counter() - started)
        return result if error is None else error_result(error)

    def _admit(self, name: str, arguments: dict[str, Any], namespace: str) -> None:
        """Refuse an unknown tool, an argument it does not take, or a call past the namespace's rate limit."""
        tool = self._tool_manager.get_tool(name)
        if tool is None:
            available = ", ".join(sorted(t.name for t in self._tool_manager.list_tools()))
            raise Refusal("unknown_tool", f"unknown tool {name!r}; available tools: {available}")
        allowed = _parameter_names(tool) or set()
        unknown = sorted(set(arguments) - allowed)
        if unknown:
            raise Refusal(
                "unknown_argument",
                f"unknown argument {unknown[0]!r} for {name}; "
                f"accepted arguments: {', '.join(sorted(allowed)) or 'none'}",
                field=unknown[0],
            )
        if wait := self.rate_limit_wait(namespace):
            raise rate_limited(namespace, wait)

    async def read_resource(self, uri: AnyUrl | str) -> Iterable[ReadResourceContents]:
        """Read resource ``uri`` for the caller's namespace, within its rate limit as a tool call is.

        ``hindsight://stats`` reads every record of the namespace: reads must not be a way round
        the limit. A refusal is a JSON-RPC error carrying a tool error's payload (``retry_after``).
        """
        try:
            namespace = self.resolve_namespace()
            if wait := self.rate_limit_wait(namespace):
                raise rate_limited(namespace, wait)
        except Refusal as exc:
            raise exc.as_mcp_error() from None
        return await super().read_resource(uri)

    # -- rate limit -----------------------------------------------------------------------------
    def rate_limit_wait(self, namespace: str, *, viewer: bool = False) -> float:
        """Count one request of ``namespace`` against its rate limit: 0 to go ahead, else the seconds to wait.

        Tool calls, resource reads and ``/debug/*`` share the namespace's allowance; the viewer's
        pages (``viewer``) have one of their own of the same size, so a person can still look at
        their memories while their agent is held back, and a script driving the viewer is held to
        the same rate. A refusal is a warning in the log, at most one a minute per namespace (``RateLimitLog``).
        """
        limiter = self.viewer_limiter if viewer else self.limiter
        wait = limiter.acquire(namespace) if limiter is not None else 0.0
        if wait:
            self.metrics.rate_limited.inc()
            if self.rate_limit_log is not None:
                self.rate_limit_log.refused(namespace, wait, viewer=viewer)
        return wait

    def _record_call(
        self,
        name: str,
        arguments: dict[str, Any],
        namespace: str | None,
        outcome: str,
        error: dict[str, Any] | None,
        seconds: float,
    ) -> None:
        """Count the call in ``/metrics`` and log it as one JSON line: sizes, ids and numbers, never memory text."""
        # Label values come from a fixed set: a caller-chosen tool name must not become a series.
        called = self._tool_manager.get_tool(name)
        known = called is not None
        self.metrics.observe_call(name if known else "unknown", "ok" if error is None else outcome, seconds)
        log_content = self.engine.settings.log_content
        names = _parameter_names(called)
        fields = {
            "tool": name if known else quote_briefly(name) if log_content else f"unknown {text_summary(name)}",
            "namespace": namespace,
            "arguments": summarize_arguments(arguments, names=names, content=log_content),
            "latency_ms": round(seconds * 1000, 2),
            "outcome": "ok" if error is None else outcome,
        }
        if error is not None:
            fields["error_type"] = error["type"]
            fields["error"] = loggable_error(
                error["message"], arguments, names=names, keep=(namespace,), content=log_content
            )
        log.info("tool_call", extra={"fields": fields})

    # -- upkeep ---------------------------------------------------------------------------------
    def record_upkeep(self, report: UpkeepReport, *, trigger: str, **context: Any) -> None:
        """Log one namespace's upkeep run as a JSON line and count it in ``/metrics`` (scheduled or by a tool)."""
        self.metrics.observe_upkeep(report, trigger)
        log_upkeep(report, trigger, **context)

    # -- HTTP app -------------------------------------------------------------------------------
    def streamable_http_app(self) -> Starlette:
        """The streamable-HTTP app, behind the Host check and the bearer-token middleware when they apply."""
        app = super().streamable_http_app()
        settings = self.engine.settings
        app.add_middleware(BodyGuard, timeout=settings.body_timeout_seconds)  # added first: runs after authentication
        stateful, tenants = not self.settings.stateless_http, self.token_map is not None
        if stateful or tenants:  # without tokens: one namespace, whose session openings count against its rate limit
            app.add_middleware(
                NamespaceQuota,
                max_in_flight=settings.max_requests_in_flight_per_namespace if tenants else None,
                max_sessions=settings.max_sessions_per_namespace if tenants else None,
                stateful=stateful,
                live_sessions=self._live_session_ids if stateful else None,
                idle_seconds=settings.session_idle_seconds,
                server_sessions=settings.max_sessions if tenants else None,
                namespaces=set(self.token_map.values()) if self.token_map is not None else (),
                default_namespace=None if tenants else self.namespace,
                over_rate_limit=lambda namespace: routes.over_rate_limit(self, namespace),
                mcp_path=self.settings.streamable_http_path,
                viewer_namespace=self._viewer_namespace,
            )
        namespaces = len(set(self.token_map.values())) if self.token_map is not None else 0
        if stateful and namespaces > settings.max_sessions:
            log.warning(
                "HINDSIGHT_MAX_SESSIONS is below one session per namespace: a tenant may find every place taken; "
                "raise it, or serve statelessly",
                extra={"fields": {"max_sessions": settings.max_sessions, "namespaces": namespaces}},
            )
        if self.token_map is not None:
            app.add_middleware(BearerNamespaceMiddleware, token_map=self.token_map, failures=self.auth_failures)
        if self.allowed_hosts is not None:
            app.add_middleware(HostGuard, allowed=self.allowed_hosts)  # outermost: a foreign Host learns nothing
        return app

    def _viewer_namespace(self, scope: Scope) -> str | None:
        """The namespace of a viewer request's session cookie: its pages count against that namespace's bounds."""
        path = scope.get("path") or ""
        if self.viewer_sessions is None or not (path == VIEWER_PREFIX or path.startswith(VIEWER_PREFIX + "/")):
            return None
        cookies = cookie_parser(dict(scope.get("headers") or []).get(b"cookie", b"").decode("latin-1"))
        return self.viewer_sessions.signed_namespace(cookies.get(COOKIE))

    def _live_session_ids(self) -> Container[str] | None:
        """The ids of the stateful sessions the MCP SDK still holds, when this SDK version lets us ask."""
        live = getattr(self.session_manager, "_server_instances", None)
        return live if isinstance(live, dict) else None


def _parameter_names(tool: RegisteredTool | None) -> set[str] | None:
    """The parameters a registered tool takes (None: no such tool)."""
    return set(tool.parameters.get("properties", {})) if tool is not None else None


def build_server(
    engine: MemoryEngine,
    *,
    namespace: str | None = None,
    token_map: dict[str, str] | None = None,
    rate_limit_per_minute: float | None = None,
    stateless: bool = True,
    json_response: bool = True,
) -> HindsightMCP:
    """An MCP server over ``engine``: the tools, resources, ``/health`` ``/metrics`` ``/debug``, and the viewer.

    Without ``token_map`` every call uses ``namespace`` (default: the engine's). With it
    (HTTP mode), each request's bearer token selects the namespace and unknown tokens get 401.
    """
    ns = validate_namespace(namespace or engine.settings.namespace)
    tokens = validate_token_map(token_map) if token_map is not None else None
    server = HindsightMCP(
        engine,
        namespace=ns,
        token_map=tokens,
        rate_limit_per_minute=rate_limit_per_minute,
        stateless=stateless,
        json_response=json_response,
    )
    register_tools(server, server, TOOLS)
    the_viewer = viewer.Viewer(server)
    server.viewer_sessions = the_viewer.sessions
    for path, method, endpoint in [*routes.http_routes(server), *viewer.viewer_routes(the_viewer)]:
        server.custom_route(path, methods=[method])(endpoint)
    register_resources(server, server)
    return server


__all__ = ["INSTRUCTIONS", "SERVER_NAME", "HindsightMCP", "build_server"]
