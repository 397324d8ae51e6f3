"""The default model, ``auto``: each new namespace gets MiniLM or multilingual-e5-small by its first text.

These engines are built the way a user builds one (no embedder given, the default settings),
on the embedded default store.
"""

from __future__ import annotations

import logging
import threading
from pathlib import Path

import numpy as np
import pytest
from chromadb.api.models.Collection import Collection
from chromadb.errors import InternalError

from hindsight_integrations.core import lanes
from hindsight_integrations.core.config import AUTO_MODEL, DEFAULT_LOCAL_MODEL, Settings, load_settings
from hindsight_integrations.core.embedding.calibration import thresholds_for
from hindsight_integrations.core.embedding.multilingual import MULTILINGUAL_MODEL
from hindsight_integrations.core.embedding.routing import (
    calls_for_multilingual,
    non_latin_share,
    routed_model,
    tells_script,
)
from hindsight_integrations.core.engine import MemoryEngine
from hindsight_integrations.core.errors import (
    ConfigurationError,
    EmbeddingModelMismatchError,
    InvalidInputError,
    StoreUnavailableError,
)
from hindsight_integrations.core.reembedding import reembed
from hindsight_integrations.core.storage.store import COLLECTION_PREFIX, CONTEXT_PREFIX
from hindsight_integrations.mcp.client import MemoryClient

CHINESE = [
    "我住在上海，在一家做跨境电商的公司当产品经理。",
    "我对花生过敏，吃了会起疹子。",
    "我们的订单服务用 PostgreSQL，缓存用 Redis。",
    "我女儿叫小雨，今年六岁，喜欢画画。",
]
ENGLISH = ["I live in Lisbon and work as a nurse.", "I am allergic to shellfish.", "My cat is called Miso."]


@pytest.fixture
def auto(tmp_path: Path) -> MemoryEngine:
    return MemoryEngine(store=tmp_path / "store", llm=False)


@pytest.mark.parametrize(
    ("text", "multilingual"),
    [
        ("我对花生过敏。", True),
        ("我在Google上班，用Python写后端。", True),  # Chinese with English names: still Chinese
        ("We had 饺子 for dinner at my aunt's place last night.", False),  # English quoting a word
        ("Я живу в Москве и работаю врачом.", True),  # Cyrillic: MiniLM reads English only
        ("東京で働いています。", True),
        ("Je travaille à Montréal, où j'habite depuis 2019.", False),  # Latin script, accents
        ("Tôi sống ở Hà Nội.", False),  # Vietnamese: Latin Extended Additional
        ("2026-12-01 14:00 !!!", False),  # no letters at all
        ("", False),
    ],
)
def test_which_text_calls_for_the_multilingual_model(text: str, multilingual: bool) -> None:
    assert calls_for_multilingual(text) is multilingual
    assert routed_model(text) == (MULTILINGUAL_MODEL if multilingual else DEFAULT_LOCAL_MODEL)
    assert 0.0 <= non_latin_share(text) <= 1.0


def test_auto_is_the_default_and_gives_each_namespace_the_model_of_its_first_text(auto: MemoryEngine) -> None:
    assert Settings().embedding_model == AUTO_MODEL and auto.configured_model == AUTO_MODEL
    assert auto.embedding_model("zh") is None  # nothing written yet: no model chosen
    auto.store_memories(CHINESE, namespace="zh")
    for text in ENGLISH:
        auto.store(text, namespace="en")
    assert auto.embedding_model("zh") == MULTILINGUAL_MODEL
    assert auto.embedding_model("en") == DEFAULT_LOCAL_MODEL
    assert auto.stats(namespace="zh").embedding_model == MULTILINGUAL_MODEL
    assert auto.stats(namespace="en").embedding_model == DEFAULT_LOCAL_MODEL

    # Each namespace is searched with its own model, so both languages are found, and an English
    # question finds a Chinese memory.
    assert auto.recall("我对什么过敏？", namespace="zh").records[0].content == CHINESE[1]
    assert auto.recall("What is my daughter's name?", namespace="zh").records[0].content == CHINESE[3]
    assert auto.recall("What am I allergic to?", namespace="en").records[0].content == ENGLISH[1]
    # ... and each compares with its own model's calibrated thresholds (the e5 floor refuses this one).
    assert auto.recall("Who won the football world cup in 1998?", namespace="zh").records == []
    assert auto._lanes.of(auto._namespace("zh")).parts.cosines == thresholds_for(MULTILINGUAL_MODEL)


def test_a_conversation_turn_chooses_too_and_later_engines_read_the_recorded_choice(tmp_path: Path) -> None:
    store = tmp_path / "store"
    first = MemoryEngine(store=store, llm=False)
    first.record_turn("我下个月搬去杭州，新工作在阿里巴巴。", session_id="s1", namespace="chat")
    assert first.embedding_model("chat") == MULTILINGUAL_MODEL

    # A new process reads the model from the collection, whatever the next text is written in.
    second = MemoryEngine(store=store, llm=False)
    assert second.embedding_model("chat") == MULTILINGUAL_MODEL
    second.record_turn("By the way, my manager's name is Priya.", session_id="s1", namespace="chat")
    assert second.embedding_model("chat") == MULTILINGUAL_MODEL
    assert "杭州" in second.recall("我要搬到哪个城市？", namespace="chat").context
    assert "Priya" in second.recall("Who is my manager?", namespace="chat").context
    assert second.upkeep(namespace="chat").steps  # upkeep runs in the namespace's lane
    assert second.stats(namespace="chat").embedding_model == MULTILINGUAL_MODEL


def test_a_namespace_read_before_its_first_write_still_gets_the_model_of_that_write(tmp_path: Path) -> None:
    # What an agent does on connecting: stats, the session's window, a recall, before anything is said.
    store = tmp_path / "store"
    reader, writer = MemoryEngine(store=store, llm=False), MemoryEngine(store=store, llm=False)
    assert reader.stats(namespace="zh").total == 0
    assert reader.working_window(session_id="s1", namespace="zh") == []
    assert reader.recall("我对什么过敏？", namespace="zh").records == []
    assert reader.embedding_model("zh") is None  # created, its model still to be chosen

    writer.record_turn(CHINESE[1], session_id="s1", namespace="zh")  # another process writes first
    assert writer.embedding_model("zh") == MULTILINGUAL_MODEL
    # The reader still holds the namespace it opened; it reads the choice before it reads or writes again.
    assert reader.recall("我对什么过敏？", namespace="zh").records[0].content == CHINESE[1]
    reader.store("Also: I take the train to work.", namespace="zh")
    assert reader.embedding_model("zh") == MULTILINGUAL_MODEL
    assert MemoryEngine(store=store, llm=False).stats(namespace="zh").embedding_model == MULTILINGUAL_MODEL

    # The same for English, in one process: the read left it pending, the write chose MiniLM.
    reader.stats(namespace="en")
    reader.store(ENGLISH[0], namespace="en")
    assert reader.embedding_model("en") == DEFAULT_LOCAL_MODEL
    # A fixed-model engine opens a pending namespace too (it is empty) and its write chooses its model.
    fixed = MemoryEngine(store=store, llm=False, embedding_model=MULTILINGUAL_MODEL)
    reader.stats(namespace="fixed")
    fixed.store(ENGLISH[1], namespace="fixed")
    assert fixed.embedding_model("fixed") == MULTILINGUAL_MODEL
    assert reader.recall("What am I allergic to?", namespace="fixed").records[0].content == ENGLISH[1]


def _stored_vector(engine: MemoryEngine, namespace: str, content: str) -> np.ndarray:
    handle = engine._namespace(namespace)
    record = next(r for r, _ in handle.iterate() if r.content == content)
    return np.asarray(handle.vectors([record.id])[record.id], dtype=np.float32)


def _cosine(a: np.ndarray, b: np.ndarray) -> float:
    return float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b)))


def test_a_greeting_chooses_provisionally_and_the_first_text_that_tells_decides(tmp_path: Path) -> None:
    store = tmp_path / "store"
    writer, other = MemoryEngine(store=store, llm=False), MemoryEngine(store=store, llm=False)
    assert not tells_script("你好") and not tells_script("Hello, how are you?") and tells_script("我对花生过敏。")
    writer.record_turn("你好", session_id="s1", namespace="lena")
    assert writer.embedding_model("lena") == MULTILINGUAL_MODEL
    assert writer.chroma.recorded_model("lena").provisional
    assert other.stats(namespace="lena").embedding_model == MULTILINGUAL_MODEL  # another process opens it so
    hello = _stored_vector(writer, "lena", "你好")

    writer.record_turn("I moved to Lisbon last spring and I work as a nurse there.", session_id="s1", namespace="lena")
    assert writer.embedding_model("lena") == DEFAULT_LOCAL_MODEL
    assert not writer.chroma.recorded_model("lena").provisional
    moved = _stored_vector(writer, "lena", "你好")  # embedded again, with MiniLM
    minilm = writer._lanes.primary.parts.embed(["你好"])[0]
    assert _cosine(moved, np.asarray(minilm)) > _cosine(hello, np.asarray(minilm))
    # the other process reads the decision before its next read or write, and writes with MiniLM
    assert "Lisbon" in other.recall("Where do I live?", namespace="lena").context
    other.store("I am allergic to shellfish.", namespace="lena")
    assert other.embedding_model("lena") == DEFAULT_LOCAL_MODEL
    assert other.recall("What am I allergic to?", namespace="lena").records[0].content == "I am allergic to shellfish."


def test_a_text_that_tells_the_same_model_settles_it_without_a_move(auto: MemoryEngine) -> None:
    auto.record_turn("ok", session_id="s1", namespace="en")
    assert auto.chroma.recorded_model("en").provisional
    before = _stored_vector(auto, "en", "ok")
    auto.record_turn("I live in Lisbon and work as a nurse.", session_id="s1", namespace="en")
    assert not auto.chroma.recorded_model("en").provisional
    assert _cosine(_stored_vector(auto, "en", "ok"), before) > 0.999
    # a greeting in English, then Chinese: the namespace moves to the multilingual model
    auto.record_turn("Hi!", session_id="s1", namespace="zh")
    auto.record_turn(CHINESE[1], session_id="s1", namespace="zh")
    assert auto.embedding_model("zh") == MULTILINGUAL_MODEL
    assert auto.recall("我对什么过敏？", namespace="zh").records[0].content == CHINESE[1]


def test_an_export_imported_into_a_new_namespace_gets_the_model_of_its_text(auto: MemoryEngine) -> None:
    auto.store_memories(CHINESE, namespace="zh")
    data = auto.export(namespace="zh", include_embeddings=False)
    assert auto.import_data(data, namespace="copy") == len(CHINESE)
    assert auto.embedding_model("copy") == MULTILINGUAL_MODEL
    assert auto.recall("我的女儿叫什么名字？", namespace="copy").records[0].content == CHINESE[3]


def test_a_fixed_model_setting_turns_routing_off(tmp_path: Path) -> None:
    engine = MemoryEngine(store=tmp_path / "store", llm=False, embedding_model=DEFAULT_LOCAL_MODEL)
    engine.store_memories(CHINESE, namespace="zh")
    assert engine.configured_model == DEFAULT_LOCAL_MODEL
    assert engine.embedding_model("zh") == DEFAULT_LOCAL_MODEL
    # An auto engine opens that namespace with the model it records; a fixed e5 one refuses it.
    assert MemoryEngine(store=tmp_path / "store", llm=False).embedding_model("zh") == DEFAULT_LOCAL_MODEL
    e5 = MemoryEngine(store=tmp_path / "store", llm=False, embedding_model=MULTILINGUAL_MODEL)
    with pytest.raises(EmbeddingModelMismatchError, match="hindsight reembed"):
        e5.recall("我对什么过敏？", namespace="zh")


def test_an_english_namespace_written_in_chinese_warns_once_naming_reembed(
    auto: MemoryEngine, caplog: pytest.LogCaptureFixture
) -> None:
    auto.store(ENGLISH[0], namespace="mixed")
    with caplog.at_level(logging.WARNING, logger="hindsight_integrations.core.lanes"):
        auto.store(CHINESE[0], namespace="mixed")
        auto.store(CHINESE[1], namespace="mixed")
        auto.store(ENGLISH[1], namespace="mixed")
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1, warnings
    assert f"hindsight reembed --model {MULTILINGUAL_MODEL} --namespace mixed" in warnings[0]
    assert auto.embedding_model("mixed") == DEFAULT_LOCAL_MODEL  # nothing moves by itself
    assert len(auto.list(namespace="mixed", include_history=True)) == 4  # nothing was lost


def test_two_writers_creating_one_namespace_at_once_agree_on_its_model(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = tmp_path / "store"
    english_first = MemoryEngine(store=store, llm=False)
    chinese_first = MemoryEngine(store=store, llm=False)
    # Both look before either creates it; the English writer wins the race.
    real, looks = chinese_first.chroma.stored_model, []
    monkeypatch.setattr(
        chinese_first.chroma, "stored_model", lambda name: real(name) if looks.append(name) or len(looks) > 1 else None
    )
    english_first.store(ENGLISH[0], namespace="shared")
    chinese_first.store(CHINESE[0], namespace="shared")  # chose e5, found MiniLM, took MiniLM
    assert chinese_first.embedding_model("shared") == DEFAULT_LOCAL_MODEL
    assert len(english_first.list(namespace="shared", include_history=True)) == 2


def test_without_the_multilingual_package_a_chinese_namespace_falls_back_with_a_warning(
    auto: MemoryEngine, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(lanes, "multilingual_available", lambda: False)
    with caplog.at_level(logging.WARNING, logger="hindsight_integrations.core.lanes"):
        auto.store(CHINESE[0], namespace="zh")
    assert auto.embedding_model("zh") == DEFAULT_LOCAL_MODEL
    assert any("hindsight-integrations[multilingual]" in r.getMessage() for r in caplog.records)


def test_reembed_under_auto_asks_for_the_model_to_move_to(auto: MemoryEngine, tmp_path: Path) -> None:
    auto.store_memories(CHINESE, namespace="zh")
    settings = load_settings(store=tmp_path / "store")
    with pytest.raises(ConfigurationError, match=f"--model {MULTILINGUAL_MODEL}"):
        reembed(settings, namespaces=["zh"], backup_dir=tmp_path / "backups")
    assert len(auto.list(namespace="zh")) == len(CHINESE)  # nothing touched


@pytest.mark.server
def test_an_mcp_server_over_stdio_routes_what_its_clients_write(tmp_path: Path) -> None:
    store = tmp_path / "store"
    env = {"HINDSIGHT_STORE": str(store), "HF_HUB_OFFLINE": "1", "HINDSIGHT_LOG_LEVEL": "WARNING"}
    with MemoryClient.stdio(env=env, namespace="zh", timeout=60) as client:
        assert client.stats().total == 0  # connecting reads first: the namespace's model is left open
        for text in CHINESE:
            client.record_turn(text, session_id="s1", role="user")
        assert client.stats().embedding_model == MULTILINGUAL_MODEL
        assert any(CHINESE[3] in r.content for r in client.recall("What is my daughter called?").records)
    assert MemoryEngine(store=store, llm=False).embedding_model("zh") == MULTILINGUAL_MODEL


def test_a_collection_too_old_to_record_its_model_stays_on_minilm(auto: MemoryEngine) -> None:
    for prefix in (COLLECTION_PREFIX, CONTEXT_PREFIX):  # what versions before the model record made
        auto.chroma.client.create_collection(
            prefix + "old", metadata={"hindsight_namespace": "old"}, embedding_function=None
        )
    auto.store(CHINESE[1], namespace="old")  # its vectors so far are MiniLM's: Chinese text does not move it
    assert auto.embedding_model("old") == DEFAULT_LOCAL_MODEL


def test_an_older_collection_opens_though_sqlite_is_busy_a_moment(
    auto: MemoryEngine, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Opening one changes its settings; SQLite's busy refusal of that is retried, not the namespace's failure."""
    for prefix in (COLLECTION_PREFIX, CONTEXT_PREFIX):
        auto.chroma.client.create_collection(
            prefix + "old", metadata={"hindsight_namespace": "old"}, embedding_function=None
        )
    real = Collection.modify
    refused: list[str] = []

    def busy_once(self: Collection, **changes: object) -> None:
        if self.name not in refused:
            refused.append(self.name)
            raise InternalError("Database error: error returned from database: (code: 5) database is locked")
        real(self, **changes)  # type: ignore[arg-type]

    monkeypatch.setattr(Collection, "modify", busy_once)
    auto.store(CHINESE[1], namespace="old")
    assert sorted(refused) == sorted(prefix + "old" for prefix in (COLLECTION_PREFIX, CONTEXT_PREFIX))
    assert auto.chroma.namespace("old").collection.configuration["hnsw"]["ef_search"] == 200  # set on the retry
    assert [r.content for r in auto.list(namespace="old")] == [CHINESE[1]]


def test_settings_sqlite_keeps_refusing_raise_a_retryable_error_naming_the_step(
    auto: MemoryEngine, monkeypatch: pytest.MonkeyPatch
) -> None:
    metadata = {"hindsight_namespace": "old"}
    auto.chroma.client.create_collection(COLLECTION_PREFIX + "old", metadata=metadata, embedding_function=None)
    real = Collection.modify

    def busy(self: Collection, **changes: object) -> None:
        raise InternalError("Database error: error returned from database: (code: 5) database is locked")

    monkeypatch.setattr(Collection, "modify", busy)
    with pytest.raises(StoreUnavailableError, match=r"could not update the collection's settings.*retry shortly"):
        auto.store(CHINESE[1], namespace="old")
    monkeypatch.setattr(Collection, "modify", real)
    auto.store(CHINESE[1], namespace="old")  # once SQLite answers, the same call works
    assert [r.content for r in auto.list(namespace="old")] == [CHINESE[1]]


def test_the_choice_reads_a_bounded_sample_of_a_hostile_text(auto: MemoryEngine) -> None:
    huge = "我对花生过敏。" * 1_000_000  # 21 MB, far past the write's size limit
    assert calls_for_multilingual(huge)
    assert non_latin_share("a" * 2000 + "中" * 5000) == 0.0  # only the first 2,000 characters are read
    with pytest.raises(InvalidInputError, match="content"):
        auto.store(huge, namespace="zh")
    with pytest.raises(InvalidInputError, match="content"):
        auto.record_turn(huge, session_id="s1", namespace="zh")
    auto.store(CHINESE[1], namespace="zh")  # the process serves on, and nothing else was written
    assert [r.content for r in auto.list(namespace="zh", include_history=True)] == [CHINESE[1]]
    assert auto.recall("我对什么过敏？", namespace="zh").records[0].content == CHINESE[1]


def test_dropping_a_multilingual_namespace_discards_its_queued_context_vectors(
    auto: MemoryEngine, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """The namespace's own model's worker forgets it, not only the default model's."""
    for n, text in enumerate(CHINESE[:3]):
        auto.record_turn(text, session_id="s1", namespace="zh", speaker="小林" if n % 2 else "老王")
    worker = auto.chroma._models[MULTILINGUAL_MODEL][1]
    assert worker is not None and worker.wait(timeout=60)
    release = threading.Event()
    real = worker._embed
    monkeypatch.setattr(worker, "_embed", lambda texts: (release.wait(30), real(texts))[1])
    auto.record_turn(CHINESE[3], session_id="s1", namespace="zh", speaker="小林")
    assert worker.pending() == 1
    auto.drop_namespace("zh")
    release.set()
    with caplog.at_level(logging.WARNING):
        assert worker.wait(timeout=30) and worker.pending() == 0
    assert not [r for r in caplog.records if "context vector" in r.getMessage()]
