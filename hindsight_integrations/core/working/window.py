"""Working memory: a session's live turns, what is remembered from each, and their compression.

Turns are records of the working tier in the namespace's own collection, so a restarted
agent (or another replica) resumes the window. Each user or assistant turn also goes through
the write path: the LLM extracts memories from the exchange when one is configured, otherwise
the turn itself is offered to the write filter. The window is compressed once it passes the
threshold (see ``compression.py``).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import numpy as np

from ..errors import InvalidInputError, LLMError
from ..model.arguments import coerce_enum, whole_number
from ..model.inputs import MemoryInput, parse_inputs
from ..model.limits import MAX_TOKENS, check_id, check_text
from ..model.records import Kind, MemoryRecord, Role, Source, Status, Tier
from ..model.results import CompressionResult, StoreResult, TurnResult
from ..parts import EngineParts
from ..redaction import describe_error
from ..storage.cold import ColdStorage
from ..storage.indexing import body_text
from ..storage.namespace_store import NamespaceStore
from ..storage.session_windows import remembered_text
from ..write.admission import assess, event_ttl
from ..write.conversation import NEIGHBOURS_BEFORE
from ..write.forgetting import ForgottenText
from ..write.settle import Settler
from .compression import Compressor, transcript

log = logging.getLogger("hindsight.working")

_SPEAKER_CHARS = 100


def _speaker(value: object) -> str | None:
    """The speaker's name, trimmed; None when not given."""
    if value is None:
        return None
    if not isinstance(value, str):
        raise InvalidInputError("speaker", f"must be a string, got {type(value).__name__}")
    check_text(value, "speaker")
    text = " ".join(value.split())
    if len(text) > _SPEAKER_CHARS:
        raise InvalidInputError("speaker", f"must be at most {_SPEAKER_CHARS} characters")
    return text or None


@dataclass(frozen=True)
class CheckedTurn:
    """A turn as ``WorkingMemory.checked_turn`` validated it: what was said (content, time, metadata) and by whom."""

    said: MemoryInput
    session_id: str
    role: Role
    speaker: str | None


class WorkingMemory:
    """Record turns, read and clear a session's window, compress it."""

    def __init__(self, parts: EngineParts, settler: Settler, cold: ColdStorage | None = None) -> None:
        """``cold``: where upkeep archives memories, whose contexts a cleared window's turns leave too."""
        self._parts = parts
        self._settler = settler
        self._compressor = Compressor(parts)
        self._forgotten_text = ForgottenText(parts, cold)

    def checked_turn(
        self,
        content: str,
        *,
        session_id: str,
        role: Role | str,
        occurred_at: datetime | None,
        metadata: dict[str, Any] | None,
        speaker: str | None = None,
    ) -> CheckedTurn:
        """A ``record_turn`` call's arguments, validated, or ``InvalidInputError`` naming the bad one.

        Reads nothing of the store: a turn is checked before its namespace is opened, so a refused
        one leaves no empty namespace behind.
        """
        session_id = self._session_id(session_id)
        role = coerce_enum(Role, role, "role")
        said = parse_inputs(
            [
                {
                    "content": content,
                    "role": role,
                    "session_id": session_id,
                    "occurred_at": occurred_at,
                    "metadata": metadata or {},
                }
            ],
            max_bytes=self._parts.settings.max_content_bytes,
            limits=self._parts.limits,
        )[0]
        return CheckedTurn(said, session_id, role, _speaker(speaker))

    def record_turn(self, handle: NamespaceStore, checked: CheckedTurn, *, extract: bool, compress: bool) -> TurnResult:
        """See ``MemoryEngine.record_turn``; ``checked`` is what ``checked_turn`` made of its arguments."""
        turn_input, session_id, role, speaker = checked.said, checked.session_id, checked.role, checked.speaker
        turn = self._parts.new_record(
            handle.name,
            turn_input.content,
            now=self._parts.clock.now(),
            session_id=session_id,
            tier=Tier.WORKING,
            kind=Kind.TURN,
            role=role,
            importance=assess(turn_input.content, role).importance,
            occurred_at=turn_input.occurred_at,
            entities=[speaker] if speaker else [],
            source=Source(session_id=session_id, origin="turn"),
            metadata=turn_input.metadata,
        )
        # The session's window as this process knows it (``session_windows.py``) gives the new
        # memory's context and tells whether compression may be due: no Chroma read per turn.
        if extract or compress:
            handle.refresh_indexes()  # other replicas' turns of this session, in the background
        earlier = handle.windows.latest_lines(session_id, NEIGHBOURS_BEFORE) if extract else []
        context = " ".join(earlier) or None
        # The turn is indexed as what is remembered from it ("Speaker: text", see ``remembered_text``),
        # so one vector serves both; the memory's context vector is embedded in the background.
        indexed = turn.model_copy(update={"content": remembered_text(turn)})
        body = body_text(indexed.flat_fields(), time_aware=self._parts.settings.time_aware_text)
        vector = self._parts.embed([body])[0]
        with self._parts.known_vectors({body: vector}):
            stored = self._remember(handle, turn, vector, context=context) if extract else None
        if stored is None:
            with handle.writing:
                handle.add([turn], [vector])
        compression = None
        if compress and self._due(handle, session_id):
            compression = self.compress(handle, session_id=session_id, threshold_tokens=None, force=False)
        return TurnResult(turn=turn, stored=stored or StoreResult(), compression=compression)

    def _due(self, handle: NamespaceStore, session_id: str) -> bool:
        """Whether the session's window (this turn included) may be past the compression threshold.

        The in-memory window may lack another replica's latest turns, so a window near the
        threshold is re-read by ``compress``, under the write lock; one clearly under it is not (most turns).
        """
        return handle.windows.tokens(session_id) > self._parts.settings.compress_threshold_tokens * 0.8

    def _remember(
        self, handle: NamespaceStore, turn: MemoryRecord, vector: np.ndarray, *, context: str | None = None
    ) -> StoreResult | None:
        """Long-term memories from a turn: the LLM's extraction, or the turn through the write filter.

        What is remembered carries the turn's metadata, speaker (as an entity), session and time,
        and its source names the turn; the rule path also gets the preceding turns as ``context``
        (indexed beside the memory, not returned as its text). The turn itself (with ``vector``)
        is written in the same ``add`` as its memories; None means an extraction found nothing
        and nothing was written, the turn included.
        """
        source = Source(session_id=turn.session_id, message_ids=[turn.id], origin="turn")
        llm = self._parts.llm
        if llm is not None and turn.role is Role.USER:
            try:
                exchange = [*self.window(handle, session_id=turn.session_id or "")[-1:], turn]  # not written yet
                extracted = llm.extract_memories(transcript(exchange))
                items = [
                    {
                        "content": m.content,
                        "kind": (kind := coerce_enum(Kind, m.memory_type, "memory_type", default=Kind.FACT)),
                        # an extracted event expires as a written one does ("tomorrow at 9": in three days)
                        "ttl_seconds": event_ttl(m.content) if kind is Kind.EVENT else None,
                        "importance": m.importance,
                        "entities": list(dict.fromkeys([*m.entities, *turn.entities])),
                        "session_id": turn.session_id,
                        "occurred_at": turn.occurred_at,
                        "metadata": dict(turn.metadata),
                        "source": source,
                    }
                    for m in extracted
                ]
                if not items:
                    return None
                return self._store(handle, items, apply_filter=False, origin="extraction", turn=(turn, vector))
            except (LLMError, InvalidInputError) as exc:
                log.warning("LLM extraction failed, falling back to rules: %s", describe_error(exc))
        item = {
            "content": remembered_text(turn),
            "role": turn.role,
            "session_id": turn.session_id,
            "occurred_at": turn.occurred_at,
            "entities": list(turn.entities),
            "context": context,
            "metadata": dict(turn.metadata),
            "source": source,
        }
        return self._store(handle, [item], apply_filter=True, origin="turn", turn=(turn, vector))

    def _store(
        self,
        handle: NamespaceStore,
        items: list[dict[str, Any]],
        *,
        apply_filter: bool,
        origin: str,
        turn: tuple[MemoryRecord, np.ndarray],
    ) -> StoreResult:
        return self._settler.store(
            handle,
            self._settler.checked(items),
            apply_filter=apply_filter,
            dedup=True,
            supersede=True,
            request_id=None,
            origin=origin,
            companions=[turn],
        )

    def _session_id(self, value: object) -> str:
        """A session id as a where clause may hold it: a non-empty string within the id limit."""
        if not isinstance(value, str) or not value.strip():
            raise InvalidInputError("session_id", "is required: a non-empty string naming the conversation")
        check_id(value, "session_id", self._parts.limits)
        return value

    def window(self, handle: NamespaceStore | None, *, session_id: str) -> list[MemoryRecord]:
        """The session's live turns, oldest first; none in a namespace never written (``handle`` None)."""
        session_id = self._session_id(session_id)
        if handle is None:
            return []
        where = {"$and": [{"tier": "working"}, {"session_id": session_id}, {"status": "active"}]}
        return sorted(handle.find(where), key=lambda r: (r.occurred_at, r.created_at))

    def compress(
        self, handle: NamespaceStore | None, *, session_id: str, threshold_tokens: int | None, force: bool
    ) -> CompressionResult | None:
        """See ``MemoryEngine.compress``; nothing to compress in a namespace never written (``handle`` None)."""
        if threshold_tokens is not None:
            threshold_tokens = whole_number(threshold_tokens, "threshold_tokens", low=1, high=MAX_TOKENS)
        if handle is None:
            self._session_id(session_id)
            return None
        threshold = threshold_tokens or self._parts.settings.compress_threshold_tokens
        with handle.writing:  # read under the lock: two compressions of one window would fold it twice
            window = self.window(handle, session_id=session_id)
            return self._compressor.compress(handle, window, session_id=session_id, threshold=threshold, force=force)

    def clear(self, handle: NamespaceStore | None, *, session_id: str) -> int:
        """Forget the session's window (soft); long-term memories stay.

        The cleared turns' text is no memory's context any more: the settler's note of the
        session's latest texts goes (the next memory's context held it), and so does what of it
        the stored contexts hold (``forgetting.py``), unless a memory that stays holds it too.
        A namespace never written (``handle`` None) has none.
        """
        if handle is None:
            return 0
        with handle.writing:
            now = self._parts.clock.now()
            turns = self.window(handle, session_id=session_id)
            cleared = [t.model_copy(update={"status": Status.DELETED, "updated_at": now}) for t in turns]
            handle.rewrite(cleared)
            self._settler.neighbours.drop(handle.name, session_id)
            self._forgotten_text.leave_contexts(handle, cleared)
        return len(turns)


__all__ = ["NEIGHBOURS_BEFORE", "WorkingMemory", "remembered_text"]
