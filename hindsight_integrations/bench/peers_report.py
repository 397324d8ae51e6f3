"""Table and plot of ``hindsight bench peers``: one row per system, recall against tokens and latency."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .report import markdown_table, pyplot, save_figure


def peers_table(result: dict[str, Any]) -> str:
    """One row per peer system; systems that did not run (or failed) are listed below the table with the reason."""
    headers = [
        "system",
        "R@5",
        "R@10",
        "all@10",
        "MRR@10",
        "tokens mean",
        "tokens max",
        "recall p50 ms",
        "p99 ms",
        "ingest s",
    ]
    rows = []
    for p in result["peers"]:
        if p.get("status") != "ok":
            rows.append([p["name"], *(["–"] * 9)])
            continue
        rows.append(
            [
                p["name"],
                p["recall@5"],
                p["recall@10"],
                p["all_found@10"],
                p["mrr@10"],
                p["context_tokens_mean"],
                p["context_tokens_max"],
                p["latency_p50_ms"],
                p["latency_p99_ms"],
                p["ingest_seconds"],
            ]
        )
    table = markdown_table(headers, rows)
    skipped = [p for p in result["peers"] if p.get("status") != "ok"]
    if skipped:
        table += "\n\n" + "\n".join(f"- **{p['name']}** {p.get('status', 'not run')}: {p['reason']}" for p in skipped)
    staged = [p for p in result["peers"] if p.get("status") == "ok" and p.get("stages_ms")]
    if staged:
        table += "\n\n" + "\n".join(_stage_line(p) for p in staged)
    if result.get("chroma") == "server":
        table += "\n\nChroma-backed systems talked to one `chroma run` server on 127.0.0.1 over HTTP."
    return table


def _stage_line(row: dict[str, Any]) -> str:
    """Where one system's recall time went: each stage's p50, in ms (``core/recall/stages.py``)."""
    stages = ", ".join(f"{stage} {s['p50_ms']:.2f}" for stage, s in row["stages_ms"].items())
    return f"- **{row['name']}**, p50 ms by stage: {stages}"


def plot_peers(result: dict[str, Any], path: Path) -> None:
    """Recall vs injected tokens per system (left) and retrieval latency p50/p99 (right)."""
    plt = pyplot()
    ran = [p for p in result["peers"] if p.get("status") == "ok"]
    fig, (ax, ax2) = plt.subplots(1, 2, figsize=(11, 4))
    for p in ran:
        ax.scatter(p["context_tokens_mean"], p["recall@10"], s=60)
        ax.annotate(
            p["name"], (p["context_tokens_mean"], p["recall@10"]), textcoords="offset points", xytext=(5, 5), fontsize=8
        )
    ax.set_xlabel("tokens injected per question (mean)")
    ax.set_ylabel("evidence recall@10")
    ax.set_ylim(0, 1)
    ax.set_title("Recall vs context size (same data, same model)")
    names = [p["name"] for p in ran]
    ax2.bar([i - 0.2 for i in range(len(ran))], [p["latency_p50_ms"] for p in ran], 0.4, label="p50")
    ax2.bar([i + 0.2 for i in range(len(ran))], [p["latency_p99_ms"] for p in ran], 0.4, label="p99")
    ax2.set_xticks(range(len(ran)), names, fontsize=8, rotation=10)
    ax2.set_ylabel("retrieval latency, ms")
    ax2.set_title("Latency per question")
    ax2.legend(fontsize=8)
    save_figure(plt, fig, path)


__all__ = ["peers_table", "plot_peers"]
