"""Whom or what a statement is about, so facts about different people, projects or things stay apart.

Three questions the write path asks (docs/architecture.md, "Writing"):

* ``owner_of``: whose is a "user" attribute? "Priya's phone number is…", "my sister's email
  is…", "Mateo changed his phone number", "Mateo has a new phone number" are Priya's, the
  sister's and Mateo's (a leading ``Speaker:`` label is skipped), not the user's;
* ``project_slot``: which project, and for a deadline which deliverable? "the design doc for
  project Falcon is due on Sunday" and "the release notes for project Ember is due on Friday"
  are two deadlines, not one deadline changed;
* ``different_subjects``: are two close statements about different things? Different
  identifiers ("Order LZ-56379 was delayed" / "Order ZW-68766 was delayed") or different
  named people's relatives ("Ivan's cousin" / "Ivan's daughter") mean two facts, never an
  update of one by the other.
"""

from __future__ import annotations

import re

from ..write.conversation import without_speaker
from .text import search_spans
from .values import differing_values

# Someone else's attribute: "Priya's new phone", "my sister's address", "Mateo changed his phone",
# "Mateo has a new phone" (the text before the matched attribute words).
# Words are at most 40 characters: a name, a relative or an attribute word is never longer, and
# a bounded word keeps each try short (``[\w-]+`` from every start of "A-A-A-…" is quadratic).
_POSSESSIVE = re.compile(r"\b(?!I\b)([A-Z][\w-]{1,40})['’]s\s+(?:[\w-]{1,40}\s+){0,2}$")
_RELATIVE_POSSESSIVE = re.compile(r"\b(?:my|our)\s+([a-z]{1,40})['’]s\s+(?:[\w-]{1,40}\s+){0,2}$", re.I)
_THIRD_PERSON = re.compile(
    r"\A\s*(?!(?:I|We|My|Our|The|A|An|New|Update|Please|Call|Text|Reach|This|That|Here|It|Its|Now|So|And|But)\b)"
    r"([A-Z][\w-]{1,40})\s+(?:(?:just|now|recently|finally|also|has|had|have)\s+){0,6}"
    r"(?:(?:changed|updated|switched|got|gets|has|had|gave\s+me)\s+)?(?:his|her|their|a|an)\s+(?:new\s+)?$"
)

# "project Ember", "the Ember project": a project named, whose deadline and stack are its own.
_NOT_NAMES = r"(?!(?:The|This|That|Our|My|Your|Their|Each|Every|Any|New|Next|Last|Same|Whole|Side)\b)"
_PROJECT_NAME = re.compile(
    rf"\b[Pp]roject\s+{_NOT_NAMES}([A-Z][\w-]{{0,40}})|\b{_NOT_NAMES}([A-Z][\w-]{{0,40}})\s+[Pp]roject\b"
)
# What a deadline is for: "deadline for the report", "the report deadline", "the design doc ... is due".
_THING = r"((?:[a-z][\w-]{0,40}\s+){0,2}?[a-z][\w-]{0,40})"
_DUE_THING = (
    re.compile(
        rf"\bdeadline\s+(?:for|of|on)\s+(?:the\s+|our\s+|my\s+|this\s+)?{_THING}"
        r"(?=\s+(?:is|was|has|had|moved|got|changed|are|will|for|to|on|at|by)\b|\s*[.,;:!?]|\s*$)",
        re.I,
    ),
    re.compile(rf"\b(?:the|our|my|this)\s+{_THING}\s+(?:deadline|due\s+date)\b", re.I),
    re.compile(
        rf"\b(?:the|our|my|this)\s+{_THING}\s+(?:for\s+project\s+[\w-]{{1,40}}\s+)?(?:is|are|was)\s+(?:now\s+)?due\b",
        re.I,
    ),
)
_NOT_DUE_THINGS = frozenset({"project", "new", "final", "current", "updated", "official", "hard", "the", "our", "my"})
# An identifier: letters with a run of three or more digits (order, ticket, invoice numbers);
# short version numbers ("v2", "v2.3.1") are values that change, not names.
_IDENTIFIER = re.compile(r"^(?=[\w-]*[a-z])[\w-]*\d{3,}[\w-]*$")
_RELATIVE_OF = re.compile(r"\b(?!I\b)([A-Z][\w-]{1,40})['’]s\s+([a-z]{1,40})\b")


def project_slot(content: str, attribute: str) -> str:
    """``project:<attribute>``, narrowed to the project named and, for a deadline, to what is due.

    "The design doc for project Falcon is due on Sunday" and "the release notes for project
    Ember is due on Friday" are two deadlines, not one deadline changed.
    """
    named = search_spans(_PROJECT_NAME, content)
    name = (named.group(1) or named.group(2)).lower() if named else None
    subject = f"project {name}" if name else "project"
    if attribute != "deadline":
        return f"{subject}:{attribute}"
    for pattern in _DUE_THING:
        if found := search_spans(pattern, content):
            words = [w for w in found.group(1).lower().split() if w not in _NOT_DUE_THINGS and w != name]
            if words:
                return f"{subject}:deadline of {' '.join(words)}"
    return f"{subject}:deadline"


def owner_of(content: str, start: int) -> str | None:
    """Who a "user" attribute starting at ``start`` belongs to when the text says it is someone else's."""
    before = content[:start]
    if match := _POSSESSIVE.search(before) or _RELATIVE_POSSESSIVE.search(before):
        return match.group(1).lower()
    if match := _THIRD_PERSON.match(without_speaker(before)):
        return match.group(1).lower()
    return None


def different_subjects(a: str, b: str) -> bool:
    """Whether ``a`` and ``b`` name different things: other identifiers, or other people's relatives."""
    only_a, only_b = differing_values(a, b)
    if any(_IDENTIFIER.match(v) for v in only_a) and any(_IDENTIFIER.match(v) for v in only_b):
        return True
    relatives_a = {m.group(0).lower() for m in _RELATIVE_OF.finditer(a)}
    relatives_b = {m.group(0).lower() for m in _RELATIVE_OF.finditer(b)}
    return bool(relatives_a and relatives_b and relatives_a.isdisjoint(relatives_b))


__all__ = ["different_subjects", "owner_of", "project_slot"]
