"""The memory tools of the MCP server: one function per tool, each a thin translation onto one engine method.

A tool function takes the call (``ToolCall``: the server and the caller's namespace) and its
arguments model from ``wire``, runs its engine method in a worker thread (embedding and Chroma
I/O block, and the event loop must keep serving), and answers with an ``answers`` model and its
text rendering (``render``). ``TOOLS`` lists them in the order the server lists them; what a
model reads of each (description, hints, parameters) is declared on its arguments model.

``store_memory`` is the one tool whose parameters are not exactly its arguments model: a single
memory is given with ``MemoryItem``'s fields beside ``StoreMemoryArgs``' own, or a batch with
``memories`` (``StoreRequest``).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from mcp.types import CallToolResult
from starlette.concurrency import run_in_threadpool

from ..core.errors import InvalidInputError
from ..core.model.inputs import MemoryItem
from . import render
from .answers import (
    ClearedOut,
    CompressOut,
    DumpOut,
    ForgottenOut,
    ListOut,
    MemoryOut,
    RecallOut,
    ReviewOut,
    StoreOut,
    TurnOut,
    WorkingOut,
)
from .tool_table import Tool, ToolCall, parameters, tool_result
from .wire import (
    MAX_BATCH,
    SINGLE_MEMORY_DESCRIPTIONS,
    ClearWorkingMemoryArgs,
    CompressMemoryArgs,
    ConsolidateMemoryArgs,
    DumpMemoryArgs,
    ForgetMemoryArgs,
    GetWorkingMemoryArgs,
    ListMemoriesArgs,
    MaintainMemoryArgs,
    MemoryStatsArgs,
    RecordTurnArgs,
    RetrieveMemoryArgs,
    ReviewMemoryArgs,
    StoreMemoryArgs,
    UpdateMemoryArgs,
)


@dataclass(frozen=True)
class StoreRequest:
    """``store_memory``'s arguments: its own options and the memories, one (``content``...) or a batch."""

    options: StoreMemoryArgs
    items: list[dict[str, Any]]

    @classmethod
    def parse(cls, arguments: dict[str, Any]) -> StoreRequest:
        """Either ``content`` with the single-memory fields or ``memories`` (at most ``MAX_BATCH``), not both.

        A single-memory field beside ``memories`` (a ``session_id`` or ``ttl_seconds`` meant for the
        whole batch) is refused: no item would get it, and storing the batch without it loses it unsaid.
        """
        options = StoreMemoryArgs.model_validate({k: arguments[k] for k in StoreMemoryArgs.model_fields})
        single = {k: v for k, v in arguments.items() if k not in StoreMemoryArgs.model_fields and v is not None}
        memories = options.memories
        if ("content" in single) == (memories is not None):
            raise InvalidInputError(
                "content", "give either `content` (one memory) or `memories` (a batch), not both or neither"
            )
        if memories is None:
            return cls(options, [MemoryItem.model_validate(single).model_dump(exclude_none=True)])
        # FastMCP fills in the defaults of the parameters left out: those were not given.
        beside = sorted(k for k, v in single.items() if v != MemoryItem.model_fields[k].default)
        if beside:
            field = beside[0]
            raise InvalidInputError(
                field, f"applies to one memory given with `content`; with `memories`, put `{field}` inside each item"
            )
        if not memories:
            raise InvalidInputError("memories", "is empty; give at least one memory")
        if len(memories) > MAX_BATCH:
            raise InvalidInputError(
                "memories",
                f"has {len(memories)} items; the limit is {MAX_BATCH} per call. Split the batch into "
                f"calls of at most {MAX_BATCH} memories, each with its own request_id",
            )
        return cls(options, [m.model_dump(exclude_none=True) for m in memories])


async def store_memory(call: ToolCall, arguments: dict[str, Any]) -> CallToolResult:
    """Store one memory or a batch; a repeated ``request_id`` replays the first answer."""
    request = StoreRequest.parse(arguments)
    options = request.options
    result = await run_in_threadpool(
        call.engine.store_memories,
        request.items,
        namespace=call.namespace,
        apply_filter=options.apply_filter,
        dedup=options.dedup,
        supersede=options.supersede,
        request_id=options.request_id,
        origin="mcp",
    )
    if not result.replayed:
        call.host.metrics.memories_written.inc(len(result.stored))
        call.host.metrics.memories_superseded.inc(len(result.superseded))
    data = StoreOut(**dict(result), request_id=options.request_id)
    return tool_result(data, render.store_text(data))


async def retrieve_memory(call: ToolCall, args: RetrieveMemoryArgs) -> CallToolResult:
    """Recall for a query: the memories best first and the dated context block; recall health in the metrics."""
    started = time.perf_counter()
    result = await run_in_threadpool(
        call.engine.recall,
        args.query,
        namespace=call.namespace,
        top_k=args.top_k,
        min_score=args.min_score,
        filters=args.filters,
        token_budget=args.token_budget,
        weights=args.weights,
        include_history=args.include_history,
        touch=args.touch,
    )
    metrics = call.host.metrics
    metrics.recall_latency.observe(time.perf_counter() - started)
    metrics.recall_requests.inc()
    if result.hits:
        metrics.recall_hits.inc()
    data = RecallOut.model_validate(result, from_attributes=True)
    return tool_result(data, render.recall_text(data))


async def record_turn(call: ToolCall, args: RecordTurnArgs) -> CallToolResult:
    """Append a turn to its session's working memory (what is durable in it is remembered)."""
    result = await run_in_threadpool(
        call.engine.record_turn,
        args.content,
        session_id=args.session_id,
        role=args.role,
        namespace=call.namespace,
        occurred_at=args.occurred_at,
        metadata=args.metadata,
        speaker=args.speaker,
    )
    data = TurnOut.model_validate(result, from_attributes=True)
    return tool_result(data, render.turn_text(data))


async def get_working_memory(call: ToolCall, args: GetWorkingMemoryArgs) -> CallToolResult:
    """A session's live turns, oldest first."""
    turns = await run_in_threadpool(call.engine.working_window, session_id=args.session_id, namespace=call.namespace)
    data = WorkingOut(session_id=args.session_id, turns=turns, tokens=sum(t.token_count for t in turns))
    return tool_result(data, render.records_text(f"Working memory of session {args.session_id}", data.turns))


async def clear_working_memory(call: ToolCall, args: ClearWorkingMemoryArgs) -> CallToolResult:
    """Forget a session's live turns."""
    cleared = await run_in_threadpool(call.engine.clear_working, session_id=args.session_id, namespace=call.namespace)
    data = ClearedOut(session_id=args.session_id, cleared=cleared)
    return tool_result(data, render.cleared_text(args.session_id, cleared))


async def compress_memory(call: ToolCall, args: CompressMemoryArgs) -> CallToolResult:
    """Summarise the oldest turns of a session; nothing when its window is under the threshold."""
    result = await run_in_threadpool(
        call.engine.compress,
        session_id=args.session_id,
        namespace=call.namespace,
        threshold_tokens=args.threshold_tokens,
        force=args.force,
    )
    data = CompressOut(session_id=args.session_id, compressed=result is not None, compression=result)
    return tool_result(data, render.compress_text(data))


async def consolidate_memory(call: ToolCall, args: ConsolidateMemoryArgs) -> CallToolResult:
    """Merge repeats and distil facts said again and again; the engine's report is the answer."""
    report = await run_in_threadpool(call.engine.consolidate, call.namespace, dry_run=args.dry_run)
    return tool_result(report, render.consolidate_text(report))


async def update_memory(call: ToolCall, args: UpdateMemoryArgs) -> CallToolResult:
    """Change the given fields of a memory."""
    record = await run_in_threadpool(
        call.engine.update,
        args.id,
        namespace=call.namespace,
        content=args.content,
        importance=args.importance,
        kind=args.kind,
        metadata=args.metadata,
        ttl_seconds=args.ttl_seconds,
    )
    return tool_result(MemoryOut(memory=record), render.updated_text(record))


async def forget_memory(call: ToolCall, args: ForgetMemoryArgs) -> CallToolResult:
    """Mark a memory deleted (kept for audit)."""
    record = await run_in_threadpool(call.engine.forget, args.id, namespace=call.namespace)
    return tool_result(ForgottenOut(memory=record), render.forgotten_text(record))


async def review_memory(call: ToolCall, args: ReviewMemoryArgs) -> CallToolResult:
    """Accept or reject a quarantined memory."""
    records = await run_in_threadpool(call.engine.review, args.id, accept=args.accept, namespace=call.namespace)
    return tool_result(ReviewOut(memories=records), render.reviewed_text(records, accepted=args.accept))


async def list_memories(call: ToolCall, args: ListMemoriesArgs) -> CallToolResult:
    """One page of memories, newest first."""
    records = await run_in_threadpool(
        call.engine.list,
        namespace=call.namespace,
        filters=args.filters,
        include_history=args.include_history,
        limit=args.limit,
        offset=args.offset,
    )
    data = ListOut(memories=records, count=len(records), offset=args.offset)
    return tool_result(data, render.records_text("Memories", data.memories))


async def memory_stats(call: ToolCall, args: MemoryStatsArgs) -> CallToolResult:
    """The namespace's counts; the engine's ``NamespaceStats`` is the answer."""
    stats = await run_in_threadpool(call.engine.stats, namespace=call.namespace)
    return tool_result(stats, render.stats_text(stats))


async def maintain_memory(call: ToolCall, args: MaintainMemoryArgs) -> CallToolResult:
    """One upkeep run of the caller's namespace, logged and counted like a scheduled one."""
    report = await run_in_threadpool(call.engine.upkeep, call.namespace, dry_run=args.dry_run)
    call.host.record_upkeep(report, trigger="tool")
    return tool_result(report, render.upkeep_text(report))


async def dump_memory(call: ToolCall, args: DumpMemoryArgs) -> CallToolResult:
    """The engine's human-readable listing of the namespace."""
    text = await run_in_threadpool(call.engine.dump, namespace=call.namespace, include_history=args.include_history)
    return tool_result(DumpOut(dump=text), text)


TOOLS: list[Tool] = [
    Tool(
        StoreMemoryArgs.tool,
        StoreMemoryArgs.description,
        StoreMemoryArgs.hints,
        [
            *parameters(MemoryItem, optional=True, descriptions=SINGLE_MEMORY_DESCRIPTIONS),
            *parameters(StoreMemoryArgs),
        ],
        store_memory,
    ),
    Tool.of(RetrieveMemoryArgs, retrieve_memory),
    Tool.of(RecordTurnArgs, record_turn),
    Tool.of(GetWorkingMemoryArgs, get_working_memory),
    Tool.of(ClearWorkingMemoryArgs, clear_working_memory),
    Tool.of(CompressMemoryArgs, compress_memory),
    Tool.of(ConsolidateMemoryArgs, consolidate_memory),
    Tool.of(UpdateMemoryArgs, update_memory),
    Tool.of(ForgetMemoryArgs, forget_memory),
    Tool.of(ReviewMemoryArgs, review_memory),
    Tool.of(ListMemoriesArgs, list_memories),
    Tool.of(MemoryStatsArgs, memory_stats),
    Tool.of(MaintainMemoryArgs, maintain_memory),
    Tool.of(DumpMemoryArgs, dump_memory),
]
"""Every tool, in the order the server lists them."""


__all__ = ["TOOLS", "StoreRequest"]
