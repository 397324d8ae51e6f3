"""Whom or what a statement is about, so facts about different people, projects or things stay apart.

Three questions the write path asks (docs/architecture.md, "Writing"):

* ``owner_of``: whose is a "user" attribute? "Priya's phone number is…", "my sister's email
  is…", "Mateo changed his phone number", "Mateo has a new phone number" are Priya's, the
  sister's and Mateo's (a leading ``Speaker:`` label is skipped), not the user's;
* ``project_slot``: which project, and for a deadline which deliverable? "the design doc for
  project Falcon is due on Sunday" and "the release notes for project Ember is due on Friday"
  are two deadlines, not one deadline changed; for a technology which part ("our backend is
  written in Go", "our frontend is written in TypeScript": two languages, the packs' ``project_parts``);
* ``different_subjects``: are two close statements about different things? Different
  identifiers ("Order LZ-56379 was delayed" / "Order ZW-68766 was delayed") or different
  named people's relatives ("Ivan's cousin" / "Ivan's daughter") mean two facts, never an
  update of one by the other.
"""

from __future__ import annotations

import re

from .rules import every, for_text
from .speakers import without_speaker
from .text import search_spans
from .values import differing_values

# What a deadline is for, tried in order: "deadline for the report", "the report deadline",
# "the design doc ... is due" (the packs' ``subjects.due_*`` rules).
_DUE_RULES = ("subjects.due_for", "subjects.due_named", "subjects.due_is")


def _rule(text: str, name: str) -> re.Pattern[str] | None:
    return for_text(text).pattern(name)


def _named(match: re.Match[str]) -> str:
    """What a subject rule names: its first group that took part (packs' rules are one alternation)."""
    return next(g for g in match.groups() if g)


def project_slot(content: str, attribute: str) -> str:
    """``project:<attribute>``, narrowed to the project named and, for a deadline, to what is due.

    "The design doc for project Falcon is due on Sunday" and "the release notes for project
    Ember is due on Friday" are two deadlines, not one deadline changed.
    """
    named = search_spans(_rule(content, "subjects.project_name"), content)
    name = _named(named).lower() if named else None
    subject = f"project {name}" if name else "project"
    if attribute != "deadline":
        part = _part_named(content)
        return f"{subject}:{attribute} of {part}" if part and part != attribute else f"{subject}:{attribute}"
    not_things = every().words("not_due_things")
    for rule in _DUE_RULES:
        if found := search_spans(_rule(content, rule), content):
            words = [w for w in _named(found).lower().split() if w not in not_things and w != name]
            if words:
                return f"{subject}:deadline of {' '.join(words)}"
    return f"{subject}:deadline"


def _part_named(content: str) -> str | None:
    """The one part of a project ("the backend", 前端) a text names, None when it names none or several.

    "Our backend is written in Go." and "Our frontend is written in TypeScript." set two languages;
    a text naming two parts says which one changed in words no slot reads, so it gets the whole project's.
    """
    parts = every().mapping("project_parts")
    pattern = every().pattern("subjects.project_part")
    found = pattern.finditer(content) if pattern else ()
    spoken = (" ".join(m.group(0).lower().replace("-", " ").split()) for m in found)  # "back-end": "back end"
    named = {parts.get(words, words) for words in spoken}
    return named.pop() if len(named) == 1 else None


def owner_of(content: str, start: int) -> str | None:
    """Who a "user" attribute starting at ``start`` belongs to when the text says it is someone else's."""
    at = content[start:]  # a Chinese rule starts at 我: "我妹妹住在杭州" names the sister at the match
    if (pattern := _rule(at, "subjects.owner_at")) and (match := pattern.match(at)):
        return _owner(_named(match))
    before = content[:start]
    for name in ("subjects.possessive", "subjects.relative_possessive"):
        if (pattern := _rule(before, name)) and (match := pattern.search(before)):
            return _owner(_named(match))
    said = without_speaker(before)
    if (pattern := _rule(said, "subjects.third_person")) and (match := pattern.match(said)):
        return _owner(_named(match))
    return None


def _owner(word: str) -> str:
    """An owner's one name: 我妈 and 我母亲 are 妈妈 (the packs' ``owner_names``); English as written, lower-cased."""
    return every().mapping("owner_names").get(word, word).lower()


def different_subjects(a: str, b: str) -> bool:
    """Whether ``a`` and ``b`` name different things: other identifiers, or other people's relatives."""
    only_a, only_b = differing_values(a, b)
    identifier = every().pattern("shapes.identifier")
    assert identifier is not None  # common's
    if any(identifier.match(v) for v in only_a) and any(identifier.match(v) for v in only_b):
        return True
    relatives_a, relatives_b = _relatives(a), _relatives(b)
    return bool(relatives_a and relatives_b and relatives_a.isdisjoint(relatives_b))


def _relatives(text: str) -> set[str]:
    """The named people's relatives (or things) a text mentions: "ivan's cousin"."""
    pattern = _rule(text, "subjects.relative_of")
    return {m.group(0).lower() for m in pattern.finditer(text)} if pattern else set()


__all__ = ["different_subjects", "owner_of", "project_slot"]
