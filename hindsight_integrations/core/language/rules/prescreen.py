"""What a text must hold for a rule to match in it, found for a fraction of the rule's cost.

Reading a text's values runs ~20 rules over it, each a scan of the whole text from every
position; on LoCoMo's turns that is ~0.2 ms a text, and most rules find nothing: a date needs
a digit, a month's name needs that name among the text's words. A rule may declare what every
text it matches contains (``requires``: a short pattern, searched with the rule's flags;
``requires_words``: lexicons or maps one of whose entries, by its first word, is a word of the
text), and the rule is skipped where that is missing. A declaration that is wrong would lose
matches, so each is checked on the rule's examples and, for the value rules, on every text of
the benchmark conversations (``tests/test_rule_prescreens.py``).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

_WORD = re.compile(r"[^\W\d_]+")
"""A word, for ``requires_words``: a run of letters (a rule's ``\\b`` ends a word at a digit or ``_`` too)."""


class TextWords:
    """The lower-case words (letter runs) of a text, as ``requires_words`` compares them: read on first call."""

    def __init__(self, text: str) -> None:
        self._text = text
        self._words: frozenset[str] | None = None

    def __call__(self) -> frozenset[str]:
        """The words (a set read once)."""
        if self._words is None:
            self._words = frozenset(_WORD.findall(self._text.lower()))
        return self._words


def first_word(entry: str) -> str | None:
    """The lower-case first word of a lexicon entry (None if it does not start with a letter)."""
    found = _WORD.match(entry.lower())
    return found.group(0) if found else None


@dataclass(frozen=True)
class Prescreen:
    """What a text must hold for one rule to match: ``pattern`` found in it, or one of ``words`` among its words."""

    pattern: re.Pattern[str] | None
    words: frozenset[str]

    def admits(self, text: str, words_of_text: Callable[[], frozenset[str]]) -> bool:
        """Whether the rule may match ``text``; ``words_of_text`` gives its words, asked for only if needed."""
        if self.pattern is not None and self.pattern.search(text):
            return True
        return bool(self.words) and not self.words.isdisjoint(words_of_text())


__all__ = ["Prescreen", "TextWords", "first_word"]
