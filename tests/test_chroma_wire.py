"""The plain reads sent over urllib3 (``core/storage/chroma_wire.py``) answer as chromadb's client does.

Against a real ``chroma run`` on 127.0.0.1: the same results, the same errors, and chromadb's
client whenever the wire cannot answer (what it does not send, a server it cannot reach).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import chromadb
import numpy as np
import pytest

from hindsight_integrations import MemoryEngine
from hindsight_integrations.core.storage import chroma_wire
from hindsight_integrations.core.storage.chroma_reads import RetryingReads
from hindsight_integrations.core.storage.chroma_wire import ChromaWire
from hindsight_integrations.processes import chroma_server, free_port

pytestmark = pytest.mark.server

VECTORS = np.random.default_rng(7).normal(size=(60, 16)).astype(np.float32)


@pytest.fixture(scope="module")
def server_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with chroma_server(tmp_path_factory.mktemp("chroma-wire")) as server:
        yield server.url


@pytest.fixture(scope="module")
def collection(server_url: str) -> Any:
    host, port = server_url.removeprefix("http://").split(":")
    client = chromadb.HttpClient(host=host, port=int(port), settings=chromadb.Settings(anonymized_telemetry=False))
    made = client.create_collection("wire-test", metadata={"hnsw:space": "cosine"}, embedding_function=None)
    made.add(
        ids=[f"m{i}" for i in range(60)],
        embeddings=VECTORS,
        documents=[f"memory {i}: 早上好, café" for i in range(60)],
        metadatas=[{"updated_at": float(i), "n": i, "even": i % 2 == 0, "who": "Zoë 张"} for i in range(60)],
    )
    return made


GETS = [
    {"where": {"updated_at": {"$gt": 40.0}}, "limit": 64, "include": ["metadatas"]},
    {"ids": ["m3", "m59", "m7"], "include": ["documents", "metadatas"]},
    {"ids": ["m3", "gone"], "include": ["metadatas"]},
    {"limit": 10, "offset": 5, "include": []},
    {"where": {"$and": [{"even": True}, {"n": {"$lt": 9}}]}, "include": ["documents"]},
]


@pytest.mark.parametrize("kwargs", GETS)
def test_a_get_answers_as_chromadbs_client(collection: Any, kwargs: dict[str, Any]) -> None:
    reads = RetryingReads(collection)
    assert reads._wire is not None
    assert reads._wire.get(collection, **kwargs) is not None  # the wire answered, not chromadb
    assert dict(reads.get(**kwargs)) == dict(collection.get(**kwargs))


@pytest.mark.parametrize("where", [None, {"even": False}])
def test_a_query_and_a_count_answer_as_chromadbs_client(collection: Any, where: dict[str, Any] | None) -> None:
    reads = RetryingReads(collection)
    asked = {"query_embeddings": VECTORS[:3], "n_results": 7, "where": where, "include": ["distances"]}
    assert reads._wire is not None and reads._wire.query(collection, **asked) is not None
    mine, theirs = reads.query(**asked), collection.query(**asked)
    assert (mine["ids"], mine["distances"]) == (theirs["ids"], theirs["distances"])
    assert reads._wire.count(collection) == reads.count() == collection.count() == 60


@pytest.mark.parametrize(
    "kwargs",
    [
        {"ids": ["m1"], "include": ["embeddings"]},  # vectors come back as arrays: chromadb's to make
        {"ids": [], "include": ["metadatas"]},  # chromadb refuses these before sending
        {"ids": ["m1", "m1"], "include": ["metadatas"]},
        {"ids": "m1", "include": ["metadatas"]},  # one id, not a list: chromadb reads it as ["m1"]
        {"where_document": {"$contains": "memory 1:"}, "include": ["metadatas"]},  # not one of the wire's
    ],
)
def test_what_the_wire_does_not_send_goes_to_chromadb(collection: Any, kwargs: dict[str, Any]) -> None:
    reads = RetryingReads(collection)
    assert reads._wire is not None and reads._wire.get(collection, **kwargs) is None
    try:
        expected: Any = collection.get(**kwargs)
    except Exception as exc:  # the same error, raised by the same client
        with pytest.raises(type(exc), match=str(exc)[:30]):
            reads.get(**kwargs)
    else:
        got = reads.get(**kwargs)
        assert got["ids"] == expected["ids"]
        assert np.array_equal(np.asarray(got["embeddings"]), np.asarray(expected["embeddings"]))
    for vectors in (VECTORS[:1].tolist(), VECTORS[:1].astype(np.float64)):  # what chromadb converts itself
        listed = {"query_embeddings": vectors, "n_results": 3, "where": None, "include": ["distances"]}
        assert reads._wire.query(collection, **listed) is None
        assert reads.query(**listed)["ids"] == collection.query(**listed)["ids"]


@pytest.mark.parametrize("where", [{"$foo": 1}, {"n": {"$gt": 1, "$lt": 3}}])
def test_a_bad_filter_is_chromadbs_own_error(collection: Any, where: dict[str, Any]) -> None:
    reads = RetryingReads(collection)
    with pytest.raises(Exception) as theirs:
        collection.get(where=where, include=["metadatas"])
    with pytest.raises(type(theirs.value), match=str(theirs.value)[:25].replace("$", r"\$")):
        reads.get(where=where, include=["metadatas"])
    assert reads.count() == 60  # and the wire still answers afterwards


def test_an_unreachable_wire_leaves_the_read_to_chromadb(collection: Any) -> None:
    reads = RetryingReads(collection)
    reads._wire = ChromaWire(f"http://127.0.0.1:{free_port()}/api/v2", {})  # nothing listens there
    assert reads._wire.count(collection) is None
    assert reads.count() == 60
    assert reads.get(ids=["m2"], include=["documents"])["documents"] == ["memory 2: 早上好, café"]


def test_a_server_the_wire_cannot_connect_to_is_left_to_chromadb_for_a_while(
    collection: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A host that drops packets costs the wire's connect timeout once, not before every read."""
    monkeypatch.setattr(chroma_wire, "_unreachable_until", {})
    clock = [1_000.0]
    monkeypatch.setattr(chroma_wire, "_now", lambda: clock[0])
    reads = RetryingReads(collection)
    reads._wire = ChromaWire(f"http://127.0.0.1:{free_port()}/api/v2", {})  # nothing listens there
    attempts: list[str] = []
    request = chroma_wire._POOLS.request
    monkeypatch.setattr(chroma_wire._POOLS, "request", lambda *a, **k: attempts.append(a[1]) or request(*a, **k))
    assert reads.count() == 60 and len(attempts) == 1
    assert reads.count() == 60 and reads.get(ids=["m2"])["ids"] == ["m2"]
    assert len(attempts) == 1  # chromadb's client answered, the wire was not tried again
    clock[0] += chroma_wire.UNREACHABLE_SECONDS
    assert reads.count() == 60 and len(attempts) == 2  # after a while the wire tries again


def test_an_embedded_store_has_no_wire(tmp_path: Path) -> None:
    client = chromadb.PersistentClient(path=str(tmp_path), settings=chromadb.Settings(anonymized_telemetry=False))
    assert RetryingReads(client.get_or_create_collection("local-one", embedding_function=None))._wire is None


def test_recall_through_a_server_reads_over_the_wire(
    server_url: str, embedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A replica's recall checks the server with the wire's requests, and finds what another wrote."""
    writer = MemoryEngine(chroma_url=server_url, embedder=embedder, llm=False)
    writer.store_memories(["The boat is moored at pier 9.", "Our cat is called Miso."], namespace="wired")
    reader = MemoryEngine(chroma_url=server_url, embedder=embedder, llm=False)
    assert "pier 9" in reader.recall("where is the boat", namespace="wired", top_k=1).hits[0].record.content
    sent: list[str] = []
    request = chroma_wire._POOLS.request

    def counted(method: str, url: str, **kwargs: Any) -> Any:
        sent.append(url.rsplit("/", 1)[-1])
        return request(method, url, **kwargs)

    monkeypatch.setattr(chroma_wire._POOLS, "request", counted)
    writer.store("The boat moved to pier 4 in May.", namespace="wired")
    hits = reader.recall("where is the boat moored", namespace="wired", top_k=3).hits
    assert any("pier 4" in h.record.content for h in hits)
    assert any(s.startswith("count") for s in sent) and "get" in sent
