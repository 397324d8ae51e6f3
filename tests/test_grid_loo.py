"""``hindsight bench grid --leave-one-out``: the choice on hand-made scores, and the command end to end."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from hindsight_integrations.bench.grid import (
    DEFAULT_PATH_GRID,
    grid_search,
    loo_slice,
    parse_grid,
    varied,
    weight_settings,
)
from hindsight_integrations.bench.grid_loo import Cell, ConversationScore, best_cell, leave_one_out
from hindsight_integrations.bench.locomo_data import load_directory
from hindsight_integrations.core.engine import MemoryEngine
from hindsight_integrations.core.recall.ranking import RecallWeights

from .test_bench import FLAT_LIST, NESTED

QUESTIONS = {"A": 10, "B": 20, "C": 5}


def _cell(name: str, recalls: tuple[float, float, float], mrr: float = 0.5, *, candidate: bool = True) -> Cell:
    return Cell(
        weights={"name": name},
        scores={c: ConversationScore(QUESTIONS[c], r, mrr) for c, r in zip(QUESTIONS, recalls)},
        candidate=candidate,
    )


# recall on A (10 questions), B (20), C (5). Worked by hand:
#   held out A: others pooled over 25 questions: X (18+2)/25=.80, Y .68, Z .72, D .76 -> X (.9 on A).
#               A plain mean of B and C would pick Y (.80 against X's .65): the pooling is by question.
#   held out B: others over 15: X .733, Y .733, Z (8+4)/15=.80, D .667 -> Z (.7 on B); best on B is X (.9).
#   held out C: others over 30: X .90, Y .60, Z .733, D .767 -> X (.4 on C); best on C is Y (1.0).
HAND = [
    _cell("X", (0.9, 0.9, 0.4)),
    _cell("Y", (0.6, 0.6, 1.0)),
    _cell("Z", (0.8, 0.7, 0.8)),
    _cell("D", (0.7, 0.8, 0.6)),
]


def test_leave_one_out_chooses_on_the_other_conversations_by_hand() -> None:
    result = leave_one_out(HAND, default=3)
    rows = {r["held_out"]: r for r in result["conversations"]}
    assert list(rows) == ["A", "B", "C"]
    assert {c: r["chosen_on_others"]["name"] for c, r in rows.items()} == {"A": "X", "B": "Z", "C": "X"}
    assert {c: r["score_held_out"] for c, r in rows.items()} == {"A": 0.9, "B": 0.7, "C": 0.4}
    assert {c: r["default_score"] for c, r in rows.items()} == {"A": 0.7, "B": 0.8, "C": 0.6}
    assert {c: r["best_on_itself"]["weights"]["name"] for c, r in rows.items()} == {"A": "X", "B": "X", "C": "Y"}
    assert {c: r["best_on_itself"]["score"] for c, r in rows.items()} == {"A": 0.9, "B": 0.9, "C": 1.0}
    assert rows["B"]["others_score"] == 0.8 and rows["A"]["others_score"] == 0.8
    assert not any(r["chosen_is_default"] for r in rows.values())
    assert result["mean"] == {"score_held_out": 0.6667, "default_score": 0.7, "best_on_itself": 0.9333}
    # over the 35 questions: (9 + 14 + 2) / 35, (7 + 16 + 3) / 35, (9 + 18 + 5) / 35
    assert result["mean_over_questions"] == {
        "score_held_out": round(25 / 35, 4),
        "default_score": round(26 / 35, 4),
        "best_on_itself": round(32 / 35, 4),
    }
    assert result["default_weights"] == {"name": "D"} and result["default_in_grid"] is True


def test_ties_go_to_mrr_then_to_the_earlier_cell_and_non_candidates_are_never_chosen() -> None:
    same = (0.5, 0.5, 0.5)
    assert best_cell([_cell("P", same, 0.3), _cell("Q", same, 0.4)], ["A", "B"]) == 1
    assert best_cell([_cell("P", same, 0.4), _cell("Q", same, 0.4)], ["A", "B"]) == 0
    # the shipped defaults outside the grid: best everywhere, reported, never chosen
    cells = [_cell("P", (0.2, 0.3, 0.4)), _cell("Q", (0.3, 0.2, 0.1)), _cell("D", (1.0, 1.0, 1.0), candidate=False)]
    result = leave_one_out(cells, default=2)
    assert all(r["chosen_on_others"]["name"] in ("P", "Q") for r in result["conversations"])
    assert all(r["best_on_itself"]["weights"]["name"] != "D" for r in result["conversations"])
    assert [r["default_score"] for r in result["conversations"]] == [1.0, 1.0, 1.0]
    assert result["default_in_grid"] is False
    with pytest.raises(ValueError, match="two conversations"):
        leave_one_out([Cell({"name": "P"}, {"A": ConversationScore(3, 1.0)})], default=0)


def test_default_path_grid_holds_the_shipped_weights() -> None:
    grid = parse_grid(None, DEFAULT_PATH_GRID)
    settings = weight_settings(grid, RecallWeights())
    assert len(settings) == 3 * 3 * 3 * 2
    assert RecallWeights() in settings  # so the default competes in leave-one-out, not only stands beside it
    assert all(s.importance == RecallWeights().importance and s.access == RecallWeights().access for s in settings)
    assert loo_slice(grid, 450) == (10, 450)
    assert loo_slice(parse_grid("top_k=3,5;budget=none,300"), 450) == (5, 300)
    assert parse_grid("window=0.25", DEFAULT_PATH_GRID)["context"] == [0.25]
    with pytest.raises(ValueError):
        parse_grid("importance=1")


# A third conversation, longer than the two of test_bench, so top-1 recall depends on the weights.
THIRD = {
    "sample_id": "tiny-c",
    "conversation": {
        "speaker_a": "Iris",
        "speaker_b": "Omar",
        "session_1_date_time": "9:00 am on 3 March, 2023",
        "session_1": [
            {"speaker": "Iris", "dia_id": "D1:1", "text": "I finally booked the train to Lisbon for April."},
            {"speaker": "Omar", "dia_id": "D1:2", "text": "Nice. I am still fixing the leaking kitchen tap."},
            {"speaker": "Iris", "dia_id": "D1:3", "text": "My sister Noor is joining me on the trip."},
            {"speaker": "Omar", "dia_id": "D1:4", "text": "My daughter started violin lessons on Tuesday."},
        ],
        "session_2_date_time": "6:30 pm on 20 April, 2023",
        "session_2": [
            {"speaker": "Iris", "dia_id": "D2:1", "text": "Lisbon was sunny, we ate custard tarts every day."},
            {"speaker": "Omar", "dia_id": "D2:2", "text": "The plumber replaced the tap in the end."},
            {"speaker": "Iris", "dia_id": "D2:3", "text": "Noor wants to go to Porto next year."},
            {"speaker": "Omar", "dia_id": "D2:4", "text": "The violin teacher says she practises a lot."},
        ],
    },
    "qa": [
        {"question": "Who travelled to Lisbon with Iris?", "answer": "Noor", "evidence": ["D1:3"], "category": 4},
        {"question": "Who fixed Omar's kitchen tap?", "answer": "a plumber", "evidence": ["D2:2"], "category": 4},
        {
            "question": "Which instrument does Omar's daughter play?",
            "answer": "violin",
            "evidence": ["D1:4"],
            "category": 4,
        },
        {"question": "Where does Noor want to go next?", "answer": "Porto", "evidence": ["D2:3"], "category": 4},
    ],
}


@pytest.fixture
def three_conversations(tmp_path: Path) -> Path:
    directory = tmp_path / "locomo3"
    directory.mkdir()
    for name, sample in (("a.json", NESTED), ("b.json", FLAT_LIST), ("c.json", THIRD)):
        (directory / name).write_text(json.dumps(sample), encoding="utf-8")
    return directory


def _slice_rows(data: dict[str, Any]) -> list[dict[str, Any]]:
    loo = data["leave_one_out"]
    return [r for r in data["rows"] if (r["top_k"], r["budget"]) == (loo["top_k"], loo["budget"])]


def _weights_of(row: dict[str, Any]) -> dict[str, Any]:
    return {k: row[k] for k in ("dense", "lexical", "context", "entity_boost", "recency")}


def test_default_path_leave_one_out_end_to_end(three_conversations: Path, tmp_path: Path) -> None:
    from hindsight_integrations.cli import app

    out = tmp_path / "grid_loo.json"
    # dense 0.5 is left out, so the shipped RecallWeights() is not in this grid: it must be added
    spec = "dense=0.3,0.7;context=0.5;entity_boost=0,0.2;recency=0,0.1;top_k=1"
    argv = ["bench", "grid", "--data", str(three_conversations), "--default-path", "--leave-one-out"]
    result = CliRunner().invoke(app, [*argv, "--grid", spec, "--json", "--out", str(out)])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert json.loads(out.read_text(encoding="utf-8")) == data
    assert data["write_path"].startswith("default") and data["settings"] == 2 * 1 * 2 * 2
    assert data["base_weights"] == RecallWeights().model_dump()
    loo = data["leave_one_out"]
    assert (loo["top_k"], loo["budget"]) == (1, 450)
    assert loo["default_in_grid"] is False and loo["default_weights"] == varied(RecallWeights())
    names = ["tiny-a", "tiny-b", "tiny-c"]
    assert [r["held_out"] for r in loo["conversations"]] == names == data["conversations"]
    rows = _slice_rows(data)
    grid_rows = [r for r in rows if r["in_grid"]]
    (default_row,) = [r for r in rows if r["default"]]
    assert not default_row["in_grid"] and len(grid_rows) == 8
    assert default_row["recall"] == loo["mean_over_questions"]["default_score"]
    for entry in loo["conversations"]:
        held = entry["held_out"]
        assert set(entry) >= {"held_out", "chosen_on_others", "score_held_out", "default_score", "best_on_itself"}
        (chosen,) = [r for r in grid_rows if _weights_of(r) == entry["chosen_on_others"]]
        assert entry["score_held_out"] == chosen["per_conversation"][held]["recall"]
        assert entry["default_score"] == default_row["per_conversation"][held]["recall"]
        mine = [r["per_conversation"][held]["recall"] for r in grid_rows]
        assert entry["best_on_itself"]["score"] == max(mine) >= entry["score_held_out"]
        others = [n for n in names if n != held]

        def pooled(row: dict[str, Any], others: list[str] = others) -> float:
            per = row["per_conversation"]
            return sum(per[n]["recall"] * per[n]["questions"] for n in others) / sum(
                per[n]["questions"] for n in others
            )

        assert pooled(chosen) >= max(pooled(r) for r in grid_rows) - 1e-3  # rows are rounded to 4 places
        assert entry["questions"] == default_row["per_conversation"][held]["questions"]
    held_scores = [e["score_held_out"] for e in loo["conversations"]]
    assert loo["mean"]["score_held_out"] == pytest.approx(sum(held_scores) / 3, abs=1e-4)
    assert sum(default_row["per_conversation"][n]["questions"] for n in names) == data["questions"] == 8


def test_the_table_shows_leave_one_out(three_conversations: Path, tmp_path: Path) -> None:
    from hindsight_integrations.cli import app

    spec = "dense=0.5;context=0.5;entity_boost=0.2;recency=0,0.1"
    argv = ["bench", "grid", "--data", str(three_conversations), "--default-path", "--leave-one-out"]
    result = CliRunner().invoke(app, [*argv, "--grid", spec, "--out", str(tmp_path / "grid.json")])
    assert result.exit_code == 0, result.output
    assert "Leave one conversation out" in result.stdout
    # the shipped weights are in this grid (recency 0.1), so they are a candidate, not an addition
    assert (
        "default = dense 0.5 / lexical 0.5, context 0.5, boost 0.2, recency 0.1; access not counted):" in result.stdout
    )
    for name in ("tiny-a", "tiny-b", "tiny-c", "mean over conversations", "mean over questions"):
        assert name in result.stdout


def test_tuned_grid_keeps_per_conversation_scores(three_conversations: Path, store_path: Path, embedder) -> None:
    conversations, _ = load_directory(three_conversations)
    engine = MemoryEngine(store=store_path, embedder=embedder, llm=False)
    grid = parse_grid("dense=0.3,0.7;context=0.5;entity_boost=0.2;top_k=1,10;budget=450")
    result = grid_search(engine, conversations, grid, with_leave_one_out=True)
    assert result["settings"] == 2 * 2 and len(result["rows"]) == 3 * 2  # + the shipped defaults, both top_k
    for row in result["rows"]:
        per = row["per_conversation"]
        total = sum(p["recall"] * p["questions"] for p in per.values()) / result["questions"]
        assert row["recall"] == pytest.approx(total, abs=1e-3)
    assert result["leave_one_out"]["top_k"] == 10
    engine.chroma.flush()


def test_leave_one_out_needs_two_conversations(locomo_one: Path) -> None:
    from hindsight_integrations.cli import app

    argv = ["bench", "grid", "--data", str(locomo_one), "--default-path", "--leave-one-out", "--json"]
    result = CliRunner().invoke(app, [*argv, "--out", str(locomo_one / "grid.json")])
    assert result.exit_code != 0 and result.stdout == ""
    assert "two conversations" in result.output


@pytest.fixture
def locomo_one(tmp_path: Path) -> Path:
    directory = tmp_path / "one"
    directory.mkdir()
    (directory / "a.json").write_text(json.dumps(NESTED), encoding="utf-8")
    return directory


def test_count_access_recalls_each_setting_on_a_fresh_copy(
    three_conversations: Path, store_path: Path, embedder: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    conversations, _ = load_directory(three_conversations)
    engine = MemoryEngine(store=store_path, embedder=embedder, llm=False)
    asked: list[tuple[str, str, bool, int]] = []
    recall = engine.recall

    def counting(question: str, **options: Any) -> Any:
        namespace = options["namespace"]
        engine.chroma.flush()
        before = sum(r.access_count for r in engine.list(namespace=namespace, limit=1000))
        asked.append((namespace, question, options.get("touch", True), before))
        return recall(question, **options)

    monkeypatch.setattr(engine, "recall", counting)
    grid = parse_grid("dense=0.3,0.7;context=0.5;entity_boost=0;recency=0;top_k=1", DEFAULT_PATH_GRID)
    result = grid_search(engine, conversations, grid, default_path=True, with_leave_one_out=True, count_access=True)
    assert result["access"].startswith("counted") and result["settings"] == 2
    scored = [a for a in asked if a[0].endswith("-cell")]
    assert len(scored) == 3 * 8 and all(touch for _, _, touch, _ in scored)  # 2 cells + the defaults, 8 questions
    openers = {c.questions[0].question for c in conversations}
    firsts = [before for _, question, _, before in scored if question in openers]
    assert len(firsts) == 3 * 3 and set(firsts) == {0}  # every cell starts on an untouched copy
    assert max(before for *_, before in scored) > 0  # and its recalls count, as a user's do
    engine.chroma.flush()
    assert not [ns for ns in engine.namespaces() if ns.endswith("-cell")]  # the copies are gone
    for namespace in engine.namespaces():  # and the ingested namespaces were never touched
        assert all(r.access_count == 0 for r in engine.list(namespace=namespace, limit=1000))


def test_count_access_needs_the_default_path(three_conversations: Path) -> None:
    from hindsight_integrations.cli import app

    argv = ["bench", "grid", "--data", str(three_conversations), "--count-access", "--json"]
    result = CliRunner().invoke(app, [*argv, "--out", str(three_conversations / "grid.json")])
    assert result.exit_code != 0 and result.stdout == ""
    assert "--default-path" in result.output
