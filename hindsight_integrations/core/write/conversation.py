"""What a memory written in a conversation gets from the conversation: its neighbours and its speaker.

A line of a conversation is often unintelligible alone ("Yes, twice a week!"); indexed with
the lines before it (its *context vector*, ``indexing.framed_text``) it is found by the
question that names what it answers. And transcripts name their speaker ("Caroline: ..."),
which questions name too. LoCoMo measured both: a turn stored with its two preceding turns
as context and its speaker as an entity is recalled far more often than the bare turn.

So a memory with a ``session_id`` and no ``context`` gets the session's preceding items (as
written to this process: a hint, so another replica's writes may be missing), and one whose
text starts with a name and a colon gets that name as an entity (``language.speakers``).
Clearing a session's window or forgetting one of its memories drops what was noted of it, so
the cleared or forgotten text is no later memory's context (and ``forgetting.py`` takes it out
of the contexts already stored). A batch is read in its order,
item by item, as that many single writes would be: an imported chat history gets the context
its turns had when they were said (on LoCoMo dev, 100 turns per ``store_memory`` call found
0.700 of the evidence without it). Every memory has a context vector anyway (an undated frame
without a context), so this costs longer framed texts, not a second embedding.
"""

from __future__ import annotations

import threading
from collections import OrderedDict, deque

NEIGHBOURS_BEFORE = 2
NEIGHBOUR_CHARS = 600  # per neighbour: enough for the embedding (256 word pieces), no more
_MAX_SESSIONS = 10_000


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

    def drop(self, namespace: str, session_id: str) -> None:
        """Forget the session's texts: a cleared window or a forgotten memory must not frame the next memory.

        Its next memory then starts without context, as in a new session.
        """
        with self._lock:
            self._recent.pop((namespace, session_id), None)


__all__ = ["NEIGHBOURS_BEFORE", "NEIGHBOUR_CHARS", "SessionNeighbours"]
