"""A LangGraph item's value in its memory: the text embedded, what ``lg_value`` holds, the search filter on it.

``HindsightStore`` (``store.py``) writes and reads items through these; a search parses each
item's value once (``ParsedValues``), for its filter and for the item it returns.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from ..core.model.limits import check_metadata, json_size
from ..core.model.records import MemoryRecord


def flatten(value: Any, prefix: str = "") -> list[str]:
    """``key: value`` lines of a JSON value: embeds far better than the raw JSON text."""
    if isinstance(value, Mapping):
        lines: list[str] = []
        for k, v in value.items():
            lines.extend(flatten(v, f"{prefix}.{k}" if prefix else str(k)))
        return lines
    if isinstance(value, (list, tuple)):
        return [line for v in value for line in flatten(v, prefix)]
    if value is None:
        return []
    return [f"{prefix}: {value}" if prefix else str(value)]


def _compare(actual: Any, expected: Any) -> bool:
    """LangGraph's filter semantics: equality, nested objects, sequences element by element, and $eq/$ne/$in/..."""
    if isinstance(expected, Mapping):
        if any(str(k).startswith("$") for k in expected):
            return all(_operator(actual, op, operand) for op, operand in expected.items())
        return isinstance(actual, Mapping) and all(_compare(actual.get(k), v) for k, v in expected.items())
    if isinstance(expected, (list, tuple)):  # a stored tuple comes back from JSON as a list
        return (
            isinstance(actual, (list, tuple))
            and len(actual) == len(expected)
            and all(_compare(a, e) for a, e in zip(actual, expected))
        )
    return actual == expected


def _operator(actual: Any, op: str, operand: Any) -> bool:
    """One ``$op`` comparison; ordering operators compare as numbers and never match non-numbers."""
    if op == "$eq":
        return actual == operand
    if op == "$ne":
        return actual != operand
    if op == "$in":
        return actual in operand
    if op == "$nin":
        return actual not in operand
    if op in ("$gt", "$gte", "$lt", "$lte"):
        try:
            a, b = float(actual), float(operand)
        except (TypeError, ValueError):
            return False
        return {"$gt": a > b, "$gte": a >= b, "$lt": a < b, "$lte": a <= b}[op]
    raise ValueError(f"unsupported filter operator {op!r}; use $eq, $ne, $in, $nin, $gt, $gte, $lt or $lte")


def _matches(value: Mapping[str, Any], filter: Mapping[str, Any] | None) -> bool:
    """Whether an item's value passes a search ``filter`` (which no recall or listing filter can express)."""
    return not filter or all(_compare(value.get(k), v) for k, v in filter.items())


def item_value(record: MemoryRecord) -> dict[str, Any]:
    """The item's value: under ``lg_value`` as an object or as JSON text (``stored_value``)."""
    stored = record.metadata.get("lg_value")
    return json.loads(stored) if isinstance(stored, str) else dict(stored or {})


def stored_value(value_json: str) -> Any:
    """What ``lg_value`` holds: the value as an object where metadata can hold it so, else its JSON text.

    Both count toward the server's metadata size limit as JSON, but text counts each quote and
    backslash in the value twice (escaped again): a 6.8 KB value of 500 short fields took 9 KB of
    metadata as text, over the 8 KB default. Text keeps a value metadata cannot (nested deeper than
    ``MAX_METADATA_DEPTH``, or not finite) and one that is smaller as text (long lists of numbers).
    """
    value = json.loads(value_json)  # as text reads back: tuples as lists, keys as strings
    try:
        json.dumps(value, allow_nan=False)
        check_metadata({"lg_value": value}, "value", None)
    except ValueError:  # InvalidInputError is one
        return value_json
    return value if json_size(value, "value") <= json_size(value_json, "value") else value_json


class ParsedValues:
    """The values of the records one search reads, each parsed once: by ``filter``, then for the item returned."""

    def __init__(self, filter: Mapping[str, Any] | None) -> None:
        self._filter = filter
        self._values: dict[str, dict[str, Any]] = {}

    def kept(self, record: MemoryRecord) -> bool:
        """Whether ``record``'s item passes the search filter (no filter: without parsing the value)."""
        return not self._filter or _matches(self.of(record), self._filter)

    def of(self, record: MemoryRecord) -> dict[str, Any]:
        """``record``'s value (by its id: the memory another page or recall returned again is the same)."""
        value = self._values.get(record.id)
        if value is None:
            value = self._values[record.id] = item_value(record)
        return value


__all__ = ["ParsedValues", "flatten", "item_value", "stored_value"]
