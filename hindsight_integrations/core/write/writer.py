"""The write path: validate, filter, build records, settle each against what is stored, add; and changes to one memory.

``store`` takes a batch atomically: every item is validated before any is written. Then, under
the namespace's write lock: a repeated ``request_id`` returns the first call's result; the
write filter drops greetings and other non-content (with a reason); and each new memory is
*settled* against its nearest active memories (and the earlier items of the same batch):
a true repeat reinforces the stored memory (``dedup.py``), an update makes the older of the
two history or is quarantined (``updates.py``), anything else is added as it is.
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any

import numpy as np

from ..errors import InvalidInputError, MemoryNotFoundError
from ..language.keys import read
from ..language.sameness import can_repeat
from ..language.speakers import speaker_of, spoken
from ..model.arguments import coerce_enum, fraction, whole_number
from ..model.inputs import MAX_TTL_SECONDS, MemoryInput, parse_inputs, validate_content
from ..model.limits import check_id, check_memory_id, check_metadata
from ..model.records import Kind, MemoryRecord, Source, Status, Tier
from ..model.results import SkippedMemory, StoreResult
from ..parts import EngineParts
from ..storage.field_index import SUPERSEDES_KEY
from ..storage.namespace_store import NamespaceStore
from .admission import CONTEXT_IMPORTANCE, WriteDecision, assess
from .conversation import SessionNeighbours
from .corrections import inherited_slot
from .repeats import is_repeat, reinforce
from .supersede import PROTECTED_IMPORTANCE, Neighbour, UpdateJudge, Verdict, history_of, is_low_trust, quarantined

_LONG_TERM = {"$and": [{"status": "active"}, {"tier": {"$in": ["episodic", "semantic"]}}]}
_NEIGHBOURS = 4  # nearest stored memories a new one is compared with
_SEARCHED = 16  # nearest of any status searched for them, before keeping the active long-term ones
# Below these cosines nothing is compared (slots are found apart): the rules need close meaning,
# the LLM judge is shown looser neighbours ("I work at Acme" / "these days I'm at Initech": 0.31).
_RULES_FLOOR = 0.5
_LLM_FLOOR = 0.3
_CORRECTABLE = 8  # latest memories with a slot a correction naming no attribute may be about


log = logging.getLogger(__name__)


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


class Writer:
    """Stores new memories and changes existing ones, for any namespace of one engine."""

    def __init__(self, parts: EngineParts) -> None:
        self._parts = parts
        self._neighbours_of = SessionNeighbours()

    def store(
        self,
        handle: NamespaceStore,
        memories: Any,
        *,
        apply_filter: bool,
        dedup: bool,
        supersede: bool,
        request_id: str | None,
        origin: str,
        companions: Sequence[tuple[MemoryRecord, np.ndarray]] = (),
    ) -> StoreResult:
        """See ``MemoryEngine.store_memories``.

        ``companions`` are records (with their vectors) written in the same Chroma ``add`` as
        the new memories, whatever the filter and settling decide: a conversation turn and the
        memory made from it land together, in one write instead of two.
        """
        items = parse_inputs(memories, limits=self._parts.limits)
        if request_id is not None:
            if not isinstance(request_id, str) or not request_id.strip():
                raise InvalidInputError("request_id", "must be a non-empty string (e.g. a UUID)")
            check_id(request_id, "request_id", self._parts.limits)
        now = self._parts.clock.now()
        with handle.writing:
            request_hash = _request_hash(items) if request_id else None
            if request_id:
                previous = handle.find({"request_id": request_id})
                if previous:
                    if any(r.metadata.get("_request_hash") not in (None, request_hash) for r in previous):
                        raise InvalidInputError(
                            "request_id",
                            f"{request_id!r} was already used for different content; use a new request_id",
                        )
                    _add(handle, companions)
                    self._finish_supersedes(handle, {r.id for r in previous})
                    return StoreResult(stored=previous, replayed=True)
            result = StoreResult()
            records: list[MemoryRecord] = []
            trusted: dict[str, bool] = {}
            for n, item in enumerate(items):
                if len(items) == 1:  # a conversation is written a statement at a time; a batch is an import
                    item = self._in_conversation(handle.name, item)
                # The filter judges what was said: "Lena: Hi!" is a greeting, as "Hi!" is.
                decision = assess(spoken(item.content), item.role) if _needs_assessment(item, apply_filter) else None
                if decision is not None and apply_filter and not decision.remember:
                    result.skipped.append(SkippedMemory(index=n, content=item.content[:200], reason=decision.reason))
                    continue
                record = self._record(handle.name, item, decision, now, request_id, request_hash, origin)
                records.append(record)
                trusted[record.id] = item.trusted
            self._settle(
                handle, records, trusted, result, companions, dedup=dedup, supersede=supersede, now=now,
                with_context=len(items) > 1,  # a statement on its own leaves its context vector to the background
            )  # fmt: skip
        return result

    def _in_conversation(self, namespace: str, item: MemoryInput) -> MemoryInput:
        """``item`` with its session's preceding items as context and its speaker as an entity (session_context.py)."""
        changes: dict[str, Any] = {}
        if not item.entities and (speaker := speaker_of(item.content)):
            changes["entities"] = [speaker]
        if item.session_id:
            if item.context is None:
                changes["context"] = self._neighbours_of.context(namespace, item.session_id)
            self._neighbours_of.add(namespace, item.session_id, item.content)
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
        now: datetime,
        with_context: bool,
    ) -> None:
        """Repeat, update or new memory, one by one (later items see earlier ones); then one add, one update."""
        if not records:
            _add(handle, companions)
            return
        records = [self._with_corrected_slot(handle, r) for r in records]
        vectors, context_vectors = self._parts.embed_records(records, with_context=with_context)
        judge = UpdateJudge(self._parts.llm, threshold=self._parts.settings.update_threshold)
        # Without dedup or an LLM, the rules only update by slot or by meaning with a change cue:
        # anything else is added without comparing.
        comparable = [n for n, r in enumerate(records) if (dedup or supersede) and can_repeat(r)]
        searched = [n for n in comparable if self._search_needed(records[n], dedup)]
        slotted = [n for n in comparable if records[n].slot]
        stored = self._stored_neighbours(handle, records, vectors, searched, slotted, dedup=dedup)
        batch = _Batch(vectors)
        for n, record in enumerate(records):
            neighbours = self._neighbours(n, record, stored[n], batch) if n in stored else []
            repeat = self._repeat_of(record, neighbours) if dedup else None
            if repeat is None and supersede:
                record, repeat = self._apply_updates(record, neighbours, judge, batch, result, trusted[record.id])
            if repeat is not None:
                reinforced = reinforce(repeat, record, now)
                batch.change(reinforced)
                result.merged.append(reinforced.id)
                result.stored.append(reinforced)
                continue
            batch.add(record, n)
            if record.id in context_vectors:
                batch.context[record.id] = context_vectors[record.id]
            result.stored.append(record)
        batch.record_supersedes()
        fresh_ids = {r.id for r, _ in batch.fresh}
        result.stored = [batch.current(r) if r.id in fresh_ids or r.id in batch.changed else r for r in result.stored]
        _add(handle, [*companions, *batch.fresh], batch.context)
        handle.update(list(batch.changed.values()))  # a crash before this is finished at open (finish_supersedes)

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

    @property
    def _floor(self) -> float:
        """The cosine below which nothing is compared: the rules need close meaning, an LLM judge less."""
        return _RULES_FLOOR if self._parts.llm is None else _LLM_FLOOR

    def _search_needed(self, record: MemoryRecord, dedup: bool) -> bool:
        """Whether to search the store for ``record``'s neighbours by meaning.

        Repeats need it, and so do updates by meaning, which the rules only see with a change cue;
        slot-mates are found by their slot. A bulk import without dedup thus searches only for
        the few items that announce a change.
        """
        return dedup or self._parts.llm is not None or read(record.content).change_cue

    def _stored_neighbours(
        self,
        handle: NamespaceStore,
        records: list[MemoryRecord],
        vectors: np.ndarray,
        searched: list[int],
        slotted: list[int],
        *,
        dedup: bool,
    ) -> dict[int, list[tuple[MemoryRecord, float]]]:
        """Stored active long-term memories close to each ``searched`` record and in the slot of each ``slotted`` one.

        All of a batch's searches go to Chroma as one query and one read. The search is unfiltered
        (a ``where`` makes Chroma scan metadata: ~9 ms a query at 5k memories, growing with the
        store) and filtered here on the facts index; only when every hit was filtered away while
        still close enough to matter is a filtered query made. Slot-mates come from the facts
        index, caught up first with other writers.
        """
        floor = self._floor
        hits: dict[int, list[tuple[str, float]]] = {}
        for n, found in zip(searched, handle.query_many(vectors[searched], n=_SEARCHED)):
            hits[n] = _long_term(handle, found, floor)
            if len(hits[n]) < _NEIGHBOURS and len(found) == _SEARCHED and found[-1][1] >= floor:
                hits[n] = [h for h in handle.query(vectors[n], n=_NEIGHBOURS, where=_LONG_TERM) if h[1] >= floor]
            hits[n] = _that_matter(handle, hits[n], records[n], self._cutoff(records[n], dedup))
        if slotted:
            handle.sync_indexes(force=True)
        facts = handle.facts
        mates = {n: facts.slot_mates(str(records[n].slot), records[n].entities, limit=_NEIGHBOURS) for n in slotted}
        wanted = {i for found in hits.values() for i, _ in found} | {i for ids in mates.values() for i in ids}
        fetched = {r.id: r for r, _ in handle.get(list(wanted))}
        out: dict[int, list[tuple[MemoryRecord, float]]] = {}
        for n in sorted({*searched, *slotted}):
            similarity = dict(hits.get(n, []))
            ids = dict.fromkeys([*similarity, *mates.get(n, [])])
            out[n] = [(fetched[i], similarity.get(i, 0.0)) for i in ids if i in fetched]
        return out

    def _cutoff(self, record: MemoryRecord, dedup: bool) -> float:
        """The cosine from which a stored neighbour may be a repeat of or be updated by ``record``.

        An LLM judge is shown everything above the floor. The rules repeat at ``dedup_threshold``
        and update by meaning only with a change cue, at ``update_threshold``; a neighbour further
        off matters to them only as an exact repeat, a slot-mate or the other side of a reversal
        (``_that_matter``).
        """
        if self._parts.llm is not None:
            return self._floor
        settings = self._parts.settings
        bounds = [settings.dedup_threshold] if dedup else []
        if read(record.content).change_cue:
            bounds.append(settings.update_threshold)
        return min(bounds, default=float("inf"))

    def _neighbours(
        self, n: int, record: MemoryRecord, stored: list[tuple[MemoryRecord, float]], batch: _Batch
    ) -> list[Neighbour]:
        """``stored`` and the batch's earlier records close to ``record`` (its ``n``-th), as left so far, if active."""
        found = {memory.id: (memory, similarity) for memory, similarity in stored}
        for earlier, cosine in batch.close_to(n, self._floor, slot=record.slot):
            found[earlier.id] = (earlier, cosine)
        out = []
        for memory, similarity in found.values():
            current = batch.current(memory)
            if current.status is Status.ACTIVE and current.tier is not Tier.WORKING:
                out.append(Neighbour(current, similarity))
        return sorted(out, key=lambda n: -n.similarity)

    def _repeat_of(self, record: MemoryRecord, neighbours: Sequence[Neighbour]) -> MemoryRecord | None:
        threshold = self._parts.settings.dedup_threshold
        return next((n.record for n in neighbours if is_repeat(n.record, record, n.similarity, threshold)), None)

    @staticmethod
    def _apply_updates(
        record: MemoryRecord,
        neighbours: Sequence[Neighbour],
        judge: UpdateJudge,
        batch: _Batch,
        result: StoreResult,
        trusted: bool,
    ) -> tuple[MemoryRecord, MemoryRecord | None]:
        """``record`` after the updates it makes (history, quarantined or active), and the memory it repeats if any."""
        for neighbour, verdict in judge.verdicts(record, neighbours):
            old = batch.current(neighbour.record)
            if verdict is Verdict.KEEP_BOTH or old.status is not Status.ACTIVE:
                continue
            if verdict is Verdict.MERGE:
                return record, old
            if (
                verdict is Verdict.KEEP_NEW
                and old.importance >= PROTECTED_IMPORTANCE
                and is_low_trust(record, trusted=trusted)
            ):
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
            metadata["_request_hash"] = request_hash
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

    # -- one memory -------------------------------------------------------------------------
    @staticmethod
    def get(handle: NamespaceStore, memory_id: str) -> MemoryRecord:
        """The memory ``memory_id`` of this namespace, whatever its status."""
        if not isinstance(memory_id, str) or not memory_id:
            raise InvalidInputError("id", "must be a memory id string")
        check_memory_id(memory_id)
        found = handle.get([memory_id])
        if not found:
            raise MemoryNotFoundError(memory_id, handle.name)
        return found[0][0]

    def update(
        self,
        handle: NamespaceStore,
        memory_id: str,
        *,
        content: str | None,
        importance: float | None,
        kind: Kind | str | None,
        metadata: dict[str, Any] | None,
        ttl_seconds: int | None,
    ) -> MemoryRecord:
        """See ``MemoryEngine.update``.

        The record is read inside the namespace's write lock, so concurrent updates compose
        (each applies its fields to what the other wrote) and a forgotten memory stays forgotten.
        """
        changes: dict[str, Any] = {}
        if content is not None:
            changes["content"] = validate_content(content, max_bytes=self._parts.settings.max_content_bytes)
            changes["token_count"] = self._parts.tokens.count(changes["content"])
            changes["slot"] = read(changes["content"]).slot
        if importance is not None:
            changes["importance"] = fraction(importance, "importance")
        if kind is not None:
            changes["kind"] = coerce_enum(Kind, kind, "kind")
        if metadata is not None:
            if not isinstance(metadata, dict):
                raise InvalidInputError("metadata", "must be an object")
            check_metadata(metadata, "metadata", self._parts.limits)
        seconds = None if ttl_seconds is None else whole_number(ttl_seconds, "ttl_seconds", low=1, high=MAX_TTL_SECONDS)
        with handle.writing:
            record = self._live(handle, memory_id)
            changes["updated_at"] = self._parts.clock.now()
            if metadata is not None:
                changes["metadata"] = {**record.metadata, **metadata}
            if seconds is not None:
                changes["expires_at"] = changes["updated_at"] + timedelta(seconds=seconds)
            updated = record.model_copy(update=changes)
            vectors, context_vectors = self._parts.embed_records([updated]) if content is not None else (None, None)
            handle.update([updated], vectors, context_vectors)
        return updated

    def forget(self, handle: NamespaceStore, memory_id: str) -> MemoryRecord:
        """See ``MemoryEngine.forget``; under the write lock, so no concurrent update brings it back."""
        with handle.writing:
            record = self.get(handle, memory_id)
            updated = record.model_copy(update={"status": Status.DELETED, "updated_at": self._parts.clock.now()})
            handle.update([updated])
        return updated

    def finish_supersedes(self, handle: NamespaceStore) -> int:
        """Make history of what a memory superseded when the process died before writing it; how many.

        Run when a namespace is opened: a memory and the update of what it supersedes are two
        Chroma writes, and the new memory records the ids (``facts.SUPERSEDES_KEY``) first.
        """
        if not handle.facts.unfinished_supersedes():
            return 0
        with handle.writing:
            return self._finish_supersedes(handle, None)

    def _finish_supersedes(self, handle: NamespaceStore, among: set[str] | None) -> int:
        """``finish_supersedes`` for the memories ``among`` (all when None); the caller holds the write lock."""
        pending = {n: o for n, o in handle.facts.unfinished_supersedes().items() if among is None or n in among}
        if not pending:
            return 0
        found = {r.id: r for r, _ in handle.get([*pending, *(o for olds in pending.values() for o in olds)])}
        now = self._parts.clock.now()
        made = [
            history_of(found[old], found[new], now)
            for new, olds in pending.items()
            if new in found
            for old in olds
            if old in found and found[old].status is Status.ACTIVE
        ]
        handle.update(made)
        if made:
            log.warning("namespace %r: finished %d supersedes a crash had interrupted", handle.name, len(made))
        return len(made)

    def _live(self, handle: NamespaceStore, memory_id: str) -> MemoryRecord:
        """The record, unless it was forgotten: an update must not bring a memory back."""
        record = self.get(handle, memory_id)
        if record.status is Status.DELETED:
            raise MemoryNotFoundError(memory_id, handle.name, reason="it was forgotten")
        return record

    def unforget(self, handle: NamespaceStore, memory_id: str) -> MemoryRecord:
        """See ``MemoryEngine.unforget``."""
        with handle.writing:
            record = self.get(handle, memory_id)
            if record.status is not Status.DELETED:
                raise InvalidInputError("id", f"memory {memory_id} is {record.status.value}, not forgotten")
            restored = record.model_copy(update={"status": Status.ACTIVE, "updated_at": self._parts.clock.now()})
            handle.update([restored])
            return restored

    def review(self, handle: NamespaceStore, memory_id: str, *, accept: bool) -> list[MemoryRecord]:
        """See ``MemoryEngine.review``: the quarantined memory and, when accepted, what it made history."""
        with handle.writing:
            record = self.get(handle, memory_id)
            if record.status is not Status.QUARANTINED:
                raise InvalidInputError("id", f"memory {memory_id} is {record.status.value}, not quarantined")
            now = self._parts.clock.now()
            if not accept:
                rejected = record.model_copy(update={"status": Status.DELETED, "updated_at": now})
                handle.update([rejected])
                return [rejected]
            accepted = record.model_copy(update={"status": Status.ACTIVE, "updated_at": now})
            found = handle.get([record.conflicts_with]) if record.conflicts_with else []
            changed = [accepted]
            old = found[0][0] if found else None
            if old is not None and old.status is Status.ACTIVE:
                if accepted.occurred_at < old.occurred_at:
                    changed = [history_of(accepted, old, now)]
                else:
                    changed.append(history_of(old, accepted, now))
            handle.update(changed)
            return changed

    def unmerge(self, handle: NamespaceStore, memory_id: str, index: int) -> MemoryRecord:
        """See ``MemoryEngine.unmerge``: the merged input ``index`` of ``memory_id`` as a memory of its own again."""
        with handle.writing:
            record = self.get(handle, memory_id)
            if not record.sources:
                raise InvalidInputError("id", f"memory {memory_id} has no merged inputs to split off")
            position = whole_number(index, "index", low=-len(record.sources), high=len(record.sources) - 1)
            entry = record.sources[position]
            now = self._parts.clock.now()
            restored = self._parts.new_record(
                handle.name,
                entry["content"],
                now=now,
                tier=record.tier,
                kind=coerce_enum(Kind, entry.get("kind"), "kind", default=record.kind),
                role=record.role,
                importance=entry.get("importance", record.importance),
                occurred_at=datetime.fromisoformat(entry["occurred_at"]),
                session_id=entry.get("session_id"),
                agent_id=entry.get("agent_id"),
                context=entry.get("context"),
                entities=entry.get("entities") or [],
                slot=read(entry["content"]).slot,
                source=Source.model_validate(entry.get("source") or {}),
                request_id=entry.get("request_id"),
                metadata=entry.get("metadata") or {},
            )
            sources = [s for n, s in enumerate(record.sources) if n != position % len(record.sources)]
            remaining = record.model_copy(update={"sources": sources, "updated_at": now})
            vectors, context_vectors = self._parts.embed_records([restored])
            handle.add([restored], vectors, context_vectors)
            handle.update([remaining])
            return restored


def _add(
    handle: NamespaceStore,
    pairs: Sequence[tuple[MemoryRecord, np.ndarray]],
    context: dict[str, np.ndarray] | None = None,
) -> None:
    handle.add([r for r, _ in pairs], [v for _, v in pairs], context)


def _long_term(handle: NamespaceStore, found: list[tuple[str, float]], floor: float) -> list[tuple[str, float]]:
    """The first ``_NEIGHBOURS`` hits at ``floor`` or closer that are active long-term (or not known here yet)."""
    facts = handle.facts.lookup([i for i, _ in found])
    kept = [(i, s) for i, s in found if s >= floor and (i not in facts or facts[i].long_term_active)]
    return kept[:_NEIGHBOURS]


def _that_matter(
    handle: NamespaceStore, hits: list[tuple[str, float]], record: MemoryRecord, cutoff: float
) -> list[tuple[str, float]]:
    """The hits that can repeat or be updated by ``record``, judged on the facts index before any is read.

    Below ``cutoff`` only an exact repeat (the same normalised text), a memory of the same slot,
    or the other side of a reversal (the same content words, the negation on one side only: "I
    don't eat meat" / "I eat meat again") can; hits not in the facts index yet (another
    writer's, a moment ago) are kept to be read. Most writes then read no neighbour at all.
    """
    facts = handle.facts.lookup([i for i, s in hits if s < cutoff])
    if not facts:
        return hits
    keys = read(record.content).keys
    key, negation, about = keys.text_key, keys.negated, keys.reversal_key
    return [
        (i, s)
        for i, s in hits
        if s >= cutoff
        or (f := facts.get(i)) is None
        or f.text_key == key
        or (about and f.reversal_key == about and f.negated != negation)
        or (record.slot and f.slot == record.slot)
    ]


def _needs_assessment(item: MemoryInput, apply_filter: bool) -> bool:
    """The write filter's verdict is needed to skip chit-chat or to fill in what the caller left out.

    Bulk imports that give every item's kind and importance, unfiltered, skip it (~20 µs a memory).
    """
    return apply_filter or item.kind in (None, Kind.TURN) or item.importance is None


def _request_hash(items: Sequence[MemoryInput]) -> str:
    payload = json.dumps([i.model_dump(mode="json") for i in items], sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(payload.encode()).hexdigest()[:32]


__all__ = ["Writer"]
