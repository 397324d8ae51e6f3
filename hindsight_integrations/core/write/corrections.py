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
  threshold (``reverses``).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from ..language.text import STOPWORDS, lexical_tokens
from ..language.values import values_of
from ..model.records import MemoryRecord
from .conversation import without_speaker
from .repeats import polarity

_EMAIL = re.compile(r"^[^@\s]+@[^@\s]+\.\w+$")
_LONG_DIGITS = re.compile(r"^\d{7,}$")  # how ``values`` normalises a phone number
_NUMBER = re.compile(r"^\d+(?:\.\d+)?$")
_CLOCK = re.compile(r"^\d{1,2}:\d{2}$")
_IDENTIFYING = frozenset({"phone", "email"})  # shapes that say which attribute they belong to
_NEGATED_EN = re.compile(r"n[’']t\b", re.IGNORECASE)
_NEGATED_ZH = re.compile(r"不再|不|没有|没")  # no spaces between CJK words: removed, not blanked
# Words that only turn a statement around or hedge it: not what the statement is about.
_REVERSAL_WORDS = frozenset(
    {"no", "longer", "not", "never", "any", "more", "anymore", "again", "don", "doesn", "didn", "isn", "aren"}
)
NEGATIONS = frozenset({"no longer", "not", "n't", "never", "anymore", "any more", "不再", "不", "没"})
"""Negations that turn a statement around (``dedup.polarity`` finds them)."""


def value_shapes(text: str) -> frozenset[str]:
    """The kinds of value ``text`` carries that an attribute holds: phone, e-mail, number, clock time."""
    shapes = set()
    for value in values_of(text):
        if _LONG_DIGITS.match(value):
            shapes.add("phone")
        elif _EMAIL.match(value):
            shapes.add("email")
        elif _CLOCK.match(value):
            shapes.add("clock")
        elif _NUMBER.match(value):
            shapes.add("number")
    return frozenset(shapes)


def inherited_slot(correction: MemoryRecord, latest_first: Sequence[MemoryRecord]) -> str | None:
    """The slot a correction without one is about: that of the latest memory holding a value of its shape.

    ``latest_first`` are the namespace's active memories that have a slot, most recent first.
    A correction without a value of an attribute's shape ("Actually, I meant the other one")
    is left alone, and so is one whose value is already there (nothing to correct).
    """
    shapes = value_shapes(correction.content)
    if not shapes:
        return None
    values = values_of(correction.content)
    words = _content_words(correction.content)
    for memory in latest_first:
        shared = shapes & value_shapes(memory.content)
        if not memory.slot or not shared or values <= values_of(memory.content):
            continue
        if shared & _IDENTIFYING or _units(values) & _units(values_of(memory.content)):
            return memory.slot
        if words & _content_words(memory.content):
            return memory.slot
    return None


def _units(values: frozenset[str]) -> frozenset[str]:
    """The words among a text's values (currencies, units: "eur", "km"), not its numbers or names."""
    return frozenset(v for v in values if v.isalpha() and len(v) <= 4 and v.islower())


def _content_words(text: str) -> frozenset[str]:
    """What a statement is about: its words without the speaker, stopwords and negations."""
    words = lexical_tokens(_NEGATED_ZH.sub("", _NEGATED_EN.sub(" ", without_speaker(text).lower())))
    return frozenset(w for w in words if w not in STOPWORDS and w not in _REVERSAL_WORDS)


def reverses(old: str, new: str) -> bool:
    """Whether ``new`` says ``old`` turned around: the same content words, a negation on one side only.

    "I'm no longer allergic to peanuts" reverses "Lena: I'm allergic to peanuts"; "I'm not
    allergic to cats" does not reverse "I'm allergic to peanuts" (other words).
    """
    flipped = polarity(old) ^ polarity(new)
    if not flipped & NEGATIONS:
        return False
    before, after = _content_words(old), _content_words(new)
    return bool(before) and before == after


def negated(text: str) -> bool:
    """Whether ``text`` carries a negation (``NEGATIONS``): one side of a possible reversal."""
    return bool(polarity(text) & NEGATIONS)


def reversal_key(text: str) -> int:
    """A hash of what ``text`` is about (its content words), equal for the two sides of a reversal.

    ``reverses`` needs the same content words on both sides, so a write compares these keys
    (and ``negated``) on the facts index before it reads any neighbour; 0 for a text without
    content words.
    """
    words = _content_words(text)
    return hash(tuple(sorted(words))) if words else 0


__all__ = ["NEGATIONS", "inherited_slot", "negated", "reversal_key", "reverses", "value_shapes"]
