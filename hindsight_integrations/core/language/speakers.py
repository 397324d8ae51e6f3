"""Who says a transcript line: "Caroline: ..." names its speaker, which questions name too.

A memory whose text starts with a name and a colon gets that name as an entity
(``write.conversation``), the write filter judges what was said without it (``spoken``), and
the subject rules read a statement without its label (``without_speaker``). The label's
shape is the packs' ``text.speaker`` (a capitalised name in ``common``, two to four Chinese
characters in ``zh``: "孙浩然：…"); labels that name no one ("Update:", "Note:", 备注：) are the
packs' ``not_speakers``, and a label the write filter reads as error output ("KeyError: 'x'",
"Failed: …", the ``admission.error`` and ``tool_error`` rules) names no one either: read as a
speaker, it would be dropped from what the filter judges and a traceback's last line stored as a fact.
"""

from __future__ import annotations

import re

from .rules import every
from .text import SPAN_CHARS


def _label(text: str) -> re.Match[str] | None:
    pattern = every().pattern("text.speaker")
    return pattern.match(text, 0, SPAN_CHARS) if pattern else None  # a label opens the text: no need to read further


def speaker_of(text: str) -> str | None:
    """The name a transcript line starts with ("Caroline: ..."), if it names someone."""
    match = _label(text)
    if match is None:
        return None
    name = next(group for group in match.groups() if group)  # one group per pack's label shape
    if name.lower() in every().words("not_speakers") or _reads_as_error(match.group(0)):
        return None
    return name


def _reads_as_error(label: str) -> bool:
    """Whether a line's label ("KeyError: '") is how error output starts, not someone's name."""
    lowered = label.lower()  # the admission patterns are lower-case
    rules = every()
    return any((pattern := rules.pattern(name)) and pattern.search(lowered) for name in _ERROR_RULES)


_ERROR_RULES = ("admission.error", "admission.tool_error")


def without_speaker(text: str) -> str:
    """``text`` after a leading "Name: " label, if it has one (what was said, not who said it)."""
    match = _label(text)
    return text[match.end() - 1 :] if match else text


def spoken(text: str) -> str:
    """What a transcript line says, without the speaker's name ("Lena: Hi!" says "Hi!").

    Only a name is dropped, never a label ("Update: …", "Correction: …" say something), so the
    write filter judges "Hi!" as a greeting and "Please use metric units" as an instruction
    whether or not a speaker's name comes first.
    """
    return without_speaker(text) if speaker_of(text) else text


__all__ = ["speaker_of", "spoken", "without_speaker"]
