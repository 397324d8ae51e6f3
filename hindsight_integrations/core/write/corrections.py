"""Corrections and reversals that name no attribute: which stored memory they are about.

Two ways people update a fact without saying what it is about, both missed by slot rules and
by close meaning alone (found by ``hindsight bench lifecycle``):

* **A bare correction**: "Actually it's +351 912 345 687, I mixed up the last two digits" after
  "My new phone number is +351 912 345 678". It names no attribute, and its cosine with the
  number it corrects is far below the update threshold. What it does carry is a value of the
  same *shape* as a recent attribute's value, so it takes the slot of the latest memory that
  has one (``inherited_slot``): a phone number or an e-mail address by its shape alone; a
  plain number or a time only with the same unit or a word in common ("Actually, I have 2
  kids" must not take the budget's slot from "My budget is $300").
* **A reversal**: "I'm no longer allergic to peanuts" against "I'm allergic to peanuts": the
  same words but for a negation, which a small embedding model scores well under the update
  threshold (``language.sameness.reverses``).

The keys both rest on (value shapes, topic words, negations) are the language layer's
(``language.keys``); this module holds what a write does with them.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..language.keys import read, topic_words
from ..language.values import values_of
from ..model.records import MemoryRecord

_IDENTIFYING = frozenset({"phone", "email"})  # shapes that say which attribute they belong to


def inherited_slot(correction: MemoryRecord, latest_first: Sequence[MemoryRecord]) -> str | None:
    """The slot a correction without one is about: that of the latest memory holding a value of its shape.

    ``latest_first`` are the namespace's active memories that have a slot, most recent first.
    A correction without a value of an attribute's shape ("Actually, I meant the other one")
    is left alone, and so is one whose value is already there (nothing to correct).
    """
    shapes = read(correction.content).shapes
    if not shapes:
        return None
    values = values_of(correction.content)
    words = topic_words(correction.content)
    for memory in latest_first:
        shared = shapes & read(memory.content).shapes
        if not memory.slot or not shared or values <= values_of(memory.content):
            continue
        if shared & _IDENTIFYING or _units(values) & _units(values_of(memory.content)):
            return memory.slot
        if words & topic_words(memory.content):
            return memory.slot
    return None


def _units(values: frozenset[str]) -> frozenset[str]:
    """The words among a text's values (currencies, units: "eur", "km"), not its numbers or names."""
    return frozenset(v for v in values if v.isalpha() and len(v) <= 4 and v.islower())


__all__ = ["inherited_slot"]
