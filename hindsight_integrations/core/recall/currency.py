"""Which of several recalled memories holds the current value, when the write path left them all current.

The write path makes an old value history when it can tell that a new statement replaces it
(``write/supersede.py``); when it cannot ("Our CI runs on Jenkins." then "We migrated CI from
Jenkins to GitHub Actions last sprint.": no slot names CI), both stay active and the older,
lexically closer to "What does our CI run on?", ranks first. At recall the question has picked
both, so what is left to tell is whether the later one announces a change of what the earlier
one says: it carries a change cue, is about the same subject and names a value the earlier one
names (Jenkins), or sets the same slot. Sharing only words is not enough: "I live in Paris
now." does not change "My brother lives in Lyon.". Then the later one is moved just above the
earlier one, and the context block marks the earlier one as changed since, whatever their scores.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import date

from ..language.keys import read
from ..language.sameness import compare
from ..language.values import values_of
from ..model.records import MemoryRecord
from ..model.results import RecallHit


def _changes(earlier: MemoryRecord, later: MemoryRecord) -> bool:
    """Whether ``later`` announces a change of what ``earlier`` says (see the module docstring)."""
    if later.occurred_at <= earlier.occurred_at or not read(later.content).change_cue:
        return False
    same = compare(earlier, later)
    if not same.comparable or same.disjoint_entities or same.different_subjects:
        return False
    if earlier.slot and later.slot:
        return not same.different_slots
    return bool(values_of(earlier.content) & values_of(later.content))


def current_first(hits: Sequence[RecallHit]) -> tuple[list[RecallHit], dict[str, date]]:
    """``hits`` with each memory that announces a change ranked just above the ones it changes.

    Also returns, for each memory changed since, the date of the memory that changed it (the
    context block says so). Only memories both returned for the question are compared: a few
    dozen pairs at most.
    """
    ordered = list(hits)
    changed: dict[str, date] = {}
    for later in list(ordered):
        changes = [hit for hit in ordered if hit is not later and _changes(hit.record, later.record)]
        for hit in changes:
            changed.setdefault(hit.record.id, later.record.occurred_at.date())
        position = ordered.index(later)
        above = [ordered.index(hit) for hit in changes if ordered.index(hit) < position]
        if above:
            ordered.insert(min(above), ordered.pop(position))
    return ordered, changed


__all__ = ["current_first"]
