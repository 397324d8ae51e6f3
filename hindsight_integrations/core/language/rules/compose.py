"""Rules a regular expression says only at a square cost: ``first`` followed by ``then``, the leftmost of several.

A pack writes them as tables (``{ first = '…', then = '…' }``, ``{ leftmost = [...] }``); the
engine builds these searchers, which match like a compiled pattern (``search``) in linear time.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Protocol


class Searcher(Protocol):
    """What a rule is to the code that runs it: a compiled pattern, or anything with its ``search``."""

    def search(self, string: str, pos: int = 0) -> re.Match[str] | None:
        """The first match in ``string`` from ``pos``, or None."""
        ...


class Followed:
    """``first`` and, starting later on its line, ``then``: what ``first(?=.*then)`` says, in linear time.

    With ``either_order`` also ``then`` followed by ``first`` (``first.*then|then.*first``), the
    leftmost of the two. The regular expression retries ``.*`` from every start, the square of
    the text; here each line is read a bounded number of times. Matches like a pattern: the
    match returned is ``first``'s (or ``then``'s, in the other order).
    """

    def __init__(self, first: re.Pattern[str], then: re.Pattern[str], *, either_order: bool = False) -> None:
        self.first = first
        self.then = then
        self.either_order = either_order

    def search(self, string: str, pos: int = 0) -> re.Match[str] | None:
        """The leftmost match of ``first`` with ``then`` after it on its line (either way round if asked)."""
        found = _followed(self.first, self.then, string, pos)
        if not self.either_order:
            return found
        other = _followed(self.then, self.first, string, pos)
        if found is None or (other is not None and other.start() < found.start()):
            return other
        return found


def _followed(first: re.Pattern[str], then: re.Pattern[str], text: str, pos: int) -> re.Match[str] | None:
    """The first match of ``first`` at or after ``pos`` such that ``then`` starts after it on the same line."""
    later: re.Match[str] | None = None  # the leftmost ``then`` at or after the last search's start
    line_end = -1  # the end of the line of the latest ``first`` (each line is looked up once)
    for match in first.finditer(text, pos):
        if later is None or later.start() < match.end():
            later = then.search(text, match.end())
            if later is None:
                return None  # no ``then`` after this one: none after any later ``first`` either
        if line_end < match.end():
            found = text.find("\n", match.end())
            line_end = len(text) if found < 0 else found
        if later.start() <= line_end:
            return match
    return None


class Leftmost:
    """The leftmost match of any of ``rules`` (what their alternation would find first)."""

    def __init__(self, rules: Sequence[Searcher]) -> None:
        self.rules = tuple(rules)

    def search(self, string: str, pos: int = 0) -> re.Match[str] | None:
        """The match that starts first among the rules' first matches (the earlier rule on a tie)."""
        found = [m for rule in self.rules if (m := rule.search(string, pos)) is not None]
        return min(found, key=lambda m: m.start()) if found else None


def patterns_of(rule: Searcher) -> list[re.Pattern[str]]:
    """The compiled patterns a rule is made of (itself, for a pattern)."""
    if isinstance(rule, re.Pattern):
        return [rule]
    if isinstance(rule, Followed):
        return [rule.first, rule.then]
    if isinstance(rule, Leftmost):
        return [p for inner in rule.rules for p in patterns_of(inner)]
    return []


__all__ = ["Followed", "Leftmost", "Searcher", "patterns_of"]
