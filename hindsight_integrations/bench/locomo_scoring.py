"""How LoCoMo answers are scored: evidence recall@k, all found, reciprocal rank, and their means.

Shared by every benchmark that asks LoCoMo questions (``locomo`` for the tuned configuration,
``locomo_default`` for the default path, ``peers`` and ``grid``), so a recall@10 means the same
thing in each of their tables. An answer is the ranked list of turn ids (``dia_id``) the
memory returned; the evidence is the question's turn ids.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from ..core.model.records import MemoryRecord
from .locomo_data import CATEGORY_NAMES


def evidence_scores(ranked: Sequence[str], evidence: Sequence[str], k: int) -> tuple[float, bool]:
    """(share of evidence ids among the first k ranked ids, whether all of them are)."""
    top = set(ranked[:k])
    found = sum(1 for e in evidence if e in top)
    return found / len(evidence), found == len(evidence)


def reciprocal_rank(ranked: Sequence[str], evidence: Sequence[str]) -> float:
    """1 / rank of the first evidence id in ``ranked`` (MRR's term), 0 when none is there."""
    wanted = set(evidence)
    for n, dia_id in enumerate(ranked, start=1):
        if dia_id in wanted:
            return 1.0 / n
    return 0.0


def dia_ids(records: Iterable[MemoryRecord]) -> list[str]:
    """The turn ids of recalled memories, in rank order (what evidence is scored against)."""
    return [str(r.metadata.get("dia_id", "")) for r in records]


def mean(values: Sequence[float]) -> float:
    """The arithmetic mean; 0.0 for no values, so an empty slice still reports."""
    return float(sum(values) / len(values)) if values else 0.0


def summarise(rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Means over question rows (the row fields are ``locomo.evaluate``'s; the default path fills the same)."""
    tokens = [r["tokens@10"] for r in rows]
    out = {
        "questions": len(rows),
        "recall@5": round(mean([r["recall@5"] for r in rows]), 4),
        "recall@10": round(mean([r["recall@10"] for r in rows]), 4),
        "recall@20": round(mean([r["recall@20"] for r in rows]), 4),
        "all_found@10": round(mean([float(r["all@10"]) for r in rows]), 4),
        "mrr": round(mean([r["rr"] for r in rows]), 4),
        "context_tokens@10": round(mean(tokens), 1),
        "context_tokens@10_max": max(tokens, default=0),
    }
    if rows and "last_n_recall" in rows[0]:
        out["last_n_recall"] = round(mean([r["last_n_recall"] for r in rows]), 4)
    return out


def per_category(rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """``summarise`` of each question category's rows, keyed by the category's number, with its name."""
    categories = sorted({r["category"] for r in rows})
    return {
        str(c): {"name": CATEGORY_NAMES.get(c, "unknown"), **summarise([r for r in rows if r["category"] == c])}
        for c in categories
    }


__all__ = ["dia_ids", "evidence_scores", "mean", "per_category", "reciprocal_rank", "summarise"]
