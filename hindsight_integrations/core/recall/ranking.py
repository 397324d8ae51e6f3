"""Ranking of recall candidates: dense + lexical relevance fused, then re-scored (docs/architecture.md, "Recall").

score = (similarity_weight·relevance + recency_weight·recency + importance_weight·importance
         + access_weight·access_frequency) / (sum of the weights)

where relevance fuses dense similarity (the memory's own vector and its context vector)
with the BM25 score of the lexical index, each min-max normalised over the candidates
(the mix LoCoMo tuning favoured over reciprocal-rank fusion), plus a bonus when the query
names exactly one of the candidates' entities (a speaker, a project). Recency falls with the
logarithm of the memory's age (1 at once, 0 after ``recency_horizon_days``), so facts weeks
and months apart still differ, where ``exp(-0.01·hours)`` was ~0 for both after a few weeks;
a query that asks about the present ("now", "currently", "still", 现在...) doubles its weight.
History (returned only on request) ranks just under the memory that superseded it, so the
current value of an attribute comes first whatever its age. Access
frequency saturates logarithmically. Among the best candidates, a memory gains a share of the
score of what was said just before or after it in its session (``neighbour_boost``), unless the
query asks when something happened.
Every weight can be changed per call. ``min_score`` compares raw cosine similarity, as in
the usual practice ("0.7–0.8 on pure similarity").
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import NamedTuple

import numpy as np
from pydantic import AliasChoices, BaseModel, ConfigDict, Field

from ..language.rules import matches
from ..language.when import TimeFrame
from ..model.records import MemoryRecord, to_epoch
from ..model.results import RecallHit
from ..storage.field_index import MemoryFacts
from ..storage.vector_copy import Vector


class RecallWeights(BaseModel):
    """Fusion weights; tune with `hindsight bench grid`.

    Defaults (relevance 1.0, recency 0.1, importance 0.1, access 0.05) are what LoCoMo's
    development split measured for the default write path: the common starting point
    0.5/0.2/0.2/0.1 gave 0.727 evidence recall@10 against 0.781, its importance weight
    outranking relevant plain statements with preferences (README "Results").
    """

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)  # an infinite weight makes every score NaN

    similarity: float = Field(1.0, ge=0, description="weight of relevance (dense + lexical) in the score")
    recency: float = Field(0.1, ge=0)
    importance: float = Field(0.1, ge=0)
    access: float = Field(0.05, ge=0)
    dense: float = Field(0.5, ge=0, description="share of dense similarity inside relevance")
    lexical: float = Field(0.5, ge=0, description="share of BM25 inside relevance")
    context: float = Field(
        0.5,
        ge=0,
        le=1,
        validation_alias=AliasChoices("context", "window"),  # "window" before 0.2: now only the working window
        description="share of the context vector (the memory framed by its context) inside dense similarity",
    )
    entity_boost: float = Field(
        0.2, ge=0, description="relevance bonus when the one entity named in the query is the memory's"
    )
    time_boost: float = Field(
        0.2, ge=0, description='relevance bonus for memories dated within a time the query names ("in June")'
    )
    neighbour_boost: float = Field(
        0.1,
        ge=0,
        description="share of the best score among the memories said just before and after it in its session "
        "(none for a question asking when)",
    )
    recency_lambda: float | None = Field(
        None, ge=0, description="per hour; when set, recency is exp(-λ·hours) instead of log-scaled age"
    )
    recency_horizon_days: float = Field(3650.0, gt=0, description="age at which log-scaled recency reaches 0")
    access_saturation: int = Field(20, ge=1)


@dataclass(slots=True)
class Candidate:
    """A memory up for ranking, before its record is fetched.

    ``similarity`` (own vector) and ``context_similarity`` are known for hits of the
    respective vector search; otherwise the vector is carried so the cosine can be computed.
    A memory without a context has neither: its own similarity stands in.
    """

    id: str
    facts: MemoryFacts
    lexical_raw: float
    similarity: float | None = None
    vector: Vector | None = None
    context_similarity: float | None = None
    context_vector: Vector | None = None


class Ranked(NamedTuple):
    """A candidate's score and its parts; becomes a ``RecallHit`` once its record is fetched.

    A tuple: every candidate gets one (~150 a recall), and a tuple is made in half a dataclass's time.
    """

    id: str
    score: float
    relevance: float
    similarity: float
    lexical: float
    recency: float
    closeness: float
    """The better of its own similarity and the blend: what the relevance floor reads.

    Ranking blends the memory's own vector with its framed one (``similarity``); the floor asks
    whether the memory is about the question at all, and an unrelated context must not take
    that away. A statement written after an unrelated one in its session is framed by it (0.06
    to a paraphrase of itself, against 0.24 for its own vector), and the blend alone put a fair
    question under the floor. The framed similarity alone is not enough: on LoCoMo dev it let 8
    more of 60 off-topic questions through (this: 3).
    """

    def hit(self, record: MemoryRecord) -> RecallHit:
        """This ranking with the fetched ``record``, as returned to callers."""
        return RecallHit(
            record=record,
            score=self.score,
            relevance=self.relevance,
            similarity=self.similarity,
            lexical=self.lexical,
            recency=self.recency,
        )


def asks_for_present(query: str) -> bool:
    """Whether a query asks for the present ("where does she live now", 现在): the packs' ``recall.present``."""
    return matches("recall.present", query)


def asks_when(query: str) -> bool:
    """Whether a query asks when something happened ("when did we...", 什么时候): the packs' ``recall.asks_when``."""
    return matches("recall.asks_when", query)


def _below_successors(score: np.ndarray, candidates: Sequence[Candidate]) -> None:
    """A superseded memory scores just under the memory that replaced it, when both are candidates.

    So the current value of an attribute comes first whatever its age, and history asked for
    still ranks where its relevance puts it otherwise.
    """
    successors = [(n, s) for n, c in enumerate(candidates) if (s := c.facts.superseded_by) is not None]
    if not successors:  # the default filter leaves no history among them
        return
    position = {c.id: n for n, c in enumerate(candidates)}
    replaced = [(n, position[s]) for n, s in successors if s in position]
    for _ in range(3):  # chains of corrections are short; each pass settles one more link
        for old, new in replaced:
            score[old] = min(score[old], score[new] - 1e-6)


def _recency(hours: np.ndarray, weights: RecallWeights) -> np.ndarray:
    if weights.recency_lambda is not None:
        return np.exp(-weights.recency_lambda * hours)
    horizon = math.log1p(weights.recency_horizon_days * 24.0)
    return np.clip(1.0 - np.log1p(hours) / horizon, 0.0, 1.0)


def _minmax(values: np.ndarray) -> np.ndarray:
    if values.size == 0:
        return values
    lo, hi = float(values.min()), float(values.max())
    if hi - lo < 1e-9:
        return np.ones_like(values)
    return (values - lo) / (hi - lo)


def _cosines(vectors: list[Vector | None], query: np.ndarray) -> np.ndarray:
    out = np.zeros(len(vectors), dtype=np.float32)
    rows = [i for i, v in enumerate(vectors) if v is not None]
    if rows:
        matrix = np.asarray([vectors[i] for i in rows], dtype=np.float32)
        norms = np.linalg.norm(matrix, axis=1) * (float(np.linalg.norm(query)) or 1.0)
        out[rows] = (matrix @ query) / np.where(norms == 0, 1.0, norms)
    return out


def _known_or_cosine(known: list[float | None], vectors: list[Vector | None], query: np.ndarray) -> np.ndarray:
    """Similarities the search returned, else computed from the vectors carried (else 0)."""
    found = np.array(known, dtype=np.float64)  # None reads as NaN
    unknown = np.isnan(found)
    if not unknown.any():  # every cosine came from a search (the in-memory copies score every candidate)
        return found.astype(np.float32)
    out = _cosines([v if k is None else None for k, v in zip(known, vectors)], query)
    return np.where(unknown, out, found).astype(np.float32)


def _within_frames(occurred: np.ndarray, frames: Sequence[TimeFrame]) -> np.ndarray:
    """Which of the ``occurred`` epoch stamps fall inside one of ``frames`` (compared as stored)."""
    inside = np.zeros(len(occurred), dtype=bool)
    for frame in frames:
        start, end = to_epoch(frame.start) or 0.0, to_epoch(frame.end) or 0.0
        inside |= (occurred >= start) & (occurred < end)
    return inside


def named_entity(query: str, candidates: Sequence[Candidate]) -> str | None:
    """The single candidate entity (e.g. a speaker's name) the query mentions, if exactly one."""
    lowered = query.lower()
    named = set().union(*(c.facts.entities for c in candidates))
    names = {e for e in named if e and e.lower() in lowered}  # cheap test first
    mentioned = {e for e in names if re.search(rf"(?<!\w){re.escape(e.lower())}(?!\w)", lowered)}
    return mentioned.pop() if len(mentioned) == 1 else None


Adjacent = Callable[[Iterable[str]], Mapping[str, tuple[str, ...]]]
"""Memory ids → the ids of the memories said just before and after each (``SessionWindows.adjacent``)."""

NEIGHBOUR_DEPTH = 40
"""How many of the best candidates lend and take a neighbour's score."""


def _with_neighbours(
    score: np.ndarray, candidates: Sequence[Candidate], adjacent: Adjacent, boost: float
) -> np.ndarray:
    """Each of the best candidates gains ``boost`` times the better score of its two neighbours among them.

    What was said just before or after a memory is often the rest of its fact: a question and
    its answer, a statement carried over two turns. On LoCoMo dev's default path (``record_turn``)
    evidence recall@10 went 0.781 → 0.788 at 0.1 (multi-hop 0.515 → 0.526, single-hop 0.843 →
    0.858, temporal 0.922 → 0.911), zh_dev's 0.885 → 0.892; each of 0.05 to 0.2 raised every dev
    conversation when it was left out of the choice, and larger shares cost temporal questions
    more (README, Results §1). Scores are divided by ``1 + boost``: they stay in [0, 1], and the
    candidates below the best ``NEIGHBOUR_DEPTH`` keep their order.

    A question asking *when* (``asks_when``) gets no share: the memory that dates the event
    answers it, and its neighbours, lifted by it, pushed other answers out of the ten. Without
    the share for those, temporal recall@10 went 0.911 → 0.922 (``record_turn``) and 0.894 →
    0.911 (``store_memory``), the other categories unchanged.
    """
    best = np.argsort(-score, kind="stable")[:NEIGHBOUR_DEPTH].tolist()
    position = {candidates[n].id: n for n in best}
    bonus = np.zeros_like(score)
    for memory_id, around in adjacent(position).items():
        near = [score[position[i]] for i in around if i in position]
        if near:
            bonus[position[memory_id]] = max(near)
    return (score + boost * bonus) / (1 + boost)


def rank(
    candidates: Sequence[Candidate],
    *,
    query: str,
    query_vector: Vector,
    weights: RecallWeights,
    now: datetime,
    frames: Sequence[TimeFrame] = (),
    adjacent: Adjacent | None = None,
) -> list[Ranked]:
    """Score already-filtered candidates; best first.

    Dense similarity mixes the memory's own vector with its context vector; both
    signals are min-max normalised over the candidate set before fusion, which keeps
    BM25's unbounded scores and cosine's narrow band on one scale. ``frames``: the times the
    query names (``language/when.py``), whose memories get ``weights.time_boost``. ``adjacent``:
    the memories said just before and after each one in its session (``_with_neighbours``).
    """
    if not candidates:
        return []
    q = np.asarray(query_vector, dtype=np.float32)
    own = _known_or_cosine([c.similarity for c in candidates], [c.vector for c in candidates], q)
    framed = _known_or_cosine([c.context_similarity for c in candidates], [c.context_vector for c in candidates], q)
    without = [n for n, c in enumerate(candidates) if c.context_similarity is None and c.context_vector is None]
    framed[without] = own[without]
    similarity = (1 - weights.context) * own + weights.context * framed
    dense = _minmax(similarity)
    raw_lexical = np.asarray([c.lexical_raw for c in candidates], dtype=np.float32)
    lexical = np.zeros_like(raw_lexical)
    matched = raw_lexical > 0
    lexical[matched] = _minmax(raw_lexical[matched]) if matched.sum() > 1 else 1.0
    share = (weights.dense + weights.lexical) or 1.0
    relevance = ((weights.dense * dense + weights.lexical * lexical) / share).astype(np.float64)
    facts = [c.facts for c in candidates]
    entity = named_entity(query, candidates) if weights.entity_boost else None
    if entity:  # a bonus for the named one, kept within [0, 1]
        relevance[[entity not in f.entities for f in facts]] /= 1 + weights.entity_boost
    stamps = np.array([f.occurred_at for f in facts], dtype=np.float64)  # 0 = not dated
    if frames and weights.time_boost:
        outside = ~_within_frames(stamps, frames)
        if outside.any() and not outside.all():  # all or none inside: the time tells them nothing apart
            relevance[outside] /= 1 + weights.time_boost
    now_epoch = to_epoch(now) or 0.0
    occurred = np.where(stamps != 0, stamps, now_epoch)
    recency = _recency(np.maximum(0.0, (now_epoch - occurred) / 3600.0), weights)
    access = np.minimum(
        1.0,
        np.log1p(np.array([f.access_count for f in facts], dtype=np.float64)) / math.log1p(weights.access_saturation),
    )
    importance = np.array([f.importance for f in facts], dtype=np.float64)
    recency_weight = weights.recency * (2.0 if asks_for_present(query) else 1.0)
    total = (weights.similarity + recency_weight + weights.importance + weights.access) or 1.0
    score = (
        weights.similarity * relevance
        + recency_weight * recency
        + weights.importance * importance
        + weights.access * access
    ) / total  # a weighted mean: scores stay in [0, 1] whatever the weights
    if weights.neighbour_boost and adjacent is not None and not asks_when(query):
        score = _with_neighbours(score, candidates, adjacent, weights.neighbour_boost)
    _below_successors(score, candidates)
    order = np.argsort(-score, kind="stable")  # ties keep candidate order
    columns = (score, relevance, similarity, lexical, recency, np.maximum(own, similarity))
    return list(map(Ranked, [candidates[n].id for n in order.tolist()], *(c[order].tolist() for c in columns)))


def prefer_consolidated(ranked: Sequence[Ranked], facts: Mapping[str, MemoryFacts]) -> list[Ranked]:
    """A consolidated memory in place of its sources: where both ranked, it takes the best place of them, they go.

    Its sources say what it says (``consolidation.py``); returning both spends the token budget
    twice on one fact. A source whose consolidated memory is not among ``ranked`` (filtered out,
    forgotten) stays where it ranked.
    """
    present = {r.id: r for r in ranked}
    out: list[Ranked] = []
    placed: set[str] = set()
    for entry in ranked:
        found = facts.get(entry.id)
        into = found.consolidated_into if found is not None else None
        if into is not None and into in present:
            if into not in placed:
                best = present[into]
                out.append(best._replace(score=max(best.score, entry.score)))
                placed.add(into)
        elif entry.id not in placed:
            out.append(entry)
            placed.add(entry.id)
    return out
