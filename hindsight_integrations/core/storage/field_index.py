"""The few fields recall filters and ranks on, kept in memory for every record.

Recall looks at 100–200 candidates to return ten. Fetching all of them from Chroma (the
metadata is a SQLite key-value table) and parsing each into a ``MemoryRecord`` cost
~16 ms at 100k memories, more than the searches themselves. Candidates are instead
filtered and ranked on these facts, and only the finalists are fetched, fresh, from
Chroma and checked again, so a memory forgotten by another process a moment ago is still
never returned.

Like the lexical index, this is a cache derived from Chroma: filled when a namespace is
opened, updated on this process's writes, and caught up with other writers by the
store's ``updated_at`` watermark sync. Access counts written by other processes do not
move ``updated_at``, so they reach the ranking here only when the record next changes;
the hits themselves always carry the fetched, current record.
"""

from __future__ import annotations

import json
import sys
import threading
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from ..language.keys import index_keys
from ..model.records import FAR_FUTURE, merged_inputs
from ..model.reserved import SUPERSEDES_KEY
from .indexing import has_frame

_FILTER_KEYS = frozenset(
    {"tier", "kind", "status", "session_id", "agent_id", "importance", "occurred_at", "valid_until", "expires_at"}
)


@dataclass(frozen=True, slots=True)
class MemoryFacts:
    """What ``RecallFilters`` checks (except user metadata) and what ``rank`` scores on."""

    tier: str
    kind: str
    status: str
    session_id: str | None
    agent_id: str | None
    importance: float
    occurred_at: float
    valid_until: float
    expires_at: float
    access_count: int
    entities: tuple[str, ...]
    has_context_vector: bool
    superseded_by: str | None = None
    slot: str | None = None
    supersedes: tuple[str, ...] = ()  # stored memories this one made history (``SUPERSEDES_KEY``)
    text_key: int = 0  # hash of the normalised content (``keys.text_key``), for long-term memories only
    negated: bool = False  # carries a negation (``keys.negated``): one side of a possible reversal
    reversal_key: int = 0  # what it is about (``keys.reversal_key``), long-term memories only
    consolidated_into: str | None = None  # the semantic memory distilled from this one (``consolidation.py``)
    merged_sessions: tuple[str, ...] = ()  # the other sessions its merged repeats were said in (``merged_sessions``)

    @property
    def long_term_active(self) -> bool:
        """Active and episodic or semantic: what a new memory may repeat or update."""
        return self.status == "active" and self.tier != "working"

    @classmethod
    def from_fields(cls, fields: dict[str, Any]) -> MemoryFacts:
        """From a record's flat view (``records.unpack``)."""
        # The language layer reads a text's keys; the index only keeps them.
        keys = index_keys(str(fields.get("content") or "")) if fields.get("tier") != "working" else None
        return cls(
            tier=sys.intern(str(fields.get("tier", ""))),
            kind=sys.intern(str(fields.get("kind", ""))),
            status=sys.intern(str(fields.get("status", ""))),
            session_id=fields.get("session_id"),
            agent_id=fields.get("agent_id"),
            importance=float(fields.get("importance", 0.5)),
            occurred_at=_epoch(fields, "occurred_at", 0.0),
            valid_until=_epoch(fields, "valid_until", FAR_FUTURE),
            expires_at=_epoch(fields, "expires_at", FAR_FUTURE),
            access_count=int(fields.get("access_count", 0)),
            entities=tuple(json.loads(fields.get("entities_json") or "[]")),
            has_context_vector=has_frame(fields),
            superseded_by=fields.get("superseded_by"),
            slot=fields.get("slot") or None,
            supersedes=tuple(filter(None, str(fields.get(f"m.{SUPERSEDES_KEY}") or "").split(","))),
            text_key=keys.text_key if keys else 0,
            negated=keys.negated if keys else False,
            reversal_key=keys.reversal_key if keys else 0,
            consolidated_into=fields.get("consolidated_into") or None,
            merged_sessions=merged_sessions(fields),
        )

    def get(self, key: str, default: Any = None) -> Any:
        """The metadata value under ``key``, so a ``RecallFilters.matcher`` check can read facts directly."""
        if key not in _FILTER_KEYS:
            raise KeyError(f"{key!r} is not kept in MemoryFacts; check the record's metadata instead")
        value = getattr(self, key)
        return default if value is None else value


class FactsIndex:
    """Memory id → ``MemoryFacts`` for one namespace; thread-safe."""

    def __init__(self) -> None:
        self._facts: dict[str, MemoryFacts] = {}
        self._by_slot: dict[str, set[str]] = {}
        self._merged_from: dict[str, set[str]] = {}  # session → memories of other sessions holding a repeat said there
        self._with_context = 0
        self._working = 0  # records of the working tier (turns), whatever their status
        self._latest: float | None = None  # the latest ``occurred_at`` ever indexed here (a removal does not lower it)
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._facts)

    @property
    def any_context(self) -> bool:
        """Whether any record here has a context vector (else there are none to search)."""
        return self._with_context > 0

    def unfinished_supersedes(self) -> dict[str, list[str]]:
        """Active memories whose recorded supersedes did not all land: new id → old ids still active.

        A memory and the update that makes the older one history are two Chroma writes; a crash
        between them leaves both active, and this finds them (``write/recovery.py``).
        """
        with self._lock:
            facts = self._facts
            out = {}
            for memory_id, found in facts.items():
                if found.supersedes and found.status == "active":
                    pending = [
                        o for o in found.supersedes if (old := facts.get(o)) is not None and old.status == "active"
                    ]
                    if pending:
                        out[memory_id] = pending
            return out

    @property
    def long_term_share(self) -> float:
        """The share of records that are not conversation turns (1.0 when empty)."""
        with self._lock:
            total, working = len(self._facts), self._working
        return 1.0 if not total else max(total - working, 1) / total

    @property
    def latest_occurred(self) -> float | None:
        """The latest ``occurred_at`` (epoch seconds) of any record indexed here, turns included; None when none.

        What "last week" in a question is read against (``language/when.py``): the store's present.
        """
        return self._latest

    def ids_with_context(self) -> list[str]:
        """The records that should have a context vector (``indexing.has_frame``)."""
        with self._lock:
            if not self._with_context:
                return []
            return [memory_id for memory_id, facts in self._facts.items() if facts.has_context_vector]

    def upsert(self, items: Iterable[tuple[str, dict[str, Any]]]) -> None:
        """Add or replace facts from ``(memory id, flat view)`` pairs.

        A count only grows: a rewrite of what an edit read before this process's recalls counted
        it keeps the count those recalls left here (Chroma gets them from the access recorder).
        """
        prepared = [(memory_id, MemoryFacts.from_fields(fields)) for memory_id, fields in items]
        with self._lock:
            for memory_id, facts in prepared:
                if (old := self._facts.get(memory_id)) is not None and old.access_count > facts.access_count:
                    facts = replace(facts, access_count=old.access_count)
                self._forget(memory_id)
                self._facts[memory_id] = facts
                self._with_context += facts.has_context_vector
                self._working += facts.tier == "working"
                self._latest = facts.occurred_at if self._latest is None else max(self._latest, facts.occurred_at)
                if facts.slot and facts.long_term_active:  # only what a new memory may update
                    self._by_slot.setdefault(facts.slot, set()).add(memory_id)
                for session in facts.merged_sessions:
                    self._merged_from.setdefault(session, set()).add(memory_id)

    def remove(self, memory_ids: Iterable[str]) -> None:
        """Drop the facts of hard-deleted memories (archive, purge)."""
        with self._lock:
            for memory_id in memory_ids:
                self._forget(memory_id)

    def _forget(self, memory_id: str) -> None:
        old = self._facts.pop(memory_id, None)
        if old is not None:
            self._with_context -= old.has_context_vector
            self._working -= old.tier == "working"
            if old.slot and (mates := self._by_slot.get(old.slot)) is not None:
                mates.discard(memory_id)
                if not mates:
                    del self._by_slot[old.slot]
            for session in old.merged_sessions:
                holders = self._merged_from[session]
                holders.discard(memory_id)
                if not holders:
                    del self._merged_from[session]

    def lookup(self, memory_ids: Sequence[str]) -> dict[str, MemoryFacts]:
        """Facts for the ids known here; the rest must be read from Chroma."""
        facts = self._facts
        return {memory_id: found for memory_id in memory_ids if (found := facts.get(memory_id)) is not None}

    def matching(self, passes: Callable[[MemoryFacts], bool]) -> list[tuple[str, float]]:
        """The ids whose facts pass ``passes`` (``RecallFilters.attribute_matcher``), each with its ``occurred_at``."""
        with self._lock:  # a snapshot: a write indexing meanwhile must not change the dict being read
            held = list(self._facts.items())
        return [(memory_id, facts.occurred_at) for memory_id, facts in held if passes(facts)]

    def merged_from(self, sessions: Iterable[str]) -> set[str]:
        """The memories, of any status, holding a repeat merged from one of ``sessions`` while they are of another.

        A repeat's context is its own session's preceding texts, so what leaves the contexts of a
        session (``write/forgetting.py``) leaves these memories' ``sources`` too: found here rather
        than by reading the whole namespace on every forget.
        """
        with self._lock:
            return {memory_id for session in sessions for memory_id in self._merged_from.get(session, ())}

    def slot_mates(self, slot: str, entities: Sequence[str], *, limit: int) -> list[str]:
        """The ``limit`` latest active long-term memories in ``slot`` that may be about the same entity.

        Memories about disjoint entities never update each other (``supersede.rule_verdict``), and
        among the rest each update leaves one current value, so the latest few are all a new
        memory can update; the cap keeps a slot shared by thousands of memories cheap.
        """
        wanted = set(entities)
        with self._lock:
            mates = [(memory_id, self._facts[memory_id]) for memory_id in self._by_slot.get(slot, ())]
        found = [
            (facts.occurred_at, memory_id)
            for memory_id, facts in mates
            if not wanted or not facts.entities or wanted.intersection(facts.entities)
        ]
        found.sort(reverse=True)
        return [memory_id for _, memory_id in found[:limit]]

    def latest_slotted(self, limit: int) -> list[str]:
        """The ``limit`` most recent (by ``occurred_at``) active long-term memories that have a slot."""
        with self._lock:
            slotted = [(self._facts[i].occurred_at, i) for ids in self._by_slot.values() for i in ids]
        slotted.sort(reverse=True)
        return [memory_id for _, memory_id in slotted[:limit]]

    def count_access(self, counts: dict[str, int]) -> None:
        """Add recalls made by this process, which the store writes to Chroma in the background."""
        with self._lock:
            for memory_id, n in counts.items():
                found = self._facts.get(memory_id)
                if found is not None:
                    self._facts[memory_id] = replace(found, access_count=found.access_count + n)


def merged_sessions(fields: dict[str, Any]) -> tuple[str, ...]:
    """The sessions a record's merged repeats were said in (nested ones too), its own left out; from its flat view."""
    packed = fields.get("sources_json")
    if not packed:
        return ()
    own = fields.get("session_id")
    said = {e.get("session_id") for e in merged_inputs(json.loads(packed))}
    return tuple(sorted(s for s in said if isinstance(s, str) and s and s != own))


def _epoch(fields: dict[str, Any], key: str, unset: float) -> float:
    """The stored time under ``key`` as epoch seconds, ``unset`` when there is none (0 is 1970-01-01, a time)."""
    value = fields.get(key)
    return unset if value is None else float(value)


__all__ = ["FactsIndex", "MemoryFacts"]
