"""Table and plot of ``hindsight bench grid``: the best settings, and recall against tokens for all."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .report import markdown_table, pyplot, save_figure


def grid_table(result: dict[str, Any], limit: int = 10) -> str:
    """The ``limit`` best grid settings (rows are already sorted by recall, then MRR, then tokens).

    A row evaluated only for leave-one-out's comparison (the shipped defaults outside the grid) is
    not one of the grid's settings, so it is left out here.
    """
    headers = [
        "dense",
        "lexical",
        "context",
        "entity_boost",
        "recency",
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
            r.get("recency", 0.0),  # results written before recency was a grid key kept it at 0
            r["top_k"],
            r["budget"] or "none",
            r["recall"],
            r["precision"],
            r["mrr"],
            r["all_found"],
            r["tokens_mean"],
        ]
        for r in [r for r in result["rows"] if r.get("in_grid", True)][:limit]
    ]
    return markdown_table(headers, rows)


def best_line(result: dict[str, Any]) -> str:
    """The best setting within the token cap, in one line under the table."""
    best = result["best"]
    return (
        f"best within {result['max_tokens']} tokens: dense={best['dense']} lexical={best['lexical']} "
        f"context={best['context']} entity_boost={best['entity_boost']} recency={best.get('recency', 0.0)} "
        f"top_k={best['top_k']} budget={best['budget']} → recall {best['recall']:.3f}"
    )


def _weights(w: dict[str, Any]) -> str:
    """Varied weights in a table cell: dense/lexical, context, boost, recency."""
    return (
        f"dense {w['dense']:g} / lexical {w['lexical']:g}, context {w['context']:g}, "
        f"boost {w['entity_boost']:g}, recency {w['recency']:g}"
    )


def loo_table(result: dict[str, Any]) -> str:
    """Leave one conversation out: per held-out conversation, weights chosen on the others and three recalls.

    The held-out column is what tuning on this data would really earn; best-on-itself is the
    figure a grid's own best row claims (chosen on the answers it is scored on).
    """
    loo = result["leave_one_out"]
    headers = [
        "held out",
        "questions",
        "chosen on the others",
        "held-out recall",
        "default recall",
        "best on itself",
        "best-on-itself weights",
    ]
    rows: list[list[Any]] = [
        [
            r["held_out"],
            r["questions"],
            _weights(r["chosen_on_others"]) + (" (= default)" if r["chosen_is_default"] else ""),
            r["score_held_out"],
            r["default_score"],
            r["best_on_itself"]["score"],
            _weights(r["best_on_itself"]["weights"]),
        ]
        for r in loo["conversations"]
    ]
    for label, means in (("mean over conversations", loo["mean"]), ("mean over questions", loo["mean_over_questions"])):
        rows.append([label, "", "", means["score_held_out"], means["default_score"], means["best_on_itself"], ""])
    budget = loo["budget"] if loo["budget"] is not None else "none"
    default = _weights(loo["default_weights"]) + ("" if loo["default_in_grid"] else ", not in the grid")
    access = f"; access {result['access']}" if "access" in result else ""
    return (
        f"Leave one conversation out (evidence recall, top_k={loo['top_k']}, budget={budget}; "
        f"default = {default}{access}):\n\n" + markdown_table(headers, rows)
    )


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


__all__ = ["best_line", "grid_table", "loo_table", "plot_grid"]
