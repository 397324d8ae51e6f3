"""The memory tools of the MCP server, each a thin translation onto one engine method.

A tool's parameters are generated from its arguments model in ``wire`` (``parameters``), so
the server, the client and the JSON schema a model reads come from one declaration; the
single-memory parameters of ``store_memory`` are ``MemoryItem``'s fields, the model of one
item of its batch. FastMCP validates the arguments against that generated signature (coercing
what models get wrong: ``"3"`` for a number, ``"false"`` for a boolean, a JSON string for an
object), the engine works in a worker thread so the event loop keeps serving, and the
answer is a ``wire`` result model with its text rendering (``render``).
"""

from __future__ import annotations

import functools
import inspect
import time
from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Annotated, Any, TypeVar, get_args

import anyio
from mcp.server.fastmcp.utilities.func_metadata import FuncMetadata
from mcp.types import CallToolResult, TextContent, ToolAnnotations
from pydantic import BaseModel, Field

from ..core.errors import InvalidInputError
from ..core.model.inputs import MemoryItem
from . import render
from .auth import current_namespace
from .wire import (
    MAX_BATCH,
    SINGLE_MEMORY_DESCRIPTIONS,
    ClearedOut,
    ClearWorkingMemoryArgs,
    CompressMemoryArgs,
    CompressOut,
    ConsolidateMemoryArgs,
    DumpMemoryArgs,
    DumpOut,
    ForgetMemoryArgs,
    ForgottenOut,
    GetWorkingMemoryArgs,
    ListMemoriesArgs,
    ListOut,
    MaintainMemoryArgs,
    MemoryOut,
    MemoryStatsArgs,
    RecallOut,
    RecordTurnArgs,
    RetrieveMemoryArgs,
    ReviewMemoryArgs,
    ReviewOut,
    StoreMemoryArgs,
    StoreOut,
    ToolArgs,
    TurnOut,
    UpdateMemoryArgs,
    WorkingOut,
)

if TYPE_CHECKING:
    from ..core.engine import MemoryEngine
    from .server import HindsightMCP

T = TypeVar("T")
A = TypeVar("A", bound=ToolArgs)

READ = ToolAnnotations(readOnlyHint=True, openWorldHint=False)
WRITE = ToolAnnotations(readOnlyHint=False, destructiveHint=False, idempotentHint=False, openWorldHint=False)
IDEMPOTENT_WRITE = ToolAnnotations(readOnlyHint=False, destructiveHint=False, idempotentHint=True, openWorldHint=False)

STORE_DESCRIPTION = (
    'Save durable information about the user for future conversations: preferences ("I prefer metric units"), '
    "facts about them or their work, corrections of earlier facts, decisions and plans. Write each memory as a "
    "self-contained sentence. Do NOT store greetings, thanks or small talk (they are filtered out and reported as "
    f"skipped). Give one memory with `content`, or several at once with `memories` (max {MAX_BATCH} per call). "
    "Pass a `request_id` you generate: retrying with the same request_id never stores twice. "
    "Returns the stored ids, and any items not stored with the reason. Leave `apply_filter`, `dedup` and `supersede` "
    "at their defaults unless the user explicitly asked you to remember this exact text."
)
RETRIEVE_DESCRIPTION = (
    "Look up what you know about the user from earlier conversations. Call it before answering whenever the "
    "answer could depend on their preferences, history, projects or past decisions, and when they ask "
    '"do you remember…". Phrase `query` as the question you need answered. Returns the best memories (with id, '
    "score, tier, kind, date) and `context`: a dated block ready to use in your answer."
)
RECORD_TURN_DESCRIPTION = (
    "Append one conversation turn to the session's working memory. Durable facts in it are remembered "
    "long-term automatically, and old turns are summarised when the window grows too long. "
    "Used by agent frameworks after each message; returns the turn id, what was remembered and any compression."
)
MAINTAIN_DESCRIPTION = (
    "Tidy this user's memory now: summarise conversations whose live window grew past its limit, merge "
    "repeated memories and distil facts said in several sessions into lasting ones (this may call the "
    "server's LLM), lower the weight of memories not recalled for 30 days, and move stale unimportant ones "
    "(and any over the tier limits) to cold storage, from where they can be restored; preferences and "
    "corrections are never moved. An HTTP server also does this on a schedule, so call it only when the "
    "user asks to clean up or tidy their memory, or with dry_run=true to preview what would change. "
    "Returns what each step did, with ids."
)
COMPRESS_DESCRIPTION = (
    "Summarise the oldest turns of a long conversation into compact episodic memories, freeing context. "
    "Call when the conversation is getting long; raw turns are archived, not deleted."
)

CONSOLIDATE_DESCRIPTION = (
    "Tidy long-term memory: merge duplicate memories, and distil facts and preferences the user stated "
    "several times, in different conversations, into one lasting (semantic) memory that names its sources. "
    "Sources are kept, not deleted; running it again adds nothing. Upkeep, not for every turn; "
    "dry_run=true only reports what it would do."
)


async def in_thread(fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    """Run a blocking engine call off the event loop (embedding and Chroma I/O block)."""
    return await anyio.to_thread.run_sync(functools.partial(fn, *args, **kwargs))


def call_namespace() -> str:
    """The namespace ``HindsightMCP.call_tool`` bound to this call."""
    namespace = current_namespace.get()
    if namespace is None:  # only reachable if a tool is invoked outside HindsightMCP.call_tool
        raise InvalidInputError("namespace", "no namespace bound to this call")
    return namespace


def tool_result(data: BaseModel, text: str) -> CallToolResult:
    """A tool's answer: ``data`` as structured content and ``text`` for hosts that show only text."""
    return CallToolResult(content=[TextContent(type="text", text=text)], structuredContent=data.model_dump(mode="json"))


def parameters(
    model: type[BaseModel], *, optional: bool = False, descriptions: Mapping[str, str] | None = None
) -> list[inspect.Parameter]:
    """Keyword parameters with ``model``'s fields: types, validators, constraints and descriptions.

    ``optional`` makes every field without a plain default optional (None), as for the
    single-memory parameters of ``store_memory``, where ``memories`` may be given instead;
    ``descriptions`` replaces the descriptions that read differently there.
    """
    out = []
    for name, field in model.model_fields.items():
        annotation: Any = field.annotation
        default: Any = field.default
        if optional and (field.is_required() or field.default_factory is not None):
            annotation, default = annotation | None, None
        elif field.is_required():
            default = inspect.Parameter.empty
        elif field.default_factory is not None:
            raise ValueError(f"{model.__name__}.{name}: a tool parameter needs a plain default, not a factory")
        description = (descriptions or {}).get(name, field.description)
        annotated = Annotated[(annotation, *field.metadata, Field(description=description))]
        out.append(inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, annotation=annotated, default=default))
    return out


class GeneratedTool:
    """A tool function whose signature is generated from models rather than written out.

    FastMCP builds a tool's argument validation and JSON schema from its function's
    signature, and ``inspect.signature`` honours ``__signature__``; ``call`` receives the
    validated arguments by name.
    """

    def __init__(
        self, name: str, params: list[inspect.Parameter], call: Callable[[dict[str, Any]], Awaitable[CallToolResult]]
    ) -> None:
        self.__name__ = name
        self.__signature__ = inspect.Signature(params, return_annotation=CallToolResult)
        self._call = call

    async def __call__(self, **arguments: Any) -> CallToolResult:
        """Run the tool on arguments FastMCP has validated against the signature."""
        return await self._call(arguments)


class _TextArgumentsKept(FuncMetadata):
    """FastMCP's argument handling, except that the argument of a text parameter is never read as JSON.

    FastMCP reads every string argument of a parameter not typed exactly ``str`` as JSON first
    (for clients that send lists and objects as strings). For an optional text such as
    ``store_memory``'s ``content: str | None`` that turned the text "[1, 2]" into a list and
    "null" into no content, and 32,000 digits into an int conversion past Python's digit limit:
    an internal error (security issue #24, finding 4). Lists and objects are still read.
    """

    def pre_parse_json(self, data: dict[str, Any]) -> dict[str, Any]:
        """``data`` with JSON strings of non-text parameters parsed; text arguments as they came."""
        text = {name for name, field in self.arg_model.model_fields.items() if str in get_args(field.annotation)}
        parsed = super().pre_parse_json({k: v for k, v in data.items() if k not in text})
        return {k: data[k] if k in text else parsed[k] for k in data}


def add_tool(
    server: HindsightMCP,
    name: str,
    params: list[inspect.Parameter],
    call: Callable[[dict[str, Any]], Awaitable[CallToolResult]],
    *,
    description: str,
    annotations: ToolAnnotations,
) -> None:
    """Register ``call`` as tool ``name`` with the generated signature ``params``."""
    tool = GeneratedTool(name, params, call)
    server.add_tool(tool, name=name, description=description, annotations=annotations, structured_output=False)
    registered = server._tool_manager.get_tool(name)
    if registered is not None:
        registered.fn_metadata = _TextArgumentsKept.model_construct(**dict(registered.fn_metadata))


def add_model_tool(
    server: HindsightMCP,
    model: type[A],
    handler: Callable[[A], Awaitable[CallToolResult]],
    *,
    description: str,
    annotations: ToolAnnotations,
) -> None:
    """Register ``handler`` as tool ``model.tool``, its parameters generated from ``model``."""

    async def call(arguments: dict[str, Any]) -> CallToolResult:
        return await handler(model.model_validate(arguments))

    add_tool(server, model.tool, parameters(model), call, description=description, annotations=annotations)


def register_tools(server: HindsightMCP, engine: MemoryEngine) -> None:
    """Add the memory tools to ``server``, all serving ``engine``."""
    metrics = server.metrics

    async def store_memory(arguments: dict[str, Any]) -> CallToolResult:
        options = StoreMemoryArgs.model_validate({k: arguments.pop(k) for k in StoreMemoryArgs.model_fields})
        single = {k: v for k, v in arguments.items() if v is not None}  # MemoryItem's fields
        memories = options.memories
        if ("content" in single) == (memories is not None):
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
            items = [m.model_dump(exclude_none=True) for m in memories]
        else:
            items = [MemoryItem.model_validate(single).model_dump(exclude_none=True)]
        result = await in_thread(
            engine.store_memories,
            items,
            namespace=call_namespace(),
            apply_filter=options.apply_filter,
            dedup=options.dedup,
            supersede=options.supersede,
            request_id=options.request_id,
            origin="mcp",
        )
        if not result.replayed:
            metrics.memories_written.inc(len(result.stored))
            metrics.memories_superseded.inc(len(result.superseded))
        data = StoreOut.from_result(result, options.request_id)
        return tool_result(data, render.store_text(data))

    store_params = [
        *parameters(MemoryItem, optional=True, descriptions=SINGLE_MEMORY_DESCRIPTIONS),
        *parameters(StoreMemoryArgs),
    ]
    add_tool(
        server,
        StoreMemoryArgs.tool,
        store_params,
        store_memory,
        description=STORE_DESCRIPTION,
        annotations=IDEMPOTENT_WRITE,
    )

    async def retrieve_memory(args: RetrieveMemoryArgs) -> CallToolResult:
        namespace = call_namespace()
        started = time.perf_counter()
        result = await in_thread(
            engine.recall,
            args.query,
            namespace=namespace,
            top_k=args.top_k,
            min_score=args.min_score,
            filters=args.filters,
            token_budget=args.token_budget,
            include_history=args.include_history,
        )
        metrics.recall_latency.observe(time.perf_counter() - started)
        metrics.recall_requests.inc()
        if result.hits:
            metrics.recall_hits.inc()
        data = RecallOut.from_result(result)
        return tool_result(data, render.recall_text(data))

    add_model_tool(server, RetrieveMemoryArgs, retrieve_memory, description=RETRIEVE_DESCRIPTION, annotations=READ)

    async def record_turn(args: RecordTurnArgs) -> CallToolResult:
        result = await in_thread(
            engine.record_turn,
            args.content,
            session_id=args.session_id,
            role=args.role,
            namespace=call_namespace(),
            occurred_at=args.occurred_at,
            metadata=args.metadata,
            speaker=args.speaker,
        )
        data = TurnOut.from_result(result)
        return tool_result(data, render.turn_text(data))

    add_model_tool(server, RecordTurnArgs, record_turn, description=RECORD_TURN_DESCRIPTION, annotations=WRITE)

    async def get_working_memory(args: GetWorkingMemoryArgs) -> CallToolResult:
        turns = await in_thread(engine.working_window, session_id=args.session_id, namespace=call_namespace())
        data = WorkingOut.from_result(args.session_id, turns)
        return tool_result(data, render.records_text(f"Working memory of session {args.session_id}", data.turns))

    add_model_tool(
        server,
        GetWorkingMemoryArgs,
        get_working_memory,
        description=(
            "The live (not yet summarised) turns of a conversation, oldest first. Use to rebuild a chat history."
        ),
        annotations=READ,
    )

    async def clear_working_memory(args: ClearWorkingMemoryArgs) -> CallToolResult:
        cleared = await in_thread(engine.clear_working, session_id=args.session_id, namespace=call_namespace())
        data = ClearedOut(session_id=args.session_id, cleared=cleared)
        return tool_result(data, render.cleared_text(args.session_id, cleared))

    add_model_tool(
        server,
        ClearWorkingMemoryArgs,
        clear_working_memory,
        description="Forget a conversation's live turns (e.g. the user starts over). Long-term memories are kept.",
        annotations=IDEMPOTENT_WRITE,
    )

    async def compress_memory(args: CompressMemoryArgs) -> CallToolResult:
        result = await in_thread(
            engine.compress,
            session_id=args.session_id,
            namespace=call_namespace(),
            threshold_tokens=args.threshold_tokens,
            force=args.force,
        )
        data = CompressOut.from_result(args.session_id, result)
        return tool_result(data, render.compress_text(data))

    add_model_tool(
        server, CompressMemoryArgs, compress_memory, description=COMPRESS_DESCRIPTION, annotations=IDEMPOTENT_WRITE
    )

    async def consolidate_memory(args: ConsolidateMemoryArgs) -> CallToolResult:
        report = await in_thread(engine.consolidate, call_namespace(), dry_run=args.dry_run)
        return tool_result(report, render.consolidate_text(report))

    add_model_tool(
        server,
        ConsolidateMemoryArgs,
        consolidate_memory,
        description=CONSOLIDATE_DESCRIPTION,
        annotations=IDEMPOTENT_WRITE,
    )

    async def update_memory(args: UpdateMemoryArgs) -> CallToolResult:
        record = await in_thread(
            engine.update,
            args.id,
            namespace=call_namespace(),
            content=args.content,
            importance=args.importance,
            kind=args.kind,
            metadata=args.metadata,
            ttl_seconds=args.ttl_seconds,
        )
        return tool_result(MemoryOut(memory=record), render.updated_text(record))

    add_model_tool(
        server,
        UpdateMemoryArgs,
        update_memory,
        description=(
            "Correct or adjust an existing memory by id (from retrieve_memory or list_memories). "
            "Only given fields change."
        ),
        annotations=IDEMPOTENT_WRITE,
    )

    async def forget_memory(args: ForgetMemoryArgs) -> CallToolResult:
        record = await in_thread(engine.forget, args.id, namespace=call_namespace())
        return tool_result(ForgottenOut(memory=record), render.forgotten_text(record))

    add_model_tool(
        server,
        ForgetMemoryArgs,
        forget_memory,
        description=(
            "Forget a memory by id when the user asks you to, or it is wrong. "
            "It stops being recalled (soft delete, kept for audit)."
        ),
        annotations=IDEMPOTENT_WRITE,
    )

    async def review_memory(args: ReviewMemoryArgs) -> CallToolResult:
        records = await in_thread(engine.review, args.id, accept=args.accept, namespace=call_namespace())
        return tool_result(ReviewOut(memories=records), render.reviewed_text(records, accepted=args.accept))

    add_model_tool(
        server,
        ReviewMemoryArgs,
        review_memory,
        description=(
            "Accept or reject a quarantined memory: a low-trust statement (tool output, web text, another "
            "agent) that contradicts an important memory. Only when the user has confirmed which is right."
        ),
        annotations=IDEMPOTENT_WRITE,
    )

    async def list_memories(args: ListMemoriesArgs) -> CallToolResult:
        records = await in_thread(
            engine.list,
            namespace=call_namespace(),
            filters=args.filters,
            include_history=args.include_history,
            limit=args.limit,
            offset=args.offset,
        )
        data = ListOut.from_result(records, args.offset)
        return tool_result(data, render.records_text("Memories", data.memories))

    add_model_tool(
        server,
        ListMemoriesArgs,
        list_memories,
        description=(
            "List stored memories newest first, optionally filtered (kinds, tiers, session_id, since/until). "
            "For browsing, not for answering questions: use retrieve_memory for that."
        ),
        annotations=READ,
    )

    async def memory_stats(args: MemoryStatsArgs) -> CallToolResult:
        stats = await in_thread(engine.stats, namespace=call_namespace())
        return tool_result(stats, render.stats_text(stats))

    add_model_tool(
        server,
        MemoryStatsArgs,
        memory_stats,
        description="Counts of stored memories by tier, kind and status, token total and sessions. For diagnostics.",
        annotations=READ,
    )

    async def maintain_memory(args: MaintainMemoryArgs) -> CallToolResult:
        report = await in_thread(engine.upkeep, call_namespace(), dry_run=args.dry_run)
        server.record_upkeep(report, trigger="tool")
        return tool_result(report, render.upkeep_text(report))

    add_model_tool(
        server, MaintainMemoryArgs, maintain_memory, description=MAINTAIN_DESCRIPTION, annotations=IDEMPOTENT_WRITE
    )

    async def dump_memory(args: DumpMemoryArgs) -> CallToolResult:
        text = await in_thread(engine.dump, namespace=call_namespace(), include_history=args.include_history)
        return tool_result(DumpOut(dump=text), text)

    add_model_tool(
        server,
        DumpMemoryArgs,
        dump_memory,
        description=(
            "A human-readable listing of everything in memory (tiers, status, dates, provenance), for debugging."
        ),
        annotations=READ,
    )


__all__ = [
    "IDEMPOTENT_WRITE",
    "READ",
    "WRITE",
    "GeneratedTool",
    "add_model_tool",
    "add_tool",
    "call_namespace",
    "in_thread",
    "parameters",
    "register_tools",
    "tool_result",
]
