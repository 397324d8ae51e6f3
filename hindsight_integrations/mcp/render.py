"""The text half of each tool result: what a model reads when it ignores the structured content.

Many MCP hosts show a model only the text of a tool result, so each one says what happened
in a few lines a model can act on (ids to update or forget, why an item was not stored).
The structured half is ``answers``' models; these functions render those same models.
"""

from __future__ import annotations

from ..core.model.records import MemoryRecord
from ..core.model.results import ConsolidationReport, NamespaceStats, RecallResult, TurnResult
from ..core.recall.context import memory_line
from ..core.upkeep.runner import UpkeepReport
from .answers import CompressOut, StoreOut


def store_text(data: StoreOut) -> str:
    """What ``store_memory`` did: stored, merged, superseded and skipped items."""
    lines = []
    if data.replayed:
        lines.append(f"request_id {data.request_id!r} was already processed; nothing new written.")
    lines.append(f"Stored {len(data.stored)} memor{'y' if len(data.stored) == 1 else 'ies'}.")
    lines.extend(f"- [{r.id}] {r.kind.value}/{r.tier.value}: {short(r.content)}" for r in data.stored)
    if data.merged:
        lines.append(f"Merged into existing: {', '.join(data.merged)}")
    if data.superseded:
        lines.append(f"Superseded (older values): {', '.join(data.superseded)}")
    if data.quarantined:
        lines.append(f"Quarantined for review (contradicts an important memory): {', '.join(data.quarantined)}")
    if data.skipped:
        lines.append(f"Not stored ({len(data.skipped)}):")
        lines.extend(f"- item {s.index}: {short(s.content)} — {s.reason}" for s in data.skipped)
    return "\n".join(lines)


def recall_text(data: RecallResult) -> str:
    """The context block and the ids of the recalled memories, best first."""
    if not data.hits:
        return f"No relevant memories for {data.query!r}."
    ids = "\n".join(
        f"- [{h.record.id}] score={h.score:.3f} {h.record.kind.value}/{h.record.tier.value}" for h in data.hits
    )
    return f"{data.context}\n\nMemory ids (best first):\n{ids}"


def turn_text(data: TurnResult) -> str:
    """The recorded turn, what was remembered from it and any compression."""
    stored = data.stored
    lines = [f"Recorded turn {data.turn.id}."]
    if stored.stored:
        lines.append("Remembered: " + "; ".join(short(r.content) for r in stored.stored))
    if stored.skipped:
        lines.append("Not remembered long-term: " + "; ".join(s.reason for s in stored.skipped))
    if data.compression:
        c = data.compression
        lines.append(f"Compressed the working window: {c.tokens_before} -> {c.tokens_after} tokens.")
    return "\n".join(lines)


def compress_text(data: CompressOut) -> str:
    """The summaries a compression wrote, or why nothing was compressed."""
    c = data.compression
    if not data.compressed or c is None:
        return "Nothing to compress: the working window is under the threshold."
    summaries = "\n".join(f"- [{s.id}] {short(s.content, 200)}" for s in c.summaries)
    return (
        f"Compressed {len(c.archived_ids)} turns into {len(c.summaries)} summaries "
        f"({c.tokens_before} -> {c.tokens_after} tokens):\n{summaries}"
    )


def consolidate_text(report: ConsolidationReport) -> str:
    """What a consolidation did (or would do): repeats merged, semantic memories created or reinforced."""
    dry = report.dry_run
    lines = [
        f"{'Dry run, nothing changed: ' if dry else ''}examined {report.examined} memories of namespace "
        f"{report.namespace}."
    ]
    if report.merged:
        lines.append(f"{'Would merge' if dry else 'Merged'} {len(report.merged)} repeats into the memory each repeats:")
        lines.extend(f"- [{m.merged}] into [{m.survivor}] (similarity {m.similarity:.3f})" for m in report.merged)
    for done, would, facts in (
        ("Created", "Would create", report.created),
        ("Reinforced", "Would reinforce", report.reinforced),
    ):
        if not facts:
            continue
        lines.append(f"{would if dry else done} {len(facts)} semantic memor{'y' if len(facts) == 1 else 'ies'}:")
        for fact in facts:
            name = f"[{fact.id}] " if fact.id else ""
            lines.append(
                f"- {name}{fact.kind.value}: {short(fact.content, 200)} (said {fact.statements} times in "
                f"{fact.occasions} sessions or days; sources {', '.join(fact.sources)})"
            )
    if report.standing:
        count = len(report.standing)
        lines.append(
            f"{count} fact{' is' if count == 1 else 's are'} said often enough and one semantic memory already "
            "(repeats merged when written), nothing to distil:"
        )
        lines.extend(
            f"- [{fact.id}] {fact.kind.value}: {short(fact.content, 200)} (said {fact.statements} times in "
            f"{fact.occasions} sessions or days)"
            for fact in report.standing
        )
    if len(lines) == 1:
        lines.append("Nothing to merge or consolidate: no fact was said often enough, in enough sessions, to distil.")
    return "\n".join(lines)


def records_text(title: str, records: list[MemoryRecord]) -> str:
    """A titled list of records, one dated line each with id, kind, tier and status."""
    if not records:
        return f"{title}: none."
    return f"{title} ({len(records)}):\n" + "\n".join(
        f"{memory_line(r)}  [{r.id}] {r.kind.value}/{r.tier.value}/{r.status.value}" for r in records
    )


def cleared_text(session_id: str, cleared: int) -> str:
    """How many live turns ``clear_working_memory`` forgot."""
    return f"Cleared {cleared} turns from session {session_id}."


def updated_text(record: MemoryRecord) -> str:
    """The memory as ``update_memory`` left it."""
    return f"Updated memory {record.id}: {record.content}"


def forgotten_text(record: MemoryRecord) -> str:
    """The memory ``forget_memory`` marked deleted."""
    return f"Forgot memory {record.id}: {record.content}"


def reviewed_text(records: list[MemoryRecord], *, accepted: bool) -> str:
    """What ``review_memory`` did: the reviewed memory, and what it made history when accepted."""
    first, *rest = records
    lines = [
        f"{'Accepted' if accepted else 'Rejected'} memory {first.id} ({first.status.value}): {short(first.content)}"
    ]
    lines.extend(f"- now history: [{r.id}] {short(r.content)}" for r in rest)
    return "\n".join(lines)


def stats_text(stats: NamespaceStats) -> str:
    """The namespace's counts, for diagnostics."""
    return (
        f"namespace {stats.namespace}: {stats.total} memories, {stats.tokens} active tokens, "
        f"{stats.sessions} sessions\n"
        f"by tier: {stats.by_tier}\nby kind: {stats.by_kind}\nby status: {stats.by_status}\n"
        f"embedding model: {stats.embedding_model}"
    )


def upkeep_text(report: UpkeepReport) -> str:
    """What ``maintain_memory`` did (or would do), step by step, with any step's error."""
    if not report.steps:
        return f"Nothing to maintain: namespace {report.namespace} holds no memories yet."
    lines = [
        f"Dry run of upkeep for {report.namespace}: nothing was changed; a real run would do this."
        if report.dry_run
        else f"Upkeep of {report.namespace} ({report.seconds:.2f} s):"
    ]
    for step in report.steps:
        if not step.ok:
            lines.append(f"- {step.step}: FAILED ({step.error}); the next steps still ran")
            continue
        done = ", ".join(f"{name} {count}" for name, count in step.counts.items())
        lines.append(f"- {step.step}: {done or 'nothing to do'} ({step.seconds:.2f} s)")
    moved = [i for step in report.steps for i in step.ids.get("archived", []) + step.ids.get("evicted", [])]
    if moved and not report.dry_run:
        lines.append(f"Moved to cold storage (restorable): {', '.join(moved[:20])}{' …' if len(moved) > 20 else ''}")
    return "\n".join(lines)


def short(text: str, limit: int = 120) -> str:
    """``text`` on one line, cut to ``limit`` characters with an ellipsis."""
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


__all__ = [
    "cleared_text",
    "compress_text",
    "consolidate_text",
    "forgotten_text",
    "recall_text",
    "records_text",
    "short",
    "stats_text",
    "store_text",
    "turn_text",
    "updated_text",
    "upkeep_text",
]
