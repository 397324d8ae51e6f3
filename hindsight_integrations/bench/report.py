"""What every benchmark's tables and plots are drawn with: Markdown tables, headless matplotlib.

Each benchmark's own tables and plots sit beside it (``locomo_report``, ``peers_report``,
``grid_report``, ``scale_report``, ``lifecycle_report``; the one-table benchmarks keep theirs in
their module). Plots use matplotlib's Agg backend (no display in CI); matplotlib is imported only
when a plot is drawn, so the engine never depends on it. Tables are Markdown, so the same text
goes to the terminal, to the README "Results" section and into a PR description.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any


def pyplot() -> Any:
    """matplotlib.pyplot on the Agg backend, imported only when a plot is drawn."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def save_figure(plt: Any, fig: Any, path: Path) -> None:
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


__all__ = ["markdown_table", "pyplot", "save_figure"]
