"""The in-memory vector copy: recall scores from it, searches it, and it stays what Chroma holds.

Recall with the copy must rank exactly as recall that reads every vector from Chroma, on
the same store; the copy must follow this process's writes and deletes and catch up with
other processes' writes, and a process opening a namespace must copy what is there. A small
copy is searched in place of Chroma, exactly, unless Chroma holds a memory it does not (another
process wrote it a moment ago): then recall asks Chroma and finds it at once.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from hindsight_integrations import MemoryEngine
from hindsight_integrations.core.config import load_settings
from hindsight_integrations.core.storage.vector_copy import EXACT_SEARCH_ROWS, VectorCopy

NS = "copy"
MEMORIES = [
    {"content": "Invoice INV-4471 was paid on the second of March.", "context": "Finance asked about March payments."},
    {"content": "Invoice INV-4472 is still waiting for approval.", "context": "The approver is on leave until Monday."},
    {"content": "The finance team meets on Thursdays.", "context": None},
    {"content": "Maria prefers green tea in the afternoon.", "context": "We talked about the office kitchen."},
    {"content": "The staging server runs Postgres 16.", "context": "Infrastructure review, week 12."},
    {"content": "Order 88-1207 shipped to Lisbon by courier.", "context": None},
]
QUERIES = [
    "INV-4472 approval",
    "what does Maria drink",
    "which database version on staging",
    "order to Lisbon",
    "finance meeting day",
]


def _store(engine: MemoryEngine, items: list[dict[str, Any]] = MEMORIES) -> list[str]:
    payload = [{k: v for k, v in m.items() if v is not None} for m in items]
    return engine.store_memories(payload, namespace=NS, apply_filter=False, dedup=False).ids


def _chroma_vectors(engine: MemoryEngine, ids: list[str], *, context: bool = False) -> dict[str, np.ndarray]:
    state = engine.chroma.namespace(NS)
    got = (state.context_collection if context else state.collection).get(ids=ids, include=["embeddings"])
    return {i: np.asarray(v, dtype=np.float32) for i, v in zip(got["ids"], got["embeddings"])}


def _assert_copy_matches_chroma(engine: MemoryEngine, ids: list[str], *, context: bool = False) -> None:
    state = engine.chroma.namespace(NS)
    copy = state.context_copy if context else state.vector_copy
    expected = _chroma_vectors(engine, ids, context=context)
    held = copy.lookup(ids)
    assert set(held) == set(expected)
    for memory_id, vector in expected.items():
        np.testing.assert_allclose(held[memory_id], vector, atol=2e-3)


def _count_vector_reads(engine: MemoryEngine) -> dict[str, int]:
    """Wrap the namespace's collections so every ``get`` that asks for embeddings (``n``) and every
    vector search (``queries``) is counted."""
    state = engine.chroma.namespace(NS)
    reads = {"n": 0, "queries": 0}
    for attr in ("collection", "context_collection"):
        original = getattr(state, attr)

        class Counting:
            def __init__(self, inner: Any) -> None:
                self._inner = inner

            def __getattr__(self, name: str) -> Any:
                return getattr(self._inner, name)

            def get(self, *args: Any, **kwargs: Any) -> Any:
                reads["n"] += "embeddings" in (kwargs.get("include") or [])
                return self._inner.get(*args, **kwargs)

            def query(self, *args: Any, **kwargs: Any) -> Any:
                reads["queries"] += 1
                return self._inner.query(*args, **kwargs)

        setattr(state, attr, Counting(original))
    return reads


# -- the copy itself -------------------------------------------------------------------------
def test_copy_keeps_upserts_and_fill_never_replaces() -> None:
    copy = VectorCopy()
    vectors = np.random.default_rng(1).random((3000, 8), dtype=np.float32)
    ids = [f"m{n}" for n in range(3000)]
    copy.upsert(ids[:2000], vectors[:2000])
    copy.fill(ids[1000:], vectors[1000:] + 1)  # older reads of ids 1000-1999 must not win
    held = copy.lookup(ids)
    assert len(copy) == 3000 and held["m1500"].dtype == np.float32
    np.testing.assert_allclose(held["m1500"], vectors[1500], atol=1e-3)
    np.testing.assert_allclose(held["m2500"], vectors[2500] + 1, atol=2e-3)
    copy.upsert(["m5"], vectors[7:8])
    np.testing.assert_allclose(copy.lookup(["m5"])["m5"], vectors[7], atol=1e-3)


def test_removed_rows_are_reused_and_unknown_ids_are_absent() -> None:
    copy = VectorCopy()
    copy.upsert(["a", "b"], [[1.0, 0.0], [0.0, 1.0]])
    size = copy.nbytes
    copy.remove(["a", "never-held"])
    assert copy.lookup(["a", "b", "c"]).keys() == {"b"}
    copy.upsert(["c"], [[0.5, 0.5]])
    assert copy.nbytes == size and len(copy) == 2


def test_vectors_of_another_dimension_are_refused() -> None:
    copy = VectorCopy()
    copy.upsert(["a"], [[1.0, 0.0, 0.0]])
    with pytest.raises(ValueError, match="2 dimensions in a copy of 3"):
        copy.upsert(["b"], [[1.0, 0.0]])
    assert copy.lookup(["a", "b"]).keys() == {"a"}


def test_nearest_is_an_exact_cosine_search_over_the_live_rows() -> None:
    rng = np.random.default_rng(7)
    vectors = rng.standard_normal((600, 16)).astype(np.float32) * rng.uniform(0.5, 3, (600, 1)).astype(np.float32)
    ids = [f"m{n}" for n in range(600)]
    copy = VectorCopy()
    copy.upsert(ids, vectors)
    copy.remove(ids[:50])  # freed rows are never returned, even when reused ...
    copy.upsert(["new"], vectors[:1] * -1)  # ... by another id
    live = dict(zip(ids[50:], vectors[50:])) | {"new": -vectors[0]}
    query = rng.standard_normal(16).astype(np.float32)
    expected = sorted(
        ((i, float(v @ query / np.linalg.norm(v) / np.linalg.norm(query))) for i, v in live.items()),
        key=lambda pair: -pair[1],
    )
    found = copy.nearest(query, 40)
    assert found is not None and [i for i, _ in found] == [i for i, _ in expected[:40]]
    assert [c for _, c in found] == pytest.approx([c for _, c in expected[:40]], abs=1e-5)
    everything = copy.nearest(query, 10_000)
    assert everything is not None and len(everything) == len(live) == len(copy)
    assert copy.nearest(query, 0) == [] and VectorCopy().nearest(query, 5) == []
    assert copy.nearest(np.ones(3), 5) is None  # another dimension: left to Chroma, which says what is wrong
    assert set(copy.ids()) == set(live)


def test_cosines_are_the_searchs_product_and_follow_writes_made_after_it() -> None:
    rng = np.random.default_rng(11)
    vectors = rng.standard_normal((300, 8)).astype(np.float32)
    ids = [f"m{n}" for n in range(300)]
    copy = VectorCopy()
    copy.upsert(ids, vectors)
    query = rng.standard_normal(8).astype(np.float32)

    def cosine(v: np.ndarray) -> float:
        return float(v @ query / np.linalg.norm(v) / np.linalg.norm(query))

    cosines = copy.cosines(query)
    assert cosines is not None and cosines.nearest(25) == copy.nearest(query, 25)
    scored = cosines.of(["m3", "m299", "absent"])
    assert set(scored) == {"m3", "m299"}  # an id the copy does not hold is left to the caller
    assert scored["m3"] == pytest.approx(cosine(vectors[3]), abs=1e-5)
    copy.remove(["m3"])  # after the product: its row is reused by another memory, and m5 changes
    copy.upsert(["new", "m5"], [vectors[7], -vectors[5]])
    scored = cosines.of(["m3", "new", "m5"])
    assert scored == {
        "new": pytest.approx(cosine(vectors[7]), abs=1e-5),
        "m5": pytest.approx(-cosine(vectors[5]), abs=1e-5),
    }
    assert [i for i, _ in cosines.nearest(300)] == [i for i, _ in copy.nearest(query, 300) or []]
    assert "m3" not in dict(cosines.nearest(300))
    copy.upsert([f"x{n}" for n in range(EXACT_SEARCH_ROWS)], rng.standard_normal((EXACT_SEARCH_ROWS, 8)))
    assert not copy.searchable and copy.cosines(query) is None  # grown past searching: the old product still reads
    assert cosines.of(["m9"]) == {"m9": pytest.approx(cosine(vectors[9]), abs=2e-3)}
    assert cosines.of(["new"]) == {"new": pytest.approx(cosine(vectors[7]), abs=2e-3)}


def test_a_copy_grown_past_the_exact_search_size_halves_its_rows_and_is_not_searched() -> None:
    copy = VectorCopy()
    vectors = np.random.default_rng(3).random((EXACT_SEARCH_ROWS + 1, 4), dtype=np.float32)
    ids = [f"m{n}" for n in range(len(vectors))]
    copy.upsert(ids[:-1], vectors[:-1])
    assert copy.searchable and copy.nearest(vectors[0], 1) == [("m0", pytest.approx(1.0, abs=1e-6))]
    copy.upsert(ids[-1:], vectors[-1:])
    assert not copy.searchable and copy.nearest(vectors[0], 1) is None
    held = copy.lookup(["m0", ids[-1]])
    np.testing.assert_allclose(held["m0"], vectors[0], atol=1e-3)
    np.testing.assert_allclose(held[ids[-1]], vectors[-1], atol=1e-3)
    copy.remove(["m0"])
    assert copy.lookup(["m0"]) == {} and len(copy) == EXACT_SEARCH_ROWS


# -- in the store ----------------------------------------------------------------------------
def test_recall_reads_no_vectors_from_chroma_and_ranks_as_without_the_copy(store_path: Path, embedder) -> None:
    # no catch-up with other processes during the test: its read (embeddings included) is not scoring's
    with_copy = MemoryEngine(store=store_path, embedder=embedder, llm=False, lexical_sync_seconds=3600)
    _store(with_copy)
    without = MemoryEngine(store=store_path, embedder=embedder, llm=False, copy_vectors=False)
    assert without.chroma.namespace(NS).vector_copy is None
    reads = _count_vector_reads(with_copy)
    for query in QUERIES:
        got = with_copy.recall(query, namespace=NS, top_k=4, touch=False).hits
        expected = without.recall(query, namespace=NS, top_k=4, touch=False).hits
        assert [h.record.id for h in got] == [h.record.id for h in expected]
        assert [h.score for h in got] == pytest.approx([h.score for h in expected], abs=1e-3)
    assert reads["n"] == 0


def test_recall_searches_the_copy_and_asks_chroma_when_another_process_wrote_since(store_path: Path, embedder) -> None:
    reader = MemoryEngine(store=store_path, embedder=embedder, llm=False, lexical_sync_seconds=3600)
    writer = MemoryEngine(store=store_path, embedder=embedder, llm=False)
    _store(reader)
    reads = _count_vector_reads(reader)
    assert reader.chroma.namespace(NS).copies_current()
    assert reader.recall("what does Maria drink", namespace=NS, top_k=2).hits[0].record.content.startswith("Maria")
    assert reads["queries"] == 0
    new = writer.store_memories(
        [{"content": "Maria switched to rooibos in the afternoons.", "context": "Office kitchen, again."}],
        namespace=NS,
        apply_filter=False,
        dedup=False,
    ).ids
    # Not synced here (an hour between syncs): the counts differ, so Chroma is asked and finds it.
    assert not reader.chroma.namespace(NS).copies_current()
    hits = reader.recall("Maria rooibos afternoon", namespace=NS, top_k=3).hits
    assert new[0] in [h.record.id for h in hits] and reads["queries"] > 0
    reader.chroma.namespace(NS).sync_indexes(force=True)
    assert reader.chroma.namespace(NS).copies_current()


def test_the_copies_are_searched_before_the_currency_checks_answer(store_path: Path, embedder, monkeypatch) -> None:
    """Through a server the checks often answer after the embedding: recall searches the copies meanwhile.

    A check here answers only once the copy has been searched (or after 5 s): were the verdict
    awaited before the search, it would time out, and the recall rank again from Chroma.
    """
    engine = MemoryEngine(store=store_path, embedder=embedder, llm=False, lexical_sync_seconds=3600)
    _store(engine)
    state = engine.chroma.namespace(NS)
    searched = threading.Event()
    cosines = state.vector_copy.cosines

    def searching(vector: Any) -> Any:
        searched.set()
        return cosines(vector)

    monkeypatch.setattr(state.vector_copy, "cosines", searching)
    monkeypatch.setattr(state, "currency_checks", lambda: [lambda: searched.wait(timeout=5)])
    reads = _count_vector_reads(engine)
    hits = engine.recall("what does Maria drink", namespace=NS, top_k=2).hits
    assert searched.is_set() and hits[0].record.content.startswith("Maria")
    assert reads["queries"] == 0  # the checks passed: no search of Chroma


def test_a_check_failing_after_the_copies_were_searched_ranks_again_from_chroma(
    store_path: Path, embedder, monkeypatch
) -> None:
    reader = MemoryEngine(store=store_path, embedder=embedder, llm=False, lexical_sync_seconds=3600)
    ids = _store(reader)
    state = reader.chroma.namespace(NS)
    reader.recall("warm up", namespace=NS)
    maria = ids[3]
    MemoryEngine(store=store_path, embedder=embedder, llm=False).forget(maria, namespace=NS)
    copy_searches = []
    cosines = state.vector_copy.cosines
    monkeypatch.setattr(state.vector_copy, "cosines", lambda vector: copy_searches.append(1) or cosines(vector))
    reads = _count_vector_reads(reader)
    hits = reader.recall("what does Maria drink", namespace=NS, top_k=3).hits
    assert copy_searches and reads["queries"] > 0  # searched in memory first, then Chroma once the checks said no
    assert maria not in [h.record.id for h in hits]


def test_what_another_process_hard_deletes_leaves_the_indexes_at_the_next_sync(store_path: Path, embedder) -> None:
    reader = MemoryEngine(store=store_path, embedder=embedder, llm=False, lexical_sync_seconds=3600)
    ids = _store(reader)
    other = MemoryEngine(store=store_path, embedder=embedder, llm=False)
    other.chroma.namespace(NS).delete(ids[:2])  # as the cold archive of another replica does
    state = reader.chroma.namespace(NS)
    assert not state.copies_current()  # the copy holds two vectors Chroma does not: search Chroma meanwhile
    assert ids[0] not in [h.record.id for h in reader.recall("INV-4471 paid", namespace=NS, top_k=5).hits]
    state.sync_indexes(force=True)
    assert state.copies_current() and len(state.vector_copy) == len(ids) - 2
    assert state.facts.lookup(ids[:2]) == {} and state.context_copy.lookup(ids[:2]) == {}
    assert state.facts.lookup(ids[2:]).keys() == set(ids[2:])


def test_copy_follows_content_updates_and_deletes(engine: MemoryEngine) -> None:
    ids = _store(engine)
    before = engine.chroma.namespace(NS).vector_copy.lookup([ids[4]])[ids[4]]
    engine.update(ids[4], namespace=NS, content="The staging server now runs MySQL 8 after the migration.")
    _assert_copy_matches_chroma(engine, ids)
    assert not np.allclose(engine.chroma.namespace(NS).vector_copy.lookup([ids[4]])[ids[4]], before, atol=1e-2)
    state = engine.chroma.namespace(NS)
    state.delete([ids[0], ids[1]])
    assert state.vector_copy.lookup(ids[:2]) == {} and state.context_copy.lookup(ids[:2]) == {}


def test_a_process_opening_the_namespace_copies_what_is_there(store_path: Path, embedder) -> None:
    writer = MemoryEngine(store=store_path, embedder=embedder, llm=False)
    ids = _store(writer)
    reader = MemoryEngine(store=store_path, embedder=embedder, llm=False)
    _assert_copy_matches_chroma(reader, ids)
    _assert_copy_matches_chroma(reader, ids, context=True)  # every memory has a context vector
    assert len(reader.chroma.namespace(NS).context_copy) == len(ids)


def test_copy_catches_up_with_another_process_and_meanwhile_reads_chroma(store_path: Path, embedder) -> None:
    reader = MemoryEngine(store=store_path, embedder=embedder, llm=False, lexical_sync_seconds=3600)
    writer = MemoryEngine(store=store_path, embedder=embedder, llm=False)
    _store(reader)
    state = reader.chroma.namespace(NS)
    new = writer.store_memories(
        [{"content": "Invoice INV-9001 covers the new laptops.", "context": "Procurement, Q3."}],
        namespace=NS,
        apply_filter=False,
        dedup=False,
    ).ids
    # Not copied yet: scoring reads it from Chroma, and keeps what it read.
    assert state.vector_copy.lookup(new) == {}
    assert new[0] in state.vectors(new)
    _assert_copy_matches_chroma(reader, new)
    writer.update(new[0], namespace=NS, content="Invoice INV-9001 covers the new laptops and two monitors.")
    state.sync_indexes(force=True)
    _assert_copy_matches_chroma(reader, new)
    _assert_copy_matches_chroma(reader, new, context=True)


def test_a_context_vector_written_after_its_record_was_synced_is_copied_at_a_later_sync(
    store_path: Path, embedder
) -> None:
    reader, _, new, state, written = _lagging_record(store_path, embedder)
    state.context_collection.upsert(ids=new, embeddings=written)
    state.sync_indexes(force=True)  # nothing newer by the watermark; the lagging one is asked for again
    _assert_copy_matches_chroma(reader, new, context=True)


def _lagging_record(store_path: Path, embedder) -> tuple[MemoryEngine, MemoryEngine, list[str], Any, Any]:
    """A reader that has synced a record of another process's whose context vector Chroma lacks (and that vector)."""
    reader = MemoryEngine(store=store_path, embedder=embedder, llm=False, lexical_sync_seconds=3600)
    _store(reader)
    writer = MemoryEngine(store=store_path, embedder=embedder, llm=False)
    new = writer.store_memories(
        [{"content": "Invoice INV-9003 covers the meeting room screens.", "context": "Procurement, Q1."}],
        namespace=NS,
        apply_filter=False,
        dedup=False,
    ).ids
    assert writer.chroma.namespace(NS).wait_for_context()
    state = reader.chroma.namespace(NS)
    written = state.context_collection.get(ids=new, include=["embeddings"])["embeddings"]
    assert len(written) == 1
    state.context_collection.delete(ids=new)  # not written by the writer's background writer yet
    state.sync_indexes(force=True)
    assert state.facts.lookup(new) and state.context_copy.lookup(new) == {}
    return reader, writer, new, state, written


def test_a_lagging_record_updated_again_before_the_next_sync_is_asked_for_once(store_path: Path, embedder) -> None:
    _reader, writer, new, state, _ = _lagging_record(store_path, embedder)
    asked: list[list[str]] = []
    real_get = state.context_collection.get

    def recording_get(*args: Any, **kwargs: Any) -> Any:
        asked.append(list(kwargs.get("ids") or []))
        return real_get(*args, **kwargs)

    state.context_collection = type("Recording", (), {"get": staticmethod(recording_get)})()
    writer.update(new[0], namespace=NS, content="Invoice INV-9003 covers the meeting room screens and cables.")
    state.sync_indexes(force=True)  # the record is both newer than the watermark and lagging
    assert asked and all(len(ids) == len(set(ids)) for ids in asked)
    assert new[0] in asked[-1]


def test_a_context_vector_never_written_is_asked_for_a_bounded_number_of_syncs(store_path: Path, embedder) -> None:
    from hindsight_integrations.core.storage.catch_up import LAGGING_SYNCS

    _, _, new, state, _ = _lagging_record(store_path, embedder)
    for _ in range(LAGGING_SYNCS - 1):
        assert new[0] in state._catch_up.context_to_ask([])
        state.sync_indexes(force=True)
    assert state._catch_up.context_to_ask([]) == []
    assert state.facts.lookup(new)  # the record itself stays; ranking reads its context vector from Chroma


def test_copy_can_be_turned_off_from_the_environment(
    store_path: Path, embedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HINDSIGHT_COPY_VECTORS", "false")
    settings = load_settings(store=store_path)
    assert settings.copy_vectors is False
    engine = MemoryEngine(settings, embedder=embedder, llm=False)
    ids = _store(engine)
    state = engine.chroma.namespace(NS)
    assert state.vector_copy is None and state.context_copy is None
    assert ids[1] in [h.record.id for h in engine.recall("INV-4472 approval", namespace=NS, top_k=2).hits]
