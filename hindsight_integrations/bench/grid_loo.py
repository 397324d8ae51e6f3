"""Leave one conversation out over a grid's cells (``hindsight bench grid --leave-one-out``).

A grid's best cell is chosen on the same questions it is scored on, so its figure flatters it:
with 54 weight settings and 383 questions, some setting wins by a few questions by chance. The
honest question is whether *tuning* beats the shipped weights on a conversation the tuning never
saw. So for each conversation C: the cell with the best evidence recall (mean over questions) on
all the *other* conversations is chosen, and its recall on C is reported beside the shipped
``RecallWeights()``'s recall on C and the recall of the cell that is best on C itself (the
optimistic figure, tuned on the answers). If the held-out figure is no better than the default's,
the grid has found noise, not better weights.

This module is the choice logic only, on a table of per-conversation scores, so it can be tested
on hand-made numbers; ``grid.py`` fills the table.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from .locomo_scoring import mean


@dataclass(frozen=True)
class ConversationScore:
    """One cell's scores on one conversation: question count, mean evidence recall, mean reciprocal rank."""

    questions: int
    recall: float
    mrr: float = 0.0


@dataclass(frozen=True)
class Cell:
    """A grid cell (its varied weights) and its scores per conversation.

    ``candidate`` is False for a cell evaluated only for comparison (the shipped defaults when the
    grid does not hold them): it is reported, never chosen, so the choice is among the grid's cells.
    """

    weights: dict[str, Any]
    scores: dict[str, ConversationScore]
    candidate: bool = True


def pooled(cell: Cell, names: Sequence[str]) -> tuple[float, float]:
    """(recall, MRR) over the questions of ``names`` together: a conversation weighs by its question count."""
    parts = [cell.scores[n] for n in names]
    questions = sum(p.questions for p in parts)
    if not questions:
        return 0.0, 0.0
    return (
        sum(p.recall * p.questions for p in parts) / questions,
        sum(p.mrr * p.questions for p in parts) / questions,
    )


def best_cell(cells: Sequence[Cell], names: Sequence[str]) -> int:
    """The index of the candidate cell best on ``names``: recall, then MRR, then the earlier cell.

    Ties are common on small data, so the order must not depend on anything but the scores and
    the grid's own order (which is the same for every held-out conversation).
    """
    candidates = [i for i, c in enumerate(cells) if c.candidate]
    if not candidates:
        raise ValueError("no candidate cell to choose from")
    return min(candidates, key=lambda i: (*(-s for s in pooled(cells[i], names)), i))


def leave_one_out(cells: Sequence[Cell], default: int) -> dict[str, Any]:
    """For every conversation: the cell chosen on the others, its score there, the default's, the best on itself.

    ``default`` is the index of the shipped weights' cell. Scores are evidence recall (mean over a
    conversation's questions); ``mean`` averages over conversations, ``mean_over_questions`` over
    questions (whose default figure is the default cell's overall recall).
    """
    if not cells:
        raise ValueError("leave-one-out needs grid cells")
    names = list(cells[0].scores)
    if len(names) < 2:
        raise ValueError("leave-one-out needs at least two conversations")
    if any(list(c.scores) != names for c in cells):
        raise ValueError("every cell must be scored on the same conversations")
    rows = []
    columns: dict[str, list[float]] = {"score_held_out": [], "default_score": [], "best_on_itself": []}
    counts: list[int] = []
    for held_out in names:
        others = [n for n in names if n != held_out]
        chosen = best_cell(cells, others)
        best = best_cell(cells, [held_out])
        raw = {
            "score_held_out": cells[chosen].scores[held_out].recall,
            "default_score": cells[default].scores[held_out].recall,
            "best_on_itself": cells[best].scores[held_out].recall,
        }
        for key, value in raw.items():
            columns[key].append(value)
        counts.append(cells[default].scores[held_out].questions)
        rows.append(
            {
                "held_out": held_out,
                "questions": counts[-1],
                "chosen_on_others": cells[chosen].weights,
                "chosen_is_default": chosen == default,
                "others_score": round(pooled(cells[chosen], others)[0], 4),
                "score_held_out": round(raw["score_held_out"], 4),
                "default_score": round(raw["default_score"], 4),
                "best_on_itself": {"weights": cells[best].weights, "score": round(raw["best_on_itself"], 4)},
            }
        )
    total = max(sum(counts), 1)
    return {
        "metric": "evidence recall (mean over a conversation's questions)",
        "default_weights": cells[default].weights,
        "default_in_grid": cells[default].candidate,
        "conversations": rows,
        "mean": {key: round(mean(values), 4) for key, values in columns.items()},
        "mean_over_questions": {
            key: round(sum(v * n for v, n in zip(values, counts)) / total, 4) for key, values in columns.items()
        },
    }


__all__ = ["Cell", "ConversationScore", "best_cell", "leave_one_out", "pooled"]
