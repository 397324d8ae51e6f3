"""Hybrid recall: dense + lexical candidates, merged, re-scored, filtered, packed (SPEC §6).

score = similarity_weight·relevance + recency_weight·recency + importance_weight·importance
        + access_weight·access_frequency

where relevance fuses the cosine similarity from Chroma with the BM25 score from the
lexical index (normalised to the best candidate), recency is ``exp(-λ·hours)`` since the
memory occurred, and access frequency saturates logarithmically. Every weight can be
changed per call; ``min_score`` applies to relevance, the part that says "is this about
the question at all".
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from datetime import datetime
from typing import Any

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from .filters import RecallFilters
from .records import MemoryRecord, to_epoch


class RecallWeights(BaseModel):
    """Fusion weights. Defaults are SPEC §6's starting point; tune with `hindsight bench grid`."""

    model_config = ConfigDict(extra="forbid")

    similarity: float = Field(0.5, ge=0)
    recency: float = Field(0.2, ge=0)
    importance: float = Field(0.2, ge=0)
    access: float = Field(0.1, ge=0)
    dense: float = Field(0.6, ge=0, description="share of dense similarity inside relevance")
    lexical: float = Field(0.4, ge=0, description="share of BM25 inside relevance")
    recency_lambda: float = Field(0.01, ge=0, description="per hour")
    access_saturation: int = Field(20, ge=1)


class RecallHit(BaseModel):
    """A recalled memory and why it ranked where it did."""

    record: MemoryRecord
    score: float
    relevance: float
    dense: float = 0.0
    lexical: float = 0.0
    recency: float = 0.0


class _Candidate:
    __slots__ = ("record", "vector", "dense", "lexical_raw")

    def __init__(self, record: MemoryRecord, vector: Sequence[float] | None, dense: float | None, lexical_raw: float) -> None:
        self.record = record
        self.vector = vector
        self.dense = dense
        self.lexical_raw = lexical_raw


def rank(
    *,
    dense_hits: list[tuple[str, float]],
    lexical_hits: list[tuple[str, float]],
    fetch: Any,
    query_vector: Sequence[float],
    filters: RecallFilters,
    include_history: bool,
    weights: RecallWeights,
    now: datetime,
) -> list[RecallHit]:
    """Merge candidates from both retrievers and score them; ``fetch(ids)`` loads records."""
    dense = dict(dense_hits)
    lexical = dict(lexical_hits)
    ids = list(dict.fromkeys([*dense, *lexical]))
    if not ids:
        return []
    loaded = fetch(ids, [i for i in ids if i not in dense])
    q = np.asarray(query_vector, dtype=np.float32)
    q_norm = float(np.linalg.norm(q)) or 1.0
    candidates: list[_Candidate] = []
    for memory_id in ids:
        item = loaded.get(memory_id)
        if item is None:
            continue
        record, vector = item
        similarity = dense.get(memory_id)
        if similarity is None:
            if not filters.matches(record.to_metadata(), include_history=include_history, now=now):
                continue
            if vector is not None:
                v = np.asarray(vector, dtype=np.float32)
                similarity = float(v @ q) / ((float(np.linalg.norm(v)) or 1.0) * q_norm)
        candidates.append(_Candidate(record, vector, similarity, lexical.get(memory_id, 0.0)))
    best_lexical = max((c.lexical_raw for c in candidates), default=0.0) or 1.0
    share = (weights.dense + weights.lexical) or 1.0
    now_epoch = to_epoch(now) or 0.0
    hits = []
    for c in candidates:
        d = max(0.0, min(1.0, c.dense or 0.0))
        lex = c.lexical_raw / best_lexical
        relevance = (weights.dense * d + weights.lexical * lex) / share
        hours = max(0.0, (now_epoch - (to_epoch(c.record.occurred_at) or now_epoch)) / 3600.0)
        recency = math.exp(-weights.recency_lambda * hours)
        access = min(1.0, math.log1p(c.record.access_count) / math.log1p(weights.access_saturation))
        score = (
            weights.similarity * relevance
            + weights.recency * recency
            + weights.importance * c.record.importance
            + weights.access * access
        )
        hits.append(RecallHit(record=c.record, score=score, relevance=relevance, dense=d, lexical=lex, recency=recency))
    hits.sort(key=lambda h: h.score, reverse=True)
    return hits
