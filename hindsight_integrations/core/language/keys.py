"""A text's keys: what the write path compares before it reads a stored memory (docs/architecture.md, "Writing").

One place computes them, once per text (``read``), and both sides use the same: the facts index
keeps a stored memory's ``IndexKeys`` (``storage.field_index``), and a new memory's reading
gives its own, with its slot, change cue and value shapes, for the write to compare.

* ``normalised`` / ``text_key``: the text an exact repeat shares (NFKC, lower case, no
  punctuation, spaces collapsed) and its hash;
* ``polarity``: the negations, reversals and qualifiers a text contains ("no longer", "again",
  不再…: the packs' ``negation.polarity``), ``negated`` when one of them is a negation;
* ``topic_words`` / ``reversal_key``: what a statement is about whatever its polarity (its
  words without the speaker, stopwords and negations), equal for the two sides of a reversal
  ("I'm allergic to peanuts" / "I'm no longer allergic to peanuts");
* ``value_shapes``: the kinds of attribute value it carries (phone, e-mail, number, clock time).
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from functools import cached_property, lru_cache

from .rules import clear_with_packs, every, for_text
from .slots import change_cue, detect_slot, is_lasting
from .speakers import without_speaker
from .text import lexical_tokens
from .values import values_of


def _common(name: str) -> re.Pattern[str]:
    pattern = every().pattern(name)
    assert pattern is not None  # common's
    return pattern


def normalised(text: str) -> str:
    """Text compared for exact repeats: NFKC, lower case, punctuation dropped, spaces collapsed."""
    folded = unicodedata.normalize("NFKC", text).casefold()
    return _common("text.space").sub(" ", _common("text.punctuation").sub(" ", folded)).strip()


def text_key(content: str) -> int:
    """What two texts share when they are the same repeat (``normalised``), as a hash.

    A write compares a new memory with its nearest stored ones; with this key it knows, before
    reading any of them from Chroma, which far-off neighbours are exact repeats after all.
    """
    return hash(normalised(content))


def polarity(text: str) -> set[str]:
    """The negations and qualifiers ("no longer", "again", 不再...) a text contains."""
    lowered = text.lower()
    pattern = for_text(lowered).pattern("negation.polarity")
    return {m.group(0) for m in pattern.finditer(lowered)} if pattern else set()


def negations() -> frozenset[str]:
    """The words that turn a statement around: every pack's ``negations`` and ``short_negations``."""
    return every().words("negations", "short_negations")


def negated(text: str) -> bool:
    """Whether ``text`` carries a negation (``negations``): one side of a possible reversal."""
    return bool(polarity(text) & negations())


def topic_words(text: str) -> frozenset[str]:
    """What a statement is about: its words without the speaker, stopwords and negations.

    Not ``sameness.content_words`` (what a statement *says*, negations included): the two
    sides of a reversal differ in their negation and share these.
    """
    lowered = without_speaker(text).lower()
    rules = for_text(lowered)
    if contraction := rules.pattern("negation.contraction"):
        lowered = contraction.sub(" ", lowered)
    if marks := rules.pattern("negation.marks"):  # no spaces between CJK words: removed, not blanked
        lowered = marks.sub("", lowered)
    ignored = every().words("stopwords", "reversal_tokens")
    return frozenset(w for w in lexical_tokens(lowered) if w not in ignored)


def reversal_key(text: str) -> int:
    """A hash of what ``text`` is about (``topic_words``), equal for the two sides of a reversal.

    A reversal needs the same topic words on both sides, so a write compares these keys (and
    ``negated``) on the facts index before it reads any neighbour; 0 for a text without any.
    """
    words = topic_words(text)
    return hash(tuple(sorted(words))) if words else 0


def value_shapes(text: str) -> frozenset[str]:
    """The kinds of value ``text`` carries that an attribute holds: phone, e-mail, number, clock time."""
    shapes = set()
    for value in values_of(text):
        if _common("shapes.long_digits").match(value):  # how ``values`` normalises a phone number
            shapes.add("phone")
        elif _common("shapes.email").match(value):
            shapes.add("email")
        elif _common("shapes.clock").match(value):
            shapes.add("clock")
        elif _common("shapes.number").match(value):
            shapes.add("number")
    return frozenset(shapes)


@dataclass(frozen=True, slots=True)
class IndexKeys:
    """What the facts index keeps of a long-term memory's text, to judge it before reading it."""

    text_key: int
    negated: bool
    reversal_key: int


def index_keys(text: str) -> IndexKeys:
    """The ``IndexKeys`` of ``text``."""
    return IndexKeys(text_key=text_key(text), negated=negated(text), reversal_key=reversal_key(text))


class TextReading:
    """Everything the write path reads off one text, each part computed once, when first asked."""

    def __init__(self, text: str) -> None:
        self.text = text

    @cached_property
    def slot(self) -> str | None:
        """The ``"subject:attribute"`` the text sets (``slots.detect_slot``)."""
        return detect_slot(self.text)

    @cached_property
    def lasting(self) -> bool:
        """Whether its slot is an attribute that lasts until changed (``slots.is_lasting``)."""
        return is_lasting(self.slot)

    @cached_property
    def change_cue(self) -> bool:
        """Whether it announces a change of an earlier value (``slots.change_cue``)."""
        return change_cue(self.text)

    @cached_property
    def shapes(self) -> frozenset[str]:
        """The kinds of attribute value it carries (``value_shapes``)."""
        return value_shapes(self.text)

    @cached_property
    def keys(self) -> IndexKeys:
        """Its keys in the facts index (``index_keys``)."""
        return index_keys(self.text)


@lru_cache(maxsize=4096)
def read(text: str) -> TextReading:
    """The reading of ``text`` (kept for the next few thousand texts: a write asks several times)."""
    return TextReading(text)


clear_with_packs(read)


__all__ = [
    "IndexKeys",
    "TextReading",
    "index_keys",
    "negated",
    "negations",
    "normalised",
    "polarity",
    "read",
    "reversal_key",
    "text_key",
    "topic_words",
    "value_shapes",
]
