"""Parameter grid search (`hindsight bench grid`): the A/B harness for recall weights, top_k and budget.

The labelled set is a LoCoMo-style directory (questions with evidence turn ids; use the
development split only, never the held-out conversations). The corpus is ingested once;
each combination of fusion weights is then one ``engine.recall`` per question at the
largest ``top_k`` (re-ranking only: nothing is re-embedded, and the query-vector cache
means each question is embedded once). Smaller ``top_k`` values and token budgets are
evaluated on that ranked list with the engine's own ``pack_within_budget`` and
``format_context``, which is exactly what ``recall(top_k=k, token_budget=b)`` would return,
without paying for another search per cell.

Reported per setting: evidence recall, precision (share of returned memories that are
evidence), MRR, all-evidence-found rate and the context tokens.
"""

from __future__ import annotations

import itertools
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from ..core.engine import MemoryEngine
from ..core.progress import ProgressCallback, prefixed, report
from ..core.recall.context import format_context, pack_within_budget
from ..core.recall.ranking import RecallWeights
from .locomo import CONTEXT_BUDGET, LOCOMO_WEIGHTS, ingest, namespace_for
from .locomo_data import Conversation, load_directory
from .locomo_scoring import reciprocal_rank

DEFAULT_GRID: dict[str, list[Any]] = {
    "dense": [0.3, 0.5, 0.7],  # lexical = 1 - dense
    "context": [0.0, 0.5],  # share of the context vector in dense similarity
    "entity_boost": [0.0, 0.2],
    "top_k": [3, 5, 10],
    "budget": [None, CONTEXT_BUDGET],
}


def weight_settings(grid: dict[str, list[Any]]) -> list[RecallWeights]:
    """Every fusion-weight combination, relevance-only (recency/importance/access off, as LoCoMo needs)."""
    base = LOCOMO_WEIGHTS.model_dump()
    out = []
    for dense, context, boost in itertools.product(grid["dense"], grid["context"], grid["entity_boost"]):
        out.append(
            RecallWeights(
                **{**base, "dense": dense, "lexical": round(1 - dense, 4), "context": context, "entity_boost": boost}
            )
        )
    return out


def _score_cell(
    engine: MemoryEngine, question: str, evidence: Sequence[str], ranked: Sequence[Any], k: int, budget: int | None
) -> dict[str, float]:
    """One question's scores for (k, budget), packed from the ranked list as ``recall`` would pack it."""
    packed = pack_within_budget(list(ranked[:k]), budget, query=question, counter=engine.tokens)
    ids = [str(record.metadata.get("dia_id")) for record, _ in packed]
    wanted = set(evidence)
    hits = sum(1 for i in ids if i in wanted)
    found = len(wanted & set(ids))
    return {
        "recall": found / len(wanted),
        "precision": hits / len(ids) if ids else 0.0,
        "mrr": reciprocal_rank(ids, evidence),
        "all_found": float(found == len(wanted)),
        "tokens": float(engine.tokens.count(format_context(packed))),
    }


def grid_search(
    engine: MemoryEngine,
    conversations: Sequence[Conversation],
    grid: dict[str, list[Any]] = DEFAULT_GRID,
    *,
    max_tokens: int = CONTEXT_BUDGET,
    progress: Callable[[str], None] | None = None,
    steps: ProgressCallback | None = None,
) -> dict[str, Any]:
    """Ingest once, re-rank per weight setting, score every (weights, top_k, budget) cell.

    ``progress`` gets a line per conversation; ``steps`` counts turns stored and questions scored.
    """
    settings = weight_settings(grid)
    max_k = max(grid["top_k"])
    cells = list(itertools.product(range(len(settings)), grid["top_k"], grid["budget"]))
    sums: dict[tuple[int, int, int | None], dict[str, float]] = {c: {} for c in cells}
    questions = 0
    started = time.perf_counter()
    for n, conv in enumerate(conversations):
        namespace = namespace_for(n)
        engine.drop_namespace(namespace)
        conv_steps = prefixed(steps, conv.name)
        ingest(engine, conv, namespace, conv_steps)
        if progress:
            progress(
                f"{conv.name}: {len(conv.turns)} turns, "
                f"{len(conv.questions)} questions × {len(settings)} weight settings"
            )
        scored, to_score = 0, len(settings) * len(conv.questions)
        report(conv_steps, "scoring questions × weight settings", 0, to_score)
        for w, weights in enumerate(settings):
            for q in conv.questions:
                ranked = engine.recall(
                    q.question, namespace=namespace, top_k=max_k, weights=weights, touch=False
                ).records
                for k in grid["top_k"]:
                    for budget in grid["budget"]:
                        cell = sums[(w, k, budget)]
                        for key, value in _score_cell(engine, q.question, q.evidence, ranked, k, budget).items():
                            cell[key] = cell.get(key, 0.0) + value
                scored += 1
                report(conv_steps, "scoring questions × weight settings", scored, to_score)
        questions += len(conv.questions)
    rows: list[dict[str, Any]] = []
    for (w, k, budget), total in sums.items():
        weights = settings[w]
        rows.append(
            {
                "dense": weights.dense,
                "lexical": weights.lexical,
                "context": weights.context,
                "entity_boost": weights.entity_boost,
                "top_k": k,
                "budget": budget,
                **{
                    key: round(total.get(key, 0.0) / max(questions, 1), 4)
                    for key in ("recall", "precision", "mrr", "all_found")
                },
                "tokens_mean": round(total.get("tokens", 0.0) / max(questions, 1), 1),
            }
        )
    rows.sort(key=lambda r: (-r["recall"], -r["mrr"], r["tokens_mean"]))
    within = [r for r in rows if r["tokens_mean"] <= max_tokens]
    return {
        "benchmark": "grid",
        "questions": questions,
        "settings": len(rows),
        "grid": {k: list(v) for k, v in grid.items()},
        "max_tokens": max_tokens,
        "best": within[0] if within else rows[0],
        "best_within_max_tokens": bool(within),
        "seconds": round(time.perf_counter() - started, 1),
        "rows": rows,
    }


def parse_grid(spec: str | None) -> dict[str, list[Any]]:
    """``"dense=0.3,0.5;top_k=5,10;budget=none,450"`` → a grid (unnamed keys keep their defaults)."""
    grid = {k: list(v) for k, v in DEFAULT_GRID.items()}
    if not spec:
        return grid
    for part in filter(None, (p.strip() for p in spec.split(";"))):
        key, _, values = part.partition("=")
        key = key.strip()
        if key not in grid:
            raise ValueError(f"unknown grid key {key!r}; use {', '.join(grid)}")
        parsed: list[Any] = []
        for value in values.split(","):
            value = value.strip().lower()
            if key == "budget":
                parsed.append(None if value in ("none", "0", "") else int(value))
            elif key == "top_k":
                parsed.append(int(value))
            else:
                parsed.append(float(value))
        if not parsed:
            raise ValueError(f"grid key {key!r} has no values")
        grid[key] = parsed
    return grid


def run_grid(
    data: Path,
    *,
    grid: dict[str, list[Any]] = DEFAULT_GRID,
    max_tokens: int = CONTEXT_BUDGET,
    embedder: Any = None,
    progress: Callable[[str], None] | None = None,
    steps: ProgressCallback | None = None,
) -> dict[str, Any]:
    """``hindsight bench grid``: the grid search over ``data`` in a throwaway embedded store.

    The store is deleted afterwards; the result is ``grid_search``'s, plus the data path.
    """
    conversations, _ = load_directory(data)
    with tempfile.TemporaryDirectory(prefix="hindsight-grid-") as tmp:
        engine = MemoryEngine(store=Path(tmp) / "store", embedder=embedder, llm=False)
        result = grid_search(engine, conversations, grid, max_tokens=max_tokens, progress=progress, steps=steps)
    result["data"] = str(data)
    return result
