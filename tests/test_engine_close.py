"""``MemoryEngine.close``: what is queued lands, the engine's threads stop, Chroma and the registry are released."""

from __future__ import annotations

import threading
from pathlib import Path

import chromadb
import pytest

from hindsight_integrations import MemoryEngine
from hindsight_integrations.core.config import Settings
from hindsight_integrations.core.errors import StoreClosedError
from hindsight_integrations.core.storage.store import COLLECTION_PREFIX, CONTEXT_PREFIX
from hindsight_integrations.mcp import MemoryClient
from hindsight_integrations.processes import chroma_server

# Module-level, shared by every engine of the process: not one engine's to stop.
_SHARED_THREADS = ("hindsight-bm25-quiet", "hindsight-recall", "hindsight-dates-warm")


def _engine_threads(before: set[int | None]) -> list[str]:
    return sorted(
        t.name
        for t in threading.enumerate()
        if t.ident not in before and t.name.startswith("hindsight-") and not t.name.startswith(_SHARED_THREADS)
    )


def test_close_writes_what_is_queued_and_stops_the_engines_threads(tmp_path: Path, embedder, monkeypatch) -> None:
    before = {t.ident for t in threading.enumerate()}
    store = tmp_path / "store"
    engine = MemoryEngine(store=store, embedder=embedder, llm=False)
    counted = engine.store("My dog is called Rex.", namespace="u1").stored[0].id
    assert engine.recall("What is my dog called?", namespace="u1").hits  # one recall count, queued for 10 s
    worker = engine.chroma.context_vectors
    assert worker is not None
    release, real = threading.Event(), worker._embed
    monkeypatch.setattr(worker, "_embed", lambda texts: (release.wait(30), real(texts))[1])
    queued = engine.store("My sister lives in Lisbon.", namespace="u1").stored[0].id
    assert worker.pending() == 1 and _engine_threads(before)
    threading.Timer(0.3, release.set).start()

    assert engine.close()

    assert _engine_threads(before) == []
    raw = chromadb.PersistentClient(path=str(store.resolve()))
    try:
        memories = raw.get_collection(COLLECTION_PREFIX + "u1").get(ids=[counted], include=["metadatas"])
        assert memories["metadatas"][0]["access_count"] == 1
        assert raw.get_collection(CONTEXT_PREFIX + "u1").get(ids=[queued])["ids"] == [queued]
    finally:
        raw.close()


def test_a_closed_engine_refuses_every_call_with_a_clear_error(tmp_path: Path, embedder) -> None:
    with MemoryEngine(store=tmp_path / "store", embedder=embedder, llm=False) as engine:
        memory_id = engine.store("The staging server is called atlas.", namespace="u1").stored[0].id
    calls = {
        "store": lambda: engine.store("Another fact about staging.", namespace="u1"),
        "recall": lambda: engine.recall("staging server", namespace="u1"),
        "get": lambda: engine.get(memory_id, namespace="u1"),
        "list": lambda: engine.list(namespace="u1"),
        "namespaces": engine.namespaces,
        "drop_namespace": lambda: engine.drop_namespace("u1"),
    }
    for name, call in calls.items():
        try:
            call()
        except StoreClosedError as exc:
            assert "create a new MemoryEngine" in str(exc), name
        else:
            pytest.fail(f"{name} ran on a closed engine")
    assert engine.close()  # a second close does nothing
    with MemoryEngine(store=tmp_path / "store", embedder=embedder, llm=False) as again:
        assert again.get(memory_id, namespace="u1").content == "The staging server is called atlas."


def test_a_client_closes_the_engine_it_built_and_not_one_it_was_given(tmp_path: Path, embedder) -> None:
    built = MemoryClient.from_settings(Settings(store=tmp_path / "built"), namespace="u1", environ={})
    built.store("Deploys happen on Thursdays.")
    server = built._connection.transport.server
    assert server is not None
    built.close()
    with pytest.raises(StoreClosedError):
        server.engine.recall("deploys", namespace="u1")

    given = MemoryEngine(store=tmp_path / "given", embedder=embedder, llm=False)
    client = MemoryClient.from_settings(namespace="u1", environ={}, engine_factory=lambda: given)
    client.store("Backups run at midnight.")
    client.close()
    assert given.recall("When do backups run?", namespace="u1").hits  # still the caller's to use
    given.close()


@pytest.mark.server
def test_a_process_leaves_the_writer_registry_when_its_last_engine_closes(tmp_path: Path, embedder) -> None:
    with chroma_server(tmp_path / "chroma") as server:
        first = MemoryEngine(chroma_url=server.url, embedder=embedder, llm=False)
        second = MemoryEngine(chroma_url=server.url, embedder=embedder, llm=False)
        first.store("The build agent runs Debian.", namespace="u1")
        second.store("The build agent has 8 cores.", namespace="u2")
        registry = first.chroma.writers
        assert registry is not None and registry is second.chroma.writers and registry.registered

        first.close()
        assert registry.registered  # the other engine of this process still writes through it
        second.store("The build agent is in rack 4.", namespace="u2")

        second.close()
        assert not registry.registered
