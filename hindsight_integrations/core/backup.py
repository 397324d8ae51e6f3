"""A namespace as data: JSON export and import (backups, moving users, re-embedding), stats, dump.

An export holds every record, every status included, with its vectors unless asked not to:
importing it into a store with the same embedding model reuses them; with another model the
records are re-embedded (the store refuses to mix models, so this is how a namespace changes
model).
"""

from __future__ import annotations

from typing import Any

from .context import memory_line
from .errors import InvalidInputError
from .namespace_store import NamespaceStore, Vector
from .parts import EngineParts
from .records import MemoryRecord, Status, Tier, utcnow
from .results import NamespaceStats

EXPORT_FORMAT = "hindsight-export"


class Backup:
    """Export, import, stats and the debugging dump of a namespace."""

    def __init__(self, parts: EngineParts) -> None:
        self._parts = parts

    def export(self, handle: NamespaceStore, *, include_embeddings: bool) -> dict[str, Any]:
        """See ``MemoryEngine.export``."""
        records = []
        for record, vector in handle.iterate(include_embeddings=include_embeddings):
            item = record.public_dict()
            if vector is not None:
                item["embedding"] = vector
            records.append(item)
        if include_embeddings:
            context_vectors = handle.context_vectors([r["id"] for r in records if r.get("context")])
            for item in records:
                if item["id"] in context_vectors:
                    item["window_embedding"] = context_vectors[item["id"]]  # the key predates "context vector"
        return {
            "format": EXPORT_FORMAT,
            "version": 1,
            "namespace": handle.name,
            "embedding_model": self._parts.embedder.name,
            "embedding_dim": self._parts.store.embedding_dim,
            "exported_at": utcnow().isoformat(),
            "records": records,
        }

    def import_data(self, handle: NamespaceStore, data: dict[str, Any]) -> int:
        """See ``MemoryEngine.import_data``; ``data`` was checked to be an export."""
        same_model = data.get("embedding_model") == self._parts.embedder.name
        records: list[MemoryRecord] = []
        vectors: list[Vector] = []
        context_vectors: dict[str, Vector] = {}
        reembed: list[MemoryRecord] = []
        for n, item in enumerate(data.get("records", [])):
            record = self._imported_record(handle.name, n, item)
            records.append(record)
            if same_model and item.get("embedding") and (item.get("window_embedding") or not record.context):
                vectors.append(item["embedding"])
                if item.get("window_embedding"):
                    context_vectors[record.id] = item["window_embedding"]
            else:
                vectors.append([])
                reembed.append(record)
        if reembed:
            fresh_vectors, fresh_context = self._parts.embed_records(reembed)
            by_id = dict(zip((r.id for r in reembed), fresh_vectors))
            vectors = [by_id.get(r.id, v) for r, v in zip(records, vectors)]
            context_vectors.update(fresh_context)
        with handle.writing:
            existing = {r.id for r, _ in handle.get([r.id for r in records])}
            new = [(r, v) for r, v in zip(records, vectors) if r.id not in existing]
            old = [(r, v) for r, v in zip(records, vectors) if r.id in existing]
            handle.add([r for r, _ in new], [v for _, v in new], context_vectors)
            if old:
                handle.update([r for r, _ in old], [v for _, v in old], None)
        return len(records)

    def _imported_record(self, namespace: str, n: int, item: dict[str, Any]) -> MemoryRecord:
        try:
            record = MemoryRecord.model_validate(
                {k: v for k, v in item.items() if k not in ("embedding", "window_embedding")}
            )
        except Exception as exc:  # noqa: BLE001 - any malformed record is the caller's input error
            raise InvalidInputError(f"records[{n}]", str(exc)) from None
        update = {
            "namespace": namespace,
            "embedding_model": self._parts.embedder.name,
            "embedding_dim": self._parts.store.embedding_dim,
        }
        return record.model_copy(update=update)

    def stats(self, handle: NamespaceStore) -> NamespaceStats:
        """See ``MemoryEngine.stats``."""
        by_tier: dict[str, int] = {}
        by_kind: dict[str, int] = {}
        by_status: dict[str, int] = {}
        sessions: set[str] = set()
        tokens = total = 0
        for record, _ in handle.iterate():
            total += 1
            by_tier[record.tier.value] = by_tier.get(record.tier.value, 0) + 1
            by_kind[record.kind.value] = by_kind.get(record.kind.value, 0) + 1
            by_status[record.status.value] = by_status.get(record.status.value, 0) + 1
            if record.session_id:
                sessions.add(record.session_id)
            if record.status is Status.ACTIVE:
                tokens += record.token_count
        return NamespaceStats(
            namespace=handle.name,
            total=total,
            by_tier=by_tier,
            by_kind=by_kind,
            by_status=by_status,
            tokens=tokens,
            embedding_model=self._parts.embedder.name,
            sessions=len(sessions),
        )

    def dump(self, handle: NamespaceStore, *, include_history: bool) -> str:
        """See ``MemoryEngine.dump``."""
        records = [r for r, _ in handle.iterate()]
        if not include_history:
            records = [r for r in records if r.status is Status.ACTIVE]
        lines = [f"# namespace {handle.name}: {len(records)} memories (embedding model {self._parts.embedder.name})"]
        for tier in Tier:
            group = sorted((r for r in records if r.tier is tier), key=lambda r: r.occurred_at)
            if not group:
                continue
            lines.append(f"\n## {tier.value} ({len(group)})")
            lines.extend(f"{memory_line(r)}\n    [{r.id[:8]}] {' '.join(_flags(r))}" for r in group)
        return "\n".join(lines)


def _flags(r: MemoryRecord) -> list[str]:
    flags = [r.kind.value, r.status.value, f"imp={r.importance:.2f}", f"hits={r.access_count}"]
    if r.session_id:
        flags.append(f"session={r.session_id}")
    if r.expires_at:
        flags.append(f"expires={r.expires_at.isoformat(timespec='minutes')}")
    if r.superseded_by:
        flags.append(f"superseded_by={r.superseded_by[:8]}")
    if r.source.message_ids:
        flags.append(f"from={','.join(m[:8] for m in r.source.message_ids)}")
    return flags


__all__ = ["EXPORT_FORMAT", "Backup"]
