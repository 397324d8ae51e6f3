"""Forgetting and upkeep (SPEC §7): decay, cold-storage archive, capacity caps, restore.

Run on demand (`hindsight maintain`) or from a scheduler, never on the hot path. Nothing
is destroyed: archived memories move to a JSONL file per namespace (with their vectors)
and ``restore`` brings them back.
"""

from __future__ import annotations

import json
import math
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from .records import MemoryRecord, Status, Tier

DECAY_AFTER = timedelta(days=30)
DECAY_FACTOR = 0.9
ARCHIVE_AFTER = timedelta(days=90)
ARCHIVE_BELOW_IMPORTANCE = 0.3
PROTECT_RECENT = timedelta(days=7)
DEFAULT_CAPS = {Tier.EPISODIC: 10_000, Tier.SEMANTIC: 1_000}


class MaintenanceReport(BaseModel):
    namespace: str
    decayed: list[str] = Field(default_factory=list)
    archived: list[str] = Field(default_factory=list, description="moved to cold storage (stale and unimportant)")
    evicted: list[str] = Field(default_factory=list, description="moved to cold storage (over a tier's cap)")
    cold_store: str


def retention(record: MemoryRecord, now: datetime) -> float:
    """importance × time decay × access frequency (SPEC §7); higher is kept longer."""
    last = record.last_accessed_at or record.occurred_at
    days = max(0.0, (now - last).total_seconds() / 86400)
    return record.importance * math.exp(-days / 30) * (1 + math.log1p(record.access_count))


def plan(
    records: list[MemoryRecord], now: datetime, caps: dict[Tier, int] | None = None
) -> tuple[list[MemoryRecord], list[MemoryRecord], list[MemoryRecord]]:
    """Decide (decayed copies, to archive, to evict) for a namespace's long-term memories."""
    caps = DEFAULT_CAPS if caps is None else caps
    active = [r for r in records if r.status is Status.ACTIVE and r.tier is not Tier.WORKING]
    decayed: list[MemoryRecord] = []
    archive: list[MemoryRecord] = []
    for record in active:
        idle_since = record.last_accessed_at or record.created_at
        last_decay = record.metadata.get("_decayed_at")
        if now - idle_since >= ARCHIVE_AFTER and record.importance < ARCHIVE_BELOW_IMPORTANCE:
            archive.append(record)
        elif now - idle_since >= DECAY_AFTER and (
            last_decay is None or now.timestamp() - float(last_decay) >= DECAY_AFTER.total_seconds()
        ):
            decayed.append(
                record.model_copy(
                    update={
                        "importance": round(record.importance * DECAY_FACTOR, 4),
                        "metadata": {**record.metadata, "_decayed_at": now.timestamp()},
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
            (r for r in members if now - r.created_at > PROTECT_RECENT), key=lambda r: retention(r, now)
        )
        evict.extend(candidates[: len(members) - cap])
    return decayed, archive, evict


def write_cold(path: Path, items: list[tuple[MemoryRecord, list[float] | None, list[float] | None]]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a", encoding="utf-8") as out:
        for record, vector, window in items:
            row: dict[str, Any] = record.model_copy(update={"status": Status.ARCHIVED}).public_dict()
            row["embedding"], row["window_embedding"] = vector, window
            out.write(json.dumps(row, ensure_ascii=False) + "\n")


def read_cold(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
