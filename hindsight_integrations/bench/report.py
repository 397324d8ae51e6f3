"""Tables and plots for the benchmark results.

Plots use matplotlib's Agg backend (no display in CI); matplotlib is imported only here,
inside the functions, so the engine never depends on it. Tables are Markdown, so the same
text goes to the terminal, to the README "Results" section and into a PR description.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any


def _pyplot() -> Any:
    """matplotlib.pyplot on the Agg backend, imported only when a plot is drawn."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _save(plt: Any, fig: Any, path: Path) -> None:
    """Write the figure (creating its directory) and close it, so repeated runs do not leak figures."""
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)


def markdown_table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    """A Markdown table; floats get 3 decimals below 10 (scores), thousands separators above (rates)."""

    def cell(value: Any) -> str:
        if isinstance(value, float):
            return f"{value:.3f}" if abs(value) < 10 else f"{value:,.1f}"
        if isinstance(value, int):
            return f"{value:,}"
        return str(value)

    lines = ["| " + " | ".join(headers) + " |", "|" + "|".join("---" for _ in headers) + "|"]
    lines += ["| " + " | ".join(cell(v) for v in row) + " |" for row in rows]
    return "\n".join(lines)


# -- LoCoMo -----------------------------------------------------------------------------------
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
    plt = _pyplot()
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
    _save(plt, fig, path)


# -- scale ------------------------------------------------------------------------------------
def scale_table(results: dict[str, Any]) -> str:
    """One row per (mode, size) of ``run_scale``: store rate against the raw model, recall latency, memory."""
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
    plt = _pyplot()
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
    _save(plt, fig, path)


# -- peers ------------------------------------------------------------------------------------
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
    return table


def plot_peers(result: dict[str, Any], path: Path) -> None:
    """Recall vs injected tokens per system (left) and retrieval latency p50/p99 (right)."""
    plt = _pyplot()
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
    _save(plt, fig, path)


# -- grid -------------------------------------------------------------------------------------
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
    plt = _pyplot()
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
    _save(plt, fig, path)


def default_path_table(result: dict[str, Any]) -> str:
    """The tuned row next to the default-path rows: recall@10, all-found@10, tokens, ingest turns/s, off-topic."""
    turns = result.get("timing", {}).get("turns", 0)
    seconds = result.get("timing", {}).get("ingest_seconds", 0)
    lines = [
        "| path | R@10 | all@10 | tokens@10 | ingest turns/s | off-topic questions recalling nothing |",
        "|---|---|---|---|---|---|",
        f"| tuned (bench weights, two turns before as context, budget {result.get('config', {}).get('token_budget')}) "
        f"| {result['recall@10']:.3f} | {result['all_found@10']:.3f} | {result['context_tokens@10']:.0f} "
        f"| {turns / seconds if seconds else 0:.1f} (batched) | – |",
    ]
    for row in result.get("default_path", []):
        lines.append(
            f"| {row['name']} | {row['recall@10']:.3f} | {row['all_found@10']:.3f} | {row['context_tokens@10']:.0f} "
            f"| {row['ingest_turns_per_second']:.1f} | {_off_topic(row)} |"
        )
    return "\n".join(lines)


def _off_topic(row: dict[str, Any]) -> str:
    if "off_topic_asked" not in row:  # results written before the measure existed
        return "–"
    return f"{row['off_topic_empty']} of {row['off_topic_asked']}"


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


# -- lifecycle --------------------------------------------------------------------------------
LIFECYCLE_SCORES = {
    "current_first": "current value first",
    "history_on_request": "history on request",
    "live_events_recalled": "events recalled while upcoming",
    "expired_hidden": "expired events hidden",
    "repeats_one_copy": "repeats = 1 copy",
    "consolidated": "repeated preferences consolidated",
    "preferences_after_a_year": "once-said preferences after a year",
    "poisoning_quarantined": "poisoning held in quarantine",
    "everyday_facts_recalled": "everyday facts recalled",
    "small_talk_kept_out": "small talk kept out",
}


def _fraction(score: dict[str, Any]) -> str:
    if not score["cases"]:
        return "–"
    return f"{score['passed']}/{score['cases']} ({score['passed'] / score['cases']:.1%})"


def lifecycle_table(result: dict[str, Any]) -> str:
    """``hindsight bench lifecycle``: the scores of each mode, the store as it aged, the LLM's faults."""
    runs = result["runs"]
    names = ["offline" if r["llm"] == "none" else "scripted LLM" for r in runs]
    scores = markdown_table(
        ["score", *names],
        [[label, *(_fraction(r["overall"][key]) for r in runs)] for key, label in LIFECYCLE_SCORES.items()],
    )
    parts = [scores]
    for name, run in zip(names, runs):
        rows = []
        for point in run["checkpoints"]:
            store = point["store"]
            passed = sum(s["passed"] for s in point["scores"].values())
            cases = sum(s["cases"] for s in point["scores"].values())
            rows.append(
                [
                    f"{point['month']:.1f}",
                    point["date"],
                    f"{passed}/{cases}",
                    store["active"]["working"],
                    store["active"]["episodic"],
                    store["active"]["semantic"],
                    store["history"],
                    store["quarantined"],
                    store["archived_in_store"]["working"],
                    sum(store["cold"].values()),
                    point["tokens_per_recall"],
                ]
            )
        headers = [
            "month",
            "date",
            "cases passed",
            "live turns",
            "episodic",
            "semantic",
            "history",
            "quarantined",
            "turns folded",
            "cold",
            "tokens/recall",
        ]
        upkeep, seconds = run["upkeep"], run["seconds"]
        note = (
            f"{run['sessions']} weekly sessions, {run['turns']} turns ({run['first_day']} to {run['last_day']}); "
            f"{upkeep['rounds']} upkeep rounds: {upkeep['facts']} semantic memories created or reinforced "
            f"by consolidation from "
            f"{upkeep['consolidated']} sources, {upkeep['merged']} repeats merged, {upkeep['decayed']} decays, "
            f"{upkeep['archived']} archived, {upkeep['evicted']} evicted, {upkeep['compressed']} turns compressed by "
            f"upkeep; {seconds['total']} s ({seconds['writing']} writing, {seconds['upkeep']} upkeep, "
            f"{seconds['checkpoints']} checkpoints)"
        )
        parts.append(f"**{name}**: {note}\n\n" + markdown_table(headers, rows))
        calls = run.get("llm_calls")
        if calls:
            faults = ", ".join(f"{k} {v}" for k, v in calls["faults"].items())
            requests = ", ".join(f"{k} {v}" for k, v in calls["requests"].items())
            fallbacks = ", ".join(f"{k} {v}" for k, v in calls["fallbacks_to_rules"].items()) or "none"
            parts.append(
                f"LLM requests: {calls['requests_total']} ({requests}); faults served: {calls['faults_total']} "
                f"({faults}; rate {calls['fault_rate']}, timeout {calls['llm_timeout_seconds']} s, "
                f"{calls['llm_max_retries']} retries); fell back to the rules: {fallbacks}"
            )
    return "\n\n".join(parts)


def plot_lifecycle(result: dict[str, Any], path: Path) -> None:
    """Store size and tokens per recall over the months (top), each score per checkpoint, by mode (bottom)."""
    plt = _pyplot()
    runs = result["runs"]
    fig, axes = plt.subplots(2, 2, figsize=(12, 8))
    (store_ax, tokens_ax), score_axes = axes
    styles = {"none": "-", "scripted": "--"}
    series = {
        "live turns / 10": lambda s: s["active"]["working"] / 10,
        "episodic": lambda s: s["active"]["episodic"],
        "semantic": lambda s: s["active"]["semantic"],
        "history": lambda s: s["history"],
        "cold (archived)": lambda s: sum(s["cold"].values()),
        "turns folded": lambda s: s["archived_in_store"]["working"],
    }
    colours = dict(zip(series, ["tab:brown", "tab:blue", "tab:green", "tab:orange", "tab:grey", "tab:purple"]))
    for run in runs:
        months = [p["month"] for p in run["checkpoints"]]
        mode = "offline" if run["llm"] == "none" else "scripted LLM"
        for label, value in series.items():
            store_ax.plot(
                months,
                [value(p["store"]) for p in run["checkpoints"]],
                styles[run["llm"]],
                color=colours[label],
                label=f"{label} ({mode})",
            )
        tokens_ax.plot(months, [p["tokens_per_recall"] for p in run["checkpoints"]], styles[run["llm"]], label=mode)
    store_ax.set_title("Memories in the store (active by tier, history, archived)")
    store_ax.set_xlabel("month")
    store_ax.legend(fontsize=6, ncol=2)
    tokens_ax.set_title("Tokens per recall (retrieve_memory defaults)")
    tokens_ax.set_xlabel("month")
    tokens_ax.set_ylim(bottom=0)
    tokens_ax.legend(fontsize=8)
    for ax, run in zip(score_axes, runs):
        months = [p["month"] for p in run["checkpoints"]]
        for key, label in LIFECYCLE_SCORES.items():
            points = [(m, p["scores"][key]["score"]) for m, p in zip(months, run["checkpoints"])]
            shown = [(m, s) for m, s in points if s is not None]
            if shown:
                ax.plot([m for m, _ in shown], [s for _, s in shown], marker=".", linewidth=1, label=label)
        ax.set_ylim(-0.05, 1.05)
        ax.set_xlabel("month")
        ax.set_title(f"Scores per checkpoint ({'offline' if run['llm'] == 'none' else 'scripted LLM, faults'})")
        ax.legend(fontsize=6, loc="lower left")
    for ax in score_axes[len(runs) :]:
        ax.axis("off")
    _save(plt, fig, path)
