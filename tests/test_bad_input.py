"""Every bad input names its field, writes nothing, and leaves the engine usable."""

from __future__ import annotations

import os
import socket
from pathlib import Path

import pytest

from hindsight_integrations import (
    ConfigurationError,
    InvalidInputError,
    InvalidRecordsError,
    MemoryEngine,
    MemoryNotFoundError,
    Status,
    StoreUnavailableError,
    load_settings,
)


def _count(engine: MemoryEngine) -> int:
    return len(engine.list(namespace="u1", include_history=True))


@pytest.mark.parametrize(
    ("memories", "field"),
    [
        ("", "content"),
        ("   \n\t ", "content"),
        ("\x00\x01\x02", "content"),
        (["fine text about the project plan", ""], "memories[1].content"),
        ([{"content": 42}], "content"),
        ([{"content": None}], "content"),
        ([{"content": "ok text here", "tier": "cosmic"}], "tier"),
        ([{"content": "ok text here", "kind": "gossip"}], "kind"),
        ([{"content": "ok text here", "role": "robot"}], "role"),
        ([{"content": "ok text here", "importance": 3}], "importance"),
        ([{"content": "ok text here", "ttl_seconds": -5}], "ttl_seconds"),
        ([{"content": "ok text here", "unknown_field": 1}], "unknown_field"),
        ([], "memories"),
        (12, "memories"),
    ],
)
def test_invalid_memories_are_refused_whole(engine: MemoryEngine, memories, field: str) -> None:
    engine.store("The team uses trunk-based development.", namespace="u1")
    before = _count(engine)
    with pytest.raises(InvalidInputError) as err:
        engine.store_memories(memories, namespace="u1")
    assert err.value.field == field
    assert _count(engine) == before
    assert engine.recall("development model", namespace="u1").hits  # still serving


def test_oversize_content_is_refused(engine: MemoryEngine) -> None:
    with pytest.raises(InvalidInputError, match="limit is 32768"):
        engine.store("x" * 40_000, namespace="u1")
    small = MemoryEngine(
        settings=engine.settings.model_copy(update={"max_content_bytes": 100}), embedder=engine.embedder, llm=False
    )
    with pytest.raises(InvalidInputError, match="limit is 100"):
        small.store("word " * 30, namespace="u1")


def test_invalid_utf8_is_refused(engine: MemoryEngine) -> None:
    with pytest.raises(InvalidInputError, match="UTF-8"):
        engine.store("broken \ud800 surrogate in the middle of a sentence", namespace="u1")


def test_control_characters_are_stripped(engine: MemoryEngine) -> None:
    record = engine.store("The build\x07 server is named\x1b atlas-7.", namespace="u1").stored[0]
    assert record.content == "The build server is named atlas-7."


@pytest.mark.parametrize("namespace", ["", "has space", "x" * 60, "-leading", "a/b", "ünï", "a..b"])
def test_invalid_namespace(engine: MemoryEngine, namespace: str) -> None:
    with pytest.raises(InvalidInputError) as err:
        engine.store("Some valid content for the memory.", namespace=namespace)
    assert err.value.field == "namespace"


@pytest.mark.parametrize("top_k", [0, -1, 10_001, "3", 2.5, True])
def test_bad_top_k(engine: MemoryEngine, top_k) -> None:
    with pytest.raises(InvalidInputError) as err:
        engine.recall("anything", namespace="u1", top_k=top_k)
    assert err.value.field == "top_k"


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"min_score": 2}, "min_score"),
        ({"token_budget": 0}, "token_budget"),
        ({"filters": {"tiers": ["cosmic"]}}, "filters.tiers.0"),
        ({"filters": {"bogus": 1}}, "filters.bogus"),
        ({"filters": "session=1"}, "filters"),
        ({"weights": {"dense": -1}}, "weights.dense"),
    ],
)
def test_bad_recall_arguments(engine: MemoryEngine, kwargs, field: str) -> None:
    with pytest.raises(InvalidInputError) as err:
        engine.recall("anything", namespace="u1", **kwargs)
    assert err.value.field == field


def test_empty_query(engine: MemoryEngine) -> None:
    with pytest.raises(InvalidInputError) as err:
        engine.recall("  ", namespace="u1")
    assert err.value.field == "query"


def test_unknown_ids(engine: MemoryEngine) -> None:
    with pytest.raises(MemoryNotFoundError, match="no memory 'nope'"):
        engine.get("nope", namespace="u1")
    with pytest.raises(MemoryNotFoundError):
        engine.forget("nope", namespace="u1")
    with pytest.raises(MemoryNotFoundError):
        engine.update("nope", namespace="u1", content="new text for the memory")


def test_an_id_asked_of_a_namespace_never_written_is_not_found_there_and_creates_nothing(engine: MemoryEngine) -> None:
    kept = engine.store("I am allergic to peanuts.", namespace="u1").stored[0]
    changes = {
        "get": lambda ns: engine.get(kept.id, namespace=ns),
        "forget": lambda ns: engine.forget(kept.id, namespace=ns),
        "unforget": lambda ns: engine.unforget(kept.id, namespace=ns),
        "update": lambda ns: engine.update(kept.id, namespace=ns, content="I am allergic to nuts."),
        "review": lambda ns: engine.review(kept.id, accept=True, namespace=ns),
        "unmerge": lambda ns: engine.unmerge(kept.id, namespace=ns),
    }
    for name, change in changes.items():
        with pytest.raises(MemoryNotFoundError, match="in namespace 'u1-typo'"):
            change("u1-typo")
        assert engine.namespaces() == ["u1"], f"{name} created the namespace it was asked of"
    with pytest.raises(InvalidInputError) as err:
        engine.forget("", namespace="u1-typo")
    assert err.value.field == "id"
    assert engine.get(kept.id, namespace="u1").status is Status.ACTIVE


def test_unwritable_store_path(tmp_path: Path, embedder) -> None:
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(0o500)
    try:
        if os.access(locked, os.W_OK):  # root ignores permissions: use a path under a file instead
            target = tmp_path / "afile"
            target.write_text("x")
            bad = target / "store"
        else:
            bad = locked / "store"
        with pytest.raises(StoreUnavailableError, match="not writable"):
            MemoryEngine(store=bad, embedder=embedder, llm=False)
    finally:
        locked.chmod(0o700)


def test_chroma_url_that_does_not_answer(embedder) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # bound, never listening: connections are refused
        with pytest.raises(StoreUnavailableError, match=rf"127.0.0.1:{port} did not answer after 3 attempts"):
            MemoryEngine(chroma_url=f"http://127.0.0.1:{port}", chroma_connect_attempts=3, embedder=embedder, llm=False)


@pytest.mark.parametrize(
    ("overrides", "needle"),
    [
        ({"chroma_url": "ftp://nowhere"}, "chroma_url"),
        ({"namespace": "bad name"}, "namespace"),
        ({"context_window_tokens": 10}, "context_window_tokens"),
        ({"embedding_provider": "openai"}, "OPENAI_API_KEY"),
    ],
)
def test_bad_settings_fail_at_start_with_the_variable_named(overrides, needle: str) -> None:
    with pytest.raises(ConfigurationError, match=needle):
        load_settings(**overrides)


def test_unknown_setting_arguments_are_refused(engine: MemoryEngine, tmp_path) -> None:
    # A typo must not quietly fall back to the default store in the working directory.
    with pytest.raises(ConfigurationError, match="'data_dir'"):
        load_settings(data_dir=str(tmp_path))
    with pytest.raises(ConfigurationError, match="did you mean 'chroma_url'"):
        MemoryEngine(chroma_uri="http://127.0.0.1:1", embedder=engine.embedder, llm=False)
    with pytest.raises(ConfigurationError, match="'dedup'"):
        MemoryEngine(engine.settings, dedup=0.5, embedder=engine.embedder, llm=False)
    assert not (tmp_path / "chroma.sqlite3").exists()


def test_bad_environment_variable_is_named(monkeypatch) -> None:
    monkeypatch.setenv("HINDSIGHT_DEDUP_THRESHOLD", "lots")
    with pytest.raises(ConfigurationError, match="HINDSIGHT_DEDUP_THRESHOLD"):
        load_settings()


def test_bad_update_arguments(engine: MemoryEngine) -> None:
    record = engine.store("The nightly backup runs at 02:00 UTC.", namespace="u1").stored[0]
    for kwargs, field in (
        ({"importance": 1.5}, "importance"),
        ({"kind": "gossip"}, "kind"),
        ({"ttl_seconds": -1}, "ttl_seconds"),
        ({"content": ""}, "content"),
    ):
        with pytest.raises(InvalidInputError) as err:
            engine.update(record.id, namespace="u1", **kwargs)
        assert err.value.field == field
    assert engine.get(record.id, namespace="u1").content == "The nightly backup runs at 02:00 UTC."


def test_bad_import_documents(engine: MemoryEngine) -> None:
    with pytest.raises(InvalidInputError, match="hindsight-export"):
        engine.import_data({"records": []}, namespace="u1")
    with pytest.raises(InvalidInputError, match="must be a list of records, got dict"):
        engine.import_data({"format": "hindsight-export", "records": {"a": 1}}, namespace="u1")
    with pytest.raises(InvalidInputError, match="the export's \"namespace\": 'bad name' is not a valid namespace"):
        engine.import_data({"format": "hindsight-export", "namespace": "bad name", "records": []})


def test_every_bad_record_of_an_import_is_named_and_nothing_is_written(engine: MemoryEngine) -> None:
    records = [
        {"content": "A record without a namespace takes the import's."},
        {"content": ""},
        {"content": "ok", "occurred_at": "last tuesday", "importance": "high"},
        {"content": "vectors of the wrong size are recomputed", "embedding": [0.1, 0.2]},
    ]
    document = {"format": "hindsight-export", "embedding_model": engine.embedder.name, "records": records}
    with pytest.raises(InvalidRecordsError) as err:
        engine.import_data(document, namespace="u1")
    assert err.value.field == "records" and (err.value.bad, err.value.total) == (2, 4)
    assert err.value.problems == [
        "records[1].content: is empty; every memory needs its text",
        "records[2].importance: input should be a valid number, unable to parse string as a number (got 'high')",
        "records[2].occurred_at: input should be a valid datetime or date, invalid character in year (got "
        "'last tuesday')",
    ]
    assert _count(engine) == 0
    assert engine.import_data({**document, "records": [records[0], records[3]]}, namespace="u1") == 2
    assert engine.recall("wrong size vectors", namespace="u1", top_k=1).hits[0].record.content == records[3]["content"]


def test_a_refused_import_says_records_once_and_names_each_bad_one_by_index(engine: MemoryEngine) -> None:
    """It read "records: 1 of 1 records cannot be imported: records[0]...": the field, the count and each problem."""
    records = [{"content": "ok"}, {"content": ""}, {"content": "ok", "kind": "bogus"}]
    with pytest.raises(InvalidRecordsError) as err:
        engine.import_data({"format": "hindsight-export", "records": records}, namespace="u1")
    message = str(err.value)
    assert message.startswith("records: 2 of 3 cannot be imported, so nothing was imported: [1].content: is empty")
    assert "; [2].kind: input should be 'preference'," in message and message.count("records") == 1
    assert err.value.problems[0] == "records[1].content: is empty; every memory needs its text"  # whole paths
    cold = {"format": "hindsight-export", "records": records[:1], "cold_records": [{"id": "", "content": "x"}]}
    with pytest.raises(InvalidRecordsError) as err:
        engine.import_data(cold, namespace="u1")
    assert str(err.value) == (
        "records: 1 of 2 cannot be imported, so nothing was imported: cold_records[0].id: is empty; "
        "leave it out and the import gives the memory a new id"
    )


def test_an_import_refuses_a_blank_context_as_store_does_and_writes_nothing(engine: MemoryEngine) -> None:
    """A context ``store`` refuses (whitespace or control characters only) came in through an export's round trip."""
    with pytest.raises(InvalidInputError, match="context: is empty or only whitespace/control characters"):
        engine.store("The standup moved to 10am.", namespace="u1", context="  \t ")
    engine.store("The standup moved to 10am.", namespace="u1", context="Who runs the standup?")
    engine.store("Payroll runs on the 25th.", namespace="u1", context="When is payroll?")
    exported = engine.export(namespace="u1")
    exported["records"][0]["context"] = "  \t "
    exported["records"][1]["context"] = "\x00\x07 "
    with pytest.raises(InvalidRecordsError) as err:
        engine.import_data(exported, namespace="copy")
    assert err.value.problems == [
        "records[0].context: is empty or only whitespace/control characters",
        "records[1].context: is empty or only whitespace/control characters",
    ]
    assert "copy" not in engine.namespaces()  # nothing imported, no namespace made
    del exported["records"][0]["context"], exported["records"][1]["context"]  # a memory may have none
    assert engine.import_data(exported, namespace="copy") == 2


@pytest.mark.parametrize("invisible", ["\u200b", "\u200b\ufeff \u2060", " \u200d\u200c\n"])
def test_text_of_only_zero_width_characters_is_refused_as_blank(engine: MemoryEngine, invisible: str) -> None:
    """A zero-width space or a byte-order mark shows nothing: stored, it was a memory no one could read."""
    with pytest.raises(InvalidInputError, match="content: is empty or only whitespace/control characters"):
        engine.store(invisible, namespace="u1")
    with pytest.raises(InvalidInputError, match="context: is empty or only whitespace/control characters"):
        engine.store("The standup moved to 10am.", namespace="u1", context=invisible)
    exported = {"format": "hindsight-export", "records": [{"id": "a", "content": "Payroll runs on the 25th."}]}
    exported["records"][0]["context"] = invisible
    with pytest.raises(InvalidRecordsError):
        engine.import_data(exported, namespace="copy")
    assert "copy" not in engine.namespaces()  # the import wrote nothing
    kept = engine.store("\u200bThe team\u2019s \U0001f469\u200d\U0001f4bb moved to Lisbon.", namespace="u1").stored
    assert [m.content for m in kept] == ["\u200bThe team\u2019s \U0001f469\u200d\U0001f4bb moved to Lisbon."]


def test_a_refused_turn_into_a_new_namespace_leaves_no_namespace(engine: MemoryEngine) -> None:
    """``record_turn`` too opened the namespace before checking the turn: each refusal left an empty one."""
    refused = [
        {"session_id": ""},
        {"session_id": "s1", "role": "robot"},
        {"session_id": "s1", "metadata": {"_supersedes": "x"}},
        {"session_id": "s1", "speaker": 42},
        {"session_id": "s1", "occurred_at": "3001-01-01T00:00:00Z"},
    ]
    for arguments in refused:
        with pytest.raises(InvalidInputError):
            engine.record_turn("I moved to Lisbon last spring.", namespace="typo", **arguments)
    with pytest.raises(InvalidInputError):
        engine.record_turn(" \x00 ", namespace="typo", session_id="s1")
    assert engine.namespaces() == [] and engine.chroma.client.list_collections() == []
    assert engine.record_turn("I moved to Lisbon last spring.", namespace="typo", session_id="s1").turn
    assert engine.namespaces() == ["typo"]


def test_an_import_stores_text_cleaned_as_store_does(engine: MemoryEngine) -> None:
    """An import stored content and context as given: control characters and stray whitespace that ``store`` drops."""
    raw, context = "  The offsite\x07 is in Lisbon.\x00  \n", "\tWhere\x01 is the offsite? "
    stored = engine.store(raw, namespace="u1", context=context).stored[0]
    assert (stored.content, stored.context) == ("The offsite is in Lisbon.", "Where is the offsite?")
    exported = engine.export(namespace="u1")
    exported["records"][0].update(content=raw, context=context)  # as a hand-edited or older export holds it

    assert engine.import_data(exported, namespace="copy") == 1

    copied = engine.get(stored.id, namespace="copy")
    assert copied.model_dump(exclude={"namespace"}) == stored.model_dump(exclude={"namespace"})
    assert [h.record.id for h in engine.recall("Where is the offsite?", namespace="copy").hits] == [stored.id]
    exported["records"].append({**exported["records"][0], "id": "blank", "content": " \x00\x1b "})
    with pytest.raises(InvalidRecordsError) as err:  # and what store refuses, it refuses, naming the record
        engine.import_data(exported, namespace="copy")
    assert err.value.problems == ["records[1].content: is empty or only whitespace/control characters"]


def test_a_refused_import_into_a_new_namespace_leaves_no_namespace(engine: MemoryEngine) -> None:
    """The namespace an import would make is made only once the export passed its checks."""
    refused = [
        {"format": "hindsight-export", "records": [{"content": "The offsite is in Lisbon."}, {"content": ""}]},
        {"format": "hindsight-export", "records": {"a": 1}},
        {"format": "hindsight-export", "records": [], "cold_records": [{"id": "", "content": "x y z"}]},
        {"format": "hindsight-export", "namespace": "fresh", "records": [{"content": "ok", "importance": "high"}]},
    ]
    for document in refused:
        with pytest.raises(InvalidInputError):  # InvalidRecordsError is one
            engine.import_data(document, namespace=None if "namespace" in document else "fresh")
    assert engine.namespaces() == []
    assert engine.import_data({"format": "hindsight-export", "records": refused[0]["records"][:1]}, namespace="fresh")
    assert engine.namespaces() == ["fresh"]


def test_a_refused_store_into_a_new_namespace_leaves_no_namespace(engine: MemoryEngine) -> None:
    """A store was checked only after its namespace was opened: each refused call left an empty collection."""
    refused = [
        ([{"content": "The offsite is in Lisbon.", "importance": 5}], {}),
        ([{"content": "The offsite is in Lisbon.", "kind": "gossip"}], {}),
        (["The offsite is in Lisbon.", "\x00 "], {}),
        ([], {}),
        ("The offsite is in Lisbon.", {"request_id": "  "}),
    ]
    for memories, options in refused:
        with pytest.raises(InvalidInputError):
            engine.store_memories(memories, namespace="typo", **options)
    assert engine.namespaces() == []
    assert engine.chroma.client.list_collections() == []  # nor any of its collections, vectors or windows
    assert engine.store_memories("The offsite is in Lisbon.", namespace="typo").stored
    assert engine.namespaces() == ["typo"]


def test_an_import_is_held_to_the_bounds_of_the_write_path(engine: MemoryEngine) -> None:
    """Content, ids, metadata (hindsight's own keys included), entities and times: every problem named, none written."""
    records = [
        {"id": "big", "content": "word " * 40_000},
        {"id": "a" * 5000, "content": "The office wifi password is hunter2."},
        {"id": "", "content": "An empty id reached Chroma, which refused it mid-write."},
        {"id": "res", "content": "The VPN gateway is vpn-3.", "metadata": {"_decayed_at": "soon", "_mine": 1}},
        {"id": "fut", "content": "The offsite is in Lisbon.", "occurred_at": "3001-06-01T00:00:00Z"},
        {"id": "ses", "content": "The on-call rota changes on Mondays.", "session_id": "", "access_count": -5},
        {"id": "ent", "content": "The team lunch is on Fridays.", "entities": [f"person {n}" for n in range(60)]},
        {"id": "ok", "content": "A record within every bound is still refused with the rest."},
    ]
    with pytest.raises(InvalidRecordsError) as err:
        engine.import_data({"format": "hindsight-export", "records": records}, namespace="u1")
    assert (err.value.bad, err.value.total) == (7, 8)
    assert err.value.problems == [
        "records[0].content: is 200000 bytes; the limit is 32768 (HINDSIGHT_MAX_CONTENT_BYTES)",
        "records[1].id: is 5000 characters; the limit is 200",
        "records[2].id: is empty; leave it out and the import gives the memory a new id",
        "records[3].metadata._decayed_at: must be a time in epoch seconds (years 1900 to 2999), got 'soon'",
        "records[3].metadata._mine: hindsight writes no key '_mine' (keys starting with '_' are its own); rename it",
        "records[4].occurred_at: must be between the years 1900 and 2999, got 3001-06-01T00:00:00+00:00",
        "records[5].session_id: is empty; leave it out instead",
        "records[5].access_count: must be 0 or more, got -5",
        "records[6].entities: has 60 names; the limit is 50 (HINDSIGHT_MAX_ENTITIES)",
    ]
    assert _count(engine) == 0
    cold = {"format": "hindsight-export", "records": [], "cold_records": [{"id": "", "content": "x y z"}]}
    with pytest.raises(InvalidRecordsError, match=r"cold_records\[0\]\.id: is empty"):
        engine.import_data(cold, namespace="u1")


def test_a_bad_setting_given_as_an_argument_is_not_blamed_on_the_environment() -> None:
    with pytest.raises(ConfigurationError) as err:
        load_settings(namespace="bad name")
    assert "namespace (argument): 'bad name' is not a valid namespace" in str(err.value)
    assert "HINDSIGHT_NAMESPACE" not in str(err.value) and "Value error" not in str(err.value)
    with pytest.raises(ConfigurationError) as err:
        load_settings(namespace="bad name", sources={"namespace": "--namespace"})
    assert str(err.value).startswith("invalid configuration: --namespace: 'bad name'")
