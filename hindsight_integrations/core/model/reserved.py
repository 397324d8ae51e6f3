"""Hindsight's own metadata keys: the top-level keys starting with ``_``, and what their values look like.

A caller may not set such a key (``limits.check_metadata``): each one steers the engine (what a
memory supersedes is made history at the next start, a decay stamp is read as a time). An export
holds them as the engine wrote them, so an import accepts exactly these keys, each with a value
of the shape the engine writes, and refuses any other ``_`` key or a malformed value (a
``_decayed_at`` of ``"soon"`` would stop every later upkeep run of the namespace).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from .inputs import EARLIEST, LATEST
from .limits import MAX_MEMORY_ID_CHARS

# A memory's importance before upkeep first decayed it. Decay is about what to rank and keep, not
# about trust: "I'm allergic to peanuts." unrecalled for ten months may still not be overwritten
# by a tool (``supersede.protected``).
STATED_IMPORTANCE = "_stated_importance"
DECAYED_AT_KEY = "_decayed_at"  # when upkeep last decayed the memory, epoch seconds
SUPERSEDES_KEY = "_supersedes"  # of a new memory: the ids it made history, comma-separated
MERGED_INTO_KEY = "_merged_into"  # of a merged-away memory: the survivor's id
HABIT_KEY = "_habit"  # of a consolidated habit: how many days it was done on
REQUEST_HASH_KEY = "_request_hash"  # of a memory written with a request id: what the request held
# Of the first memory a request wrote: "place:id" of each of its items that merged into a stored memory, so a
# replay answers every item in input order (``write/replay.py``).
REQUEST_MERGES_KEY = "_request_merges"


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _importance(value: Any) -> str | None:
    return None if _number(value) and 0 <= value <= 1 else "must be a number from 0 to 1"


def _epoch(value: Any) -> str | None:
    ok = _number(value) and EARLIEST.timestamp() <= value <= LATEST.timestamp()
    return None if ok else "must be a time in epoch seconds (years 1900 to 2999)"


def _memory_ids(value: Any) -> str | None:
    ids = value.split(",") if isinstance(value, str) else []
    ok = bool(ids) and all(0 < len(i) <= MAX_MEMORY_ID_CHARS for i in ids)
    return None if ok else f"must be memory ids ({MAX_MEMORY_ID_CHARS} characters at most), separated by commas"


def _memory_id(value: Any) -> str | None:
    ok = isinstance(value, str) and 0 < len(value) <= MAX_MEMORY_ID_CHARS
    return None if ok else f"must be a memory id ({MAX_MEMORY_ID_CHARS} characters at most)"


def _days(value: Any) -> str | None:
    return None if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else "must be a day count"


def _placed_ids(value: Any) -> str | None:
    pairs = [p.partition(":") for p in value.split(",")] if isinstance(value, str) else []
    ok = bool(pairs) and all(n.isdigit() and sep and 0 < len(i) <= MAX_MEMORY_ID_CHARS for n, sep, i in pairs)
    return None if ok else "must be place:memory id pairs, separated by commas"


def _hash(value: Any) -> str | None:
    ok = isinstance(value, str) and 0 < len(value) <= 64 and all(c in "0123456789abcdef" for c in value)
    return None if ok else "must be a hexadecimal digest of at most 64 characters"


_SHAPES: dict[str, Callable[[Any], str | None]] = {
    STATED_IMPORTANCE: _importance,
    DECAYED_AT_KEY: _epoch,
    SUPERSEDES_KEY: _memory_ids,
    MERGED_INTO_KEY: _memory_id,
    HABIT_KEY: _days,
    REQUEST_HASH_KEY: _hash,
    REQUEST_MERGES_KEY: _placed_ids,
}
RESERVED_KEYS = frozenset(_SHAPES)


def reserved_value_problem(key: str, value: Any) -> str | None:
    """What is wrong with ``value`` under hindsight's own key ``key`` (None: the engine could have written it)."""
    shape = _SHAPES.get(key)
    if shape is None:
        return f"hindsight writes no key {key!r} (keys starting with '_' are its own); rename it"
    problem = shape(value)
    return None if problem is None else f"{problem}, got {_shown(value)}"


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


__all__ = [
    "DECAYED_AT_KEY",
    "HABIT_KEY",
    "MERGED_INTO_KEY",
    "REQUEST_HASH_KEY",
    "REQUEST_MERGES_KEY",
    "RESERVED_KEYS",
    "STATED_IMPORTANCE",
    "SUPERSEDES_KEY",
    "reserved_value_problem",
]
