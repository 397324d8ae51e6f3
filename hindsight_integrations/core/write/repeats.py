"""Which new memory is a repeat of a stored one, and how a repeat reinforces it (docs/architecture.md, "Writing").

Embedding similarity alone cannot tell a repeat from a different fact: "meeting on Tuesday at
3pm" and "meeting on Thursday at 3pm" are 0.97 apart for MiniLM, and so are two invoices that
differ only in their number and amount. A new memory is a repeat only when its normalised text
equals the stored one's, or when it is near-identical in meaning *and* carries the same values
(numbers, dates, weekdays, amounts, codes, names): ``language.sameness.compare`` says.

A repeat never rewrites the stored memory's content or metadata. It reinforces it (importance
is the higher of the two, the access count grows by one) and is appended to its ``sources``:
every merged input with its own content, metadata, times and provenance, so a merge can be
undone from the record alone (``split_source``).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from ..language.sameness import compare, names_someone_new, substituted
from ..model.records import MemoryRecord


def is_repeat(existing: MemoryRecord, new: MemoryRecord, similarity: float, threshold: float) -> bool:
    """Whether ``new`` says what ``existing`` says: the same text, or the same meaning with the same values.

    The same meaning also needs the same negations and qualifiers ("I am allergic" and "I am no
    longer allergic" are 0.94 apart), the same people (我老婆不吃猪肉 is not 我不吃猪肉, 0.985 with
    e5), each doing what it did to the same people ("My mom visits us" is not "We visit my mom"),
    no change the other way (之前用 MySQL，现在换成了 MongoDB / 之前用 MongoDB，现在换成了 MySQL)
    and no word replaced ("before work" / "after work", 0.985 with MiniLM; 甜 / 咸豆腐脑, 0.99
    with e5); memories of different slots are never repeats.
    """
    same = compare(existing, new)
    if not same.comparable or same.different_slots:
        return False
    if same.same_text:
        return True
    return (
        similarity >= threshold
        and same.same_polarity
        and same.same_values
        and not same.different_subjects
        and not same.swapped_roles
        and not same.opposite_changes
        and not names_someone_new(existing.content, new.content)
        and not substituted(existing.content, new.content)
    )


def source_entry(record: MemoryRecord, now: datetime) -> dict[str, Any]:
    """What is kept of a merged input: enough to restore it as a memory of its own."""
    entry: dict[str, Any] = {
        "content": record.content,
        "merged_at": now.isoformat(),
        "occurred_at": record.occurred_at.isoformat(),
        "kind": record.kind.value,
        "role": record.role.value,
        "importance": record.importance,
        "metadata": record.metadata,
        "source": record.source.model_dump(mode="json", exclude_defaults=True),
    }
    optional = {
        "session_id": record.session_id,
        "agent_id": record.agent_id,
        "request_id": record.request_id,
        "context": record.context,
        "entities": record.entities or None,
    }
    entry.update({k: v for k, v in optional.items() if v is not None})
    return entry


def reinforce(existing: MemoryRecord, repeat: MemoryRecord, now: datetime) -> MemoryRecord:
    """``existing`` strengthened by ``repeat``: its own content and metadata untouched, the repeat in ``sources``.

    Never dated before ``existing`` was created (a clock that stepped back, a memory imported
    from a clock ahead): a record's ``updated_at`` never precedes its ``created_at``.
    """
    at = max(now, existing.created_at)
    return existing.model_copy(
        update={
            "importance": max(existing.importance, repeat.importance),
            "access_count": existing.access_count + 1,
            "last_accessed_at": at,
            "updated_at": at,
            "entities": sorted(set(existing.entities) | set(repeat.entities)),
            "sources": [*existing.sources, source_entry(repeat, at)],
        }
    )


__all__ = ["is_repeat", "reinforce", "source_entry"]
