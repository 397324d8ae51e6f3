"""The Hindsight MCP memory server, built on the MCP SDK's FastMCP.

``HindsightMCP`` is what every tool call goes through: it resolves the caller's namespace
(the server's own, or the bearer token's), refuses unknown tools and arguments and
rate-limited calls, and turns every failure into a tool result the model can read, never a
crash, with one log line and metrics per call. ``build_server`` puts the tools (``tools``)
and the HTTP routes (``routes``) on it; ``run`` (``startup``) is the process entry point used
by ``hindsight serve`` and ``python -m hindsight_integrations.mcp``, importable from here too.
"""

from __future__ import annotations

import logging
import os
import time
from typing import TYPE_CHECKING, Any

import httpx
from mcp.server.fastmcp import FastMCP
from mcp.server.fastmcp.exceptions import ToolError
from mcp.types import CallToolResult, TextContent
from pydantic import ValidationError
from starlette.applications import Starlette
from starlette.requests import Request

from ..core.config import validate_namespace
from ..core.errors import HindsightError, InvalidInputError, MemoryNotFoundError, StoreUnavailableError
from ..core.redaction import call_text, describe_error, text_summary
from .auth import SCOPE_KEY, BearerNamespaceMiddleware, current_namespace, validate_token_map
from .body_guard import BodyGuard
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
from .protocol import capability, validation_message
from .resources import register_resources
from .routes import register_routes
from .startup import run
from .throttle import AuthFailures
from .tools import register_tools
from .viewer import register_viewer

if TYPE_CHECKING:
    from ..core.engine import MemoryEngine
    from ..core.upkeep.runner import UpkeepReport

SERVER_NAME = "hindsight-memory"
INSTRUCTIONS = (
    "Long-term memory for this user. Call retrieve_memory before answering anything that may depend on "
    "what the user said in earlier conversations (preferences, facts about them, past decisions). "
    "Call store_memory when the user states a durable preference, fact, correction or plan; do not store "
    "chit-chat. Memories are private to this user's namespace."
)


class _Refusal(Exception):
    """A call refused before the tool ran (unknown tool/argument, auth, rate limit)."""

    def __init__(self, kind: str, message: str, **details: Any) -> None:
        super().__init__(message)
        self.kind = kind
        self.message = message
        self.details = details


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
            log_level=os.environ.get("HINDSIGHT_MCP_SDK_LOG_LEVEL", "WARNING").upper(),  # type: ignore[arg-type]
            stateless_http=stateless,
            json_response=json_response,
        )
        root.handlers[:] = handlers
        root.setLevel(level)
        self.engine = engine
        self.namespace = namespace
        self.token_map = token_map
        self.metrics = ServerMetrics()
        self.limiter = RateLimiter(rate_limit_per_minute) if rate_limit_per_minute else None
        self.auth_failures = AuthFailures.from_settings(engine.settings)
        self.allowed_hosts: list[str] | None = None
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
        """Report the session's namespace in every initialize result (``protocol.CAPABILITY``).

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
            experimental = {**(experimental_capabilities or {}), **capability(namespace)}
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
            raise _Refusal("unauthorized", "this call carries no authenticated namespace; send a valid bearer token")
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
        names = set(tool.parameters.get("properties", {})) if tool is not None else None
        secrets, keep = call_strings(arguments, names=names, tool=None if tool is not None else name)
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
            tool = self._tool_manager.get_tool(name)
            if tool is None:
                available = ", ".join(sorted(t.name for t in self._tool_manager.list_tools()))
                raise _Refusal("unknown_tool", f"unknown tool {name!r}; available tools: {available}")
            allowed = set(tool.parameters.get("properties", {}))
            unknown = sorted(set(arguments) - allowed)
            if unknown:
                raise _Refusal(
                    "unknown_argument",
                    f"unknown argument {unknown[0]!r} for {name}; "
                    f"accepted arguments: {', '.join(sorted(allowed)) or 'none'}",
                    field=unknown[0],
                )
            if self.limiter is not None:
                wait = self.limiter.acquire(namespace)
                if wait:
                    self.metrics.rate_limited.inc()
                    raise _Refusal(
                        "rate_limited",
                        f"rate limit for namespace {namespace!r} exceeded; retry in {wait:.1f} s",
                        retry_after=round(wait, 2),
                    )
            token = current_namespace.set(namespace)
            try:
                result = await self._tool_manager.call_tool(
                    name, arguments, context=self.get_context(), convert_result=True
                )
            finally:
                current_namespace.reset(token)
        except _Refusal as exc:
            outcome = exc.kind
            error = {"type": exc.kind, "message": exc.message, **exc.details}
        except ToolError as exc:
            outcome, error = _describe_failure(name, exc)
        except Exception as exc:  # noqa: BLE001 - the SDK's own failures: still a readable result, never a crash
            log.exception("tool dispatch failed", extra={"fields": {"tool": name}})
            outcome, error = "internal_error", {"type": "internal_error", "message": f"{type(exc).__name__}: {exc}"}
        seconds = time.perf_counter() - started
        # Label values come from a fixed set: a caller-chosen tool name must not become a series.
        called = self._tool_manager.get_tool(name)
        known = called is not None
        self.metrics.observe_call(name if known else "unknown", "ok" if error is None else outcome, seconds)
        # Logs carry sizes, ids and numbers, never memory text (observability.summarize_arguments).
        log_content = self.engine.settings.log_content
        names = set(called.parameters.get("properties", {})) if called is not None else None
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
            return CallToolResult(
                content=[TextContent(type="text", text=f"Error: {error['message']}")],
                structuredContent={"error": error},
                isError=True,
            )
        log.info("tool_call", extra={"fields": fields})
        return result

    # -- upkeep ---------------------------------------------------------------------------------
    def record_upkeep(self, report: UpkeepReport, *, trigger: str, **context: Any) -> None:
        """Log one namespace's upkeep run as a JSON line and count it in ``/metrics`` (scheduled or by a tool)."""
        self.metrics.observe_upkeep(report, trigger)
        log_upkeep(report, trigger, **context)

    # -- HTTP app -------------------------------------------------------------------------------
    def streamable_http_app(self) -> Starlette:
        """The streamable-HTTP app, behind the Host check and the bearer-token middleware when they apply."""
        app = super().streamable_http_app()
        app.add_middleware(BodyGuard)  # added first, so it runs after authentication
        if self.token_map is not None:
            app.add_middleware(BearerNamespaceMiddleware, token_map=self.token_map, failures=self.auth_failures)
        if self.allowed_hosts is not None:
            app.add_middleware(HostGuard, allowed=self.allowed_hosts)  # outermost: a foreign Host learns nothing
        return app


def _describe_failure(tool: str, exc: ToolError) -> tuple[str, dict[str, Any]]:
    """(outcome, error payload) of a tool that raised: the client rebuilds its exception from the payload."""
    cause = exc.__cause__
    if isinstance(cause, ValidationError):
        field, message = validation_message(cause)
        return "invalid_input", {"type": "invalid_input", "field": field, "message": f"{field}: {message}"}
    if isinstance(cause, InvalidInputError):
        return "invalid_input", {"type": "invalid_input", "field": cause.field, "message": str(cause)}
    if isinstance(cause, MemoryNotFoundError):
        return "not_found", {
            "type": "not_found",
            "message": str(cause),
            "memory_id": cause.memory_id,
            "namespace": cause.namespace,
        }
    if cause is not None and _store_outage(cause):
        log.warning(
            "the memory store did not answer",
            extra={"fields": {"tool": tool, "error": quote_briefly(describe_error(cause), 300)}},
        )
        return "store_unavailable", {
            "type": "store_unavailable",
            "message": f"the memory store did not answer ({type(cause).__name__}); retry shortly",
            "retryable": True,
        }
    if isinstance(cause, HindsightError):
        return "error", {"type": type(cause).__name__, "message": str(cause)}
    if cause is None:
        return "error", {"type": "error", "message": str(exc)}
    log.error("tool raised an unexpected error", exc_info=cause, extra={"fields": {"tool": tool}})
    return "internal_error", {
        "type": "internal_error",
        "message": f"internal error in {tool}: {type(cause).__name__}: {cause}",
    }


def _store_outage(exc: BaseException | None) -> bool:
    """Whether ``exc`` (or what caused it) means Chroma could not be reached, rather than a bug."""
    seen = 0
    while exc is not None and seen < 10:
        if isinstance(exc, (StoreUnavailableError, ConnectionError, httpx.TransportError)):
            return True
        text = str(exc).lower()
        if type(exc).__module__.startswith("chromadb") and ("connect" in text or "unavailable" in text):
            return True
        exc, seen = exc.__cause__ or exc.__context__, seen + 1
    return False


def build_server(
    engine: MemoryEngine,
    *,
    namespace: str | None = None,
    token_map: dict[str, str] | None = None,
    rate_limit_per_minute: float | None = None,
    stateless: bool = True,
    json_response: bool = True,
) -> HindsightMCP:
    """An MCP server over ``engine``.

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
    register_tools(server, engine)
    register_routes(server, engine)
    register_viewer(server, engine)
    register_resources(server, engine)
    return server


__all__ = ["INSTRUCTIONS", "SERVER_NAME", "HindsightMCP", "build_server", "run"]
