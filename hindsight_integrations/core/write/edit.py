"""Changes to one stored memory: edit it, forget and unforget it, review a quarantined one, unmerge a repeat.

Each reads the record inside the namespace's write lock, so concurrent changes compose (each
applies its fields to what the other wrote) and a forgotten memory stays forgotten. These are
what the user asks for by id; what a *new* memory does to stored ones (repeat, supersede) is
``settle.py``'s.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from ..errors import InvalidInputError, MemoryNotFoundError
from ..language.keys import read
from ..model.arguments import coerce_enum, fraction, whole_number
from ..model.inputs import MAX_TTL_SECONDS, validate_content
from ..model.limits import check_memory_id, check_metadata
from ..model.records import Kind, MemoryRecord, Source, Status, Tier
from ..parts import EngineParts
from ..storage.cold import COLD_VECTOR_KEYS, ColdStorage
from ..storage.namespace_store import NamespaceStore
from .conversation import SessionNeighbours
from .forgetting import ForgottenText, said_in
from .supersede import history_of


def checked_id(memory_id: object) -> str:
    """``memory_id`` if it reads as a memory id; ``InvalidInputError`` naming ``id`` if not."""
    if not isinstance(memory_id, str) or not memory_id:
        raise InvalidInputError("id", "must be a memory id string")
    check_memory_id(memory_id)
    return memory_id


def merged_metadata(held: dict[str, Any], given: dict[str, Any]) -> dict[str, Any]:
    """``given`` merged into ``held``, a key given as None removed: what Chroma's own ``update`` does with None.

    Keeping ``"k": None`` left a key the caller meant to delete in every read and export.
    """
    merged = {**held, **given}
    return {key: value for key, value in merged.items() if not (key in given and given[key] is None)}


class Editor:
    """Changes stored memories one at a time, by id, for any namespace of one engine."""

    def __init__(
        self, parts: EngineParts, neighbours: SessionNeighbours | None = None, cold: ColdStorage | None = None
    ) -> None:
        """``neighbours``: the settler's note of each session's latest texts; forgetting drops the session's.
        ``cold`` is where upkeep archives memories: one found there is read, not changed, until restored."""
        self._parts = parts
        self._neighbours = neighbours if neighbours is not None else SessionNeighbours()
        self._cold = cold
        self._forgotten_text = ForgottenText(parts, cold)

    def find(self, handle: NamespaceStore, memory_id: str) -> MemoryRecord:
        """The memory ``memory_id`` of this namespace, whatever its status, archived into cold storage too."""
        found = self._held(handle, memory_id) or self._archived(handle.name, memory_id)
        if found is None:
            raise MemoryNotFoundError(memory_id, handle.name)
        return found

    def get(self, handle: NamespaceStore, memory_id: str) -> MemoryRecord:
        """The memory ``memory_id`` the store holds, to change; one in cold storage is named as such."""
        found = self._held(handle, memory_id)
        if found is not None:
            return found
        if self._archived(handle.name, memory_id) is not None:
            raise MemoryNotFoundError(
                memory_id, handle.name, reason="it is archived in cold storage; restore it first (`hindsight restore`)"
            )
        raise MemoryNotFoundError(memory_id, handle.name)

    @staticmethod
    def _held(handle: NamespaceStore, memory_id: str) -> MemoryRecord | None:
        checked_id(memory_id)
        found = handle.get([memory_id])
        return found[0][0] if found else None

    def _archived(self, namespace: str, memory_id: str) -> MemoryRecord | None:
        if self._cold is None:
            return None
        row = self._cold.row(namespace, memory_id)
        if row is None:
            return None
        return MemoryRecord.model_validate({k: v for k, v in row.items() if k not in COLD_VECTOR_KEYS})

    def edit(
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
        """See ``MemoryEngine.update`` (the API's word for an edit).

        The record is read inside the namespace's write lock, so concurrent edits compose
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
                changes["metadata"] = merged_metadata(record.metadata, metadata)
            if seconds is not None:
                changes["expires_at"] = changes["updated_at"] + timedelta(seconds=seconds)
            edited = record.model_copy(update=changes)
            vectors, context_vectors = self._parts.embed_records([edited]) if content is not None else (None, None)
            handle.rewrite([edited], vectors, context_vectors)
        return edited

    def forget(self, handle: NamespaceStore, memory_id: str) -> MemoryRecord:
        """See ``MemoryEngine.forget``; under the write lock, so no concurrent edit brings it back."""
        with handle.writing:
            record = self.get(handle, memory_id)
            forgotten = record.model_copy(update={"status": Status.DELETED, "updated_at": self._parts.clock.now()})
            handle.rewrite([forgotten])
            self._dropped_from_context(handle, forgotten)
        return forgotten

    def _dropped_from_context(self, handle: NamespaceStore, record: MemoryRecord) -> None:
        """A forgotten memory's text is no later memory's context: the stored contexts that hold it lose it
        (``forgetting.py``), and the noted texts of the sessions it was said in (its merged repeats' and the
        memories forgotten with it too) go; the caller holds the write lock."""
        changed = self._forgotten_text.leave_contexts(handle, [record])
        forgotten_too = [r for r in changed if r.status is Status.DELETED and r.tier is not Tier.WORKING]
        for session in said_in([record, *forgotten_too]):
            self._neighbours.drop(handle.name, session)

    def _live(self, handle: NamespaceStore, memory_id: str) -> MemoryRecord:
        """The record, unless it was forgotten: an edit must not bring a memory back."""
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
            handle.rewrite([restored])
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
                handle.rewrite([rejected])
                self._dropped_from_context(handle, rejected)
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
            handle.rewrite(changed)
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
            handle.rewrite([remaining])
            return restored


__all__ = ["Editor", "checked_id"]
