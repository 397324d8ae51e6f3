"""The write path: validate, filter, build records, dedup, add, supersede; and changes to one memory.

``store`` takes a batch atomically: every item is validated before any is written. Then, under
the namespace's write lock: a repeated ``request_id`` returns the first call's result; the
write filter drops small talk (with a reason); near-duplicates (similarity ≥
``dedup_threshold``) are merged into the existing memory; the rest are added; and a new value
for a detected subject/attribute slot supersedes the older active one (kept as history).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any

import numpy as np

from .arguments import coerce_enum, fraction, whole_number
from .conflicts import detect_slot
from .errors import InvalidInputError, MemoryNotFoundError
from .inputs import MemoryInput, parse_inputs, validate_content
from .namespace_store import NamespaceStore
from .parts import EngineParts
from .records import Kind, MemoryRecord, Source, Status, Tier, utcnow
from .results import SkippedMemory, StoreResult
from .write_filter import WriteDecision, assess

_LONG_TERM = {"$and": [{"status": "active"}, {"tier": {"$in": ["episodic", "semantic"]}}]}


class Writer:
    """Stores new memories and changes existing ones, for any namespace of one engine."""

    def __init__(self, parts: EngineParts) -> None:
        self._parts = parts

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
    ) -> StoreResult:
        """See ``MemoryEngine.store_memories``."""
        items = parse_inputs(memories, max_bytes=self._parts.settings.max_content_bytes)
        if request_id is not None and (
            not isinstance(request_id, str) or not request_id.strip() or len(request_id) > 200
        ):
            raise InvalidInputError("request_id", "must be a non-empty string of at most 200 characters")
        now = utcnow()
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
                    return StoreResult(stored=previous, replayed=True)
            result = StoreResult()
            records: list[MemoryRecord] = []
            for n, item in enumerate(items):
                decision = assess(item.content, item.role) if _needs_assessment(item, apply_filter) else None
                if decision is not None and apply_filter and not decision.remember:
                    result.skipped.append(SkippedMemory(index=n, content=item.content[:200], reason=decision.reason))
                    continue
                records.append(self._record(handle.name, item, decision, now, request_id, request_hash, origin))
            if not records:
                return result
            added = self._add(handle, records, result, dedup=dedup, now=now)
            if supersede:
                result.superseded = self._supersede(handle, added, now)
        return result

    def _add(
        self, handle: NamespaceStore, records: list[MemoryRecord], result: StoreResult, *, dedup: bool, now: datetime
    ) -> list[MemoryRecord]:
        """Embed ``records``, merge near-duplicates into what is stored, add the rest (returned)."""
        vectors, context_vectors = self._parts.embed_records(records)
        fresh: list[tuple[MemoryRecord, np.ndarray]] = []
        for record, vector in zip(records, vectors):
            existing = self._near_duplicate(handle, record, vector) if dedup else None
            if existing is None:
                fresh.append((record, vector))
                continue
            merged = _merge_into(existing, record, now)
            context = {merged.id: context_vectors[record.id]} if record.id in context_vectors else None
            handle.update([merged], [vector], context)
            result.merged.append(merged.id)
            result.stored.append(merged)
        handle.add(
            [r for r, _ in fresh],
            [v for _, v in fresh],
            {r.id: context_vectors[r.id] for r, _ in fresh if r.id in context_vectors},
        )
        result.stored.extend(r for r, _ in fresh)
        return [r for r, _ in fresh]

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
            slot=detect_slot(item.content) if kind is not Kind.TURN else None,
            expires_at=(occurred + timedelta(seconds=ttl)) if ttl else None,
            source=item.source or Source(session_id=item.session_id, origin=origin),
            request_id=request_id,
            metadata=metadata,
        )

    def _near_duplicate(self, handle: NamespaceStore, record: MemoryRecord, vector: np.ndarray) -> MemoryRecord | None:
        if record.kind in (Kind.TURN, Kind.SUMMARY) or record.tier is Tier.WORKING:
            return None
        hits = handle.query(vector, n=1, where=_LONG_TERM)
        if not hits or hits[0][1] < self._parts.settings.dedup_threshold:
            return None
        ((existing, _),) = handle.get([hits[0][0]])
        if existing.slot and record.slot and existing.slot != record.slot:
            return None
        return existing

    @staticmethod
    def _supersede(handle: NamespaceStore, records: Sequence[MemoryRecord], now: datetime) -> list[str]:
        superseded: list[str] = []
        for record in records:
            if not record.slot:
                continue
            same_slot = handle.find({"$and": [{"slot": record.slot}, {"status": "active"}]})
            changed = [
                r.model_copy(
                    update={
                        "status": Status.SUPERSEDED,
                        "valid_until": now,
                        "superseded_by": record.id,
                        "updated_at": now,
                    }
                )
                for r in same_slot
                if r.id != record.id and r.occurred_at <= record.occurred_at
            ]
            handle.update(changed)
            superseded.extend(r.id for r in changed)
        return superseded

    # -- one memory -------------------------------------------------------------------------
    @staticmethod
    def get(handle: NamespaceStore, memory_id: str) -> MemoryRecord:
        """The memory ``memory_id`` of this namespace, whatever its status."""
        if not isinstance(memory_id, str) or not memory_id:
            raise InvalidInputError("id", "must be a memory id string")
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
        """See ``MemoryEngine.update``."""
        record = self.get(handle, memory_id)
        changes: dict[str, Any] = {"updated_at": utcnow()}
        if content is not None:
            changes["content"] = validate_content(content, max_bytes=self._parts.settings.max_content_bytes)
            changes["token_count"] = self._parts.tokens.count(changes["content"])
            changes["slot"] = detect_slot(changes["content"])
        if importance is not None:
            changes["importance"] = fraction(importance, "importance")
        if kind is not None:
            changes["kind"] = coerce_enum(Kind, kind, "kind")
        if metadata is not None:
            if not isinstance(metadata, dict):
                raise InvalidInputError("metadata", "must be an object")
            changes["metadata"] = {**record.metadata, **metadata}
        if ttl_seconds is not None:
            seconds = whole_number(ttl_seconds, "ttl_seconds", low=1)
            changes["expires_at"] = changes["updated_at"] + timedelta(seconds=seconds)
        updated = record.model_copy(update=changes)
        with handle.writing:
            vectors, context_vectors = self._parts.embed_records([updated]) if content is not None else (None, None)
            handle.update([updated], vectors, context_vectors)
        return updated

    def forget(self, handle: NamespaceStore, memory_id: str) -> MemoryRecord:
        """See ``MemoryEngine.forget``."""
        record = self.get(handle, memory_id)
        updated = record.model_copy(update={"status": Status.DELETED, "updated_at": utcnow()})
        handle.update([updated])
        return updated


def _merge_into(existing: MemoryRecord, record: MemoryRecord, now: datetime) -> MemoryRecord:
    return existing.model_copy(
        update={
            "content": record.content,
            "importance": max(existing.importance, record.importance),
            "token_count": record.token_count,
            "updated_at": now,
            "occurred_at": max(existing.occurred_at, record.occurred_at),
            "metadata": {**existing.metadata, **record.metadata},
            "entities": sorted(set(existing.entities) | set(record.entities)),
            "expires_at": record.expires_at or existing.expires_at,
            "slot": record.slot or existing.slot,
        }
    )


def _needs_assessment(item: MemoryInput, apply_filter: bool) -> bool:
    """The write filter's verdict is needed to skip chit-chat or to fill in what the caller left out.

    Bulk imports that give every item's kind and importance, unfiltered, skip it (~20 µs a memory).
    """
    return apply_filter or item.kind in (None, Kind.TURN) or item.importance is None


def _request_hash(items: Sequence[MemoryInput]) -> str:
    payload = json.dumps([i.model_dump(mode="json") for i in items], sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(payload.encode()).hexdigest()[:32]


__all__ = ["Writer"]
