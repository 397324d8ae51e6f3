"""Which new memory is a repeat of a stored one, and how a repeat reinforces it (docs/architecture.md, "Writing").

Embedding similarity alone cannot tell a repeat from a different fact: "meeting on Tuesday at
3pm" and "meeting on Thursday at 3pm" are 0.97 apart for MiniLM, and so are two invoices that
differ only in their number and amount. A new memory is a repeat only when its normalised text
equals the stored one's, or when it is near-identical in meaning *and* carries the same values
(numbers, dates, weekdays, amounts, codes, names: ``values.same_values``).

A repeat never rewrites the stored memory's content or metadata. It reinforces it (importance
is the higher of the two, the access count grows by one) and is appended to its ``sources``:
every merged input with its own content, metadata, times and provenance, so a merge can be
undone from the record alone (``split_source``).
"""

from __future__ import annotations

import re
import unicodedata
from datetime import datetime
from typing import Any

from ..language.values import same_values
from ..model.records import Kind, MemoryRecord, Tier

# Words that flip or qualify a statement without changing its embedding much: "I am allergic"
# and "I am no longer allergic" are 0.94 apart. Texts that differ in them are never repeats.
_POLARITY = re.compile(
    r"\b(no longer|any more|anymore|not|never|no|again|none|nothing|without|cancell?ed|stopped|quit|former|ex)\b"
    r"|n't|不再|不|没|别|再|取消|停",
)
_PUNCTUATION = re.compile(r"[^\w\s]", re.UNICODE)
_SPACE = re.compile(r"\s+")


def normalised(text: str) -> str:
    """Text compared for exact repeats: NFKC, lower case, punctuation dropped, spaces collapsed."""
    folded = unicodedata.normalize("NFKC", text).casefold()
    return _SPACE.sub(" ", _PUNCTUATION.sub(" ", folded)).strip()


def can_repeat(record: MemoryRecord) -> bool:
    """Turns, summaries and working memory are never deduplicated: each is its own moment."""
    return record.kind not in (Kind.TURN, Kind.SUMMARY) and record.tier is not Tier.WORKING


def is_repeat(existing: MemoryRecord, new: MemoryRecord, similarity: float, threshold: float) -> bool:
    """Whether ``new`` says what ``existing`` says: the same text, or the same meaning with the same values."""
    if not (can_repeat(existing) and can_repeat(new)):
        return False
    if existing.slot and new.slot and existing.slot != new.slot:
        return False
    if normalised(existing.content) == normalised(new.content):
        return True
    return (
        similarity >= threshold
        and polarity(existing.content) == polarity(new.content)
        and same_values(existing.content, new.content)
    )


def polarity(text: str) -> set[str]:
    """The negations and qualifiers ("no longer", "again", 不再...) a text contains."""
    return {m.group(0) for m in _POLARITY.finditer(text.lower())}


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
    """``existing`` strengthened by ``repeat``: its own content and metadata untouched, the repeat in ``sources``."""
    return existing.model_copy(
        update={
            "importance": max(existing.importance, repeat.importance),
            "access_count": existing.access_count + 1,
            "last_accessed_at": now,
            "updated_at": now,
            "entities": sorted(set(existing.entities) | set(repeat.entities)),
            "sources": [*existing.sources, source_entry(repeat, now)],
        }
    )


__all__ = ["can_repeat", "is_repeat", "normalised", "polarity", "reinforce", "source_entry"]
