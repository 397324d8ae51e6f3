"""Structured recall filters, compiled to a Chroma ``where`` and checked in Python.

Dense candidates are narrowed by Chroma itself; lexical candidates come from our own index
and are checked with ``matches`` on their metadata. Both views are built from one
definition here so they cannot drift apart.

Chroma turns a ``where`` into one SQLite expression: an ``$and`` of about 985 clauses fails
("Expression tree is too large"), one of about 8,200 crashes the process in Chroma's Rust
bindings (a segfault; both measured on chromadb 1.5.9, the first re-checked by
``tests/test_security_bounds.py``). A filter can ask for at most ``MAX_METADATA_KEYS``
metadata clauses, and ``bounded_where`` refuses any ``where`` past ``MAX_WHERE_CONDITIONS``
before it reaches Chroma, whoever built it.
"""

from __future__ import annotations

import json
import operator
from collections.abc import Callable
from datetime import datetime
from functools import partial
from typing import Any, Protocol, Self

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator, model_validator

from ..errors import InvalidInputError
from ..model.arguments import coerce_model
from ..model.limits import (
    MAX_METADATA_KEYS,
    FilterMetadata,
    Identifier,
    InputLimits,
    configured_limits,
    json_size,
    refusal,
)
from ..model.records import Kind, Status, Tier, to_epoch

MAX_WHERE_CONDITIONS = 128
"""Field conditions one Chroma ``where`` may hold: a filter makes at most ~10 plus one per metadata
key (``MAX_METADATA_KEYS``); Chroma fails at ~985 and crashes at ~8,200."""
MAX_WHERE_DEPTH = 4
"""Nested ``$and``/``$or`` levels (ours use one; Chroma refuses past ~60)."""
MAX_WHERE_LIST = 1024
"""Values of one ``$in``/``$nin`` (ours name a few tiers, kinds or statuses)."""
MAX_WHERE_BYTES = 256 * 1024
"""A ``where`` as JSON: 32 times the default ``max_filter_bytes`` (8 KB), so only a setting raised past
~250 KB could make a filter that passes its own bound fail this one (with a clear error, not a crash)."""


class _Readable(Protocol):
    def get(self, key: str, default: Any = None, /) -> Any: ...


class RecallFilters(BaseModel):
    """Narrow recall before ranking. Empty means: every valid long-term memory."""

    # Instances are validated again when the engine receives them (with its configured limits),
    # so a filter built by hand, or by FastMCP without those limits, is held to them too.
    model_config = ConfigDict(extra="forbid", revalidate_instances="always")

    session_id: Identifier | None = None
    agent_id: Identifier | None = None
    tiers: list[Tier] | None = None
    kinds: list[Kind] | None = None
    statuses: list[Status] | None = None
    since: datetime | None = None
    until: datetime | None = None
    min_importance: float | None = Field(None, ge=0, le=1)
    metadata: FilterMetadata | None = None

    @model_validator(mode="before")
    @classmethod
    def _json_text(cls, value: Any) -> Any:
        if isinstance(value, str) and value.strip().startswith("{"):
            try:
                return json.loads(value)  # models send objects as JSON strings
            except (json.JSONDecodeError, RecursionError):
                pass
        return value

    @field_validator("tiers", "kinds", "statuses", mode="before")
    @classmethod
    def _one_or_many(cls, value: Any) -> Any:
        if isinstance(value, str):
            return [value]
        return value

    @field_validator("tiers", "kinds", "statuses")
    @classmethod
    def _distinct(cls, value: list[Any] | None) -> list[Any] | None:
        return None if value is None else list(dict.fromkeys(value))  # at most one clause value per member

    @model_validator(mode="after")
    def _bounded_size(self, info: ValidationInfo) -> Self:
        limits = configured_limits(info)
        if limits is not None:
            size = json_size(self.model_dump(mode="json", exclude_none=True), "filters")
            if size > limits.max_filter_bytes:
                raise refusal(
                    f"is {size} bytes as JSON; the limit is {limits.max_filter_bytes} (HINDSIGHT_MAX_FILTER_BYTES)"
                )
        return self

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
        return bounded_where(clauses[0] if len(clauses) == 1 else {"$and": clauses})

    def matcher(self, *, include_history: bool, now: datetime) -> Callable[[_Readable], bool]:
        """A check for Chroma metadata, or anything that reads like it (``MemoryFacts``).

        Compiled once per recall: the clauses are the same for every candidate.
        """
        clauses = self.clauses(include_history=include_history, now=now)
        tests = [_compile(clause) for clause in clauses]
        absent_passes = {key for clause in clauses for key, condition in clause.items() if _not_equal(condition)}

        def matches(meta: _Readable) -> bool:
            for key, test in tests:
                value = meta.get(key)
                if value is None:
                    if key not in absent_passes:
                        return False
                elif not test(value):
                    return False
            return True

        return matches

    def attribute_matcher(self, *, include_history: bool, now: datetime) -> Callable[[object], bool]:
        """``matcher`` for objects that hold each key as an attribute (``MemoryFacts``), read in one call.

        Recall checks every candidate (~150 a recall) on its facts. Not for a filter on user
        metadata, which no attribute holds (``metadata`` set): that reads the record's metadata.
        """
        if self.metadata is not None:
            raise ValueError("a filter on user metadata checks the record's metadata, not its attributes")
        keys, tests = zip(*(_compile(clause) for clause in self.clauses(include_history=include_history, now=now)))
        read = operator.attrgetter(*keys)
        if len(keys) == 1:
            return lambda facts: _passes((read(facts),), tests)
        return lambda facts: _passes(read(facts), tests)


def _passes(values: tuple[Any, ...], tests: tuple[Callable[[Any], bool], ...]) -> bool:
    """Each value present and passing its test (an absent key never matches)."""
    for value, test in zip(values, tests):  # noqa: SIM110 - all() over a generator costs a third more here
        if value is None or not test(value):
            return False
    return True


def _in(key: str, values: list[str]) -> dict[str, Any]:
    return {key: values[0]} if len(values) == 1 else {key: {"$in": values}}


# Each operator as the test of a value against its operand, agreeing with Chroma on types: a
# boolean equals only a boolean (Python's True == 1 == 1.0 does not hold there), an int and a
# float compare as numbers, and an order comparison never admits a boolean or text. Equality on
# text or a boolean and ``$in`` on text stay C-level callables: a recall runs the tests ~600 times.
_OPERATORS: dict[str, Callable[[Any], Callable[[Any], bool]]] = {
    "$in": lambda operand: _member_of(tuple(operand)),
    "$ne": lambda operand: _other_than(_equal_to(operand)),
    "$gt": lambda operand: _numeric(partial(operator.lt, operand)),  # value > operand
    "$gte": lambda operand: _numeric(partial(operator.le, operand)),
    "$lte": lambda operand: _numeric(partial(operator.ge, operand)),
}


def _not_equal(condition: Any) -> bool:
    """Whether a clause's condition is ``$ne``, the one an absent key passes (as in Chroma)."""
    return isinstance(condition, dict) and "$ne" in condition


def _other_than(equal: Callable[[Any], bool]) -> Callable[[Any], bool]:
    """Chroma's ``$ne`` of a present value: not equal as ``_equal_to`` counts it (a boolean is not 1)."""
    return lambda value: not equal(value)


def _compile(clause: dict[str, Any]) -> tuple[str, Callable[[Any], bool]]:
    """One ``where`` clause as (key, test of a present value); an absent key matches ``$ne`` only."""
    ((key, condition),) = clause.items()
    if not isinstance(condition, dict):
        return key, _equal_to(condition)
    ((op, operand),) = condition.items()
    if op not in _OPERATORS:
        raise ValueError(f"unsupported filter operator {op}")
    return key, _OPERATORS[op](operand)


def _is_number(value: Any) -> bool:
    """An int or a float, as Chroma counts numbers: a boolean is not one."""
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _equal_to(operand: Any) -> Callable[[Any], bool]:
    """Chroma's equality: a boolean matches only that boolean, a number only an equal number (1 matches 1.0)."""
    if isinstance(operand, bool):
        return partial(operator.is_, operand)
    if _is_number(operand):
        return lambda value: value == operand and _is_number(value)
    return partial(operator.eq, operand)


def _member_of(operands: tuple[Any, ...]) -> Callable[[Any], bool]:
    """Chroma's ``$in``: equality (``_equal_to``) with any one of ``operands``."""
    if all(isinstance(o, str) for o in operands):  # tiers, kinds, statuses: text equals only text
        return operands.__contains__
    tests = [_equal_to(o) for o in operands]
    return lambda value: any(test(value) for test in tests)


def _numeric(test: Callable[[Any], bool]) -> Callable[[Any], bool]:
    """An order comparison as Chroma makes it: only a number passes (Python would order True as 1)."""
    return lambda value: _is_number(value) and test(value)


def bounded_filters(value: RecallFilters | dict[str, Any] | str | None, limits: InputLimits) -> RecallFilters:
    """``value`` (a dict, a JSON string or a ``RecallFilters``) validated against ``limits``: size, keys, ids."""
    return coerce_model(RecallFilters, value, "filters", context=limits.context())


def bounded_where(where: dict[str, Any], field: str = "filters") -> dict[str, Any]:
    """``where`` unchanged, or InvalidInputError if it is too large for Chroma to evaluate safely.

    The last check before Chroma, so no path (a caller's filter, an internal query) can hand
    it an expression tree that fails or crashes it: at most ``MAX_WHERE_CONDITIONS`` field
    conditions, ``MAX_WHERE_DEPTH`` nested ``$and``/``$or``, ``MAX_WHERE_LIST`` values per
    ``$in`` and ``MAX_WHERE_BYTES`` of JSON.
    """
    conditions = 0
    stack: list[tuple[Any, int]] = [(where, 0)]
    while stack:
        node, depth = stack.pop()
        if not isinstance(node, dict):
            raise InvalidInputError(field, f"compiles to a Chroma filter with a {type(node).__name__} clause")
        for key, value in node.items():
            if key in ("$and", "$or"):
                if depth + 1 > MAX_WHERE_DEPTH:
                    raise InvalidInputError(
                        field, f"compiles to a Chroma filter nested more than {MAX_WHERE_DEPTH} levels deep"
                    )
                if not isinstance(value, list):
                    raise InvalidInputError(field, f"compiles to a Chroma filter whose {key} is not a list")
                stack.extend((child, depth + 1) for child in value)
                continue
            conditions += 1
            if conditions > MAX_WHERE_CONDITIONS:
                raise InvalidInputError(
                    field, f"compiles to more than {MAX_WHERE_CONDITIONS} Chroma conditions; the limit is "
                    f"{MAX_WHERE_CONDITIONS} (at most {MAX_METADATA_KEYS} metadata keys)",
                )  # fmt: skip
            operands = value.values() if isinstance(value, dict) else ()
            for operand in operands:
                if isinstance(operand, list) and len(operand) > MAX_WHERE_LIST:
                    raise InvalidInputError(
                        field, f"compiles to a Chroma condition on {len(operand)} values; the limit is {MAX_WHERE_LIST}"
                    )
    size = json_size(where, field)
    if size > MAX_WHERE_BYTES:
        raise InvalidInputError(field, f"compiles to a Chroma filter of {size} bytes; the limit is {MAX_WHERE_BYTES}")
    return where
