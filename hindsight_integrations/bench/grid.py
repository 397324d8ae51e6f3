"""Parameter grid search (`hindsight bench grid`): the A/B harness for recall weights, top_k and budget.

The labelled set is a LoCoMo-style directory (questions with evidence turn ids; use the
development split only, never the held-out conversations). The corpus is ingested once;
each combination of fusion weights is then one ``engine.recall`` per question at the
largest ``top_k`` (re-ranking only: nothing is re-embedded, and the query-vector cache
means each question is embedded once). Smaller ``top_k`` values and token budgets are
evaluated on that ranked list with the engine's own ``pack_within_budget`` and
``format_context``, which is exactly what ``recall(top_k=k, token_budget=b)`` would return,
without paying for another search per cell.

``--default-path`` measures what a user on the defaults gets instead: turns written by
``record_turn`` (``locomo_default.write_turns``), weights varied around ``RecallWeights()``, and
each cell its own ``recall``: its grid has one (top_k, budget), so re-ranking would save nothing,
and a real recall also packs as the engine does (current-first order, marks of changed memories),
which the re-ranking above skips. With ``--count-access`` each cell recalls on its own fresh copy
of the namespace, questions in order, access counted as a user's recalls count it (the shipped
weights read access counts, so a grid that never counts them scores weights a user never gets).
``--leave-one-out`` chooses weights on all
conversations but one and scores them on that one (``grid_loo.py``), because a best cell chosen
and scored on the same questions flatters itself.

Reported per setting: evidence recall, precision (share of returned memories that are
evidence), MRR, all-evidence-found rate and the context tokens, overall and per conversation.
"""

from __future__ import annotations

import itertools
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from ..core.engine import MemoryEngine
from ..core.model.limits import MAX_TOKENS
from ..core.progress import ProgressCallback, prefixed, report
from ..core.recall.context import format_context, pack_within_budget
from ..core.recall.ranking import RecallWeights
from ..mcp.client import MemoryClient
from .grid_loo import Cell, ConversationScore, leave_one_out
from .locomo import CONTEXT_BUDGET, LOCOMO_WEIGHTS, ingest, namespace_for
from .locomo_data import Conversation, load_directory
from .locomo_default import write_turns
from .locomo_scoring import dia_ids, reciprocal_rank
from .settling import context_written, rebuilt

DEFAULT_GRID: dict[str, list[Any]] = {
    "dense": [0.3, 0.5, 0.7],  # lexical = 1 - dense
    "context": [0.0, 0.5],  # share of the context vector in dense similarity
    "entity_boost": [0.0, 0.2],
    "top_k": [3, 5, 10],
    "budget": [None, CONTEXT_BUDGET],
}
# --default-path: the weights a user gets are RecallWeights() (recency, importance and access on),
# recalled as an agent recalls (top 10 in 450 tokens), so the grid varies the fusion around them
# and recency itself, at that one (top_k, budget).
DEFAULT_PATH_GRID: dict[str, list[Any]] = {
    "dense": [0.3, 0.5, 0.7],
    "context": [0.25, 0.5, 0.75],
    "entity_boost": [0.0, 0.2, 0.5],
    "recency": [0.0, 0.1],
    "top_k": [10],
    "budget": [CONTEXT_BUDGET],
}
# Keys a grid may name; a weight key a grid leaves out keeps the base weights' value.
GRID_KEYS = ("dense", "context", "entity_boost", "recency", "top_k", "budget")
VARIED = ("dense", "lexical", "context", "entity_boost", "recency")


def weight_settings(grid: dict[str, list[Any]], base: RecallWeights = LOCOMO_WEIGHTS) -> list[RecallWeights]:
    """Every fusion-weight combination on ``base`` (LOCOMO_WEIGHTS: recency/importance/access off, as LoCoMo needs)."""
    values = base.model_dump()
    out = []
    for dense, context, boost, recency in itertools.product(
        grid["dense"], grid["context"], grid["entity_boost"], grid.get("recency", [base.recency])
    ):
        out.append(
            RecallWeights(
                **{
                    **values,
                    "dense": dense,
                    "lexical": round(1 - dense, 4),
                    "context": context,
                    "entity_boost": boost,
                    "recency": recency,
                }
            )
        )
    return out


def varied(weights: RecallWeights) -> dict[str, float]:
    """The weights a grid varies, as a row and the leave-one-out section name them."""
    return {key: getattr(weights, key) for key in VARIED}


def _scores(ids: Sequence[str], evidence: Sequence[str], tokens: float) -> dict[str, float]:
    """One question's scores given the turn ids returned (in rank order) and the context's tokens."""
    wanted = set(evidence)
    hits = sum(1 for i in ids if i in wanted)
    found = len(wanted & set(ids))
    return {
        "recall": found / len(wanted),
        "precision": hits / len(ids) if ids else 0.0,
        "mrr": reciprocal_rank(ids, evidence),
        "all_found": float(found == len(wanted)),
        "tokens": tokens,
    }


def _score_cell(
    engine: MemoryEngine, question: str, evidence: Sequence[str], ranked: Sequence[Any], k: int, budget: int | None
) -> dict[str, float]:
    """One question's scores for (k, budget), packed from the ranked list as ``recall`` would pack it."""
    packed = pack_within_budget(list(ranked[:k]), budget, query=question, counter=engine.tokens)
    ids = [str(record.metadata.get("dia_id")) for record, _ in packed]
    return _scores(ids, evidence, float(engine.tokens.count(format_context(packed))))


def ingest_default_path(
    engine: MemoryEngine, conversation: Conversation, namespace: str, steps: ProgressCallback | None = None
) -> int:
    """Write the turns as the default path does (``write_turns``: one ``record_turn`` each, in process).

    The recall at the end waits for the context vectors embedded behind the writes (it returns
    nothing), so no question is scored against a half-built namespace.
    """
    with MemoryClient.in_process(engine, namespace=namespace) as client:
        write_turns(client, conversation, steps)
        client.recall("ingest done", top_k=1, min_score=1.0)
    rebuilt(engine.chroma.namespace(namespace))
    return len(conversation.turns)


def loo_slice(grid: dict[str, list[Any]], max_tokens: int) -> tuple[int, int | None]:
    """The (top_k, budget) leave-one-out compares weights at: top 10 (else the largest) within ``max_tokens``.

    The budget is ``max_tokens`` when the grid has it, else its smallest budget, else none.
    """
    top_k = 10 if 10 in grid["top_k"] else max(grid["top_k"])
    budgets = [b for b in grid["budget"] if b is not None]
    budget = max_tokens if max_tokens in budgets else (min(budgets) if budgets else None)
    return top_k, budget


def grid_search(
    engine: MemoryEngine,
    conversations: Sequence[Conversation],
    grid: dict[str, list[Any]] = DEFAULT_GRID,
    *,
    max_tokens: int = CONTEXT_BUDGET,
    default_path: bool = False,
    with_leave_one_out: bool = False,
    count_access: bool = False,
    progress: Callable[[str], None] | None = None,
    steps: ProgressCallback | None = None,
) -> dict[str, Any]:
    """Ingest once, score every (weights, top_k, budget) cell per conversation; optionally leave one out.

    Tuned (the default): turns stored by ``locomo.ingest``, weights varied on LOCOMO_WEIGHTS, one
    recall per question and weight setting re-ranked into every (top_k, budget) cell. With
    ``default_path``: turns written by ``ingest_default_path``, weights varied on ``RecallWeights()``,
    and every cell is its own ``recall(top_k, token_budget)`` (budget none = unbounded), exactly
    what an agent on the defaults gets. ``with_leave_one_out`` adds the shipped ``RecallWeights()``
    as a cell if the grid lacks it (reported, never chosen) and the ``leave_one_out`` section
    (``grid_loo.py``). ``count_access`` (default path only) recalls each weight setting on a fresh
    copy of the namespace (``engine.export`` / ``import_data``, vectors reused) with access counted.
    ``progress`` gets a line per conversation; ``steps`` counts turns stored and questions scored.
    """
    if count_access and not default_path:
        raise ValueError("--count-access measures the default path: add --default-path")
    if with_leave_one_out and len(conversations) < 2:
        raise ValueError("--leave-one-out needs at least two conversations")
    if len({c.name for c in conversations}) < len(conversations):  # scores are kept by conversation name
        raise ValueError("two conversations have the same name (sample_id); the grid scores each by its name")
    settings = weight_settings(grid, RecallWeights() if default_path else LOCOMO_WEIGHTS)
    in_grid = len(settings)
    if with_leave_one_out and RecallWeights() not in settings:
        settings.append(RecallWeights())
    max_k = max(grid["top_k"])
    cells = list(itertools.product(range(len(settings)), grid["top_k"], grid["budget"]))
    # sums[conversation][cell][score]: the grid keeps each conversation apart so it can be left out
    sums: dict[str, dict[tuple[int, int, int | None], dict[str, float]]] = {}
    asked: dict[str, int] = {}
    started = time.perf_counter()
    for n, conv in enumerate(conversations):
        namespace = namespace_for(n)
        engine.drop_namespace(namespace)
        conv_steps = prefixed(steps, conv.name)
        (ingest_default_path if default_path else ingest)(engine, conv, namespace, conv_steps)
        if progress:
            progress(
                f"{conv.name}: {len(conv.turns)} turns, "
                f"{len(conv.questions)} questions × {len(settings)} weight settings"
            )
        conv_sums: dict[tuple[int, int, int | None], dict[str, float]] = {c: {} for c in cells}
        scored, to_score = 0, len(settings) * len(conv.questions)
        report(conv_steps, "scoring questions × weight settings", 0, to_score)
        snapshot = None
        if count_access:  # the copies are of the finished store: every context vector written
            context_written(engine.chroma.namespace(namespace))
            snapshot = engine.export(namespace=namespace)
        for w, weights in enumerate(settings):
            asked_in = _fresh_copy(engine, snapshot, f"{namespace}-cell") if snapshot is not None else namespace
            for q in conv.questions:
                for (k, budget), values in _question_scores(
                    engine,
                    asked_in,
                    q.question,
                    q.evidence,
                    weights,
                    grid,
                    max_k,
                    exact=default_path,
                    touch=count_access,
                ).items():
                    cell = conv_sums[(w, k, budget)]
                    for key, value in values.items():
                        cell[key] = cell.get(key, 0.0) + value
                scored += 1
                report(conv_steps, "scoring questions × weight settings", scored, to_score)
        sums[conv.name] = conv_sums
        asked[conv.name] = len(conv.questions)
        if snapshot is not None:
            engine.drop_namespace(f"{namespace}-cell")
    questions = sum(asked.values())
    rows = [_row(settings[w], k, budget, w, in_grid, sums, asked) for w, k, budget in cells]
    rows.sort(key=lambda r: (-r["recall"], -r["mrr"], r["tokens_mean"]))
    candidates = [r for r in rows if r["in_grid"]]
    within = [r for r in candidates if r["tokens_mean"] <= max_tokens]
    result: dict[str, Any] = {
        "benchmark": "grid",
        "write_path": "default (record_turn, in process)" if default_path else "tuned (locomo.ingest)",
        "scoring": "one recall per cell" if default_path else "one recall per weight setting, re-ranked",
        "access": "counted: each weight setting on a fresh copy, questions in order" if count_access else "not counted",
        "base_weights": (RecallWeights() if default_path else LOCOMO_WEIGHTS).model_dump(),
        "questions": questions,
        "conversations": list(asked),
        "settings": len(candidates),
        "grid": {k: list(v) for k, v in grid.items()},
        "max_tokens": max_tokens,
        "best": within[0] if within else candidates[0],
        "best_within_max_tokens": bool(within),
        "seconds": round(time.perf_counter() - started, 1),
        "rows": rows,
    }
    if with_leave_one_out:
        top_k, budget = loo_slice(grid, max_tokens)
        loo_cells = [
            Cell(
                weights=varied(weights),
                scores={
                    name: ConversationScore(
                        questions=asked[name],
                        recall=by_cell[(w, top_k, budget)].get("recall", 0.0) / max(asked[name], 1),
                        mrr=by_cell[(w, top_k, budget)].get("mrr", 0.0) / max(asked[name], 1),
                    )
                    for name, by_cell in sums.items()
                },
                candidate=w < in_grid,
            )
            for w, weights in enumerate(settings)
        ]
        result["leave_one_out"] = {
            "top_k": top_k,
            "budget": budget,
            **leave_one_out(loo_cells, settings.index(RecallWeights())),
        }
    return result


def _fresh_copy(engine: MemoryEngine, snapshot: dict[str, Any], namespace: str) -> str:
    """``namespace`` holding ``snapshot`` (an export) and nothing else, its lexical index built.

    The counts the last copy's recalls queued are written first, so none lands on the new copy's
    memories, which have the same ids.
    """
    engine.chroma.flush()
    engine.drop_namespace(namespace)
    engine.import_data(snapshot, namespace=namespace)
    rebuilt(engine.chroma.namespace(namespace))
    return namespace


def _question_scores(
    engine: MemoryEngine,
    namespace: str,
    question: str,
    evidence: Sequence[str],
    weights: RecallWeights,
    grid: dict[str, list[Any]],
    max_k: int,
    *,
    exact: bool,
    touch: bool = False,
) -> dict[tuple[int, int | None], dict[str, float]]:
    """One question's scores in every (top_k, budget) cell for ``weights``: exact recalls, or one re-ranked.

    ``touch``: the recall counts access, as a user's does (only on a copy made for it).
    """
    out: dict[tuple[int, int | None], dict[str, float]] = {}
    if exact:
        for k in grid["top_k"]:
            for budget in grid["budget"]:
                result = engine.recall(
                    question,
                    namespace=namespace,
                    top_k=k,
                    token_budget=MAX_TOKENS if budget is None else budget,
                    weights=weights,
                    touch=touch,
                )
                out[(k, budget)] = _scores(dia_ids(result.records), evidence, float(result.tokens))
        return out
    ranked = engine.recall(question, namespace=namespace, top_k=max_k, weights=weights, touch=False).records
    for k in grid["top_k"]:
        for budget in grid["budget"]:
            out[(k, budget)] = _score_cell(engine, question, evidence, ranked, k, budget)
    return out


def _row(
    weights: RecallWeights,
    k: int,
    budget: int | None,
    w: int,
    in_grid: int,
    sums: dict[str, dict[tuple[int, int, int | None], dict[str, float]]],
    asked: dict[str, int],
) -> dict[str, Any]:
    """A cell's row: its means over all questions, and per conversation (what leave-one-out reads)."""
    questions = max(sum(asked.values()), 1)
    total: dict[str, float] = {}
    for by_cell in sums.values():
        for key, value in by_cell[(w, k, budget)].items():
            total[key] = total.get(key, 0.0) + value
    return {
        **varied(weights),
        "top_k": k,
        "budget": budget,
        **{key: round(total.get(key, 0.0) / questions, 4) for key in ("recall", "precision", "mrr", "all_found")},
        "tokens_mean": round(total.get("tokens", 0.0) / questions, 1),
        "default": weights == RecallWeights(),
        "in_grid": w < in_grid,
        "per_conversation": {
            name: {
                "questions": asked[name],
                **{
                    key: round(by_cell[(w, k, budget)].get(key, 0.0) / max(asked[name], 1), 4)
                    for key in ("recall", "mrr")
                },
            }
            for name, by_cell in sums.items()
        },
    }


def parse_grid(spec: str | None, defaults: dict[str, list[Any]] = DEFAULT_GRID) -> dict[str, list[Any]]:
    """``"dense=0.3,0.5;top_k=5,10;budget=none,450"`` → a grid (unnamed keys keep ``defaults``' values).

    ``window`` is still read as ``context`` (its name before 0.2, as ``RecallWeights`` reads it).
    """
    grid = {k: list(v) for k, v in defaults.items()}
    if not spec:
        return grid
    for part in filter(None, (p.strip() for p in spec.split(";"))):
        key, _, values = part.partition("=")
        key = key.strip()
        key = "context" if key == "window" else key
        if key not in GRID_KEYS:
            raise ValueError(f"unknown grid key {key!r}; use {', '.join(GRID_KEYS)}")
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
    default_path: bool = False,
    with_leave_one_out: bool = False,
    count_access: bool = False,
    embedder: Any = None,
    progress: Callable[[str], None] | None = None,
    steps: ProgressCallback | None = None,
) -> dict[str, Any]:
    """``hindsight bench grid``: the grid search over ``data`` in a throwaway embedded store.

    The store is deleted afterwards; the result is ``grid_search``'s (``default_path``,
    ``with_leave_one_out`` and ``count_access`` are its), plus the data path.
    """
    if count_access and not default_path:  # before minutes of ingest, not after
        raise ValueError("--count-access measures the default path: add --default-path")
    conversations, _ = load_directory(data)
    if with_leave_one_out and len(conversations) < 2:  # before minutes of ingest, not after
        raise ValueError(f"--leave-one-out needs at least two conversations; {data} has {len(conversations)}")
    with tempfile.TemporaryDirectory(prefix="hindsight-grid-") as tmp:
        engine = MemoryEngine(store=Path(tmp) / "store", embedder=embedder, llm=False)
        result = grid_search(
            engine,
            conversations,
            grid,
            max_tokens=max_tokens,
            default_path=default_path,
            with_leave_one_out=with_leave_one_out,
            count_access=count_access,
            progress=progress,
            steps=steps,
        )
        engine.close()
    result["data"] = str(data)
    return result
