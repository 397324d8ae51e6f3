"""Tables and plot of ``hindsight bench lifecycle``: scores by mode, the store as it aged, the LLM's faults."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .lifecycle_scoring import METRIC_LABELS
from .report import markdown_table, pyplot, save_figure


def _mode_name(run: dict[str, Any]) -> str:
    """How tables and plots name a run's mode."""
    return "offline" if run["llm"] == "none" else "scripted LLM"


def _fraction(score: dict[str, Any]) -> str:
    if not score["cases"]:
        return "–"
    return f"{score['passed']}/{score['cases']} ({score['passed'] / score['cases']:.1%})"


def lifecycle_table(result: dict[str, Any]) -> str:
    """``hindsight bench lifecycle``: the scores of each mode, the store as it aged, the LLM's faults."""
    runs = result["runs"]
    names = [_mode_name(r) for r in runs]
    scores = markdown_table(
        ["score", *names],
        [[label, *(_fraction(r["overall"][key]) for r in runs)] for key, label in METRIC_LABELS.items()],
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
    plt = pyplot()
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
        mode = _mode_name(run)
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
        for key, label in METRIC_LABELS.items():
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
    save_figure(plt, fig, path)


__all__ = ["lifecycle_table", "plot_lifecycle"]
