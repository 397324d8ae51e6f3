"""Context assembly (SPEC §6): the block of memories injected before a model call.

Memories are picked by score until the token budget is spent, then put in chronological
order, one dated line each, between clear markers so the model can tell remembered facts
from the live conversation.
"""

from __future__ import annotations

from collections.abc import Sequence

from .records import MemoryRecord, Status
from .tokens import TokenCounter, estimate_tokens

CONTEXT_HEADER = "### Relevant memories from earlier conversations (oldest first)"
CONTEXT_FOOTER = "### End of memories. The current conversation follows."


def memory_line(record: MemoryRecord) -> str:
    line = f"- ({record.occurred_at.date().isoformat()}) {record.content.strip()}"
    if record.status is Status.SUPERSEDED:
        until = record.valid_until.date().isoformat() if record.valid_until else "later"
        line += f" [superseded on {until}]"
    return line


def select_within_budget(
    records: Sequence[MemoryRecord], budget: int | None, counter: TokenCounter | None = None
) -> list[MemoryRecord]:
    """Keep records in the given (score) order while their lines fit ``budget`` tokens."""
    count = counter.count if counter else estimate_tokens
    if budget is None:
        return list(records)
    used = count(CONTEXT_HEADER) + count(CONTEXT_FOOTER)
    chosen = []
    for record in records:
        cost = count(memory_line(record))
        if used + cost > budget:
            continue
        chosen.append(record)
        used += cost
    return chosen


def format_context(records: Sequence[MemoryRecord]) -> str:
    """The injected block: chronological, dated, fenced. Empty string when nothing was recalled."""
    if not records:
        return ""
    ordered = sorted(records, key=lambda r: r.occurred_at)
    return "\n".join([CONTEXT_HEADER, *(memory_line(r) for r in ordered), CONTEXT_FOOTER])
