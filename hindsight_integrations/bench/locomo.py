"""LoCoMo evidence-retrieval benchmark (`hindsight bench locomo --data DIR`).

Every turn of a conversation is stored through the public API as one memory: content
"Speaker: text" (plus "[shares image: caption]" when the turn shared one), the session's
date as ``occurred_at``, the speaker as an entity, the neighbouring turns as ``context``,
and ``dia_id``/session in metadata. Each question (category 5 excluded) is then recalled
and scored: evidence recall@k, all-evidence-found, MRR, and the tokens of the returned
context. Only turns and session dates are read, never the LLM-made summaries or
observations some LoCoMo files carry, so the same command runs on any such directory.

The loader is deliberately forgiving because the command is run on conversations we have
never seen: a file may hold one sample or a list of them, turns may sit under
``conversation`` or at the top level, sessions may lack a date (they get the previous
session's date plus a day, so chronology survives), turns may lack a ``dia_id`` (one is
made from the position), and evidence may be written as ``"D8:6; D9:17"`` or ``"D30:05"``.
Evidence ids that name no turn of the conversation are dropped (no retriever can return
them) and counted in ``skipped``.

The scoring is ``locomo_scoring``'s (shared with the default path, peers and grid, so a recall@10
means the same in every table), the default-path rows ``locomo_default``'s, and the tables and
plot ``locomo_report``'s.
"""

from __future__ import annotations

import logging
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from ..core.engine import MemoryEngine
from ..core.model.records import MemoryRecord
from ..core.progress import ProgressCallback, prefixed, report
from ..core.recall.context import format_context
from ..core.recall.ranking import RecallWeights
from .locomo_data import Conversation, Turn, load_directory
from .locomo_default import run_default_path
from .locomo_scoring import dia_ids, evidence_scores, mean, per_category, reciprocal_rank, summarise
from .settling import rebuilt

log = logging.getLogger("hindsight.bench.locomo")

# Tuned on the development split only (shared/data/locomo_dev); see README "Results".
LOCOMO_WEIGHTS = RecallWeights(
    similarity=1.0, recency=0.0, importance=0.0, access=0.0, dense=0.5, lexical=0.5, context=0.5, entity_boost=0.2
)
CONTEXT_BUDGET = 450
NEIGHBOURS_BEFORE = 2
# The turn after was context too until the context vector framed a memory by the end of its
# context (indexing.framed_text): then the following turn filled the frame, 0.772 against 0.799.
NEIGHBOURS_AFTER = 0


def turn_items(conversation: Conversation) -> list[dict[str, Any]]:
    """The store_memories payload: one memory per turn, neighbours of the same session as context."""
    turns = conversation.turns
    items = []
    for i, turn in enumerate(turns):
        before = [t.content for t in turns[max(0, i - NEIGHBOURS_BEFORE) : i] if t.session == turn.session]
        after = [t.content for t in turns[i + 1 : i + 1 + NEIGHBOURS_AFTER] if t.session == turn.session]
        items.append(
            {
                "content": turn.content,
                "occurred_at": turn.when,
                "entities": [turn.speaker],
                "context": " ".join(before + after) or None,
                "metadata": {"dia_id": turn.dia_id, "session": turn.session},
                "session_id": f"session_{turn.session}",
                "kind": "turn",
                "tier": "episodic",
                "role": "user",
            }
        )
    return items


def ingest(
    engine: MemoryEngine, conversation: Conversation, namespace: str, steps: ProgressCallback | None = None
) -> int:
    """Store every turn as a memory (batched), with its neighbours as context; ``steps`` counts the turns stored."""
    items = turn_items(conversation)
    report(steps, "storing turns", 0, len(items))
    for start in range(0, len(items), 256):
        engine.store_memories(items[start : start + 256], namespace=namespace, apply_filter=False, dedup=False)
        report(steps, "storing turns", min(start + 256, len(items)), len(items))
    rebuilt(engine.chroma.namespace(namespace))
    return len(items)


def _rendered_tokens(engine: MemoryEngine, turns: Sequence[Turn]) -> int:
    """Tokens of turns rendered exactly like recalled memories ("- (date) Speaker: text")."""
    records = [MemoryRecord(namespace="x", content=t.content, occurred_at=t.when) for t in turns]
    return engine.tokens.count(format_context(records))


def last_n_window(engine: MemoryEngine, turns: Sequence[Turn], budget: int) -> list[Turn]:
    """The most recent turns that fit in ``budget`` tokens: the recency-window baseline."""
    chosen: list[Turn] = []
    for turn in reversed(turns):
        candidate = [turn, *chosen]
        if _rendered_tokens(engine, candidate) > budget:
            break
        chosen = candidate
    return chosen


def models_used(engine: MemoryEngine, namespaces: list[str]) -> str:
    """The embedding model the conversations were stored with (under ``auto`` each namespace has its own)."""
    models = {engine.embedding_model(name) for name in namespaces}
    return ", ".join(sorted(m for m in models if m)) or engine.configured_model


def namespace_for(n: int) -> str:
    """The namespace of the n-th conversation: one per conversation, so no question sees another's turns."""
    return f"locomo-{n:03d}"


def evaluate(
    engine: MemoryEngine,
    conversations: Sequence[Conversation],
    *,
    top_k: int = 10,
    budget: int = CONTEXT_BUDGET,
    deep_k: int = 20,
    weights: RecallWeights = LOCOMO_WEIGHTS,
    progress: Callable[[str], None] | None = None,
    steps: ProgressCallback | None = None,
) -> dict[str, Any]:
    """Ingest each conversation into its own namespace, recall every question, score.

    ``progress`` gets a line per conversation done; ``steps`` counts turns stored and questions asked.

    recall@10, all_found@10 and the context tokens come from one call, exactly what an
    agent would inject: ``recall(top_k=10, token_budget=budget)`` (all ten kept, trimmed).
    recall@5, recall@20 and MRR come from an unbudgeted ``top_k=20`` call.
    """
    rows: list[dict[str, Any]] = []
    conv_summaries: dict[str, Any] = {}
    skipped: dict[str, int] = {}
    ingest_seconds = 0.0
    recall_ms: list[float] = []
    tokens_section: dict[str, list[int]] = {"full_history": [], "last_n_turns": [], "last_n_tokens": []}
    for n, conv in enumerate(conversations):
        namespace = namespace_for(n)
        engine.drop_namespace(namespace)
        started = time.perf_counter()
        conv_steps = prefixed(steps, conv.name)
        stored = ingest(engine, conv, namespace, conv_steps)
        ingest_seconds += time.perf_counter() - started
        if progress:
            progress(f"{conv.name}: {stored} turns stored, {len(conv.questions)} questions")
        for reason, count in conv.skipped.items():
            skipped[reason] = skipped.get(reason, 0) + count
        full_tokens = _rendered_tokens(engine, conv.turns)
        window = last_n_window(engine, conv.turns, budget)
        window_ids = {t.dia_id for t in window}
        window_tokens = _rendered_tokens(engine, window)
        conv_rows = []
        report(conv_steps, "asking questions", 0, len(conv.questions))
        for asked, q in enumerate(conv.questions, start=1):
            started = time.perf_counter()
            budgeted = engine.recall(
                q.question, namespace=namespace, top_k=top_k, token_budget=budget, weights=weights, touch=False
            )
            recall_ms.append((time.perf_counter() - started) * 1000)
            deep = engine.recall(q.question, namespace=namespace, top_k=deep_k, weights=weights, touch=False)
            top10 = dia_ids(budgeted.records)
            ranked = dia_ids(deep.records)
            r10, all10 = evidence_scores(top10, q.evidence, top_k)
            row = {
                "conversation": conv.name,
                "category": q.category,
                "question": q.question,
                "evidence": q.evidence,
                "top10": top10,
                "recall@5": evidence_scores(ranked, q.evidence, 5)[0],
                "recall@10": r10,
                "all@10": all10,
                "recall@20": evidence_scores(ranked, q.evidence, deep_k)[0],
                "rr": reciprocal_rank(ranked, q.evidence),
                "tokens@10": budgeted.tokens,
                "full_history_tokens": full_tokens,
                "last_n_tokens": window_tokens,
                "last_n_recall": sum(e in window_ids for e in q.evidence) / len(q.evidence),
            }
            conv_rows.append(row)
            report(conv_steps, "asking questions", asked, len(conv.questions))
        rows.extend(conv_rows)
        tokens_section["full_history"].append(full_tokens)
        tokens_section["last_n_turns"].append(len(window))
        tokens_section["last_n_tokens"].append(window_tokens)
        conv_summaries[conv.name] = {"turns": stored, **summarise(conv_rows)}
    result: dict[str, Any] = summarise(rows)
    result["per_category"] = per_category(rows)
    result["per_conversation"] = conv_summaries
    result["tokens"] = token_savings(rows, tokens_section, budget)
    result["skipped"] = skipped
    result["timing"] = {
        "ingest_seconds": round(ingest_seconds, 2),
        "turns": sum(len(c.turns) for c in conversations),
        "recall_ms_mean": round(mean(recall_ms), 2),
    }
    result["config"] = {
        "top_k": top_k,
        "deep_k": deep_k,
        "token_budget": budget,
        "weights": weights.model_dump(),
        "embedding_model": models_used(engine, [namespace_for(n) for n in range(len(conversations))]),
        "tokenizer": engine.settings.tokenizer,
        "conversations": [c.name for c in conversations],
    }
    result["rows"] = rows
    return result


def token_savings(rows: Sequence[dict[str, Any]], per_conv: dict[str, list[int]], budget: int) -> dict[str, Any]:
    """Tokens injected per question: ours vs the whole history vs a same-budget recency window."""
    ours = mean([r["tokens@10"] for r in rows])
    full = mean([r["full_history_tokens"] for r in rows])
    last_n = mean([r["last_n_tokens"] for r in rows])
    return {
        "ours_mean": round(ours, 1),
        "ours_recall@10": round(mean([r["recall@10"] for r in rows]), 4),
        "full_history_mean": round(full, 1),
        "full_history_recall": 1.0,
        "saved_vs_full_history": round(1 - ours / full, 4) if full else 0.0,
        "last_n_budget": budget,
        "last_n_turns_mean": round(mean(per_conv["last_n_turns"]), 1),
        "last_n_tokens_mean": round(last_n, 1),
        "last_n_recall": round(mean([r["last_n_recall"] for r in rows]), 4),
    }


def run_locomo(
    data: Path,
    *,
    store: Path | None = None,
    top_k: int = 10,
    budget: int = CONTEXT_BUDGET,
    embedder: Any = None,
    default_modes: Sequence[str] = (),
    progress: Callable[[str], None] | None = None,
    steps: ProgressCallback | None = None,
) -> dict[str, Any]:
    """Load ``data``, evaluate in a temporary embedded store (or ``store``), return the results.

    ``default_modes`` adds the default-path rows (``locomo_default.py``) under ``default_path``;
    ``progress`` and ``steps`` are ``evaluate``'s.
    """
    conversations, unreadable = load_directory(data)
    with tempfile.TemporaryDirectory(prefix="hindsight-locomo-") as tmp:
        engine = MemoryEngine(store=store or Path(tmp) / "store", embedder=embedder, llm=False)
        result = evaluate(engine, conversations, top_k=top_k, budget=budget, progress=progress, steps=steps)
        if default_modes:
            result["default_path"] = run_default_path(
                engine, conversations, modes=default_modes, top_k=top_k, progress=progress, steps=steps
            )
        engine.close()
    result["config"]["data"] = str(data)
    result["unreadable_files"] = unreadable
    return result
