"""What the engine's operations return: plain pydantic models, shared by every layer.

The MCP server sends them over the wire (``mcp/wire.py``) and the client rebuilds them, so an
adapter sees the same types whether the engine runs in-process or behind a server.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from .records import Kind, MemoryRecord


class RecallHit(BaseModel):
    """A recalled memory and why it ranked where it did."""

    record: MemoryRecord
    score: float
    relevance: float
    similarity: float = Field(0.0, description="cosine similarity to the query (what min_score compares)")
    lexical: float = Field(0.0, description="BM25 score, min-max normalised over the candidates")
    recency: float = 0.0
    cross_encoder: float | None = Field(
        None, description="the re-ranker's logit for this memory and the query, when one ran (HINDSIGHT_RERANK)"
    )


class SkippedMemory(BaseModel):
    """An item the write filter declined, with the reason (returned to the caller)."""

    index: int
    content: str
    reason: str


class StoreResult(BaseModel):
    """What a store call did with each item: stored, merged into an existing memory, skipped, superseded."""

    stored: list[MemoryRecord] = Field(default_factory=list)
    skipped: list[SkippedMemory] = Field(default_factory=list)
    superseded: list[str] = Field(default_factory=list, description="ids that the new memories superseded")
    merged: list[str] = Field(
        default_factory=list, description="ids of existing memories updated instead of duplicated"
    )
    quarantined: list[str] = Field(
        default_factory=list,
        description="ids of new memories held for review: low-trust contradictions of important memories",
    )
    replayed: bool = Field(False, description="true when request_id had been seen and nothing new was written")

    @property
    def ids(self) -> list[str]:
        """Ids of the stored (or merged-into) memories, in input order."""
        return [r.id for r in self.stored]


class RecallResult(BaseModel):
    """The recalled memories, best first, and the dated context block packed from them."""

    query: str
    hits: list[RecallHit]
    context: str
    tokens: int

    @property
    def records(self) -> list[MemoryRecord]:
        """The recalled records without their scores."""
        return [h.record for h in self.hits]


class Relevance(BaseModel):
    """What the relevance floors read for one question: why a recall returned nothing, or would.

    A recall returns nothing when its best candidate is less than ``floor`` similar to the
    question (by its own text or its blend with its context), or, for a model with a centred
    floor, when its best candidates' centred similarity is under ``centred_floor``.
    """

    query: str
    closeness: float | None = Field(description="the closest candidate's similarity; null when there is none")
    centred: float | None = Field(description="the best candidates' centred similarity; null where none applies")
    floor: float
    centred_floor: float | None
    passes: bool = Field(description="whether a recall of this question returns memories")


class TurnResult(BaseModel):
    """One recorded conversation turn, what was remembered from it, and any compression it set off."""

    turn: MemoryRecord
    stored: StoreResult
    compression: CompressionResult | None = None


class CompressionResult(BaseModel):
    """Summaries written by one compression, the turns they archived, and the window size before and after."""

    summaries: list[MemoryRecord]
    archived_ids: list[str]
    tokens_before: int
    tokens_after: int


class NamespaceStats(BaseModel):
    """Counts of a namespace's memories by tier, kind and status (for diagnostics)."""

    namespace: str
    total: int
    by_tier: dict[str, int]
    by_kind: dict[str, int]
    by_status: dict[str, int]
    tokens: int
    embedding_model: str
    sessions: int


class MergedRepeat(BaseModel):
    """One periodic merge: ``merged`` is now history inside ``survivor``."""

    survivor: str
    merged: str
    similarity: float = Field(description="cosine similarity of the two memories' vectors")


class ConsolidatedFact(BaseModel):
    """A semantic memory one consolidation run created or reinforced, and the sources it added."""

    id: str | None = Field(description="the semantic memory (None for one a dry run would create)")
    content: str
    kind: Kind
    importance: float
    sources: list[str] = Field(description="ids of the memories this run consolidated into it")
    statements: int = Field(description="how many times those sources said it (merged repeats included)")
    occasions: int = Field(description="distinct sessions (or days) they said it in")
    distilled_by: Literal["rules", "llm", "existing"] = Field(
        description="who wrote the statement: the extractive rules, the LLM, or an earlier run (reinforced)"
    )


class ConsolidationReport(BaseModel):
    """What one ``consolidate`` run did (or, with ``dry_run``, would do)."""

    namespace: str
    dry_run: bool = False
    examined: int = Field(0, description="active memories considered for consolidation")
    merged: list[MergedRepeat] = Field(default_factory=list, description="repeats merged first (periodic merge)")
    created: list[ConsolidatedFact] = Field(default_factory=list, description="new semantic memories")
    reinforced: list[ConsolidatedFact] = Field(
        default_factory=list, description="existing consolidated memories said again"
    )
    standing: list[ConsolidatedFact] = Field(
        default_factory=list,
        description="facts said often enough, in enough sessions, that are one semantic memory already "
        "(their repeats were merged into it when written): nothing to distil",
    )


__all__ = [
    "CompressionResult",
    "ConsolidatedFact",
    "ConsolidationReport",
    "MergedRepeat",
    "NamespaceStats",
    "RecallHit",
    "RecallResult",
    "Relevance",
    "SkippedMemory",
    "StoreResult",
    "TurnResult",
]
