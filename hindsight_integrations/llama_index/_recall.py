"""Recall parameters shared by the chat memory and the memory block, and the context they build.

Both surfaces inject the context block (dated lines between clear markers). The chat memory
additionally leaves out memories that were distilled from turns still in its working
window: they are already in the prompt verbatim, and repeating them as "memories from
earlier conversations" would both waste the budget and mislabel them.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

from ..core.model.results import RecallHit
from ..core.recall.context import format_context, pack_within_budget
from ..core.recall.filters import RecallFilters

_SERVER_TOP_K_CAP = 200
DEFAULT_TOKEN_BUDGET = 500  # injected context ≤ 500 tokens: a few relevant memories, not the history


class RecallOptions(BaseModel):
    """How much to recall before each model call."""

    model_config = ConfigDict(extra="forbid")

    top_k: int = Field(5, ge=1, description="memories injected at most")
    min_score: float | None = Field(
        None, ge=0, le=1, description="minimum similarity to the query (not the fused score)"
    )
    token_budget: int | None = Field(DEFAULT_TOKEN_BUDGET, gt=0, description="tokens the injected block may use")
    filters: dict[str, Any] | None = Field(None, description="RecallFilters as a dict: tiers, kinds, since, ...")
    include_history: bool = Field(False, description="also recall superseded memories, marked as such")

    @field_validator("filters")
    @classmethod
    def _filters(cls, value: dict[str, Any] | None) -> dict[str, Any] | None:
        return check_filters(value)

    @classmethod
    def of(cls, adapter: Any) -> RecallOptions:
        """The options an adapter (chat memory or memory block) carries as its own fields."""
        return cls(**{name: getattr(adapter, name) for name in cls.model_fields})

    def call_kwargs(self, extra: int = 0, cap: int | None = None) -> dict[str, Any]:
        """Arguments for ``client.recall``; ``extra`` over-fetches to leave room for exclusions.

        Over-fetching never pushes a valid ``top_k`` past the server's ``cap`` (the ``max_top_k``
        it announced; the default's 200 for a server that announces none).
        """
        return {
            "top_k": min(self.top_k + extra, max(self.top_k, cap or _SERVER_TOP_K_CAP)),
            "min_score": self.min_score,
            "filters": self.filters,
            "token_budget": None if extra else self.token_budget,
            "include_history": self.include_history,
        }


def check_filters(value: dict[str, Any] | None) -> dict[str, Any] | None:
    """Validate recall filters when an adapter is built, and return them unchanged.

    A typo in a filter must fail once, at construction, not as a failed recall on every
    model call.
    """
    if value is not None:
        RecallFilters.model_validate(value)
    return value


Selected = list[tuple[RecallHit, str]]
"""Recalled hits kept for the prompt, best first, each with the text to show (maybe trimmed)."""


def select_hits(
    hits: Sequence[RecallHit],
    options: RecallOptions,
    *,
    query: str = "",
    exclude_turn_ids: Collection[str] = (),
    exclude_texts: Collection[str] = (),
) -> Selected:
    """Drop hits derived from live turns, keep ``top_k``, then pack them into the token budget.

    Packing is the engine's own (whole memories first, then trimmed to the sentences that
    match the query, then dropped from the end), so the block looks the same as the one
    the MCP server would have returned.
    """
    exclude_ids = set(exclude_turn_ids)
    kept = [
        h
        for h in hits
        if not (exclude_ids & set(h.record.source.message_ids)) and h.record.content.strip() not in exclude_texts
    ][: options.top_k]
    packed = pack_within_budget([h.record for h in kept], options.token_budget, query=query)
    return [(hit, text) for hit, (_, text) in zip(kept, packed)]


def context_of(selected: Selected) -> str:
    """The dated context block for the selected hits, with their (possibly trimmed) texts; '' if none."""
    return format_context([(hit.record, text) for hit, text in selected])
