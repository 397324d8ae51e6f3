"""The periodic merge: repeats that slipped past the write path become one memory (docs/architecture.md, "Upkeep").

The write path merges a repeat when it arrives (``dedup.py``). Some get through: memories
written with ``dedup=False`` or before dedup existed, written at once by two replicas, or
imported. Upkeep finds them: active long-term memories with cosine ≥ ``merge_threshold``
(0.95) that are repeats by the write path's own rules (``dedup.is_repeat``: the same values,
the same negations, the same slot). The survivor (the more important; on a tie the older)
is reinforced as by a write-time repeat (``dedup.reinforce``: the other's content, metadata
and provenance appended to its ``sources``, with the other's id), and the other becomes
history pointing at it (status superseded, ``superseded_by`` = the survivor), never deleted.
``MemoryEngine.unmerge`` splits it back: the original record, id and all, is active again.

Consolidated memories and their sources are left to consolidation, which already groups them;
pinned memories (``MemoryRecord.pinned``) to their writer.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime

from ..language.sameness import can_repeat
from ..model.arguments import whole_number
from ..model.records import MemoryRecord, Status, Tier
from ..model.reserved import MERGED_INTO_KEY
from ..model.results import MergedRepeat
from ..parts import EngineParts
from ..storage.namespace_store import NamespaceStore, Vector
from ..write.repeats import is_repeat, reinforce
from .clustering import neighbours, unit_rows

CONSOLIDATION_ORIGIN = "consolidation"


def mergeable(record: MemoryRecord) -> bool:
    """Active long-term memories that may repeat one another, outside consolidation's groups.

    Not pinned ones (``MemoryRecord.pinned``): their writer keeps them as written. Consolidation
    and habits draw from these memories too, so a pinned memory is never merged nor consolidated.
    """
    return (
        not record.pinned
        and record.status is Status.ACTIVE
        and record.tier is not Tier.WORKING
        and can_repeat(record)
        and record.consolidated_into is None
        and record.source.origin != CONSOLIDATION_ORIGIN
    )


def _survivor(a: MemoryRecord, b: MemoryRecord) -> tuple[MemoryRecord, MemoryRecord]:
    """(survivor, merged): the more important survives; on a tie the older one."""
    key_a = (-a.importance, a.occurred_at, a.created_at, a.id)
    key_b = (-b.importance, b.occurred_at, b.created_at, b.id)
    return (a, b) if key_a <= key_b else (b, a)


class RepeatMerger:
    """Finds and merges repeats in a namespace, and splits a merge back."""

    def __init__(self, parts: EngineParts) -> None:
        self._parts = parts

    def merge(
        self, handle: NamespaceStore, *, dry_run: bool, records: Sequence[MemoryRecord] | None = None
    ) -> list[MergedRepeat]:
        """See ``MemoryEngine.merge_repeats``; ``records`` is the namespace as the caller just read it."""
        if records is None:
            records = [r for r, _ in handle.iterate()]
        planned = self.plan(records, handle.vectors([r.id for r in records if mergeable(r)]))
        if dry_run:
            return [MergedRepeat(survivor=s.id, merged=m.id, similarity=round(c, 4)) for s, m, c in planned]
        with handle.writing:
            return self.apply(handle, planned, self._parts.clock.now())

    def plan(
        self, records: Sequence[MemoryRecord], vectors: Mapping[str, Vector]
    ) -> list[tuple[MemoryRecord, MemoryRecord, float]]:
        """(survivor, merged, cosine) for each repeat among ``records`` (those with a vector).

        Closest pairs first; a memory merged away, or one that absorbed another in this run, is
        not merged again until the next run, so chains settle one link per run and nothing is lost.
        """
        threshold, now = self._parts.cosines.merge, self._parts.clock.now()
        # An expired copy would hide what it absorbed: it is left as it is.
        pool = [r for r in records if mergeable(r) and not r.is_expired(now) and r.id in vectors]
        if len(pool) < 2:
            return []
        close = neighbours(unit_rows([vectors[r.id] for r in pool]), threshold)
        pairs = sorted(
            ((cosine, i, j) for i, found in enumerate(close) for j, cosine in found if i < j),
            key=lambda p: -p[0],
        )
        touched: set[str] = set()
        survivors: set[str] = set()
        out = []
        for cosine, i, j in pairs:
            survivor, merged = _survivor(pool[i], pool[j])
            if merged.id in touched or merged.id in survivors or survivor.id in touched:
                continue
            if not is_repeat(survivor, merged, cosine, threshold):
                continue
            touched.add(merged.id)
            survivors.add(survivor.id)
            out.append((survivor, merged, cosine))
        return out

    def apply(
        self, handle: NamespaceStore, planned: Sequence[tuple[MemoryRecord, MemoryRecord, float]], now: datetime
    ) -> list[MergedRepeat]:
        """Merge the ``planned`` pairs still as they were planned; the caller holds the write lock."""
        if not planned:
            return []
        ids = {r.id for s, m, _ in planned for r in (s, m)}
        current = {r.id: r for r, _ in handle.get(list(ids))}
        changed: dict[str, MemoryRecord] = {}
        done: list[MergedRepeat] = []
        for survivor, merged, cosine in planned:
            keep, gone = current.get(survivor.id), current.get(merged.id)
            if keep is None or gone is None or not _unchanged(keep, survivor) or not _unchanged(gone, merged):
                continue  # written meanwhile: the next run looks again
            keep = changed.get(keep.id, keep)
            reinforced = reinforce(keep, gone, now)
            entry = {**reinforced.sources[-1], "memory_id": gone.id, "merged_by": "upkeep"}
            if gone.sources:
                entry["sources"] = gone.sources
            changed[keep.id] = reinforced.model_copy(update={"sources": [*reinforced.sources[:-1], entry]})
            changed[gone.id] = gone.model_copy(
                update={
                    "status": Status.SUPERSEDED,
                    "superseded_by": keep.id,
                    "updated_at": now,
                    "metadata": {**gone.metadata, MERGED_INTO_KEY: keep.id},
                }
            )
            done.append(MergedRepeat(survivor=keep.id, merged=gone.id, similarity=round(cosine, 4)))
        handle.rewrite(list(changed.values()))
        return done

    def unmerge(self, handle: NamespaceStore, memory_id: str, index: int) -> MemoryRecord | None:
        """Split input ``index`` off ``memory_id`` when upkeep merged it: the original record is active again.

        None when that input was merged at write time (it has no record of its own, so the
        writer makes one) or its record is gone (archived): ``Editor.unmerge`` then rebuilds it.
        """
        with handle.writing:
            found = handle.get([memory_id]) if isinstance(memory_id, str) and memory_id else []
            if not found or not found[0][0].sources:
                return None  # the writer says what is wrong
            record = found[0][0]
            position = whole_number(index, "index", low=-len(record.sources), high=len(record.sources) - 1)
            position %= len(record.sources)
            entry = record.sources[position]
            original_id = entry.get("memory_id")
            got = handle.get([original_id]) if isinstance(original_id, str) and original_id else []
            original = got[0][0] if got else None
            if original is None or original.superseded_by != record.id or original.status is not Status.SUPERSEDED:
                return None
            now = self._parts.clock.now()
            metadata = {k: v for k, v in original.metadata.items() if k != MERGED_INTO_KEY}
            restored = original.model_copy(
                update={"status": Status.ACTIVE, "superseded_by": None, "updated_at": now, "metadata": metadata}
            )
            sources = [s for n, s in enumerate(record.sources) if n != position]
            handle.rewrite([restored, record.model_copy(update={"sources": sources, "updated_at": now})])
            return restored


def _unchanged(current: MemoryRecord, planned: MemoryRecord) -> bool:
    return current.status is Status.ACTIVE and current.updated_at == planned.updated_at


__all__ = ["CONSOLIDATION_ORIGIN", "MERGED_INTO_KEY", "RepeatMerger", "mergeable"]
