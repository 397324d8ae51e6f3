"""multilingual-e5-small (``HINDSIGHT_EMBEDDING_MODEL=multilingual-e5-small``): Chinese, mixed and
cross-lingual recall, its calibrated thresholds, and moving a store to it with ``hindsight reembed``."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pytest

from hindsight_integrations.core.clock import ManualClock
from hindsight_integrations.core.config import load_settings
from hindsight_integrations.core.embedding.calibration import MINILM, MULTILINGUAL_E5_SMALL, thresholds_for
from hindsight_integrations.core.embedding.centring import Centring
from hindsight_integrations.core.embedding.local import LocalEmbedder
from hindsight_integrations.core.embedding.multilingual import MultilingualEmbedder
from hindsight_integrations.core.engine import MemoryEngine
from hindsight_integrations.core.errors import EmbeddingModelMismatchError, HindsightError
from hindsight_integrations.core.reembedding import reembed, stored_model

E5 = "multilingual-e5-small"
START = datetime(2026, 11, 2, 9, 0, tzinfo=UTC)

# A user's memories over a few weeks, in Chinese with English words mixed in, and one in English.
MEMORIES = [
    "我住在上海，在一家做跨境电商的公司当产品经理。",
    "我对花生过敏，吃了会起疹子。",
    "我们的订单服务用 PostgreSQL，缓存用 Redis。",
    "周末我一般去滨江跑步，大概十公里。",
    "我女儿下个月开始学钢琴。",
    "The quarterly review with the design team is on Friday afternoon.",
]


@pytest.fixture(scope="module")
def e5() -> MultilingualEmbedder:
    model = MultilingualEmbedder()
    model.warm()
    return model


@pytest.fixture
def engine(tmp_path: Path, e5: MultilingualEmbedder) -> Iterator[MemoryEngine]:
    eng = MemoryEngine(store=tmp_path / "store", embedder=e5, llm=False, clock=ManualClock(START))
    for text in MEMORIES:
        eng.store(text, namespace="u")
    yield eng


def _top(engine: MemoryEngine, question: str) -> str:
    records = engine.recall(question, namespace="u", top_k=3).records
    assert records, f"{question!r} recalled nothing"
    return records[0].content


def test_a_chinese_question_finds_its_chinese_memory(engine: MemoryEngine) -> None:
    assert _top(engine, "我对什么过敏？") == MEMORIES[1]
    assert _top(engine, "我周末做什么运动？") == MEMORIES[3]


def test_an_english_question_finds_a_chinese_memory(engine: MemoryEngine) -> None:
    assert _top(engine, "What am I allergic to?") == MEMORIES[1]
    assert _top(engine, "Where do I live and what is my job?") == MEMORIES[0]
    assert _top(engine, "When does my daughter start piano lessons?") == MEMORIES[4]


def test_a_memory_in_mixed_languages_is_found_from_either(engine: MemoryEngine) -> None:
    assert _top(engine, "Which database does the order service use?") == MEMORIES[2]
    assert _top(engine, "订单服务的缓存是什么？") == MEMORIES[2]
    assert _top(engine, "When is the quarterly review with the design team?") == MEMORIES[5]


def test_a_question_about_nothing_stored_recalls_nothing_in_either_language(engine: MemoryEngine) -> None:
    # A Chinese off-topic question against Chinese memories passes the floor more often (README: 0.25
    # gates about half of zh_dev's): "秘鲁的首都是哪里？" here is one that does.
    for question in ("Who won the 1998 World Cup?", "What is the capital of Peru?"):
        assert engine.recall(question, namespace="u").records == [], question


def test_the_centred_floor_separates_answered_questions_from_off_topic_ones(e5: MultilingualEmbedder) -> None:
    centring = Centring.for_model(E5)
    assert centring is not None and Centring.for_model("all-MiniLM-L6-v2") is None
    floor = MULTILINGUAL_E5_SMALL.centred_floor
    assert floor is not None
    stored = e5.embed_index_array(MEMORIES)
    answered = [
        "What am I allergic to?",
        "我对什么过敏？",
        "Which database does the order service use?",
        "订单服务的缓存是什么？",
    ]
    off_topic = ["Who won the 1998 World Cup?", "What is the capital of Peru?", "How do I configure TLS in nginx?"]
    for question in answered:
        assert centring.similarities(e5.embed_array([question])[0], stored).max() >= floor, question
    for question in off_topic:
        assert centring.similarities(e5.embed_array([question])[0], stored).max() < floor, question
    # the plain cosines of the same off-topic questions reach the plain floor: that is why the centred one exists
    assert (
        max(float((e5.embed_array([q]) @ stored.T).max()) for q in off_topic) >= MULTILINGUAL_E5_SMALL.relevance_floor
    )


def test_the_relevance_floor_gates_an_unrelated_question_in_english(engine: MemoryEngine) -> None:
    # e5's unrelated Chinese pairs sit higher (~0.85) than English ones (~0.72): the floor (0.76)
    # gates unrelated questions about English memories, fewer about Chinese ones (README).
    for text in ("I ride a blue Vespa scooter to work.", "Our search runs on Elasticsearch."):
        engine.store(text, namespace="en")
    assert engine.recall("How do I get to work?", namespace="en").records
    for question in ("Who won the 1998 World Cup?", "What is the capital of Peru?"):
        assert engine.recall(question, namespace="en").records == []


def test_queries_and_stored_texts_take_e5s_two_prefixes(e5: MultilingualEmbedder) -> None:
    text = "我对花生过敏。"
    query, passage = e5.embed_array([text])[0], e5.embed_index_array([text])[0]
    assert query.shape == passage.shape == (384,)
    assert abs(float(np.linalg.norm(query)) - 1) < 1e-3
    assert 0.85 < float(query @ passage) < 0.999  # the same text, embedded as a query and as a passage
    batch = e5.embed_index_array([text, "另一句话。"] * 40)  # more than one engine call's batch
    assert batch.shape == (80, 384) and np.allclose(batch[0], passage, atol=1e-4)


# -- calibration: each of the model's thresholds, and a pair on either side of it ----------------

# (threshold, pair that must reach it, pair that must not); cosines of stored texts.
SEPARATED = [
    # A repeat: the same statement reordered or with a filler word, in either language ...
    (
        "dedup",
        ("我搬到杭州了，因为新工作。", "因为新工作，我搬到杭州了。"),
        ("I prefer concise answers.", "Keep your answers short, please."),
    ),
    (
        "dedup",
        ("I moved to Hangzhou for a new job.", "I moved to Hangzhou because of a new job."),
        ("The meeting is on Thursday at 3pm.", "The meeting is on Thursday at 4pm."),
    ),
    # ... a merge is stricter still: only what is said almost word for word.
    (
        "merge",
        ("我周末喜欢爬山。", "周末我喜欢去爬山。"),
        ("We moved to Berlin in March.", "We moved to Berlin last March."),
    ),
    # Neighbours a write compares with: about the same thing, not about anything.
    (
        "neighbours_rules",
        ("I live in Porto.", "I now live in Braga."),
        ("I like hiking on weekends.", "The deployment pipeline failed twice today."),
    ),
    (
        "neighbours_llm",
        ("I live in Porto.", "My sister lives in Braga."),
        ("我周末喜欢爬山。", "今天部署流水线失败了两次。"),
    ),
]


@pytest.mark.parametrize(("threshold", "close", "apart"), SEPARATED)
def test_each_calibrated_threshold_separates_what_it_names(
    e5: MultilingualEmbedder, threshold: str, close: tuple[str, str], apart: tuple[str, str]
) -> None:
    value = getattr(MULTILINGUAL_E5_SMALL, threshold)
    a, b = e5.embed_index_array(list(close)), e5.embed_index_array(list(apart))
    assert float(a[0] @ a[1]) >= value, close
    assert float(b[0] @ b[1]) < value, apart


def test_the_relevance_floor_separates_answered_questions_from_unanswerable_ones(e5: MultilingualEmbedder) -> None:
    floor = MULTILINGUAL_E5_SMALL.relevance_floor
    stored = e5.embed_index_array(
        ["I ride a blue Vespa scooter to work.", "我们的订单服务用 PostgreSQL，缓存用 Redis。"]
    )
    answered = e5.embed_array(["How do I get to work?", "项目用什么数据库？"])
    unanswerable = e5.embed_array(["Who won the 1998 World Cup?", "What is the capital of Peru?"])
    assert (answered @ stored.T).max(axis=1).min() >= floor
    assert (unanswerable @ stored.T).max() < floor


def test_an_engine_takes_its_models_thresholds_and_a_setting_wins(tmp_path: Path, e5: MultilingualEmbedder) -> None:
    assert thresholds_for("all-MiniLM-L6-v2") == MINILM
    assert thresholds_for(E5) == MULTILINGUAL_E5_SMALL
    unknown = thresholds_for("some/other-model")
    assert not unknown.calibrated and unknown.dedup == MINILM.dedup
    engine = MemoryEngine(store=tmp_path / "a", embedder=e5, llm=False)
    assert engine._parts.cosines == MULTILINGUAL_E5_SMALL
    tuned = MemoryEngine(store=tmp_path / "b", embedder=e5, llm=False, relevance_floor=0.8, dedup_threshold=0.99)
    assert tuned._parts.cosines.relevance_floor == 0.8 and tuned._parts.cosines.dedup == 0.99
    assert tuned._parts.cosines.merge == MULTILINGUAL_E5_SMALL.merge


def test_the_setting_selects_the_multilingual_model(tmp_path: Path) -> None:
    engine = MemoryEngine(
        load_settings(store=tmp_path / "s", embedding_model="intfloat/multilingual-e5-small"), llm=False
    )
    assert engine.embedder.name == E5 and isinstance(engine.embedder, MultilingualEmbedder)


# -- moving a store to the multilingual model -----------------------------------------------------


def test_reembed_moves_a_minilm_store_and_keeps_its_export(tmp_path: Path, embedder: LocalEmbedder) -> None:
    store = tmp_path / "store"
    old = MemoryEngine(store=store, embedder=embedder, llm=False)
    for text in MEMORIES:
        old.store(text, namespace="u")
    forgotten = old.store("我以前在北京工作。", namespace="u").stored[0].id
    old.forget(forgotten, namespace="u")
    old.store("I keep my notes in Obsidian.", namespace="other")

    settings = load_settings(store=store, embedding_model=E5)
    with pytest.raises(EmbeddingModelMismatchError, match="hindsight reembed"):
        MemoryEngine(settings, llm=False).recall("我对什么过敏？", namespace="u")
    stages: list[str] = []
    results = reembed(
        settings, namespaces=["u"], backup_dir=tmp_path / "backups", progress=lambda s, d, t: stages.append(s)
    )
    (moved,) = results
    assert moved.changed and moved.old_model == "all-MiniLM-L6-v2" and moved.new_model == E5
    assert moved.memories == len(MEMORIES) + 1  # the forgotten one too: every status moves
    assert any(s.startswith("u: embedding") for s in stages)
    backup = json.loads(moved.backup.read_text(encoding="utf-8")) if moved.backup else {}
    assert backup["embedding_model"] == "all-MiniLM-L6-v2" and len(backup["records"]) == len(MEMORIES) + 1

    new = MemoryEngine(settings, llm=False)
    assert stored_model(new, "u") == E5
    assert new.recall("What am I allergic to?", namespace="u").records[0].content == MEMORIES[1]
    assert all(r.content != "我以前在北京工作。" for r in new.recall("我以前在哪里工作？", namespace="u").records)
    with pytest.raises(EmbeddingModelMismatchError):  # the namespace not asked for keeps its model
        new.recall("notes", namespace="other")
    (again,) = reembed(settings, namespaces=["u"], backup_dir=tmp_path / "backups")
    assert not again.changed  # already on the model: left alone
    with pytest.raises(HindsightError, match="no namespace named 'nope'"):
        reembed(settings, namespaces=["nope"], backup_dir=tmp_path / "backups")


def test_reembed_all_leaves_empty_namespaces_and_names_what_was_moved_when_one_fails(
    tmp_path: Path, embedder: LocalEmbedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = tmp_path / "store"
    old = MemoryEngine(store=store, embedder=embedder, llm=False)
    old.store("I keep my notes in Obsidian.", namespace="a")
    old.chroma.namespace("b-typo", pending=True)  # what `hindsight stats -n b-typo` used to leave behind
    old.store("The build box is called zephyr-2.", namespace="c")
    old.store("The staging server is called atlas-7.", namespace="d")
    settings = load_settings(store=store, embedding_model=E5)
    results = {r.namespace: r for r in reembed(settings, backup_dir=tmp_path / "backups", namespaces=["a", "b-typo"])}
    assert results["a"].changed and not results["b-typo"].changed and results["b-typo"].left == "holds no memories"

    real_import = MemoryEngine.import_data

    def failing_for_d(self: MemoryEngine, data: dict, **kwargs: object) -> int:
        if kwargs.get("namespace") == "d":
            raise RuntimeError("disk full")
        return real_import(self, data, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(MemoryEngine, "import_data", failing_for_d)
    old.store("One more thing for the end.", namespace="e")
    with pytest.raises(HindsightError) as failed:
        reembed(settings, backup_dir=tmp_path / "backups")
    message = str(failed.value)
    assert "namespace 'd' could not be embedded again (disk full)" in message
    assert "Moved before it: c; not yet moved: e" in message


def test_the_reembed_command_moves_every_namespace(tmp_path: Path, embedder: LocalEmbedder) -> None:
    store = tmp_path / "store"
    old = MemoryEngine(store=store, embedder=embedder, llm=False)
    old.store("我对花生过敏。", namespace="a")
    old.store("I keep my notes in Obsidian.", namespace="b")
    env = {**os.environ, "HINDSIGHT_STORE": str(store)}
    done = subprocess.run(
        [sys.executable, "-m", "hindsight_integrations.cli", "reembed", "--all", "--model", E5],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    assert "namespace a: 1 memories embedded again with multilingual-e5-small" in " ".join(done.stdout.split())
    assert sorted(p.name.split(".")[0] for p in (tmp_path / "store-reembed").iterdir()) == ["a", "b"]
    recalled = subprocess.run(
        [sys.executable, "-m", "hindsight_integrations.cli", "recall", "What am I allergic to?", "--namespace", "a"],
        capture_output=True,
        text=True,
        env={**env, "HINDSIGHT_EMBEDDING_MODEL": E5},
        timeout=300,
    )
    assert recalled.returncode == 0 and "我对花生过敏。" in recalled.stdout, recalled.stderr


def test_the_chinese_demo_tells_the_story_on_e5(tmp_path: Path, e5: MultilingualEmbedder) -> None:
    """`hindsight demo --lang zh`: chatter filtered, the correction supersedes, an English question finds it."""
    from rich.console import Console

    from hindsight_integrations.demo import run_demo
    from hindsight_integrations.demo_conversation_zh import CHINESE

    engine = MemoryEngine(store=tmp_path / "store", embedder=e5, llm=False)
    console = Console(record=True, width=160, force_terminal=False)
    report = run_demo(
        engine, namespace="demo-zh", console=console, today=datetime(2026, 12, 1, 12, tzinfo=UTC), script=CHINESE
    )
    out = console.export_text()
    assert report.turns > 300 and report.compressions >= 1  # the window passed its threshold on Chinese tokens
    assert report.off_topic_hits == 0
    assert "你好！\n            kept in the working window only: greeting or acknowledgement" in out
    assert "remembered as correction in the semantic tier (supersedes 1 older memory" in out
    english = engine.recall("Which database does the project use?", namespace="demo-zh")
    assert any("PostgreSQL" in r.content for r in english.records)
    assert "model: multilingual-e5-small" in out
