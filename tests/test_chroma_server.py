"""The same engine code against a real Chroma server (`chroma run` on 127.0.0.1)."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from hindsight_integrations import EmbeddingModelMismatchError, MemoryEngine, Status
from hindsight_integrations.core.storage.quiet_files import COUNT_SECONDS
from hindsight_integrations.processes import chroma_server

pytestmark = pytest.mark.server


@pytest.fixture(scope="module")
def server_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with chroma_server(tmp_path_factory.mktemp("chroma-server")) as server:
        yield server.url


def test_server_mode_round_trip(server_url: str, embedder) -> None:
    writer = MemoryEngine(chroma_url=server_url, embedder=embedder, llm=False)
    old = writer.store("Our project database is MySQL 8.", namespace="srv").stored[0]
    writer.store("Correction: the project actually uses PostgreSQL, not MySQL.", namespace="srv")
    writer.store("Order ORD-5521-QX shipped to Oslo.", namespace="srv")
    # A second engine (think: another replica) sees everything, lexical index included.
    reader = MemoryEngine(chroma_url=server_url, embedder=embedder, llm=False)
    assert "PostgreSQL" in reader.recall("which database", namespace="srv", top_k=1).hits[0].record.content
    assert reader.recall("ORD-5521-QX", namespace="srv", top_k=1).hits[0].record.content.startswith("Order ORD-5521-QX")
    assert reader.get(old.id, namespace="srv").status is Status.SUPERSEDED
    data = reader.export(namespace="srv")
    assert len(data["records"]) == 3


def test_server_mode_refuses_a_mismatched_model(server_url: str, embedder) -> None:
    MemoryEngine(chroma_url=server_url, embedder=embedder, llm=False).store(
        "The cluster has 3 nodes.", namespace="srv2"
    )

    class Other:
        name = "other-model"
        dimension = 8

        def embed(self, texts):
            return [[1.0] * 8 for _ in texts]

    with pytest.raises(EmbeddingModelMismatchError, match="other-model"):
        MemoryEngine(chroma_url=server_url, embedder=Other(), llm=False).recall("nodes", namespace="srv2")


def test_embedded_and_server_share_code_paths(server_url: str, tmp_path: Path, embedder) -> None:
    results = []
    for engine in (
        MemoryEngine(chroma_url=server_url, embedder=embedder, llm=False),
        MemoryEngine(store=tmp_path, embedder=embedder, llm=False),
    ):
        engine.drop_namespace("same")
        engine.store_memories(["I prefer short answers.", "The deploy target is Kubernetes 1.29."], namespace="same")
        results.append([h.record.content for h in engine.recall("deploy target", namespace="same").hits])
    assert results[0] == results[1]


def test_server_mode_rewrites_layout_1_records_on_update(server_url: str, embedder) -> None:
    """Deleting the old keys relies on Chroma's update taking None values, over HTTP too."""
    from hindsight_integrations.core.model.records import PACKED_KEY, MemoryRecord

    from .test_record_layout import _legacy_metadata

    engine = MemoryEngine(chroma_url=server_url, embedder=embedder, llm=False)
    engine.store("The on-call rotation changes every Tuesday.", namespace="legacy")
    legacy = MemoryRecord(namespace="legacy", content="My timezone is CET.", slot="user:timezone")
    collection = engine.chroma.namespace("legacy").collection
    collection.add(
        ids=[legacy.id],
        documents=[legacy.content],
        metadatas=[_legacy_metadata(legacy)],
        embeddings=[embedder.embed([legacy.content])[0]],
    )
    assert engine.get(legacy.id, namespace="legacy").content == "My timezone is CET."
    engine.update(legacy.id, namespace="legacy", content="I usually work from the Lisbon office.")
    meta = collection.get(ids=[legacy.id], include=["metadatas"])["metadatas"][0]
    assert PACKED_KEY in meta and "source_json" not in meta and "slot" not in meta
    assert engine.get(legacy.id, namespace="legacy").content == "I usually work from the Lisbon office."


def test_a_chroma_outage_is_a_typed_retried_error(tmp_path: Path, embedder) -> None:
    """Chroma gone: a readable, retryable ``store_unavailable`` error, retried by the client; the server lives on."""
    from prometheus_client import generate_latest

    from hindsight_integrations.mcp import MemoryClient, MemoryStoreUnavailableError

    with chroma_server(tmp_path / "chroma") as server:
        engine = MemoryEngine(chroma_url=server.url, embedder=embedder, llm=False, chroma_connect_attempts=1)
        client = MemoryClient.in_process(engine, namespace="u1", retries=1, backoff=0.01)
        with client:
            client.store("The garden gets sun in the morning.")
            assert client.recall("garden").records
            server.process.terminate()
            server.process.wait(30)
            with pytest.raises(MemoryStoreUnavailableError, match="retry shortly") as caught:
                client.recall("garden sun")
            assert caught.value.error_type == "store_unavailable"
            with pytest.raises(MemoryStoreUnavailableError):
                client.stats()
            metrics = generate_latest(client.server.metrics.registry).decode()  # type: ignore[union-attr]
            line = 'hindsight_mcp_tool_calls_total{outcome="store_unavailable",tool="retrieve_memory"}'
            assert f"{line} 2.0" in metrics  # the first try and one retry


def test_reads_racing_a_new_namespaces_first_write_do_not_fail(server_url: str, embedder) -> None:
    """Chroma fails a read of a collection whose first add is landing ("Nothing found on disk"); we retry it.

    The load benchmark's sporadic ``retrieve_memory failed: internal error ... Error creating hnsw
    segment reader: Nothing found on disk`` was this: one replica's first recall of a namespace
    while the other replica wrote its first memory (core/storage/chroma_reads.py).
    """
    from concurrent.futures import ThreadPoolExecutor

    writer = MemoryEngine(chroma_url=server_url, embedder=embedder, llm=False)
    failures: list[str] = []
    for trial in range(25):
        reader = MemoryEngine(chroma_url=server_url, embedder=embedder, llm=False)  # opens the namespace itself
        start = threading.Barrier(3)
        with ThreadPoolExecutor(3) as pool:
            jobs = [pool.submit(_first_write, writer, start, trial)]
            jobs += [pool.submit(_reads, reader, start, trial, failures) for _ in range(2)]
            for job in jobs:
                job.result()
    assert not failures, "\n".join(failures)


def _first_write(engine: MemoryEngine, start: threading.Barrier, trial: int) -> None:
    start.wait()
    engine.store(f"Trial {trial}: the staging server is called kestrel.", namespace=f"fresh-{trial}")


def _reads(engine: MemoryEngine, start: threading.Barrier, trial: int, failures: list[str]) -> None:
    start.wait()
    for _ in range(15):
        try:
            engine.recall("what is the staging server called?", namespace=f"fresh-{trial}")
        except Exception as exc:  # collected: the assertion shows every one
            failures.append(f"trial {trial}: {type(exc).__name__}: {exc}")


def test_a_replica_sees_another_ones_forget_at_once_and_its_archive_within_count_seconds(
    server_url: str, embedder, monkeypatch
) -> None:
    """The count, the check only a hard delete needs, is made once a second; the watermark every recall."""
    reader = MemoryEngine(chroma_url=server_url, embedder=embedder, llm=False, lexical_sync_seconds=3600)
    other = MemoryEngine(chroma_url=server_url, embedder=embedder, llm=False)
    facts = [
        "Invoice INV-7301 was paid on the fourth of May.",
        "Invoice INV-7302 is waiting for the CFO's approval.",
        "The finance team meets on Thursdays at ten.",
        "Order 77-0412 shipped to Porto by courier.",
    ]
    ids = reader.store_memories(facts, namespace="archive", apply_filter=False, dedup=False).ids
    state = reader.chroma.namespace("archive")
    clock = [1_000.0]
    monkeypatch.setattr(state._currency, "_now", lambda: clock[0])
    assert state.copies_current()  # the count matched at 1,000
    other.forget(ids[1], namespace="archive")
    assert not state.copies_current()  # within the second: the watermark read shows the forget
    assert ids[1] not in [h.record.id for h in reader.recall("INV-7302 approval", namespace="archive").hits]
    state.sync_indexes(force=True)
    assert state.copies_current()
    other.chroma.namespace("archive").delete([ids[0]])  # as the cold archive of another replica does
    clock[0] += COUNT_SECONDS
    assert not state.copies_current()  # a second on, the count is made again and shows it
    assert ids[0] not in [h.record.id for h in reader.recall("INV-7301 paid", namespace="archive").hits]
