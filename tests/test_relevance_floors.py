"""The relevance floors, measured: ``MemoryEngine.relevance`` reads what recall compares; ``bench floors`` scores it.

A floor must not gate a question whose answer is in the store and should gate one about
nothing it holds; ``relevance`` is the same measurement a recall makes, so these tests hold it
to recall's own outcome, on the embedded default, for both models.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from hindsight_integrations.bench.floors import Floors, Measured, floors_by_rule, gated, run_floors
from hindsight_integrations.core.engine import MemoryEngine
from hindsight_integrations.core.errors import InvalidInputError

from .test_bench import FLAT_LIST, NESTED

FACTS = [
    "I adopted a greyhound called Pepper last weekend.",
    "Our team deploys the order service to Kubernetes on GKE.",
    "I prefer concise answers without long introductions.",
]
CHINESE = ["我们的订单服务用PostgreSQL，缓存用Redis。", "我每天早上在锦江边跑十公里。"]


@pytest.fixture
def engine(tmp_path: Path) -> MemoryEngine:
    return MemoryEngine(store=tmp_path / "store", llm=False)


@pytest.mark.parametrize(
    ("facts", "answered", "off_topic", "model"),
    [
        (FACTS, "What is the name of my dog?", "What is the boiling point of mercury?", "all-MiniLM-L6-v2"),
        (CHINESE, "我早上在哪里跑步？", "秘鲁的首都是哪座城市？", "multilingual-e5-small"),
    ],
    ids=["minilm", "e5"],
)
def test_relevance_says_what_recall_does(
    engine: MemoryEngine, facts: list[str], answered: str, off_topic: str, model: str
) -> None:
    engine.store_memories([{"content": f} for f in facts], namespace="n")
    assert engine.embedding_model("n") == model
    about = engine.relevance(answered, namespace="n")
    nothing = engine.relevance(off_topic, namespace="n")
    assert about.passes and engine.recall(answered, namespace="n").hits
    assert not nothing.passes and not engine.recall(off_topic, namespace="n").hits
    assert about.closeness is not None and about.closeness >= about.floor
    if model == "multilingual-e5-small":  # e5's second floor reads the centred similarity
        assert about.centred_floor is not None and about.centred is not None
        assert about.centred > (nothing.centred or 0.0) or (nothing.closeness or 0.0) < nothing.floor
    else:
        assert about.centred is None and about.centred_floor is None


def test_relevance_of_a_namespace_never_written_creates_nothing(engine: MemoryEngine) -> None:
    seen = engine.relevance("Anything?", namespace="empty")
    assert (seen.closeness, seen.passes) == (None, False)
    assert "empty" not in engine.chroma.list_namespaces()


def test_relevance_refuses_what_recall_refuses(engine: MemoryEngine) -> None:
    """Its query is validated as a recall's: an oversized or empty one, or a bad namespace, is a clear error."""
    engine.store_memories([{"content": FACTS[0]}], namespace="n")
    huge = "x" * (engine.settings.max_content_bytes + 1)
    for query in (huge, "   "):
        with pytest.raises(InvalidInputError, match="query"):
            engine.relevance(query, namespace="n")
    with pytest.raises(InvalidInputError, match="namespace"):
        engine.relevance("Anything?", namespace="bad name")
    assert engine.relevance("What is the name of my dog?", namespace="n").passes  # still serving


def _m(closeness: float | None, centred: float | None = None, *, answered: bool = True, name: str = "a") -> Measured:
    return Measured(conversation=name, answered=answered, closeness=closeness, centred=centred)


def test_the_rule_and_the_gate() -> None:
    answered = [_m(0.3412, 0.31), _m(0.52, 0.4), _m(None)]
    assert floors_by_rule(answered, centred=False) == Floors(raw=0.34, centred=None)
    assert floors_by_rule(answered, centred=True) == Floors(raw=0.34, centred=0.26)
    floors = Floors(raw=0.34, centred=0.26)
    assert not gated(_m(0.34, 0.26), floors)  # a floor is reached at its value
    assert gated(_m(0.339, 0.5), floors)  # under the raw floor
    assert gated(_m(0.9, 0.259), floors)  # under the centred floor
    assert not gated(_m(0.9, None), floors)  # no centred similarity applies: the raw floor alone
    assert gated(_m(None), floors)  # no candidate at all
    assert not gated(_m(None), Floors(raw=0.0, centred=None))  # a floor of 0 gates nothing


def test_bench_floors_scores_held_out_conversations(tmp_path: Path) -> None:
    data = tmp_path / "data"
    data.mkdir()
    (data / "a.json").write_text(json.dumps(NESTED), encoding="utf-8")
    (data / "b.json").write_text(json.dumps(FLAT_LIST), encoding="utf-8")
    result = run_floors([data])
    minilm = result["models"]["all-MiniLM-L6-v2"]
    assert minilm["shipped"] == {"raw": 0.2, "centred": None}
    rows = {row["conversation"]: row for row in minilm["conversations"]}
    assert set(rows) == {"tiny-a", "tiny-b"}
    for name, other in (("tiny-a", "tiny-b"), ("tiny-b", "tiny-a")):
        # the floor chosen for one conversation is the rule applied to the other's answered questions
        lowest = rows[other]["lowest_answered"]["closeness"]
        assert rows[name]["chosen_on_others"]["raw"] == int(lowest * 100) / 100
        assert rows[name]["held_out"]["off_topic"] == 40
    assert rows["tiny-a"]["shipped"]["answered"] == 3  # questions with evidence only
    assert rows["tiny-a"]["shipped"]["answered_gated"] == 0
    assert minilm["gated_by_shipped"] == []  # each answered question that a shipped floor gates is named here


def test_bench_floors_cli_prints_its_table(tmp_path: Path) -> None:
    from hindsight_integrations.cli import app

    data = tmp_path / "data"
    data.mkdir()
    (data / "b.json").write_text(json.dumps(FLAT_LIST), encoding="utf-8")
    out = tmp_path / "floors.json"
    result = CliRunner().invoke(app, ["bench", "floors", "--data", str(data), "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert "| all-MiniLM-L6-v2 | tiny-b |" in result.stdout
    assert json.loads(out.read_text())["benchmark"] == "floors"
    missing = CliRunner().invoke(app, ["bench", "floors", "--data", str(tmp_path / "nowhere")])
    assert missing.exit_code != 0 and "nowhere" in missing.output
