"""Habits: one activity done again and again becomes one semantic memory of the habit.

"Swam 40 lengths at the leisure centre pool tonight.", "Back at the pool after work, 36
lengths." and two more evenings are four episodes (events), each with its own values, so
consolidation's facts (``consolidation.py``: the same values in every member) never join them,
and a question about the habit finds four scattered moments or nothing. Here episodes join when
they are close to the group's centroid (``clustering.loose_threshold``: two evenings at the pool
are less alike than two wordings of one fact), about the same people, neither denying what the other
says, and share a term with every member that is no speaker, value or time word ("tonight",
"every evening" alone is no activity: ``sameness.meaning_terms``). A group done on
``consolidation_min_members`` different days or more becomes a semantic memory saying how
often, since when and until when, in the episodes' own words (the first and the latest quoted;
extractive, so no value is invented) or, with an LLM configured, in the one sentence it distils
from them (``distillation.py``, which refuses a sentence naming a value no episode has); its
provenance names every episode and recall returns it in their place. A later episode of the
same activity reinforces the habit, whose text is written again with the new count.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from ..language.rules import every
from ..language.sameness import compare, share_a_topic
from ..model.records import Kind, MemoryRecord, Tier
from ..model.reserved import HABIT_KEY  # marks a consolidated memory as a habit
from .merging import CONSOLIDATION_ORIGIN, mergeable


def is_episode(record: MemoryRecord, now: datetime) -> bool:
    """Something done by now, still current, not yet part of a habit or a fact.

    An episodic event or fact, expired or not: "Swam 40 lengths tonight." expires as a plan for
    the evening a few days on, and is still an evening at the pool.
    """
    return (
        mergeable(record)
        and record.tier is Tier.EPISODIC
        and record.kind in (Kind.EVENT, Kind.FACT)
        and record.occurred_at <= now
        and record.valid_until is None
    )


def is_habit(record: MemoryRecord, now: datetime) -> bool:
    """A habit memory consolidation made, still current."""
    return record.source.origin == CONSOLIDATION_ORIGIN and HABIT_KEY in record.metadata and record.is_valid(now)


def same_activity(members: Sequence[MemoryRecord], record: MemoryRecord) -> bool:
    """Whether ``record`` is another episode of what ``members`` did (see the module docstring)."""
    negations = every().words("negations")
    for member in members:
        same = compare(member, record)
        if not same.comparable or same.disjoint_entities or same.different_subjects or same.flipped & negations:
            return False  # "again" is no other activity; "didn't swim" is
        if not share_a_topic(member, record):
            return False
    return True


def days_done(members: Sequence[MemoryRecord]) -> int:
    """On how many different days the episodes (and a habit's own episodes) happened."""
    return len(_days(members))


def _days(members: Sequence[MemoryRecord]) -> list[str]:
    found: set[str] = set()
    for member in members:
        found.add(member.occurred_at.date().isoformat())
        for entry in member.source.members:
            if isinstance(entry, dict) and entry.get("occurred_at"):
                found.add(str(entry["occurred_at"])[:10])
    return sorted(found)


def habit_text(episodes: Sequence[MemoryRecord], statement: str | None = None) -> str:
    """How often, from when to when, and ``statement`` (an LLM's) or the first and latest episode in their words."""
    ordered = sorted(episodes, key=lambda m: m.occurred_at)
    days = _days(ordered)
    first, last = datetime.fromisoformat(days[0]), datetime.fromisoformat(days[-1])
    every = (last - first).days / max(1, len(days) - 1)
    quoted = [ordered[0]] if len(ordered) == 1 else [ordered[0], ordered[-1]]
    words = statement or " … ".join(f"({m.occurred_at.date().isoformat()}) {m.content.strip()}" for m in quoted)
    return f"Done on {len(days)} days from {days[0]} to {days[-1]}, about every {every:.0f} days: {words}"


def episodes_of(habit: MemoryRecord, members: Sequence[MemoryRecord]) -> list[MemoryRecord]:
    """The episodes a habit was made of (as records, from its provenance) and the new ``members``."""
    kept = [
        MemoryRecord(
            namespace=habit.namespace,
            content=str(entry.get("content") or ""),
            occurred_at=datetime.fromisoformat(str(entry["occurred_at"])),
        )
        for entry in habit.source.members
        if isinstance(entry, dict) and entry.get("occurred_at")
    ]
    return [*kept, *members]


__all__ = [
    "HABIT_KEY",
    "days_done",
    "episodes_of",
    "habit_text",
    "is_episode",
    "is_habit",
    "same_activity",
]
