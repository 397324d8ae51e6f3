"""Structured recall filters, compiled to a Chroma ``where`` and checked in Python.

Dense candidates are narrowed by Chroma itself; lexical candidates come from our own index
and are checked with ``matches`` on their metadata. Both views are built from one
definition here so they cannot drift apart.
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from datetime import datetime
from functools import partial
from typing import Any, Protocol

from pydantic import BaseModel, ConfigDict, Field, field_validator

from .arguments import coerce_model
from .limits import InputLimits, check_filters
from .records import Kind, Status, Tier, to_epoch


class _Readable(Protocol):
    def get(self, key: str, default: Any = None, /) -> Any: ...


class RecallFilters(BaseModel):
    """Narrow recall before ranking. Empty means: every valid long-term memory."""

    model_config = ConfigDict(extra="forbid")

    session_id: str | None = None
    agent_id: str | None = None
    tiers: list[Tier] | None = None
    kinds: list[Kind] | None = None
    statuses: list[Status] | None = None
    since: datetime | None = None
    until: datetime | None = None
    min_importance: float | None = Field(None, ge=0, le=1)
    metadata: dict[str, str | int | float | bool] | None = None

    @field_validator("tiers", "kinds", "statuses", mode="before")
    @classmethod
    def _one_or_many(cls, value: Any) -> Any:
        if isinstance(value, str):
            return [value]
        return value

    def narrows(self) -> bool:
        """True when the caller asked for more than "valid long-term memories".

        Chroma pre-filters a ``where`` by scanning metadata, which costs more than the vector
        search itself on large namespaces; the default filter keeps nearly everything, so it
        is cheaper to over-fetch unfiltered and check candidates afterwards.
        """
        custom = (
            self.session_id,
            self.agent_id,
            self.kinds,
            self.statuses,
            self.since,
            self.until,
            self.min_importance,
            self.metadata,
        )
        return any(v is not None for v in custom) or (
            self.tiers is not None and set(self.tiers) != {Tier.EPISODIC, Tier.SEMANTIC}
        )

    def clauses(self, *, include_history: bool, now: datetime) -> list[dict[str, Any]]:
        """The filter as single-key Chroma ``where`` clauses; ``where`` and ``matcher`` are built from these."""
        out: list[dict[str, Any]] = []
        if self.session_id is not None:
            out.append({"session_id": self.session_id})
        if self.agent_id is not None:
            out.append({"agent_id": self.agent_id})
        tiers = self.tiers or [Tier.EPISODIC, Tier.SEMANTIC]
        out.append(_in("tier", [t.value for t in tiers]))
        if self.kinds:
            out.append(_in("kind", [k.value for k in self.kinds]))
        statuses = self.statuses or ([Status.ACTIVE, Status.SUPERSEDED] if include_history else [Status.ACTIVE])
        out.append(_in("status", [s.value for s in statuses]))
        if not include_history:
            stamp = to_epoch(now)
            out.append({"expires_at": {"$gt": stamp}})
            out.append({"valid_until": {"$gt": stamp}})
        if self.since is not None:
            out.append({"occurred_at": {"$gte": to_epoch(self.since)}})
        if self.until is not None:
            out.append({"occurred_at": {"$lte": to_epoch(self.until)}})
        if self.min_importance is not None:
            out.append({"importance": {"$gte": self.min_importance}})
        for key, value in (self.metadata or {}).items():
            out.append({f"m.{key}": value})
        return out

    def where(self, *, include_history: bool, now: datetime) -> dict[str, Any]:
        """The filter as one Chroma ``where`` (for Chroma's own pre-filtering and ``get``)."""
        clauses = self.clauses(include_history=include_history, now=now)
        return clauses[0] if len(clauses) == 1 else {"$and": clauses}

    def matcher(self, *, include_history: bool, now: datetime) -> Callable[[_Readable], bool]:
        """A check for Chroma metadata, or anything that reads like it (``MemoryFacts``).

        Compiled once per recall: the clauses are the same for every candidate.
        """
        tests = [_compile(clause) for clause in self.clauses(include_history=include_history, now=now)]

        def matches(meta: _Readable) -> bool:
            for key, test in tests:
                value = meta.get(key)
                if value is None or not test(value):
                    return False
            return True

        return matches


def _in(key: str, values: list[str]) -> dict[str, Any]:
    return {key: values[0]} if len(values) == 1 else {key: {"$in": values}}


_OPERATORS: dict[str, Callable[[Any, Any], bool]] = {
    "$in": lambda value, operand: value in operand,
    "$gt": operator.gt,
    "$gte": operator.ge,
    "$lte": operator.le,
}


def _compile(clause: dict[str, Any]) -> tuple[str, Callable[[Any], bool]]:
    """One ``where`` clause as (key, test of a present value); an absent key never matches."""
    ((key, condition),) = clause.items()
    if not isinstance(condition, dict):
        return key, partial(operator.eq, condition)
    ((op, operand),) = condition.items()
    if op not in _OPERATORS:
        raise ValueError(f"unsupported filter operator {op}")
    compare = _OPERATORS[op]
    return key, lambda value: compare(value, operand)


def bounded_filters(value: RecallFilters | dict[str, Any] | None, limits: InputLimits) -> RecallFilters:
    """``value`` as ``RecallFilters``, after checking a caller's dict against ``limits`` (size, keys, ids)."""
    check_filters(value, limits)
    return coerce_model(RecallFilters, value, "filters")
