"""What each session's live window holds, kept in memory: its token total and its latest turns.

Every ``record_turn`` needs two things from the session's window: the preceding turns (the new
memory's context) and the window's size (whether compression may be due). Reading the window
from Chroma for them was a metadata-filtered ``get`` on every turn, ~2.6 ms of a turn's ~25 ms.
This index answers both from memory. Like the facts and lexical indexes it is derived from
Chroma (filled when a namespace is opened, updated on this process's writes, caught up with other
writers by the store's watermark sync), so another replica's turn of the same session a moment
ago may be missing from it: both answers are hints. The context of a memory is a ranking aid, and
compression re-reads the window from Chroma, under the write lock, before it folds anything.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

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


class SessionWindows:
    """Session id → its active working-tier turns (order, tokens, context line), for one namespace; thread-safe."""

    def __init__(self) -> None:
        self._sessions: dict[str, dict[str, _LiveTurn]] = {}
        self._session_of: dict[str, str] = {}  # turn id → its session
        self._lock = threading.Lock()

    def upsert(self, items: Iterable[tuple[str, dict[str, Any]]]) -> None:
        """Take in records from ``(id, flat view)`` pairs: live turns join their window, others leave it."""
        with self._lock:
            for memory_id, fields in items:
                self._forget(memory_id)
                session = fields.get("session_id")
                if fields.get("tier") != "working" or fields.get("status") != "active" or not session:
                    continue
                entities = json.loads(fields.get("entities_json") or "[]")
                self._sessions.setdefault(session, {})[memory_id] = _LiveTurn(
                    order=(float(fields.get("occurred_at") or 0.0), float(fields.get("created_at") or 0.0)),
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

    def _forget(self, memory_id: str) -> None:
        session = self._session_of.pop(memory_id, None)
        if session is not None:
            window = self._sessions[session]
            del window[memory_id]
            if not window:
                del self._sessions[session]


__all__ = ["SessionWindows", "context_line"]
