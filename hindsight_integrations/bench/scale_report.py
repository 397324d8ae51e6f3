"""Tables and plot of ``hindsight bench scale``: rates against the raw model, latency, memory, recall stages."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .report import markdown_table, pyplot, save_figure


def scale_table(results: dict[str, Any]) -> str:
    """One row per (mode, size) of ``run_scale``: store rate against the raw model, recall latency, memory.

    "settled" is recall once the import's background context vectors are written (``bench_size``).
    """
    headers = [
        "mode",
        "memories",
        "store/s",
        "raw embed/s (int8)",
        "store ÷ raw",
        "float32 embed/s",
        "store ÷ float32",
        "recall p50 ms",
        "p99 ms",
        "settled p50 / p99 ms",
        "peak RSS MB",
        "server RSS MB",
    ]
    rows = [
        [
            r["mode"],
            r["size"],
            r["store_per_second"],
            r["raw_embed_per_second"],
            f"{r['store_vs_raw_embed']:.0%}",
            r.get("float32_embed_per_second", "–"),
            f"{r['store_vs_float32_embed']:.0%}" if "store_vs_float32_embed" in r else "–",
            r["recall_p50_ms"],
            r["recall_p99_ms"],
            f"{r['settled_recall_p50_ms']} / {r['settled_recall_p99_ms']}" if "settled_recall_p50_ms" in r else "–",
            r["peak_rss_mb"],
            r.get("server_peak_rss_mb", "–"),
        ]
        for r in results["runs"]
    ]
    return markdown_table(headers, rows)


def profile_table(profile: dict[str, Any]) -> str:
    """Where one recall's time goes at the largest size (``profile_recall``'s per-stage means)."""
    rows = [[stage, ms] for stage, ms in profile["stages_ms"].items()]
    return markdown_table(["recall stage", "ms per recall"], rows)


def plot_scale(results: dict[str, Any], path: Path) -> None:
    """Recall latency (with the 15/40 ms targets) and store throughput against the namespace size."""
    plt = pyplot()
    fig, (ax, ax2) = plt.subplots(1, 2, figsize=(11, 4))
    for mode in sorted({r["mode"] for r in results["runs"]}):
        runs = sorted((r for r in results["runs"] if r["mode"] == mode), key=lambda r: r["size"])
        sizes = [r["size"] for r in runs]
        ax.plot(sizes, [r["recall_p50_ms"] for r in runs], marker="o", label=f"{mode} p50")
        ax.plot(sizes, [r["recall_p99_ms"] for r in runs], marker="^", linestyle="--", label=f"{mode} p99")
        ax2.plot(sizes, [r["store_per_second"] for r in runs], marker="o", label=f"{mode} store")
        ax2.plot(
            sizes, [r["raw_embed_per_second"] for r in runs], marker="x", linestyle=":", label=f"{mode} raw embedding"
        )
    for axis in (ax, ax2):
        axis.set_xscale("log")
        axis.set_xlabel("memories in the namespace")
        axis.legend(fontsize=8)
    ax.axhline(15, color="grey", linewidth=0.8, linestyle="--")
    ax.axhline(40, color="grey", linewidth=0.8, linestyle=":")
    ax.set_yscale("log")
    ax.set_ylabel("recall latency, ms (log; targets 15 / 40 at 100k)")
    ax.set_title("Recall latency")
    ax2.set_ylabel("memories per second")
    ax2.set_title("Batch store throughput vs the raw model")
    save_figure(plt, fig, path)


__all__ = ["plot_scale", "profile_table", "scale_table"]
