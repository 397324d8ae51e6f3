"""``hindsight bench distinct``: are facts that look alike but differ kept apart, and repeats kept once?

Embedding similarity cannot tell "meeting on Tuesday" from "meeting on Thursday" (MiniLM
cosine ≥ 0.95), so a dedup by similarity alone merges them. This benchmark writes a
generated set of near-identical-but-different facts (weekdays, times, dates, amounts, codes,
names, versions) and, for a share of them, a repeat with the same values (case, punctuation
and filler changed), one ``store_memories`` call per statement with the defaults, as a user
or the MCP ``store_memory`` tool writes them. Scored: the share of distinct facts still
active as a memory of their own (target 100 %), and the active copies per repeated fact
(target 1.0). ``distinct_table`` is its one row for the terminal and the README.
"""

from __future__ import annotations

import random
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..core.engine import MemoryEngine

_NAMES = ["Dana", "Priya", "Marco", "Chen Wei", "Olu", "Sofia", "Kenji", "Amara"]
_CITIES = ["Lisbon", "Oslo", "Nairobi", "Lima", "Hanoi", "Porto", "Quito", "Tbilisi"]
_DAYS = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"]
_MONTHS = ["January", "February", "March", "April", "May", "June", "July", "August", "September", "October"]


def _value_sets(rng: random.Random) -> list[Callable[[], str]]:
    """Templates whose variants differ only in their values."""
    return [
        lambda: (
            f"Meeting with {rng.choice(_NAMES)} on {rng.choice(_DAYS)} "
            f"at {rng.randint(8, 18)}:{rng.choice(['00', '30'])}."
        ),
        lambda: f"The invoice INV-{rng.randint(1000, 9999)} total was {rng.randint(50, 5000)} euros.",
        lambda: (
            f"Flight {rng.choice(['LH', 'TP', 'KL'])}{rng.randint(100, 999)} to {rng.choice(_CITIES)} "
            f"departs on {rng.randint(1, 28)} {rng.choice(_MONTHS)}."
        ),
        lambda: f"Order #{rng.randint(10000, 99999)} was shipped on {rng.randint(1, 28)} {rng.choice(_MONTHS)}.",
        lambda: f"The staging server runs version {rng.randint(1, 4)}.{rng.randint(0, 20)}.{rng.randint(0, 9)}.",
        lambda: f"Ticket PROJ-{rng.randint(100, 999)} is assigned to {rng.choice(_NAMES)}.",
        lambda: (
            f"Lent {rng.choice(_NAMES)} {rng.randint(20, 900)} dollars on {rng.randint(1, 28)} {rng.choice(_MONTHS)}."
        ),
    ]


def _repeat(text: str, rng: random.Random) -> str:
    """The same statement with the same values, written a little differently."""
    variants = [text.lower(), text.rstrip(".") + "!", "  " + text.replace(" ", "  ") + " ", text.rstrip(".")]
    return rng.choice(variants)


def facts(count: int, *, seed: int = 11) -> list[str]:
    """``count`` distinct statements, each differing from others of its template only in values."""
    rng = random.Random(seed)
    makers = _value_sets(rng)
    out: dict[str, None] = {}
    while len(out) < count:
        out[makers[len(out) % len(makers)]()] = None
    return list(out)


def run_distinct(
    *, count: int = 210, repeat_share: float = 0.3, unrelated: int = 2000, store: Path | None = None
) -> dict[str, Any]:
    """Write the facts (and repeats) one call each with defaults; count what survived as its own memory.

    Then ``unrelated`` statements of the scale benchmark's generator (people, projects, orders,
    events; meant as separate facts) are written with the defaults in batches: how many of
    them became history shows how often the update rules fire on statements that merely
    look alike.
    """
    rng = random.Random(5)
    distinct = facts(count)
    repeated = rng.sample(distinct, int(count * repeat_share))
    writes = distinct + [_repeat(text, rng) for text in repeated]
    with tempfile.TemporaryDirectory(prefix="hindsight-distinct-") as tmp:
        engine = MemoryEngine(store=store or Path(tmp) / "store", llm=False)
        started = time.perf_counter()
        for text in writes:
            engine.store_memories(text, namespace="distinct")
        elapsed = time.perf_counter() - started
        active = [r.content for r in engine.list(namespace="distinct", limit=10_000)]
        made_history = _history_made(engine, unrelated)
        engine.close()
    kept = sum(1 for text in distinct if text in active)
    copies = [sum(1 for a in active if _key(a) == _key(t)) for t in repeated]
    return {
        "benchmark": "distinct",
        "distinct_facts": len(distinct),
        "repeats_written": len(repeated),
        "writes": len(writes),
        "distinct_kept": round(kept / len(distinct), 4),
        "copies_per_repeated_fact": round(sum(copies) / max(len(copies), 1), 4),
        "active_memories": len(active),
        "writes_per_second": round(len(writes) / elapsed, 1),
        "unrelated_statements": unrelated,
        "unrelated_made_history": made_history,
    }


def _history_made(engine: MemoryEngine, count: int) -> int:
    """Statements of the scale generator written with defaults, 500 a call: how many became history."""
    from .synthetic import memories

    items = memories(count)
    for start in range(0, count, 500):
        engine.store_memories(items[start : start + 500], namespace="unrelated")
    stored = engine.list(namespace="unrelated", include_history=True, limit=count)
    return sum(r.status.value != "active" for r in stored)


def _key(text: str) -> str:
    return " ".join(text.lower().split()).rstrip(".!")


def _made_history(result: dict[str, Any]) -> str:
    if "unrelated_made_history" not in result:  # results written before the measure existed
        return "–"
    return f"{result['unrelated_made_history']} of {result['unrelated_statements']}"


def distinct_table(result: dict[str, Any]) -> str:
    """``hindsight bench distinct``: distinct facts kept and copies per repeated fact."""
    return "\n".join(
        [
            "| distinct facts | kept | repeats written | copies per repeated fact | writes/s "
            "| unrelated statements made history |",
            "|---|---|---|---|---|---|",
            f"| {result['distinct_facts']} | {result['distinct_kept']:.1%} | {result['repeats_written']} "
            f"| {result['copies_per_repeated_fact']} | {result['writes_per_second']} "
            f"| {_made_history(result)} |",
        ]
    )


__all__ = ["distinct_table", "facts", "run_distinct"]
