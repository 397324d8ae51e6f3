"""What each session holds, kept in memory: its live window (token total, latest turns) and its memories' order.

Every ``record_turn`` needs two things from the session's window: the preceding turns (the new
memory's context) and the window's size (whether compression may be due). Reading the window
from Chroma for them was a metadata-filtered ``get`` on every turn, ~2.6 ms of a turn's ~25 ms.
This index answers both from memory. Like the facts and lexical indexes it is derived from
Chroma (filled when a namespace is opened, updated on this process's writes, caught up with other
writers by the store's watermark sync), so another replica's turn of the same session a moment
ago may be missing from it: both answers are hints. The context of a memory is a ranking aid, and
compression re-reads the window from Chroma, under the write lock, before it folds anything.

A session's active long-term memories are kept in the order they were said (``adjacent``): what
was said just before and after a memory is often the rest of its fact (a question and its
answer, a statement carried over two turns), and ranking gives a memory a share of a recalled
neighbour's score (``ranking.rank``).
"""

from __future__ import annotations

import bisect
import json
import threading
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from ..model.records import MemoryRecord
from ..write.conversation import NEIGHBOUR_CHARS


@dataclass(frozen=True, slots=True)
class _LiveTurn:
    order: tuple[float, float]  # (occurred_at, created_at): the window's order
    tokens: int
    line: str  # how the turn reads as a neighbour's context: "Speaker: text"


def context_line(content: str, speaker: str | None) -> str:
    """A preceding turn as part of a memory's context: "Speaker: text" when the speaker is known."""
    text = content.strip()[:NEIGHBOUR_CHARS]
    return f"{speaker}: {text}" if speaker else text


def remembered_text(turn: MemoryRecord) -> str:
    """The long-term memory's text for a turn: "Speaker: text" when the speaker is known.

    Questions name people ("What did Caroline research?"), and the name in the memory's own
    text is what lets BM25 and the embedding match them: +0.03 evidence recall@10 on LoCoMo
    over the name as an entity alone (docs/architecture.md, "Working memory"). The turn in the
    window keeps the user's text as it was written.
    """
    return f"{turn.entities[0]}: {turn.content}" if turn.entities else turn.content


class SessionWindows:
    """Session id → its active working-tier turns (order, tokens, context line), and its active memories in order.

    For one namespace; thread-safe.
    """

    def __init__(self) -> None:
        self._sessions: dict[str, dict[str, _LiveTurn]] = {}
        self._session_of: dict[str, str] = {}  # turn id → its session
        self._said: dict[str, list[tuple[tuple[float, float], str]]] = {}  # session → (order, memory id), sorted
        self._said_at: dict[str, tuple[str, tuple[float, float]]] = {}  # memory id → (its session, its order)
        self._beside: dict[str, tuple[str, ...]] = {}  # memory id → the memories said just before and after it
        self._lock = threading.Lock()

    def upsert(self, items: Iterable[tuple[str, dict[str, Any]]]) -> None:
        """Take in records from ``(id, flat view)`` pairs: live turns join their window, others leave it."""
        with self._lock:
            for memory_id, fields in items:
                self._forget(memory_id)
                session = fields.get("session_id")
                if fields.get("status") != "active" or not session:
                    continue
                order = (float(fields.get("occurred_at") or 0.0), float(fields.get("created_at") or 0.0))
                if fields.get("tier") != "working":
                    said = self._said.setdefault(session, [])
                    at = bisect.bisect_left(said, (order, memory_id))
                    said.insert(at, (order, memory_id))
                    self._said_at[memory_id] = (session, order)
                    _link(said, self._beside, at - 1, at, at + 1)
                    continue
                entities = json.loads(fields.get("entities_json") or "[]")
                self._sessions.setdefault(session, {})[memory_id] = _LiveTurn(
                    order=order,
                    tokens=int(fields.get("token_count") or 0),
                    line=context_line(str(fields.get("content") or ""), entities[0] if entities else None),
                )
                self._session_of[memory_id] = session

    def remove(self, memory_ids: Iterable[str]) -> None:
        """Drop hard-deleted records."""
        with self._lock:
            for memory_id in memory_ids:
                self._forget(memory_id)

    def tokens(self, session_id: str) -> int:
        """The session's live window size in tokens, as this process knows it."""
        with self._lock:
            return sum(t.tokens for t in self._sessions.get(session_id, {}).values())

    def latest_lines(self, session_id: str, n: int) -> list[str]:
        """The context lines of the session's ``n`` latest live turns, oldest first."""
        with self._lock:
            turns = sorted(self._sessions.get(session_id, {}).values(), key=lambda t: t.order)
        return [t.line for t in turns[-n:]] if n > 0 else []

    def adjacent(self, memory_ids: Iterable[str]) -> dict[str, tuple[str, ...]]:
        """For each of ``memory_ids`` in a session, the active memories said just before and after it there."""
        beside = self._beside  # read without the lock: a write replaces an entry whole, never edits one
        return {memory_id: found for memory_id in memory_ids if (found := beside.get(memory_id)) is not None}

    def _forget(self, memory_id: str) -> None:
        place = self._said_at.pop(memory_id, None)
        if place is not None:
            said = self._said[place[0]]
            at = bisect.bisect_left(said, (place[1], memory_id))
            del said[at]
            del self._beside[memory_id]
            _link(said, self._beside, at - 1, at)
            if not said:
                del self._said[place[0]]
        session = self._session_of.pop(memory_id, None)
        if session is not None:
            window = self._sessions[session]
            del window[memory_id]
            if not window:
                del self._sessions[session]


def _link(said: list[tuple[tuple[float, float], str]], beside: dict[str, tuple[str, ...]], *places: int) -> None:
    """Note again who is said just before and after the memories at ``places`` of a session's ordered list."""
    for at in places:
        if 0 <= at < len(said):
            beside[said[at][1]] = tuple(said[i][1] for i in (at - 1, at + 1) if 0 <= i < len(said))


__all__ = ["SessionWindows", "context_line", "remembered_text"]
