"""engram-search in ``hindsight bench peers``: real engram, ranking with our MiniLM, no model download.

engram-search is the ``[engram]`` extra (``./scripts/setup`` installs it); the tests that run
it are skipped, saying so, only when it cannot be imported. They run its real retrieval
pipeline on conversations small enough to check by hand, with the Hugging Face hub offline:
engram's own embedder and cross-encoder (which would download models) must never be built.
"""

from __future__ import annotations

import sys
from datetime import datetime
from pathlib import Path

import numpy as np
import pytest

from hindsight_integrations.bench.engram_peer import ENGRAM_VERSION, EngramSystem, MiniLMForEngram
from hindsight_integrations.bench.locomo_data import Conversation, Question, Turn
from hindsight_integrations.bench.peer_systems import PeerFailed, peer_text
from hindsight_integrations.bench.peers import run_peers

from .test_bench import locomo_dir  # noqa: F401

try:
    import engram.retrieval.pipeline

    MISSING = ""
except ImportError as exc:
    MISSING = f"engram-search is not importable ({exc}): it is the [engram] extra, which ./scripts/setup installs"

needs_engram = pytest.mark.skipif(bool(MISSING), reason=MISSING)

LINES = [
    ("D1:1", "Caroline", "I started learning the cello last month, twice a week."),
    ("D1:2", "Melanie", "That's wonderful! Music is so relaxing after work."),
    ("D1:3", "Caroline", "My teacher says I have a good ear."),
    ("D1:4", "Melanie", "We adopted a greyhound and named him Pepper."),
    ("D1:5", "Caroline", "Dogs are such good company."),
    ("D1:6", "Melanie", "He loves running on the beach in the morning."),
    ("D2:1", "Caroline", "I'm moving to Valencia in the spring."),
    ("D2:2", "Melanie", "The food there is beautiful, you'll love it."),
    ("D2:3", "Caroline", "I still need to find a flat near the old town."),
    ("D2:4", "Melanie", "My sister lived there for two years."),
    ("D2:5", "Caroline", "Work has been busy lately."),
    ("D2:6", "Melanie", "I painted a sunrise over the lake last weekend."),
]


def twelve_turns() -> Conversation:
    """Two sessions of six turns, two questions with one evidence turn each (more turns than top_k)."""
    turns = [
        Turn(dia_id, speaker, text, int(dia_id[1]), datetime(2023, 5, 1 + 7 * (int(dia_id[1]) - 1), 10, n))
        for n, (dia_id, speaker, text) in enumerate(LINES)
    ]
    questions = [
        Question("What instrument is Caroline learning?", ["D1:1"], 1),
        Question("What is the name of Melanie's dog?", ["D1:4"], 1),
    ]
    return Conversation("engram-tiny", turns, questions)


def no_download(self, *args, **kwargs):
    raise AssertionError("engram loaded a model of its own (a hub download)")


@needs_engram
def test_engram_ranks_the_evidence_first_with_our_minilm(embedder, monkeypatch: pytest.MonkeyPatch) -> None:
    import engram.retrieval.embedder
    import engram.retrieval.reranker

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    # engram's own embedder (bge-large) and cross-encoder would each load a model from the hub: never here
    monkeypatch.setattr(engram.retrieval.embedder.Embedder, "_load", no_download)
    monkeypatch.setattr(engram.retrieval.reranker.CrossEncoderReranker, "_load", no_download)
    conversation = twelve_turns()
    system = EngramSystem(embedder)
    system.load(conversation, 0)
    assert len(system.documents) == 12
    assert [d.metadata["dia_id"] for d in system.documents] == [t.dia_id for t in conversation.turns]
    assert system.documents[6].metadata["timestamp"] == "2023-05-08"
    # engram ranks with our model's vectors: the stored vectors are MiniLM's, the query goes through it too
    assert isinstance(system.pipeline.embedder, MiniLMForEngram)
    texts = [peer_text(t) for t in conversation.turns]
    assert np.allclose(np.array([d.embedding for d in system.documents]), embedder.embed(texts), atol=1e-5)

    for question, first, first_text in (
        (conversation.questions[0], "D1:1", peer_text(conversation.turns[0])),
        (conversation.questions[1], "D1:4", peer_text(conversation.turns[3])),
    ):
        ranked, context = system.ask(question.question)
        assert ranked[0] == first == question.evidence[0], ranked
        assert len(ranked) == 10 and len(set(ranked)) == 10  # top_k=10 of 12 turns, each once
        assert set(ranked) <= {t.dia_id for t in conversation.turns}
        assert context.splitlines()[0] == first_text and len(context.splitlines()) == 10
    assert system.pipeline._reranker is None  # re-ranking off: no cross-encoder was built
    assert system.details["engram-search"] == ENGRAM_VERSION and system.details["items_returned_mean"] == 10


@needs_engram
def test_engram_row_in_the_peers_table_and_its_failure(
    locomo_dir: Path, embedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("langchain_chroma")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    (row,) = run_peers(locomo_dir, embedder=embedder, only=["engram"])["peers"]
    assert row["status"] == "ok", row.get("reason")
    assert row["name"] == EngramSystem.name and row["questions"] == 4
    # at most 5 turns per conversation: top-10 returns them all
    assert row["recall@10"] == 1.0 and row["items_returned_mean"] == 4.25  # 3 questions x 5 turns, 1 x 2
    assert row["engram-search"] == ENGRAM_VERSION and row["context_tokens_max"] > 0
    assert 0 < row["latency_p50_ms"] <= row["latency_p99_ms"]

    # engram breaking mid-run: its row says where and why, the other peers finish.
    def broken(self, query, documents, top_k=5, question_date=None):
        raise RuntimeError("engram broken on purpose")

    monkeypatch.setattr(engram.retrieval.pipeline.RetrievalPipeline, "search", broken)
    langchain, failed = run_peers(locomo_dir, embedder=embedder, only=["langchain", "engram"])["peers"]
    assert langchain["status"] == "ok" and langchain["questions"] == 4
    assert failed["status"] == "failed" and failed["name"] == EngramSystem.name
    assert failed["reason"] == "failed after 0 questions: RuntimeError: engram broken on purpose"


def test_engram_not_installed_is_a_row_that_says_how_to_install_it(
    locomo_dir: Path, embedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    for module in ("engram", "engram.backends.base", "engram.retrieval.pipeline"):
        monkeypatch.setitem(sys.modules, module, None)  # as if engram-search were not installed
    with pytest.raises(ImportError, match=r"hindsight-integrations\[engram\]"):
        EngramSystem(embedder)
    result = run_peers(locomo_dir, embedder=embedder, only=["hindsight", "engram"])
    hindsight, engram_row = result["peers"]
    assert hindsight["status"] == "ok" and hindsight["questions"] == 4
    assert engram_row["name"] == "engram" and engram_row["status"] == "not run"
    assert "pip install 'hindsight-integrations[engram]'" in engram_row["reason"]


@needs_engram
def test_a_failure_inside_load_is_peer_failed(embedder) -> None:
    system = EngramSystem(embedder)
    system.document_class = None  # engram's Document cannot be built: the failure is the row's reason
    with pytest.raises(PeerFailed, match="TypeError"):
        system.load(twelve_turns(), 0)
