"""Settling new memories: validate, filter, build records, settle each against what is stored, add.

``store`` takes a batch atomically: every item is validated before any is written. Then, under
the namespace's write lock: a repeated ``request_id`` returns the first call's result; the
write filter drops greetings and other non-content (with a reason, ``admission.py``); and each
new memory is *settled* against its nearest active memories (found by ``neighbours.py``) and
the earlier items of the same batch: a true repeat reinforces the stored memory
(``repeats.py``), a memory that supersedes another makes the older of the two history or is
quarantined (``supersede.py``), anything else is added as it is.

Words used for changes in this package: a memory *supersedes* another when the write path
judges that it replaces it (the older becomes history); an *edit* is the user changing one
memory in place, by id (``edit.py``, ``MemoryEngine.update``); a *rewrite* is writing changed
records back to Chroma (``NamespaceStore.rewrite``), whatever changed them.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any

import numpy as np

from ..errors import InvalidInputError
from ..language.keys import read
from ..language.sameness import can_repeat
from ..language.speakers import speaker_of, spoken
from ..model.inputs import MemoryInput, parse_inputs
from ..model.limits import check_id
from ..model.records import Kind, MemoryRecord, Source, Status, Tier
from ..model.reserved import REQUEST_HASH_KEY, REQUEST_MERGES_KEY, SUPERSEDES_KEY
from ..model.results import SkippedMemory, StoreResult
from ..parts import EngineParts
from ..storage.namespace_store import NamespaceStore
from .admission import CONTEXT_IMPORTANCE, WriteDecision, assess
from .conversation import SessionNeighbours
from .corrections import inherited_slot
from .neighbours import NeighbourFinder
from .recovery import finish_supersedes_locked
from .repeats import is_repeat, reinforce
from .replay import RetriedMerges, merges_note, replayed, reused
from .supersede import Neighbour, UpdateJudge, Verdict, history_of, is_low_trust, protected, quarantined

_CORRECTABLE = 8  # latest memories with a slot a correction naming no attribute may be about


class _Batch:
    """What settling one store call decided: new records (with vectors) and changed stored ones.

    ``vectors`` are all the call's records' vectors, in order, normalised once, so comparing an
    item with the earlier ones is one matrix-vector product (no n × n matrix: a batch may be large).
    """

    def __init__(self, vectors: np.ndarray) -> None:
        self.fresh: list[tuple[MemoryRecord, np.ndarray]] = []
        self.context: dict[str, np.ndarray] = {}
        self.changed: dict[str, MemoryRecord] = {}
        self._vectors = vectors
        self._unit: np.ndarray | None = None
        self._position: dict[str, int] = {}  # record id -> index in fresh
        self._input_of: list[int] = []  # index in fresh -> index in vectors

    def add(self, record: MemoryRecord, n: int) -> None:
        """The call's ``n``-th record is new: to be added with the others."""
        self._position[record.id] = len(self.fresh)
        self.fresh.append((record, self._vectors[n]))
        self._input_of.append(n)

    def record_supersedes(self) -> None:
        """Note on each new record the stored ones it made history, so a crash between writes can be finished."""
        fresh_ids = set(self._position)
        made: dict[str, list[str]] = {}
        for old in self.changed.values():
            if old.superseded_by in fresh_ids and old.id not in fresh_ids:
                made.setdefault(old.superseded_by, []).append(old.id)
        for new_id, olds in made.items():
            n = self._position[new_id]
            record, vector = self.fresh[n]
            self.fresh[n] = (
                record.model_copy(update={"metadata": {**record.metadata, SUPERSEDES_KEY: ",".join(olds)}}),
                vector,
            )

    def note_on_first(self, key: str, value: str) -> None:
        """Set metadata ``key`` of the first new record (a request's answer is rebuilt from its records)."""
        record, vector = self.fresh[0]
        self.fresh[0] = (record.model_copy(update={"metadata": {**record.metadata, key: value}}), vector)

    def current(self, record: MemoryRecord) -> MemoryRecord:
        """``record`` as this batch has left it so far."""
        if record.id in self.changed:
            return self.changed[record.id]
        position = self._position.get(record.id)
        return record if position is None else self.fresh[position][0]

    def close_to(self, n: int, floor: float, *, slot: str | None) -> list[tuple[MemoryRecord, float]]:
        """New records of this batch with cosine ≥ ``floor`` to the ``n``-th record, or the same ``slot``."""
        if not self.fresh:
            return []
        if self._unit is None:
            norms = np.linalg.norm(self._vectors, axis=1)
            self._unit = self._vectors / np.where(norms == 0, 1.0, norms)[:, None]
        cosines = (self._unit @ self._unit[n])[self._input_of]
        return [
            (record, float(cosine))
            for (record, _), cosine in zip(self.fresh, cosines)
            if cosine >= floor or (slot is not None and record.slot == slot)
        ]

    def change(self, record: MemoryRecord) -> None:
        """Keep ``record``'s new state, whether it was stored before or is new in this batch."""
        position = self._position.get(record.id)
        if position is None:
            self.changed[record.id] = record
        else:
            self.fresh[position] = (record, self.fresh[position][1])


class Settler:
    """Stores new memories, settling each against what is stored, for any namespace of one engine."""

    def __init__(self, parts: EngineParts, neighbours: SessionNeighbours | None = None) -> None:
        """``neighbours``: the sessions' latest texts, shared with what clears a window or forgets a memory."""
        self._parts = parts
        self.neighbours = neighbours if neighbours is not None else SessionNeighbours()
        self._finder = NeighbourFinder(parts)

    def checked(self, memories: Any, request_id: str | None = None) -> list[MemoryInput]:
        """The items of a ``store_memories`` call, validated, or ``InvalidInputError`` naming the bad one.

        Reads nothing of the store: a call is checked before its namespace is opened, so a refused
        one (a typo in an embedded app) leaves no empty namespace behind.
        """
        items = parse_inputs(memories, limits=self._parts.limits)
        if request_id is not None:
            if not isinstance(request_id, str) or not request_id.strip():
                raise InvalidInputError("request_id", "must be a non-empty string (e.g. a UUID)")
            check_id(request_id, "request_id", self._parts.limits)
        return items

    def store(
        self,
        handle: NamespaceStore,
        items: Sequence[MemoryInput],
        *,
        apply_filter: bool,
        dedup: bool,
        supersede: bool,
        request_id: str | None,
        origin: str,
        companions: Sequence[tuple[MemoryRecord, np.ndarray]] = (),
    ) -> StoreResult:
        """See ``MemoryEngine.store_memories``; ``items`` and ``request_id`` passed ``checked``.

        ``companions`` are records (with their vectors) written in the same Chroma ``add`` as
        the new memories, whatever the filter and settling decide: a conversation turn and the
        memory made from it land together, in one write instead of two.
        """
        now = self._parts.clock.now()
        with handle.writing:
            request_hash = _request_hash(items) if request_id else None
            if request_id:
                previous = handle.find({"request_id": request_id})
                if previous:
                    if any(r.metadata.get(REQUEST_HASH_KEY) not in (None, request_hash) for r in previous):
                        raise reused(request_id)
                    _add(handle, companions)
                    finish_supersedes_locked(handle, self._parts.clock, {r.id for r in previous})
                    return replayed(handle, previous)
            result = StoreResult()
            records: list[MemoryRecord] = []
            trusted: dict[str, bool] = {}
            for n, item in enumerate(items):
                item = self._in_conversation(handle.name, item)  # a batch in order is a conversation too
                # The filter judges what was said: "Lena: Hi!" is a greeting, as "Hi!" is.
                decision = assess(spoken(item.content), item.role) if _needs_assessment(item, apply_filter) else None
                if decision is not None and apply_filter and not decision.remember:
                    result.skipped.append(SkippedMemory(index=n, content=item.content[:200], reason=decision.reason))
                    continue
                # A microsecond apart: the order a batch was said in is the order its session keeps.
                stamp = now + timedelta(microseconds=len(records))
                record = self._record(handle.name, item, decision, stamp, request_id, request_hash, origin)
                records.append(record)
                trusted[record.id] = item.trusted
            self._settle(
                handle, records, trusted, result, companions, dedup=dedup, supersede=supersede,
                with_context=len(items) > 1,  # a statement on its own leaves its context vector to the background
            )  # fmt: skip
        return result

    def _in_conversation(self, namespace: str, item: MemoryInput) -> MemoryInput:
        """``item`` with its session's preceding items as context and its speaker as an entity (``conversation.py``)."""
        changes: dict[str, Any] = {}
        if not item.entities and (speaker := speaker_of(item.content)):
            changes["entities"] = [speaker]
        if item.session_id:
            if item.context is None:
                changes["context"] = self.neighbours.context(namespace, item.session_id)
            self.neighbours.add(namespace, item.session_id, item.content)
        return item.model_copy(update=changes) if changes else item

    def _settle(
        self,
        handle: NamespaceStore,
        records: list[MemoryRecord],
        trusted: dict[str, bool],
        result: StoreResult,
        companions: Sequence[tuple[MemoryRecord, np.ndarray]],
        *,
        dedup: bool,
        supersede: bool,
        with_context: bool,
    ) -> None:
        """Repeat, supersede or new memory, one by one (later items see earlier ones); then one add, one rewrite."""
        if not records:
            _add(handle, companions)
            return
        records = [self._with_corrected_slot(handle, r) for r in records]
        vectors, context_vectors = self._parts.embed_records(records, with_context=with_context)
        cosines = self._parts.cosines
        judge = UpdateJudge(
            self._parts.llm, threshold=cosines.update, related=(self._finder.floor + cosines.update) / 2
        )
        # Without dedup or an LLM, the rules only supersede by slot or by meaning with a change cue:
        # anything else is added without comparing.
        comparable = [n for n, r in enumerate(records) if (dedup or supersede) and can_repeat(r)]
        searched = [n for n in comparable if self._finder.search_needed(records[n], dedup)]
        slotted = [n for n in comparable if records[n].slot]
        stored = self._finder.stored(handle, records, vectors, searched, slotted, dedup=dedup)
        batch = _Batch(vectors)
        retried = RetriedMerges({memory.id: memory for found in stored.values() for memory, _ in found})
        merged_at: list[tuple[int, str]] = []  # (place in the answer, memory merged into), for a replay
        for n, record in enumerate(records):
            neighbours = self._neighbours(n, record, stored[n], batch) if n in stored else []
            repeat = self._repeat_of(record, neighbours) if dedup else None
            if repeat is None and supersede:
                record, repeat = self._apply_supersedes(record, neighbours, judge, batch, result, trusted[record.id])
            if repeat is not None and retried.merged_before(record, repeat.id):
                result.merged.append(repeat.id)
                result.stored.append(repeat)
                continue
            if repeat is not None:
                # At the repeat's own stamp: a batch's later items are stamped later, so the memory an
                # earlier item of the batch made is never updated before it was created.
                reinforced = reinforce(repeat, record, record.updated_at)
                batch.change(reinforced)
                merged_at.append((len(result.stored), reinforced.id))
                result.merged.append(reinforced.id)
                result.stored.append(reinforced)
                continue
            batch.add(record, n)
            if record.id in context_vectors:
                batch.context[record.id] = context_vectors[record.id]
            result.stored.append(record)
        batch.record_supersedes()
        if merged_at and batch.fresh and records[0].request_id:
            batch.note_on_first(REQUEST_MERGES_KEY, merges_note(merged_at))
        result.replayed = retried.count == len(records) and not batch.fresh and not batch.changed
        fresh_ids = {r.id for r, _ in batch.fresh}
        result.stored = [batch.current(r) if r.id in fresh_ids or r.id in batch.changed else r for r in result.stored]
        _add(handle, [*companions, *batch.fresh], batch.context)
        handle.rewrite(list(batch.changed.values()))  # a crash before this is finished at open (recovery.py)

    @staticmethod
    def _with_corrected_slot(handle: NamespaceStore, record: MemoryRecord) -> MemoryRecord:
        """A correction that names no attribute takes the slot of the latest one holding its kind of value.

        "Actually it's +351 912 345 687" corrects the phone number said last (``corrections.py``).
        """
        if record.kind is not Kind.CORRECTION or record.slot or not read(record.content).shapes:
            return record
        ids = handle.facts.latest_slotted(_CORRECTABLE)
        found = {r.id: r for r, _ in handle.get(ids)}
        slot = inherited_slot(record, [found[i] for i in ids if i in found])
        return record.model_copy(update={"slot": slot}) if slot else record

    def _neighbours(
        self, n: int, record: MemoryRecord, stored: list[tuple[MemoryRecord, float]], batch: _Batch
    ) -> list[Neighbour]:
        """``stored`` and the batch's earlier records close to ``record`` (its ``n``-th), as left so far, if active."""
        found = {memory.id: (memory, similarity) for memory, similarity in stored}
        for earlier, cosine in batch.close_to(n, self._finder.floor, slot=record.slot):
            found[earlier.id] = (earlier, cosine)
        out = []
        for memory, similarity in found.values():
            current = batch.current(memory)
            if current.status is Status.ACTIVE and current.tier is not Tier.WORKING:
                out.append(Neighbour(current, similarity))
        return sorted(out, key=lambda n: -n.similarity)

    def _repeat_of(self, record: MemoryRecord, neighbours: Sequence[Neighbour]) -> MemoryRecord | None:
        threshold = self._parts.cosines.dedup
        return next((n.record for n in neighbours if is_repeat(n.record, record, n.similarity, threshold)), None)

    @staticmethod
    def _apply_supersedes(
        record: MemoryRecord,
        neighbours: Sequence[Neighbour],
        judge: UpdateJudge,
        batch: _Batch,
        result: StoreResult,
        trusted: bool,
    ) -> tuple[MemoryRecord, MemoryRecord | None]:
        """``record`` after what it supersedes (history, quarantined or active), and the memory it repeats if any."""
        for neighbour, verdict in judge.verdicts(record, neighbours):
            old = batch.current(neighbour.record)
            if verdict is Verdict.KEEP_BOTH or old.status is not Status.ACTIVE:
                continue
            if verdict is Verdict.MERGE:
                return record, old
            if verdict is Verdict.KEEP_NEW and protected(old) and is_low_trust(record, trusted=trusted):
                result.quarantined.append(record.id)
                return quarantined(record, old), None
            if verdict is Verdict.KEEP_OLD or record.occurred_at < old.occurred_at:
                result.superseded.append(record.id)
                return history_of(record, old, record.updated_at), None
            batch.change(history_of(old, record, record.updated_at))
            result.superseded.append(old.id)
        return record, None

    def _record(
        self,
        namespace: str,
        item: MemoryInput,
        decision: WriteDecision | None,
        now: datetime,
        request_id: str | None,
        request_hash: str | None,
        origin: str,
    ) -> MemoryRecord:
        """``decision`` is None when the item needed no assessment (see ``_needs_assessment``)."""
        if decision is None:
            if item.kind is None or item.importance is None:  # pragma: no cover - _needs_assessment guarantees both
                raise AssertionError("an item without kind or importance needs the write filter's verdict")
            kind, importance, ttl = item.kind, item.importance, item.ttl_seconds
        else:
            kind = item.kind or decision.kind
            if kind is Kind.TURN and decision.remember:
                kind = decision.kind
            importance = item.importance if item.importance is not None else decision.importance
            ttl = item.ttl_seconds or (decision.ttl_seconds if item.kind is None else None)
        reading = read(item.content)
        slot = reading.slot if kind is not Kind.TURN else None
        if decision is not None and item.kind is None and kind is Kind.EVENT and reading.lasting:
            # "I started a new job at Feedzai this week" says when a lasting attribute changed: the
            # job does not end with the week, so it is context with no TTL, not an event.
            kind, ttl = Kind.CONTEXT, item.ttl_seconds
            importance = item.importance if item.importance is not None else max(importance, CONTEXT_IMPORTANCE)
        semantic = kind in (Kind.PREFERENCE, Kind.CORRECTION) or (kind is Kind.FACT and importance >= 0.8)
        occurred = item.occurred_at or now
        metadata = dict(item.metadata)
        if request_hash:
            metadata[REQUEST_HASH_KEY] = request_hash
        return self._parts.new_record(
            namespace,
            item.content,
            now=now,
            tier=item.tier or (Tier.SEMANTIC if semantic else Tier.EPISODIC),
            kind=kind,
            role=item.role,
            importance=importance,
            occurred_at=occurred,
            agent_id=item.agent_id,
            session_id=item.session_id,
            context=item.context,
            entities=item.entities,
            slot=slot,
            expires_at=(occurred + timedelta(seconds=ttl)) if ttl else None,
            source=item.source or Source(session_id=item.session_id, origin=origin),
            request_id=request_id,
            metadata=metadata,
        )


def _add(
    handle: NamespaceStore,
    pairs: Sequence[tuple[MemoryRecord, np.ndarray]],
    context: dict[str, np.ndarray] | None = None,
) -> None:
    handle.add([r for r, _ in pairs], [v for _, v in pairs], context)


def _needs_assessment(item: MemoryInput, apply_filter: bool) -> bool:
    """The write filter's verdict is needed to skip chit-chat or to fill in what the caller left out.

    Bulk imports that give every item's kind and importance, unfiltered, skip it (~20 µs a memory).
    """
    return apply_filter or item.kind in (None, Kind.TURN) or item.importance is None


def _request_hash(items: Sequence[MemoryInput]) -> str:
    payload = json.dumps([i.model_dump(mode="json") for i in items], sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(payload.encode()).hexdigest()[:32]


__all__ = ["Settler"]
