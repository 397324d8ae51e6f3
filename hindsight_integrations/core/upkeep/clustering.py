"""Close pairs and clusters of memories by their vectors: the search half of upkeep's merge and consolidation.

Upkeep compares every active memory of a namespace with every other, offline: a blocked matrix
product over the unit vectors (a few seconds at the default caps of 10 000 episodes and 1 000
semantic memories, never an n × n matrix in memory), keeping for each memory its closest
neighbours above a threshold. Which close pairs are really one memory, or one fact, is decided
by the callers' rules (``dedup.is_repeat`` for the merge, ``same_fact.same_fact`` for consolidation).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

import numpy as np

from ..model.records import MemoryRecord
from ..storage.vector_copy import Vector

_BLOCK = 512  # rows compared at once: 512 × 10 000 float32 cosines is 20 MB
_NEIGHBOURS = 32  # closest neighbours kept per memory


def unit_rows(vectors: Sequence[Vector] | np.ndarray) -> np.ndarray:
    """The vectors as a float32 matrix of unit rows (a zero vector stays zero)."""
    matrix = np.asarray(vectors, dtype=np.float32).reshape(len(vectors), -1)
    norms = np.linalg.norm(matrix, axis=1)
    return matrix / np.where(norms == 0, 1.0, norms)[:, None]


def last_said(record: MemoryRecord) -> datetime:
    """When a memory was last said: its own time, or that of the latest repeat merged into it (``sources``).

    A fact said in week 0, repeated word for word in week 4 (merged at write) and restated in
    week 8 was last said four weeks before the restatement, not eight: the window a cluster
    grows within counts from its latest statement.
    """
    latest = record.occurred_at
    stack: list[object] = list(record.sources)
    while stack:
        entry = stack.pop()
        if not isinstance(entry, dict):
            continue
        stamp = entry.get("occurred_at")
        try:
            when = datetime.fromisoformat(stamp) if isinstance(stamp, str) else None
        except ValueError:
            when = None
        if when is not None:
            latest = max(latest, when if when.tzinfo else when.replace(tzinfo=UTC))
        stack.extend(entry.get("sources") or [])
    return latest


def loose_threshold(neighbours: float, consolidation: float) -> float:
    """Halfway between a model's neighbour floor and its consolidation cosine (MiniLM 0.625, e5 0.925).

    What habits and paraphrases cluster at: four evenings at the pool (MiniLM 0.65-0.86 apart)
    made two groups of two at the consolidation cosine (0.75), and "An oat flat white is my
    usual." is 0.78 from "If you order coffee for me, it's a flat white with oat milk.". Their
    rules (``habits.same_activity``, ``paraphrase.joins_rephrased``) decide; the vectors only nominate.
    """
    return (neighbours + consolidation) / 2


def neighbours(unit: np.ndarray, threshold: float, *, limit: int = _NEIGHBOURS) -> list[list[tuple[int, float]]]:
    """For each row, the other rows with cosine ≥ ``threshold``, closest first, at most ``limit``."""
    out: list[list[tuple[int, float]]] = []
    for start in range(0, len(unit), _BLOCK):
        block = unit[start : start + _BLOCK] @ unit.T
        for offset, row in enumerate(block):
            me = start + offset
            row[me] = -1.0
            close = np.flatnonzero(row >= threshold)
            if len(close) > limit:
                close = close[np.argpartition(-row[close], limit)[:limit]]
            out.append(sorted(((int(j), float(row[j])) for j in close), key=lambda p: -p[1]))
    return out


@dataclass
class Cluster:
    """Indexes of memories that state one fact, with the running sum of their unit vectors."""

    members: list[int]
    total: np.ndarray
    latest: datetime
    seed: int | None = None  # index of the existing consolidated memory it reinforces
    cosines: list[float] = field(default_factory=list)

    def centroid_cosine(self, vector: np.ndarray) -> float:
        """Cosine of ``vector`` (a unit row) with the cluster's centroid."""
        norm = float(np.linalg.norm(self.total))
        return float(self.total @ vector) / norm if norm else 0.0


def cluster(
    records: Sequence[MemoryRecord],
    unit: np.ndarray,
    *,
    threshold: float,
    window: timedelta,
    joins: Callable[[Sequence[MemoryRecord], MemoryRecord], bool],
    seeds: Sequence[MemoryRecord] = (),
    seed_unit: np.ndarray | None = None,
) -> list[Cluster]:
    """Group ``records`` (with their unit vectors) into clusters of one fact each.

    A memory first joins the closest existing consolidated memory (``seeds``) it is at least
    ``threshold`` close to and states the fact of (``joins([seed], memory)``): a stable fact stays
    one however late it is said again. The rest are grouped in time order: a memory joins the
    cluster of one of its close neighbours when it is ``threshold`` close to that cluster's
    centroid, ``joins`` its members (so a cluster never mixes two values) and was said within
    ``window`` of its latest member; otherwise it starts a cluster. Single memories come back as
    clusters of one.
    """
    clusters: list[Cluster] = []
    home: dict[int, Cluster] = {}
    free = list(range(len(records)))
    if seeds and seed_unit is not None and len(records):
        by_seed: dict[int, Cluster] = {}
        closeness = unit @ seed_unit.T
        free = []
        for n, record in enumerate(records):
            chosen = None
            for s in np.argsort(-closeness[n]):
                if closeness[n, s] < threshold:
                    break
                if joins([seeds[int(s)]], record):
                    chosen = int(s)
                    break
            if chosen is None:
                free.append(n)
                continue
            group = by_seed.setdefault(
                chosen, Cluster(members=[], total=np.zeros(unit.shape[1], np.float32), latest=last_said(record))
            )
            group.seed = chosen
            group.members.append(n)
            group.cosines.append(float(closeness[n, chosen]))
            group.total = group.total + unit[n]
            group.latest = max(group.latest, last_said(record))
        clusters.extend(by_seed.values())
    free.sort(key=lambda n: (records[n].occurred_at, records[n].created_at))
    close = neighbours(unit[free], threshold) if free else []
    for position, n in enumerate(free):
        record = records[n]
        best: tuple[float, Cluster] | None = None
        for other, _cosine in close[position]:
            near = home.get(free[other])
            if near is None or (best is not None and near is best[1]):
                continue
            if record.occurred_at - near.latest > window:
                continue
            similarity = near.centroid_cosine(unit[n])
            if similarity < threshold or (best is not None and similarity <= best[0]):
                continue
            if joins([records[m] for m in near.members], record):
                best = (similarity, near)
        if best is None:
            group = Cluster(members=[n], total=unit[n].copy(), latest=last_said(record))
            clusters.append(group)
        else:
            group = best[1]
            group.members.append(n)
            group.cosines.append(best[0])
            group.total = group.total + unit[n]
            group.latest = max(group.latest, last_said(record))
        home[n] = group
    return clusters


__all__ = ["Cluster", "cluster", "last_said", "loose_threshold", "neighbours", "unit_rows"]
