"""What a consolidated memory keeps of its sources, and what they were said on: consolidation's provenance.

A consolidated memory's ``source.members`` hold each source as it was when consolidated (its
content, session, time, kind, importance, metadata and turn ids), so it can be traced, and
read again, once the sources themselves are archived.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import Any

from ..model.records import MemoryRecord, merged_turn_ids
from .distillation import statements
from .merging import CONSOLIDATION_ORIGIN


def occasions(record: MemoryRecord) -> set[str]:
    """The sessions (or, without one, the days) a memory and the repeats merged into it were said in."""
    found = {_occasion(record.session_id, record.occurred_at.isoformat())}
    stack: list[Any] = list(record.sources)
    while stack:
        entry = stack.pop()
        if isinstance(entry, dict):
            found.add(_occasion(entry.get("session_id"), str(entry.get("occurred_at") or "")))
            stack.extend(entry.get("sources") or [])
    return found


def _occasion(session_id: Any, occurred_at: str) -> str:
    return f"session:{session_id}" if session_id else f"day:{occurred_at[:10]}"


def turn_ids(records: Iterable[MemoryRecord]) -> list[str]:
    """The turns the records came from, theirs and their merged repeats', in order, once each."""
    out: dict[str, None] = {}
    for record in records:
        out.update(dict.fromkeys(record.source.message_ids))
        stack: list[Any] = list(record.sources)
        while stack:
            entry = stack.pop(0)
            if isinstance(entry, dict):
                out.update(dict.fromkeys(merged_turn_ids(entry)))
                stack.extend(entry.get("sources") or [])
    return list(out)


def member_entry(record: MemoryRecord) -> dict[str, Any]:
    """What a consolidated memory keeps of one source: enough to trace it even once it is archived."""
    entry: dict[str, Any] = {
        "id": record.id,
        "content": record.content,
        "kind": record.kind.value,
        "importance": record.importance,
        "occurred_at": record.occurred_at.isoformat(),
        "statements": statements(record),
        "metadata": record.metadata,
        "message_ids": turn_ids([record]),
    }
    optional = {"session_id": record.session_id, "agent_id": record.agent_id}
    entry.update({k: v for k, v in optional.items() if v is not None})
    return entry


def restated(members: Sequence[MemoryRecord]) -> list[MemoryRecord]:
    """``members`` with each consolidated memory replaced by its sources' statements, as they were said.

    A fact consolidated from "An oat flat white is my usual." and two other wordings is said
    again as "Oat flat white, that's my coffee order.": that rephrases one of its sources, not
    necessarily the one wording the consolidated memory kept.
    """
    out: list[MemoryRecord] = []
    for member in members:
        said = [e for e in member.source.members if isinstance(e, dict) and e.get("content")]
        if member.source.origin != CONSOLIDATION_ORIGIN or not said:
            out.append(member)
            continue
        out.extend(
            member.model_copy(
                update={"content": str(e["content"]), "occurred_at": datetime.fromisoformat(str(e["occurred_at"]))}
            )
            for e in said
            if e.get("occurred_at")
        )
    return out


__all__ = ["member_entry", "occasions", "restated", "turn_ids"]
