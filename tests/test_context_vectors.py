"""Context vectors embedded in the background: nothing lost on an outage or a crash, recall waits for them."""

from __future__ import annotations

import inspect
import logging
import math
import os
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest

from hindsight_integrations import MemoryEngine
from hindsight_integrations.core.embedding.local import LocalEmbedder
from hindsight_integrations.core.storage.context_vectors import BackgroundContextVectors, wait_for_all

TALK = [
    ("Maya", "My dog Biscuit loves the beach at Ocean Park."),
    ("Tom", "My retriever Juno swims in the lake by our cabin every summer."),
    ("Maya", "He runs along the water and never goes in."),
]


def _talk(engine: MemoryEngine, session: str = "s1") -> list[str]:
    ids = []
    for speaker, text in TALK:
        result = engine.record_turn(text, session_id=session, namespace="u1", speaker=speaker)
        ids.extend(r.id for r in result.stored.stored)
    return ids


def _framed_ids(engine: MemoryEngine) -> list[str]:
    return engine.chroma.namespace("u1").facts.ids_with_context()


def _context_ids(engine: MemoryEngine) -> set[str]:
    return set(engine.chroma.namespace("u1").context_collection.get(include=[])["ids"])


def test_each_memory_gets_its_context_vector(engine: MemoryEngine) -> None:
    _talk(engine)
    handle = engine.chroma.namespace("u1")
    assert handle.wait_for_context(timeout=30)
    framed = _framed_ids(engine)
    assert len(framed) == 3  # the first turn has no turns before it: framed by nothing, undated
    assert _context_ids(engine) == set(framed)
    assert engine.chroma.context_vectors is not None and engine.chroma.context_vectors.pending() == 0


def test_an_embedder_outage_loses_nothing_and_the_next_open_repairs_it(
    store_path: Path, embedder: LocalEmbedder, caplog: pytest.LogCaptureFixture
) -> None:
    first = MemoryEngine(store=store_path, embedder=embedder, llm=False)
    worker = first.chroma.context_vectors
    assert worker is not None

    def outage(texts: object) -> np.ndarray:
        raise ConnectionError("embedding service unavailable")

    worker._embed = outage  # what a remote embedder's outage looks like to the worker
    with caplog.at_level(logging.WARNING, logger="hindsight_integrations.core.storage.context_vectors"):
        _talk(first)
        assert first.chroma.namespace("u1").wait_for_context(timeout=30)
    assert "were not written (ConnectionError: embedding service unavailable)" in caplog.text
    framed = _framed_ids(first)
    assert len(framed) == 3 and not _context_ids(first)  # the memories are there, their context vectors not
    assert first.recall("Where does Biscuit run?", namespace="u1").records  # recall works without them

    worker._embed = lambda texts: np.asarray(embedder.embed_array(list(texts)), dtype=np.float32)
    engine = MemoryEngine(store=store_path, embedder=embedder, llm=False)  # as a restarted process would
    handle = engine.chroma.namespace("u1")
    assert handle.wait_for_context(timeout=30)
    assert _context_ids(engine) == set(framed)
    for text in ("Our cabin is on Lake Tahoe's north shore.", "We drive up there every July with both dogs."):
        first.record_turn(text, session_id="s2", namespace="u1", speaker="Tom")
    assert first.chroma.namespace("u1").wait_for_context(timeout=30)
    assert len(_context_ids(first)) == 5  # the first engine's worker survived its outage


def test_a_context_vector_of_a_memory_deleted_meanwhile_is_dropped(engine: MemoryEngine) -> None:
    ids = _talk(engine)
    handle = engine.chroma.namespace("u1")
    assert handle.wait_for_context(timeout=30)
    handle.delete([ids[-1]])
    handle.write_context({ids[-1]: np.ones(engine.embedder.dimension, dtype=np.float32)})
    assert ids[-1] not in _context_ids(engine)


def _held_engine_worker(engine: MemoryEngine, monkeypatch) -> tuple[BackgroundContextVectors, threading.Event]:
    """The engine's context-vector worker, its embedding held until the event returned is set."""
    worker = engine.chroma.context_vectors
    assert worker is not None
    release = threading.Event()
    real = worker._embed

    def held(texts: object) -> np.ndarray:
        release.wait(30)
        return real(texts)  # type: ignore[arg-type]

    monkeypatch.setattr(worker, "_embed", held)
    return worker, release


def test_recall_waits_for_the_context_vectors_written_before_it(engine: MemoryEngine, monkeypatch) -> None:
    worker, release = _held_engine_worker(engine, monkeypatch)
    _talk(engine)  # returns although no context vector is written yet
    assert worker.pending() == 3
    answers: list[object] = []
    asking = threading.Thread(target=lambda: answers.append(engine.recall("Biscuit at the beach", namespace="u1")))
    asking.start()
    asking.join(0.5)
    assert asking.is_alive() and not answers  # still waiting for the held context vectors
    release.set()
    asking.join(30)
    assert answers and worker.pending() == 0
    assert _context_ids(engine) == set(_framed_ids(engine))


def test_the_worker_writes_in_the_order_things_were_queued() -> None:
    written: list[tuple[str, list[str]]] = []

    class Target:
        def __init__(self, name: str) -> None:
            self.name = name

        def write_context(self, vectors) -> None:  # type: ignore[no-untyped-def]
            written.append((self.name, list(vectors)))

    worker = BackgroundContextVectors(lambda texts: np.zeros((len(texts), 3), dtype=np.float32), batch_size=2)
    a, b = Target("a"), Target("b")
    worker.submit(a, {"a1": "x", "a2": "y"})
    worker.submit(b, {"b1": "z"})
    assert worker.wait(timeout=30)
    assert [i for _, ids in written for i in ids] == ["a1", "a2", "b1"]
    assert {name for name, _ in written} == {"a", "b"}
    assert worker.pending() == 0


def test_waiting_for_one_namespace_does_not_wait_for_work_queued_after_it() -> None:
    release = threading.Event()

    class Target:
        def __init__(self, name: str) -> None:
            self.name = name

        def write_context(self, vectors) -> None:  # type: ignore[no-untyped-def]
            pass

    def embed(texts) -> np.ndarray:  # type: ignore[no-untyped-def]
        if "held" in texts:
            release.wait(30)
        return np.zeros((len(texts), 3), dtype=np.float32)

    worker = BackgroundContextVectors(embed, batch_size=2)
    first, second = Target("first"), Target("second")
    worker.submit(first, {"f1": "x", "f2": "y"})
    assert worker.wait(timeout=30, target=first)
    worker.submit(second, {"s1": "held"})
    assert worker.wait(timeout=30, target=first)  # the second namespace's held work is not waited for
    assert not worker.wait(timeout=0.2, target=second)
    release.set()
    assert worker.wait(timeout=30, target=second)


class _Recording:
    """A context target that records each write (one Chroma upsert in the real store)."""

    def __init__(self, name: str = "ns") -> None:
        self.name = name
        self.writes: list[list[str]] = []
        self.written = threading.Event()

    def write_context(self, vectors) -> None:  # type: ignore[no-untyped-def]
        self.writes.append(list(vectors))
        self.written.set()


def _zeros(texts) -> np.ndarray:  # type: ignore[no-untyped-def]
    return np.zeros((len(texts), 3), dtype=np.float32)


def test_vectors_are_written_a_batch_at_a_time_and_a_waiter_gets_them_at_once() -> None:
    target = _Recording()
    worker = BackgroundContextVectors(_zeros, batch_size=4, linger_seconds=3600)
    for n in range(3):
        worker.submit(target, {f"m{n}": f"text {n}"})
    assert not target.written.wait(0.3)  # embedded and held: fewer than a batch, nobody waiting
    assert worker.pending() == 3
    assert worker.wait(timeout=30)  # a recall waiting gets them written now
    assert [i for ids in target.writes for i in ids] == ["m0", "m1", "m2"] and worker.pending() == 0
    target.written.clear()
    worker.submit(target, {f"b{n}": "x" for n in range(4)})  # a full batch is written without a waiter
    assert target.written.wait(30)
    assert target.writes[-1] == ["b0", "b1", "b2", "b3"]


def test_held_vectors_are_written_once_they_have_lingered() -> None:
    target = _Recording()
    worker = BackgroundContextVectors(_zeros, batch_size=100, linger_seconds=0.0)
    worker.submit(target, {"m1": "a", "m2": "b"})
    assert target.written.wait(30)  # no waiter, no full batch: written once the linger time is up
    assert target.writes == [["m1", "m2"]]
    assert worker.wait(timeout=30) and worker.pending() == 0


def _held_back_worker(go: threading.Event, batch_size: int) -> BackgroundContextVectors:
    """A worker whose embedding waits for ``go``: what is queued meanwhile stays queued."""

    def held_back(texts):  # type: ignore[no-untyped-def]
        go.wait(30)
        return _zeros(texts)

    return BackgroundContextVectors(held_back, batch_size=batch_size, linger_seconds=3600)


def test_one_write_per_namespace_for_a_batch_that_spans_several() -> None:
    first, second = _Recording("first"), _Recording("second")
    go = threading.Event()
    worker = _held_back_worker(go, batch_size=3)
    worker.submit(first, {"a1": "x"})
    worker.submit(second, {"b1": "y"})
    worker.submit(first, {"a2": "z"})
    go.set()
    assert first.written.wait(30) and second.written.wait(30)  # three held: a full batch, no waiter needed
    assert first.writes == [["a1", "a2"]] and second.writes == [["b1"]]


def test_a_conversation_makes_one_context_write_per_batch_not_per_turn(engine: MemoryEngine, monkeypatch) -> None:
    handle = engine.chroma.namespace("u1")
    upserts: list[int] = []
    real = handle.context_collection.upsert

    def counting(**kwargs):  # type: ignore[no-untyped-def]
        upserts.append(len(kwargs["ids"]))
        return real(**kwargs)

    monkeypatch.setattr(handle.context_collection, "upsert", counting)
    worker = engine.chroma.context_vectors
    assert worker is not None
    monkeypatch.setattr(worker, "_linger", 3600.0)
    for n in range(6):
        engine.record_turn(
            f"Item {n}: the invoice INV-{1000 + n} was paid on day {n + 1}.", session_id="s", namespace="u1"
        )
    hits = engine.recall("which invoice was paid on day 4?", namespace="u1")  # waits for them
    # six context vectors (the first turn's framed by nothing) in one write (two if the recall came
    # while the last one was still being embedded), never one write a turn
    assert sum(upserts) == 6 and len(upserts) <= 2
    assert hits.records and _context_ids(engine) == set(_framed_ids(engine))


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="per-thread priorities are a Linux feature")
def test_the_worker_runs_at_a_lower_priority_than_the_writes() -> None:
    seen: list[int] = []

    def embed(texts):  # type: ignore[no-untyped-def]
        seen.append(os.getpriority(os.PRIO_PROCESS, threading.get_native_id()))
        return _zeros(texts)

    worker = BackgroundContextVectors(embed, batch_size=1)
    worker.submit(_Recording(), {"m1": "a"})
    assert worker.wait(timeout=30)
    assert seen and seen[0] > os.getpriority(os.PRIO_PROCESS, 0)  # this (foreground) thread is unchanged


def test_a_broken_embedder_reply_neither_kills_the_worker_nor_stalls_a_waiter(caplog) -> None:  # type: ignore[no-untyped-def]
    target = _Recording()
    replies = iter([None, _zeros(["x"])])  # first a reply that is not a matrix at all

    def embed(texts):  # type: ignore[no-untyped-def]
        return next(replies)

    worker = BackgroundContextVectors(embed, batch_size=1, linger_seconds=0.0)
    with caplog.at_level(logging.WARNING, logger="hindsight_integrations.core.storage.context_vectors"):
        worker.submit(target, {"m1": "a"})
        assert worker.wait(timeout=30)  # given up on, and said so
    assert any("not written" in r.getMessage() for r in caplog.records)
    worker.submit(target, {"m2": "b"})
    assert worker.wait(timeout=30) and target.writes == [["m2"]]


def test_a_dropped_namespace_gets_no_context_write_and_no_warning(engine: MemoryEngine, monkeypatch, caplog) -> None:
    """Dropping a namespace while its context vectors are queued discards them: nothing to write them to.

    Before, the worker embedded them and wrote into the deleted collection, and warned that they
    were "queued again when the namespace is next opened", which a dropped namespace never is.
    """
    worker, release = _held_engine_worker(engine, monkeypatch)
    _talk(engine, session="gone")
    assert worker.pending() == 3
    engine.drop_namespace("u1")
    release.set()
    with caplog.at_level(logging.WARNING):
        assert worker.wait(timeout=30) and worker.pending() == 0
    assert not [r for r in caplog.records if "context vectors" in r.getMessage()]
    _talk(engine, session="again")  # the same name opened again is a new namespace, written as usual
    assert worker.wait(timeout=30)
    assert _context_ids(engine) == set(_framed_ids(engine)) and _framed_ids(engine)


def test_work_discarded_for_one_target_leaves_the_others_and_counts_as_done() -> None:
    kept, dropped = _Recording("kept"), _Recording("dropped")
    go = threading.Event()
    worker = _held_back_worker(go, batch_size=2)
    worker.submit(dropped, {"d1": "x"})
    worker.submit(kept, {"k1": "y"})
    worker.submit(dropped, {"d2": "z"})
    worker.discard(dropped)
    go.set()
    assert worker.wait(timeout=30) and worker.pending() == 0
    assert dropped.writes == [] and kept.writes == [["k1"]]


def test_the_linger_counts_from_the_last_vector_held(monkeypatch: pytest.MonkeyPatch) -> None:
    """A stream of turns fills a batch; what is held is written when the stream pauses, not at a set time."""
    from hindsight_integrations.core.storage import context_vectors

    clock = [100.0]
    monkeypatch.setattr(context_vectors.time, "monotonic", lambda: clock[0])
    worker = BackgroundContextVectors(_zeros, batch_size=100, linger_seconds=1.0)
    target = _Recording()
    for n in range(5):  # a turn every 0.9 s: never a second without one
        worker._hold([(n + 1, target, f"m{n}", "text")])
        with worker._changed:
            assert not worker._flush_due()
        clock[0] += 0.9
    clock[0] += 0.2  # 1.1 s after the last
    with worker._changed:
        assert worker._flush_due()


def _recalled_then_held(engine: MemoryEngine, monkeypatch) -> tuple[str, BackgroundContextVectors, threading.Event]:
    """A recall counted (not yet written), then a turn whose context vector is held."""
    _talk(engine)
    recalled = engine.recall("Biscuit at the beach", namespace="u1", top_k=1).hits[0].record.id
    worker, release = _held_engine_worker(engine, monkeypatch)
    engine.record_turn("Juno chases the ducks off the dock.", session_id="s1", namespace="u1", speaker="Tom")
    assert worker.pending() >= 1
    return recalled, worker, release


def test_flushing_the_store_writes_the_held_context_vectors_and_the_recall_counts(
    engine: MemoryEngine, monkeypatch
) -> None:
    """``ChromaStore.flush``: what a caller runs before copying or removing a store, or reading the counts."""
    recalled, worker, release = _recalled_then_held(engine, monkeypatch)
    threading.Timer(0.3, release.set).start()
    assert engine.chroma.flush()  # returns once the held vector is written
    assert worker.pending() == 0 and _context_ids(engine) == set(_framed_ids(engine))
    assert engine.get(recalled, namespace="u1").access_count == 1


def test_a_flush_that_times_out_says_so_and_still_writes_the_recall_counts(engine: MemoryEngine, monkeypatch) -> None:
    recalled, worker, release = _recalled_then_held(engine, monkeypatch)
    try:
        assert engine.chroma.flush(timeout=0.2) is False
        assert engine.get(recalled, namespace="u1").access_count == 1
        assert set(_framed_ids(engine)) - _context_ids(engine)  # the held one is still to come
    finally:
        release.set()
    assert engine.chroma.flush() and worker.pending() == 0


class _NeverDone(BackgroundContextVectors):
    """A worker whose queue never empties: ``wait`` uses up the time it is given and says so."""

    def __init__(self) -> None:
        super().__init__(lambda texts: np.zeros((len(texts), 4)))
        self.given: list[float | None] = []

    def wait(self, timeout: float | None = None, *, target: object = None) -> bool:  # type: ignore[override]
        self.given.append(timeout)
        threading.Event().wait(timeout)
        return False


def test_one_timeout_covers_every_models_worker() -> None:
    """``ChromaStore.flush(timeout)`` waits ``timeout`` in all, not once per embedding model's worker."""
    first, second = _NeverDone(), _NeverDone()
    assert wait_for_all([first, second], 0.2) is False
    assert first.given == [pytest.approx(0.2, abs=0.05)] and second.given == [0.0]  # the first used up the time
    assert wait_for_all([], 0.2) and wait_for_all([BackgroundContextVectors(lambda texts: np.zeros((0, 4)))], None)


def test_an_edit_made_while_the_old_context_vector_waits_is_not_overwritten_by_it(
    engine: MemoryEngine, monkeypatch
) -> None:
    """The worker still holds the first text's context vector when the memory is edited: it is dropped, not written."""
    from hindsight_integrations.core.storage.indexing import framed_text

    worker, release = _held_engine_worker(engine, monkeypatch)
    memory_id = engine.store("My dog is called Rex.", namespace="u1").stored[0].id
    assert worker.pending() == 1  # the first text's context vector, held
    edited = engine.update(memory_id, namespace="u1", content="My cat is called Whiskers and she likes tuna.")
    release.set()
    assert engine.chroma.flush()
    stored = engine.chroma.namespace("u1").context_collection.get(ids=[memory_id], include=["embeddings"])
    expected = engine._parts.embed_framed([framed_text(edited.flat_fields())])[0]
    assert np.allclose(stored["embeddings"][0], expected, atol=1e-5)
    found = engine.recall("What is my cat called?", namespace="u1", top_k=1).hits
    assert found and found[0].record.id == memory_id


def test_an_export_behind_a_stalled_embedder_goes_on_without_the_queued_context_vectors(
    engine: MemoryEngine, monkeypatch, caplog
) -> None:
    """An export waited for the context vectors queued before it with no bound: a stalled embedder hung it.

    Now it waits ``CONTEXT_WAIT_SECONDS``, says so, and exports those memories without their context
    vectors, which an import makes again from their text: nothing is lost.
    """
    from hindsight_integrations.core.storage import context_vectors

    monkeypatch.setattr(context_vectors, "CONTEXT_WAIT_SECONDS", 0.2)
    worker = engine.chroma.context_vectors
    assert worker is not None
    stalled, real = threading.Event(), worker._embed

    def stalling(texts: object) -> np.ndarray:
        stalled.wait(60)  # the export is over long before, unless it waits for this
        return real(texts)  # type: ignore[arg-type]

    monkeypatch.setattr(worker, "_embed", stalling)
    try:
        _talk(engine)
        with caplog.at_level(logging.WARNING, logger="hindsight_integrations.core.storage.context_vectors"):
            exported = engine.export(namespace="u1")
        assert not stalled.is_set() and worker.pending() == 3  # it did not wait for the embedder
        assert "were still being made after 0.2 s (is the embedder stalled?)" in caplog.text
        assert set(_framed_ids(engine)) <= {r["id"] for r in exported["records"]}  # every memory, framed ones too
        assert not any("window_embedding" in r for r in exported["records"])
    finally:
        stalled.set()
    engine.import_data(exported, namespace="u2")
    imported = engine.chroma.namespace("u2")
    assert imported.wait_for_context(timeout=30)
    framed = imported.facts.ids_with_context()
    assert framed and set(imported.context_collection.get(include=[])["ids"]) == set(framed)


def test_waiting_for_context_vectors_is_bounded_unless_told_otherwise(engine: MemoryEngine, monkeypatch) -> None:
    """``wait_for_context()`` waited with no bound: a caller that gave none hung on a stalled embedder.

    Now it waits ``CONTEXT_WAIT_SECONDS`` unless told otherwise; a benchmark, which waits longer, raises
    when even that runs out rather than measuring a half-built namespace.
    """
    from hindsight_integrations.bench.settling import context_written, rebuilt
    from hindsight_integrations.core.errors import HindsightError
    from hindsight_integrations.core.storage.context_vectors import CONTEXT_WAIT_SECONDS
    from hindsight_integrations.core.storage.namespace_store import NamespaceStore

    default = inspect.signature(NamespaceStore.wait_for_context).parameters["timeout"].default
    assert default == CONTEXT_WAIT_SECONDS and math.isfinite(default)
    worker, release = _held_engine_worker(engine, monkeypatch)
    handle = engine.chroma.namespace("u1")
    try:
        _talk(engine)
        assert handle.wait_for_context(0.2) is False and worker.pending() == 3
        with pytest.raises(HindsightError, match=r"context vectors of namespace 'u1' were still being made after 0.2"):
            context_written(handle, seconds=0.2)
    finally:
        release.set()
    context_written(handle)
    assert handle.wait_for_context() is True and worker.pending() == 0

    stalled, settle = threading.Event(), handle.lexical.settle
    monkeypatch.setattr(handle.lexical, "settle", lambda: (stalled.wait(60), settle()))
    handle.lexical._rebuild_in_background()
    try:
        with pytest.raises(HindsightError, match=r"BM25 index of namespace 'u1' was still being rebuilt after 0.2 s"):
            rebuilt(handle, seconds=0.2)
    finally:
        stalled.set()
    rebuilt(handle)


def test_a_close_past_its_timeout_gives_up_the_queue_and_leaves_no_worker_running() -> None:
    """The worker is joined once its current batch is written, not left inside the model for the exit to kill."""
    embedding = threading.Event()
    batches: list[int] = []

    def embed(texts):  # type: ignore[no-untyped-def]
        embedding.set()
        time.sleep(0.05)  # a model run in progress when the close comes
        batches.append(len(texts))
        return _zeros(texts)

    worker = BackgroundContextVectors(embed, batch_size=1, linger_seconds=0.0)
    worker.submit(_Recording(), {f"m{i}": "a" for i in range(200)})
    assert embedding.wait(timeout=30)
    assert worker.close(timeout=0) is False  # given up: queued again when the namespace is next opened
    assert worker._worker is None  # the thread has returned: nothing of ours runs on
    assert worker.pending() == 0 and len(batches) < 200
