"""Forgetting and upkeep: decay, cold-storage archive, capacity caps, restore (docs/architecture.md, "Upkeep").

Run on demand (`hindsight maintain`) or from a scheduler, never on the hot path. Nothing
is destroyed: archived memories move to a JSONL file per namespace (with their vectors)
and ``restore`` brings them back.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from ..backup import EXPORT_FORMAT
from ..clock import Clock
from ..model.records import Kind, MemoryRecord, Status, Tier
from ..model.reserved import DECAYED_AT_KEY, STATED_IMPORTANCE
from ..storage.cold import ColdStorage, archived_row
from ..storage.namespace_store import NamespaceStore

DECAY_AFTER = timedelta(days=30)
DECAY_FACTOR = 0.9
# What lasts decays slowly: a preference never recalled keeps most of its weight for years
# (0.98 a month: 0.9 → 0.71 after a year) where an episode's fades (0.9 → 0.25). The default
# of ``Settings.semantic_decay`` (HINDSIGHT_SEMANTIC_DECAY; 1 = the semantic tier never decays).
SEMANTIC_DECAY_FACTOR = 0.98
# Never archived or evicted by upkeep: what the user asked to be remembered and corrected.
KEPT_KINDS = frozenset({Kind.PREFERENCE, Kind.CORRECTION})
ARCHIVE_AFTER = timedelta(days=90)
ARCHIVE_BELOW_IMPORTANCE = 0.3
PROTECT_RECENT = timedelta(days=7)
DEFAULT_CAPS = {Tier.EPISODIC: 10_000, Tier.SEMANTIC: 1_000}


class MaintenanceReport(BaseModel):
    """What one ``maintain`` run did (or, with ``dry_run``, would do): decayed, archived, evicted ids."""

    namespace: str
    dry_run: bool = False
    decayed: list[str] = Field(default_factory=list)
    archived: list[str] = Field(default_factory=list, description="moved to cold storage (stale and unimportant)")
    evicted: list[str] = Field(default_factory=list, description="moved to cold storage (over a tier's cap)")
    cold_store: str


def _report(
    namespace: str,
    decayed: list[MemoryRecord],
    archive: list[MemoryRecord],
    evict: list[MemoryRecord],
    path: Path,
    *,
    dry_run: bool,
) -> MaintenanceReport:
    return MaintenanceReport(
        namespace=namespace,
        dry_run=dry_run,
        decayed=[r.id for r in decayed],
        archived=[r.id for r in archive],
        evicted=[r.id for r in evict],
        cold_store=str(path),
    )


def retention(record: MemoryRecord, now: datetime) -> float:
    """importance × time decay × access frequency; higher is kept longer."""
    last = record.last_accessed_at or record.occurred_at
    days = max(0.0, (now - last).total_seconds() / 86400)
    return record.importance * math.exp(-days / 30) * (1 + math.log1p(record.access_count))


def plan(
    records: list[MemoryRecord],
    now: datetime,
    caps: dict[Tier, int] | None = None,
    *,
    semantic_decay: float = SEMANTIC_DECAY_FACTOR,
) -> tuple[list[MemoryRecord], list[MemoryRecord], list[MemoryRecord]]:
    """Decide (decayed copies, to archive, to evict) for a namespace's long-term memories.

    An idle memory's importance is multiplied by ``DECAY_FACTOR`` once per ``DECAY_AFTER``, a
    semantic one's by ``semantic_decay`` (1.0: not at all, and it is then not reported as decayed).
    Pinned memories (``MemoryRecord.pinned``: data a program keeps, such as a key-value store's items)
    are left out altogether: never decayed, archived or evicted, and not counted toward a cap.
    """
    caps = DEFAULT_CAPS if caps is None else caps
    active = [r for r in records if r.status is Status.ACTIVE and r.tier is not Tier.WORKING and not r.pinned]
    decayed: list[MemoryRecord] = []
    archive: list[MemoryRecord] = []
    for record in active:
        idle_since = record.last_accessed_at or record.created_at
        last_decay = record.metadata.get(DECAYED_AT_KEY)
        factor = semantic_decay if record.tier is Tier.SEMANTIC else DECAY_FACTOR
        if (
            now - idle_since >= ARCHIVE_AFTER
            and record.importance < ARCHIVE_BELOW_IMPORTANCE
            and record.kind not in KEPT_KINDS
        ):
            archive.append(record)
        elif (
            factor < 1.0
            and now - idle_since >= DECAY_AFTER
            and (last_decay is None or now.timestamp() - float(last_decay) >= DECAY_AFTER.total_seconds())
        ):
            decayed.append(
                record.model_copy(
                    update={
                        "importance": round(record.importance * factor, 4),
                        "metadata": {
                            **record.metadata,
                            DECAYED_AT_KEY: now.timestamp(),
                            STATED_IMPORTANCE: record.metadata.get(STATED_IMPORTANCE, record.importance),
                        },
                    }
                )
            )
    gone = {r.id for r in archive}
    evict: list[MemoryRecord] = []
    for tier, cap in caps.items():
        members = [r for r in active if r.tier is tier and r.id not in gone]
        if len(members) <= cap:
            continue
        candidates = sorted(
            (r for r in members if now - r.created_at > PROTECT_RECENT and r.kind not in KEPT_KINDS),
            key=lambda r: retention(r, now),
        )
        evict.extend(candidates[: len(members) - cap])
    return decayed, archive, evict


class Maintenance:
    """Runs the plan above on a namespace, and brings archived memories back.

    ``restore`` re-imports through ``import_data`` (an export-shaped document), so restored
    memories are re-embedded exactly when an export would be. ``clock`` is the engine's: what
    "idle for 90 days" is measured against when ``maintain`` is not told the time.
    """

    def __init__(
        self,
        cold: ColdStorage,
        import_data: Callable[[NamespaceStore, dict[str, Any]], int],
        clock: Clock,
        *,
        semantic_decay: float = SEMANTIC_DECAY_FACTOR,
    ) -> None:
        self.cold = cold
        self._import_data = import_data
        self._clock = clock
        self._semantic_decay = semantic_decay

    def cold_path(self, namespace: str) -> Path:
        """The namespace's cold-storage file."""
        return self.cold.path(namespace)

    def maintain(
        self, handle: NamespaceStore, *, now: datetime | None, caps: dict[Tier, int] | None, dry_run: bool = False
    ) -> MaintenanceReport:
        """See ``MemoryEngine.maintain``.

        Recall's queued access counts of the namespace are written first: idleness is judged
        from what Chroma holds, and a memory recalled a moment ago is not idle.
        """
        now = now or self._clock.now()
        path = self.cold_path(handle.name)
        handle.access.flush(handle)  # before the write lock: writing the counts takes its in-process part
        with handle.writing:
            records = [r for r, _ in handle.iterate()]
            decayed, archive, evict = plan(records, now, caps, semantic_decay=self._semantic_decay)
            if dry_run:
                return _report(handle.name, decayed, archive, evict, path, dry_run=True)
            handle.rewrite(decayed)
            moving = [r.id for r in archive + evict]
            if moving:
                context_vectors = handle.context_vectors(moving)
                rows = handle.get(moving, include_embeddings=True)
                self.cold.put(handle.name, [archived_row(r, v, context_vectors.get(r.id)) for r, v in rows])
                handle.delete(moving)
        return _report(handle.name, decayed, archive, evict, path, dry_run=False)

    def archived_ids(self, namespace: str) -> list[str]:
        """See ``MemoryEngine.archived_ids``."""
        return [r["id"] for r in self.cold.rows(namespace)]

    def restore(self, handle: NamespaceStore, ids: Sequence[str] | None, *, now: datetime | None = None) -> int:
        """See ``MemoryEngine.restore``.

        A restored memory counts as accessed ``now`` (default: the clock's): someone wanted it
        back, and otherwise the next upkeep round would find it as idle as when it was archived and
        archive it again; its new ``updated_at`` lets other replicas' index sync see it.
        """
        rows = self.cold.rows(handle.name)
        wanted = set(ids) if ids is not None else {r["id"] for r in rows}
        stamp = (now or self._clock.now()).isoformat()
        back = [
            {**r, "status": Status.ACTIVE.value, "updated_at": stamp, "last_accessed_at": stamp}
            for r in rows
            if r["id"] in wanted
        ]
        if not back:
            return 0
        models = {r.get("embedding_model") for r in back}
        document = {
            "format": EXPORT_FORMAT,
            "embedding_model": models.pop() if len(models) == 1 else None,
            "records": back,
        }
        self._import_data(handle, document)  # which takes what it brings in out of cold storage
        return len(back)
