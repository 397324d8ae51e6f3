"""The Hindsight MCP memory server (SPEC §8), built on the MCP SDK's FastMCP.

``build_server`` wires tools onto an engine; ``run`` is the process entry point used by
``hindsight serve`` and ``python -m hindsight_integrations.mcp``. The server is a thin
translation layer: arguments are validated (and common model mistakes coerced) by pydantic
models, the engine does the work in a worker thread so the event loop keeps serving, and
every outcome, including every error, is a tool result the model can read, never a crash.
"""

from __future__ import annotations

import functools
import io
import ipaddress
import logging
import os
import sys
import time
from collections.abc import Callable
from datetime import datetime
from typing import Annotated, Any, TypeVar

import anyio
from mcp.server.fastmcp import FastMCP
from mcp.server.fastmcp.exceptions import ToolError
from mcp.server.transport_security import TransportSecuritySettings
from mcp.types import CallToolResult, TextContent, ToolAnnotations
from pydantic import BeforeValidator, Field, ValidationError
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from ..core.config import validate_namespace
from ..core.engine import MemoryEngine
from ..core.errors import HindsightError, InvalidInputError, MemoryNotFoundError
from ..core.filters import RecallFilters
from ..core.records import Kind, Role
from . import schemas
from .auth import SCOPE_KEY, BearerNamespaceMiddleware, current_namespace, load_token_map, validate_token_map
from .observability import RateLimiter, ServerMetrics, configure_logging, log, summarize_arguments
from .schemas import MAX_BATCH, MemoryItem

T = TypeVar("T")

SERVER_NAME = "hindsight-memory"
INSTRUCTIONS = (
    "Long-term memory for this user. Call retrieve_memory before answering anything that may depend on "
    "what the user said in earlier conversations (preferences, facts about them, past decisions). "
    "Call store_memory when the user states a durable preference, fact, correction or plan; do not store "
    "chit-chat. Memories are private to this user's namespace."
)

Lower = BeforeValidator(lambda v: v.strip().lower() if isinstance(v, str) else v)


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
        self._announce_namespace()

    def _announce_namespace(self) -> None:
        """Report the session's namespace in every initialize result (``schemas.CAPABILITY``).

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
            experimental = {**(experimental_capabilities or {}), **schemas.capability(namespace)}
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
    async def call_tool(self, name: str, arguments: dict[str, Any]) -> Any:  # type: ignore[override]
        started = time.perf_counter()
        arguments = arguments or {}
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
                    f"unknown argument {unknown[0]!r} for {name}; accepted arguments: {', '.join(sorted(allowed)) or 'none'}",
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
        except Exception as exc:  # the SDK's own failures: still a readable result, never a crash
            log.exception("tool dispatch failed", extra={"fields": {"tool": name}})
            outcome, error = "internal_error", {"type": "internal_error", "message": f"{type(exc).__name__}: {exc}"}
        seconds = time.perf_counter() - started
        self.metrics.observe_call(name, "ok" if error is None else outcome, seconds)
        fields = {
            "tool": name,
            "namespace": namespace,
            "arguments": summarize_arguments(arguments),
            "latency_ms": round(seconds * 1000, 2),
            "outcome": "ok" if error is None else outcome,
        }
        if error is not None:
            fields["error"] = error["message"]
            log.info("tool_call", extra={"fields": fields})
            return CallToolResult(
                content=[TextContent(type="text", text=f"Error: {error['message']}")],
                structuredContent={"error": error},
                isError=True,
            )
        log.info("tool_call", extra={"fields": fields})
        return result

    # -- HTTP app -------------------------------------------------------------------------------
    def streamable_http_app(self):  # type: ignore[no-untyped-def]
        app = super().streamable_http_app()
        if self.token_map is not None:
            app.add_middleware(BearerNamespaceMiddleware, token_map=self.token_map)
        return app


def _describe_failure(tool: str, exc: ToolError) -> tuple[str, dict[str, Any]]:
    cause = exc.__cause__
    if isinstance(cause, ValidationError):
        field, message = schemas.validation_message(cause)
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
    if isinstance(cause, HindsightError):
        return "error", {"type": type(cause).__name__, "message": str(cause)}
    if cause is None:
        return "error", {"type": "error", "message": str(exc)}
    log.error("tool raised an unexpected error", exc_info=cause, extra={"fields": {"tool": tool}})
    return "internal_error", {
        "type": "internal_error",
        "message": f"internal error in {tool}: {type(cause).__name__}: {cause}",
    }


def _result(data: dict[str, Any], text: str) -> CallToolResult:
    return CallToolResult(content=[TextContent(type="text", text=text)], structuredContent=data)


async def _in_thread(fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    """Run a blocking engine call off the event loop (embedding and Chroma I/O block)."""
    return await anyio.to_thread.run_sync(functools.partial(fn, *args, **kwargs))


def build_server(
    engine: MemoryEngine,
    *,
    namespace: str | None = None,
    token_map: dict[str, str] | None = None,
    rate_limit_per_minute: float | None = None,
    stateless: bool = True,
    json_response: bool = True,
) -> FastMCP:
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
    _register_tools(server, engine)
    _register_routes(server, engine)
    return server


def _ns() -> str:
    namespace = current_namespace.get()
    if namespace is None:  # only reachable if a tool is invoked outside HindsightMCP.call_tool
        raise InvalidInputError("namespace", "no namespace bound to this call")
    return namespace


READ = ToolAnnotations(readOnlyHint=True, openWorldHint=False)
WRITE = ToolAnnotations(readOnlyHint=False, destructiveHint=False, idempotentHint=False, openWorldHint=False)
IDEMPOTENT_WRITE = ToolAnnotations(readOnlyHint=False, destructiveHint=False, idempotentHint=True, openWorldHint=False)


def _register_tools(server: HindsightMCP, engine: MemoryEngine) -> None:
    metrics = server.metrics

    @server.tool(
        name="store_memory",
        annotations=IDEMPOTENT_WRITE,
        structured_output=False,
        description=(
            'Save durable information about the user for future conversations: preferences ("I prefer metric units"), '
            "facts about them or their work, corrections of earlier facts, decisions and plans. Write each memory as a "
            "self-contained sentence. Do NOT store greetings, thanks or small talk (they are filtered out and reported as "
            f"skipped). Give one memory with `content`, or several at once with `memories` (max {MAX_BATCH} per call). "
            "Pass a `request_id` you generate: retrying with the same request_id never stores twice. "
            "Returns the stored ids, and any items not stored with the reason. Leave `apply_filter`, `dedup` and `supersede` at "
            "their defaults unless the user explicitly asked you to remember this exact text."
        ),
    )
    async def store_memory(
        content: Annotated[str | None, Field(description="One memory to store (use this or `memories`).")] = None,
        memories: Annotated[
            list[MemoryItem] | None, Field(description=f"A batch of memories (max {MAX_BATCH}); each needs `content`.")
        ] = None,
        role: Annotated[Role, Lower, Field(description="Who said it: user, assistant, tool or system.")] = Role.USER,
        kind: Annotated[
            Kind | None,
            Lower,
            Field(description="preference, fact, context, correction or event; inferred if omitted."),
        ] = None,
        importance: Annotated[float | None, Field(ge=0, le=1, description="0-1; inferred if omitted.")] = None,
        metadata: Annotated[dict[str, Any] | None, Field(description="Free-form JSON attached to the memory.")] = None,
        occurred_at: Annotated[datetime | None, Field(description="ISO 8601 time it was said; default now.")] = None,
        ttl_seconds: Annotated[
            int | None, Field(gt=0, description="Forget after this many seconds (temporary facts).")
        ] = None,
        session_id: Annotated[str | None, Field(description="Conversation id the memory came from.")] = None,
        request_id: Annotated[str | None, Field(description="Idempotency key for this call (e.g. a UUID).")] = None,
        apply_filter: Annotated[
            bool,
            schemas.Flag,
            Field(
                description=(
                    "Drop small talk and other text not worth remembering (default true). Set apply_filter=false only when "
                    "the user explicitly asked you to remember this exact text."
                )
            ),
        ] = True,
        dedup: Annotated[
            bool,
            schemas.Flag,
            Field(
                description=(
                    "Merge a memory that nearly repeats an existing one into it (default true). Set dedup=false only when "
                    "the user wants a separate memory even though a similar one exists."
                )
            ),
        ] = True,
        supersede: Annotated[
            bool,
            schemas.Flag,
            Field(
                description=(
                    "Mark an older memory about the same thing as outdated when this one changes it, e.g. a new address "
                    "(default true). Set supersede=false only when the user wants both kept as current."
                )
            ),
        ] = True,
    ) -> CallToolResult:
        namespace = _ns()
        if (content is None) == (memories is None):
            raise InvalidInputError(
                "content", "give either `content` (one memory) or `memories` (a batch), not both or neither"
            )
        if memories is not None:
            if not memories:
                raise InvalidInputError("memories", "is empty; give at least one memory")
            if len(memories) > MAX_BATCH:
                raise InvalidInputError(
                    "memories",
                    f"has {len(memories)} items; the limit is {MAX_BATCH} per call. Split the batch into "
                    f"calls of at most {MAX_BATCH} memories, each with its own request_id",
                )
            items = [m.engine_dict() for m in memories]
        else:
            single = {
                "content": content,
                "role": role,
                "kind": kind,
                "importance": importance,
                "metadata": metadata or {},
                "occurred_at": occurred_at,
                "ttl_seconds": ttl_seconds,
                "session_id": session_id,
            }
            items = [MemoryItem.model_validate({k: v for k, v in single.items() if v is not None}).engine_dict()]
        result = await _in_thread(
            engine.store_memories,
            items,
            namespace=namespace,
            apply_filter=apply_filter,
            dedup=dedup,
            supersede=supersede,
            request_id=request_id,
            origin="mcp",
        )
        if not result.replayed:
            metrics.memories_written.inc(len(result.stored))
            metrics.memories_superseded.inc(len(result.superseded))
        data = schemas.store_out(result, request_id)
        return _result(data, schemas.store_text(data))

    @server.tool(
        name="retrieve_memory",
        annotations=READ,
        structured_output=False,
        description=(
            "Look up what you know about the user from earlier conversations. Call it before answering whenever the "
            "answer could depend on their preferences, history, projects or past decisions, and when they ask "
            '"do you remember…". Phrase `query` as the question you need answered. Returns the best memories (with id, '
            "score, tier, kind, date) and `context`: a dated block ready to use in your answer."
        ),
    )
    async def retrieve_memory(
        query: Annotated[str, Field(description="What you want to know, in natural language.")],
        top_k: Annotated[int | None, Field(description="How many memories at most (default 5).")] = None,
        min_score: Annotated[float | None, Field(description="Drop memories less relevant than this (0-1).")] = None,
        filters: Annotated[
            RecallFilters | None,
            Field(description="Narrow by session_id, kinds, tiers, since/until, min_importance, metadata."),
        ] = None,
        token_budget: Annotated[int | None, Field(description="Fit the context block into this many tokens.")] = None,
        include_history: Annotated[
            bool, Field(description="Also return superseded (outdated) memories, marked as such.")
        ] = False,
    ) -> CallToolResult:
        namespace = _ns()
        started = time.perf_counter()
        result = await _in_thread(
            engine.recall,
            query,
            namespace=namespace,
            top_k=top_k,
            min_score=min_score,
            filters=filters,
            token_budget=token_budget,
            include_history=include_history,
        )
        metrics.recall_latency.observe(time.perf_counter() - started)
        metrics.recall_requests.inc()
        if result.hits:
            metrics.recall_hits.inc()
        data = schemas.recall_out(result)
        return _result(data, schemas.recall_text(data))

    @server.tool(
        name="record_turn",
        annotations=WRITE,
        structured_output=False,
        description=(
            "Append one conversation turn to the session's working memory. Durable facts in it are remembered "
            "long-term automatically, and old turns are summarised when the window grows too long. "
            "Used by agent frameworks after each message; returns the turn id, what was remembered and any compression."
        ),
    )
    async def record_turn(
        content: Annotated[str, Field(description="The message text.")],
        session_id: Annotated[str, Field(description="The conversation id.")],
        role: Annotated[Role, Lower, Field(description="user, assistant, tool or system.")] = Role.USER,
        occurred_at: Annotated[datetime | None, Field(description="ISO 8601 time of the message; default now.")] = None,
        metadata: Annotated[dict[str, Any] | None, Field(description="Free-form JSON attached to the turn.")] = None,
    ) -> CallToolResult:
        result = await _in_thread(
            engine.record_turn,
            content,
            session_id=session_id,
            role=role,
            namespace=_ns(),
            occurred_at=occurred_at,
            metadata=metadata,
        )
        data = schemas.turn_out(result)
        return _result(data, schemas.turn_text(data))

    @server.tool(
        name="get_working_memory",
        annotations=READ,
        structured_output=False,
        description="The live (not yet summarised) turns of a conversation, oldest first. Use to rebuild a chat history.",
    )
    async def get_working_memory(
        session_id: Annotated[str, Field(description="The conversation id.")],
    ) -> CallToolResult:
        turns = await _in_thread(engine.working_window, session_id=session_id, namespace=_ns())
        data = {
            "session_id": session_id,
            "turns": [schemas.record_out(t) for t in turns],
            "tokens": sum(t.token_count for t in turns),
        }
        return _result(data, schemas.records_text(f"Working memory of session {session_id}", data["turns"]))

    @server.tool(
        name="clear_working_memory",
        annotations=IDEMPOTENT_WRITE,
        structured_output=False,
        description="Forget a conversation's live turns (e.g. the user starts over). Long-term memories are kept.",
    )
    async def clear_working_memory(
        session_id: Annotated[str, Field(description="The conversation id.")],
    ) -> CallToolResult:
        cleared = await _in_thread(engine.clear_working, session_id=session_id, namespace=_ns())
        return _result(
            {"session_id": session_id, "cleared": cleared}, f"Cleared {cleared} turns from session {session_id}."
        )

    @server.tool(
        name="compress_memory",
        annotations=IDEMPOTENT_WRITE,
        structured_output=False,
        description=(
            "Summarise the oldest turns of a long conversation into compact episodic memories, freeing context. "
            "Call when the conversation is getting long; raw turns are archived, not deleted."
        ),
    )
    async def compress_memory(
        session_id: Annotated[str, Field(description="The conversation to compress.")],
        threshold_tokens: Annotated[
            int | None, Field(description="Compress until the live window is under this many tokens.")
        ] = None,
        force: Annotated[bool, Field(description="Compress at least one group even if under the threshold.")] = False,
    ) -> CallToolResult:
        result = await _in_thread(
            engine.compress, session_id=session_id, namespace=_ns(), threshold_tokens=threshold_tokens, force=force
        )
        data = {
            "session_id": session_id,
            "compressed": result is not None,
            "compression": schemas.compression_out(result),
        }
        return _result(data, schemas.compress_text(data))

    @server.tool(
        name="update_memory",
        annotations=IDEMPOTENT_WRITE,
        structured_output=False,
        description="Correct or adjust an existing memory by id (from retrieve_memory or list_memories). Only given fields change.",
    )
    async def update_memory(
        id: Annotated[str, Field(description="The memory id.")],
        content: Annotated[str | None, Field(description="New text (re-indexed).")] = None,
        importance: Annotated[float | None, Field(ge=0, le=1, description="New importance 0-1.")] = None,
        kind: Annotated[Kind | None, Lower, Field(description="New kind.")] = None,
        metadata: Annotated[dict[str, Any] | None, Field(description="Keys merged into the memory's metadata.")] = None,
        ttl_seconds: Annotated[int | None, Field(gt=0, description="Expire this many seconds from now.")] = None,
    ) -> CallToolResult:
        record = await _in_thread(
            engine.update,
            id,
            namespace=_ns(),
            content=content,
            importance=importance,
            kind=kind,
            metadata=metadata,
            ttl_seconds=ttl_seconds,
        )
        data = {"memory": schemas.record_out(record)}
        return _result(data, f"Updated memory {record.id}: {record.content}")

    @server.tool(
        name="forget_memory",
        annotations=IDEMPOTENT_WRITE,
        structured_output=False,
        description="Forget a memory by id when the user asks you to, or it is wrong. It stops being recalled (soft delete, kept for audit).",
    )
    async def forget_memory(id: Annotated[str, Field(description="The memory id.")]) -> CallToolResult:
        record = await _in_thread(engine.forget, id, namespace=_ns())
        return _result(
            {"memory": schemas.record_out(record), "forgotten": True}, f"Forgot memory {record.id}: {record.content}"
        )

    @server.tool(
        name="list_memories",
        annotations=READ,
        structured_output=False,
        description="List stored memories newest first, optionally filtered (kinds, tiers, session_id, since/until). For browsing, not for answering questions: use retrieve_memory for that.",
    )
    async def list_memories(
        filters: Annotated[RecallFilters | None, Field(description="Same filters as retrieve_memory.")] = None,
        include_history: Annotated[bool, Field(description="Include superseded memories.")] = False,
        limit: Annotated[int, Field(description="Page size (1-1000).", ge=1, le=1000)] = 20,
        offset: Annotated[int, Field(description="Skip this many (paging).", ge=0)] = 0,
    ) -> CallToolResult:
        records = await _in_thread(
            engine.list, namespace=_ns(), filters=filters, include_history=include_history, limit=limit, offset=offset
        )
        data = {"memories": [schemas.record_out(r) for r in records], "count": len(records), "offset": offset}
        return _result(data, schemas.records_text("Memories", data["memories"]))

    @server.tool(
        name="memory_stats",
        annotations=READ,
        structured_output=False,
        description="Counts of stored memories by tier, kind and status, token total and sessions. For diagnostics.",
    )
    async def memory_stats() -> CallToolResult:
        stats = await _in_thread(engine.stats, namespace=_ns())
        return _result(stats.model_dump(mode="json"), schemas.stats_text(stats))

    @server.tool(
        name="dump_memory",
        annotations=READ,
        structured_output=False,
        description="A human-readable listing of everything in memory (tiers, status, dates, provenance), for debugging.",
    )
    async def dump_memory(
        include_history: Annotated[
            bool, Field(description="Include superseded, archived and forgotten memories.")
        ] = True,
    ) -> CallToolResult:
        text = await _in_thread(engine.dump, namespace=_ns(), include_history=include_history)
        return _result({"dump": text}, text)


def _register_routes(server: HindsightMCP, engine: MemoryEngine) -> None:
    from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

    @server.custom_route("/health", methods=["GET"])
    async def health(request: Request) -> Response:
        """Liveness + readiness for load balancers: the store must answer."""
        try:
            await _in_thread(engine.chroma.list_namespaces)
        except Exception as exc:  # noqa: BLE001 - any store failure means "not ready"
            return JSONResponse({"status": "unavailable", "error": f"{type(exc).__name__}: {exc}"}, status_code=503)
        return JSONResponse(
            {
                "status": "ok",
                "server": SERVER_NAME,
                "embedding_model": engine.embedder.name,
                "auth": server.token_map is not None,
                "stateless": server.settings.stateless_http,
            }
        )

    @server.custom_route("/metrics", methods=["GET"])
    async def metrics(request: Request) -> Response:
        return Response(generate_latest(server.metrics.registry), media_type=CONTENT_TYPE_LATEST)


# -- process entry point --------------------------------------------------------------------------


def _protect_stdout() -> io.TextIOWrapper:
    """Reserve the real stdout for the protocol; point fd 1 at stderr for everything else.

    Libraries (and C extensions) sometimes print; one stray line on stdout corrupts the
    JSON-RPC stream of a stdio server, so nothing but the protocol may reach it.
    """
    sys.stdout.flush()
    protocol_fd = os.dup(1)
    os.dup2(2, 1)
    return io.TextIOWrapper(os.fdopen(protocol_fd, "wb"), encoding="utf-8", newline="\n")


def _is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def run(
    *,
    transport: str = "stdio",
    host: str = "127.0.0.1",
    port: int = 8765,
    namespace: str | None = None,
    tokens_file: str | None = None,
    store: str | None = None,
    chroma_url: str | None = None,
    stateless: bool = True,
    rate_limit_per_minute: float | None = None,
) -> None:
    """Start the server and block until it stops (stdin closes, or the HTTP server is stopped)."""
    if transport not in ("stdio", "http"):
        raise InvalidInputError("transport", f"{transport!r} is not 'stdio' or 'http'")
    protocol_out = _protect_stdout() if transport == "stdio" else None
    configure_logging(os.environ.get("HINDSIGHT_LOG_LEVEL", "INFO"))
    if rate_limit_per_minute is None and os.environ.get("HINDSIGHT_RATE_LIMIT"):
        rate_limit_per_minute = float(os.environ["HINDSIGHT_RATE_LIMIT"])
    token_map = load_token_map(tokens_file) if transport == "http" else None
    engine = MemoryEngine(store=store, chroma_url=chroma_url, namespace=namespace)
    server = build_server(
        engine,
        namespace=namespace,
        token_map=token_map,
        rate_limit_per_minute=rate_limit_per_minute,
        stateless=stateless,
    )
    started = time.perf_counter()
    engine.warm()
    log.info(
        "ready",
        extra={
            "fields": {
                "transport": transport,
                "namespace": None if token_map else server.namespace,  # type: ignore[attr-defined]
                "auth": token_map is not None,
                "namespaces_by_token": len(token_map or {}),
                "store": engine.settings.chroma_url or str(engine.settings.store),
                "embedding_model": engine.embedder.name,
                "warm_ms": round((time.perf_counter() - started) * 1000, 1),
                **(
                    {"url": f"http://{host}:{port}{server.settings.streamable_http_path}"}
                    if transport == "http"
                    else {}
                ),
            }
        },
    )
    try:
        if transport == "stdio":
            assert protocol_out is not None
            anyio.run(_serve_stdio, server, protocol_out)
        else:
            _serve_http(server, host, port)
    finally:
        engine.chroma.flush_access()
        log.info("stopped", extra={"fields": {"transport": transport}})


async def _serve_stdio(server: FastMCP, protocol_out: io.TextIOWrapper) -> None:
    from mcp.server.stdio import stdio_server

    async with stdio_server(stdout=anyio.wrap_file(protocol_out)) as (read_stream, write_stream):
        lowlevel = server._mcp_server
        await lowlevel.run(read_stream, write_stream, lowlevel.create_initialization_options())


def _serve_http(server: FastMCP, host: str, port: int) -> None:
    import uvicorn

    if not _is_loopback(host):
        # Behind a load balancer the Host header is the public name; DNS-rebinding protection
        # (meant for browsers reaching a localhost server) would reject every request.
        server.settings.transport_security = TransportSecuritySettings(enable_dns_rebinding_protection=False)
    app = server.streamable_http_app()
    uvicorn.run(
        app, host=host, port=port, log_level=os.environ.get("HINDSIGHT_UVICORN_LOG_LEVEL", "warning"), access_log=False
    )
