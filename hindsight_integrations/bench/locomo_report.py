"""Tables and plot of ``hindsight bench locomo`` (and ``tokens``): recall by slice, default path, tokens."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .report import markdown_table, pyplot, save_figure


def locomo_table(result: dict[str, Any]) -> str:
    """LoCoMo scores of ``evaluate``'s result: overall, per category, then per conversation."""
    headers = ["slice", "questions", "R@5", "R@10", "R@20", "all@10", "MRR", "tokens@10 mean", "max"]
    keys = [
        "questions",
        "recall@5",
        "recall@10",
        "recall@20",
        "all_found@10",
        "mrr",
        "context_tokens@10",
        "context_tokens@10_max",
    ]
    rows = [["overall", *(result[k] for k in keys)]]
    for cat, part in result["per_category"].items():
        rows.append([f"cat {cat} ({part['name']})", *(part[k] for k in keys)])
    for name, part in result.get("per_conversation", {}).items():
        rows.append([f"conv {name}", *(part[k] for k in keys)])
    return markdown_table(headers, rows)


def tokens_table(result: dict[str, Any]) -> str:
    """Context injected per question vs evidence recall: ours, a same-budget recency window, the full history."""
    t = result["tokens"]
    rows = [
        ["hindsight recall (top 10, 450-token budget)", t["ours_mean"], t["ours_recall@10"]],
        [
            f"last-N turns in the same budget (N≈{t['last_n_turns_mean']:.0f})",
            t["last_n_tokens_mean"],
            t["last_n_recall"],
        ],
        ["full history", t["full_history_mean"], t["full_history_recall"]],
    ]
    table = markdown_table(["context injected per question", "tokens (mean)", "evidence recall"], rows)
    return table + f"\n\nTokens saved vs the full history: {t['saved_vs_full_history']:.1%}."


def plot_locomo(result: dict[str, Any], path: Path) -> None:
    """Recall@k and MRR per category (left) and tokens per question vs recall on a log scale (right)."""
    plt = pyplot()
    cats = list(result["per_category"].items())
    labels = ["overall", *(f"{c}\n{p['name']}" for c, p in cats)]
    parts = [result, *(p for _, p in cats)]
    fig, (ax, ax2) = plt.subplots(1, 2, figsize=(11, 4), gridspec_kw={"width_ratios": [3, 2]})
    width = 0.2
    for n, key in enumerate(["recall@5", "recall@10", "recall@20", "mrr"]):
        ax.bar([i + (n - 1.5) * width for i in range(len(parts))], [p[key] for p in parts], width, label=key)
    ax.set_xticks(range(len(parts)), labels)
    ax.set_ylim(0, 1.15)
    ax.axhline(0.75, color="grey", linestyle="--", linewidth=0.8)
    ax.set_title(f"LoCoMo evidence retrieval ({result['questions']} questions)")
    ax.legend(fontsize=8, loc="upper center", ncol=4)
    t = result["tokens"]
    names = ["hindsight\nrecall", f"last {t['last_n_turns_mean']:.0f}\nturns", "full\nhistory"]
    tokens = [t["ours_mean"], t["last_n_tokens_mean"], t["full_history_mean"]]
    recalls = [t["ours_recall@10"], t["last_n_recall"], 1.0]
    bars = ax2.bar(names, tokens, color=["tab:green", "tab:orange", "tab:grey"])
    ax2.set_yscale("log")
    ax2.set_ylabel("tokens injected per question (log)")
    for bar, recall in zip(bars, recalls):
        ax2.annotate(
            f"recall {recall:.2f}",
            (bar.get_x() + bar.get_width() / 2, bar.get_height()),
            ha="center",
            va="bottom",
            fontsize=8,
        )
    ax2.set_title("Context size vs evidence recall")
    save_figure(plt, fig, path)


def default_path_table(result: dict[str, Any]) -> str:
    """The tuned row next to the default-path rows: recall@10, all-found@10, tokens, recall p50, ingest, off-topic."""
    turns = result.get("timing", {}).get("turns", 0)
    seconds = result.get("timing", {}).get("ingest_seconds", 0)
    lines = [
        "| path | R@10 | all@10 | tokens@10 | recall p50 ms | ingest turns/s | off-topic questions recalling nothing |",
        "|---|---|---|---|---|---|---|",
        f"| tuned (bench weights, two turns before as context, budget {result.get('config', {}).get('token_budget')}) "
        f"| {result['recall@10']:.3f} | {result['all_found@10']:.3f} | {result['context_tokens@10']:.0f} | – "
        f"| {turns / seconds if seconds else 0:.1f} (batched) | – |",
    ]
    for row in result.get("default_path", []):
        latency = f"{row['recall_ms_p50']:.1f}" if "recall_ms_p50" in row else "–"
        lines.append(
            f"| {row['name']} | {row['recall@10']:.3f} | {row['all_found@10']:.3f} | {row['context_tokens@10']:.0f} "
            f"| {latency} | {row['ingest_turns_per_second']:.1f} | {_off_topic(row)} |"
        )
    return "\n".join(lines)


def _off_topic(row: dict[str, Any]) -> str:
    if "off_topic_asked" not in row:  # results written before the measure existed
        return "–"
    return f"{row['off_topic_empty']} of {row['off_topic_asked']}"


__all__ = ["default_path_table", "locomo_table", "plot_locomo", "tokens_table"]
