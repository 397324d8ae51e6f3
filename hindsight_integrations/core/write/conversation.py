"""What a memory written in a conversation gets from the conversation: its neighbours and its speaker.

A line of a conversation is often unintelligible alone ("Yes, twice a week!"); indexed with
the lines before it (its *context vector*, ``indexing.framed_text``) it is found by the
question that names what it answers. And transcripts name their speaker ("Caroline: ..."),
which questions name too. LoCoMo measured both: a turn stored with its two preceding turns
as context and its speaker as an entity is recalled far more often than the bare turn.

So a memory stored on its own (one item per call, as a conversation is written) with a
``session_id`` and no ``context`` gets the session's preceding items (as written to this
process: a hint, so another replica's writes may be missing), and one whose text starts with
a name and a colon gets that name as an entity. Batches are imports: they carry their own
context if they want one, and embedding a framed text for every item would halve their speed.
"""

from __future__ import annotations

import re
import threading
from collections import OrderedDict, deque

from ..language.text import SPAN_CHARS

NEIGHBOURS_BEFORE = 2
NEIGHBOUR_CHARS = 600  # per neighbour: enough for the embedding (256 word pieces), no more
_MAX_SESSIONS = 10_000

_SPEAKER = re.compile(r"^\s*([A-Z][\w'.-]{0,30}(?: [A-Z][\w'.-]{0,30}){0,2})\s?:\s+\S")
# Labels that start a line like a speaker does but name none.
_NOT_SPEAKERS = frozenset(
    {
        "update", "correction", "note", "notes", "error", "warning", "todo", "fixme", "reminder", "important",
        "summary", "question", "answer", "q", "a", "re", "fyi", "ps", "tip", "info", "debug", "traceback", "user",
        "assistant", "system", "tool", "human", "ai", "bot", "edit", "context", "decision", "action", "result",
        "status", "goal", "task", "subject", "title", "date", "time", "location", "address", "phone", "email",
    }
)  # fmt: skip


def speaker_of(text: str) -> str | None:
    """The name a transcript line starts with ("Caroline: ..."), if it names someone."""
    match = _SPEAKER.match(text, 0, SPAN_CHARS)  # a label opens the text: no need to read further
    if match is None:
        return None
    name = match.group(1)
    return None if name.lower() in _NOT_SPEAKERS else name


def without_speaker(text: str) -> str:
    """``text`` after a leading "Name: " label, if it has one (what was said, not who said it)."""
    match = _SPEAKER.match(text, 0, SPAN_CHARS)
    return text[match.end() - 1 :] if match else text


def spoken(text: str) -> str:
    """What a transcript line says, without the speaker's name ("Lena: Hi!" says "Hi!").

    Only a name is dropped, never a label ("Update: …", "Correction: …" say something), so the
    write filter judges "Hi!" as a greeting and "Please use metric units" as an instruction
    whether or not a speaker's name comes first.
    """
    return without_speaker(text) if speaker_of(text) else text


class SessionNeighbours:
    """The last few texts written per (namespace, session), for the next memory's context; thread-safe."""

    def __init__(self, keep: int = NEIGHBOURS_BEFORE, max_sessions: int = _MAX_SESSIONS) -> None:
        self._keep = keep
        self._max = max_sessions
        self._recent: OrderedDict[tuple[str, str], deque[str]] = OrderedDict()
        self._lock = threading.Lock()

    def context(self, namespace: str, session_id: str) -> str | None:
        """The session's preceding texts as one context string, oldest first; None for a new session."""
        with self._lock:
            recent = self._recent.get((namespace, session_id))
            return " ".join(recent) if recent else None

    def add(self, namespace: str, session_id: str, text: str) -> None:
        """Note ``text`` as the session's latest item."""
        key = (namespace, session_id)
        with self._lock:
            recent = self._recent.pop(key, None) or deque(maxlen=self._keep)
            recent.append(text.strip()[:NEIGHBOUR_CHARS])
            self._recent[key] = recent
            while len(self._recent) > self._max:
                self._recent.popitem(last=False)


__all__ = ["NEIGHBOURS_BEFORE", "NEIGHBOUR_CHARS", "SessionNeighbours", "speaker_of", "spoken", "without_speaker"]
