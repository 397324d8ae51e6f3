"""Table and plot of ``hindsight bench grid``: the best settings, and recall against tokens for all."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .report import markdown_table, pyplot, save_figure


def grid_table(result: dict[str, Any], limit: int = 10) -> str:
    """The ``limit`` best grid settings (rows are already sorted by recall, then MRR, then tokens)."""
    headers = [
        "dense",
        "lexical",
        "context",
        "entity_boost",
        "top_k",
        "budget",
        "recall",
        "precision",
        "MRR",
        "all found",
        "tokens",
    ]
    rows = [
        [
            r["dense"],
            r["lexical"],
            r.get("context", r.get("window")),  # results written before the rename say "window"
            r["entity_boost"],
            r["top_k"],
            r["budget"] or "none",
            r["recall"],
            r["precision"],
            r["mrr"],
            r["all_found"],
            r["tokens_mean"],
        ]
        for r in result["rows"][:limit]
    ]
    return markdown_table(headers, rows)


def plot_grid(result: dict[str, Any], path: Path) -> None:
    """Recall vs context tokens for every grid setting, one colour per top_k, with ``best`` starred."""
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(7, 4.5))
    by_k: dict[int, list[dict[str, Any]]] = {}
    for r in result["rows"]:
        by_k.setdefault(r["top_k"], []).append(r)
    for k, rows in sorted(by_k.items()):
        ax.scatter([r["tokens_mean"] for r in rows], [r["recall"] for r in rows], s=14, label=f"top_k={k}")
    best = result["best"]
    ax.scatter([best["tokens_mean"]], [best["recall"]], marker="*", s=200, color="black", label="best within budget")
    ax.set_xlabel("context tokens per question (mean)")
    ax.set_ylabel("evidence recall")
    ax.set_title(f"Grid: {len(result['rows'])} settings")
    ax.legend(fontsize=8)
    save_figure(plt, fig, path)


__all__ = ["grid_table", "plot_grid"]
