"""Recall's access counts, queued and written in the background (``storage/access.py``)."""

from __future__ import annotations

import threading

from hindsight_integrations.core.clock import SystemClock
from hindsight_integrations.core.storage.access import AccessRecorder


class _Sink:
    """Takes counts; the first write waits until ``release`` is set."""

    def __init__(self) -> None:
        self.release = threading.Event()
        self.writing = threading.Event()
        self.written: list[dict[str, tuple[int, float]]] = []

    def apply_access_counts(self, counts: dict[str, tuple[int, float]]) -> None:
        self.writing.set()
        self.release.wait(30)
        self.written.append(counts)


def test_a_flush_returns_only_once_a_flush_already_writing_has_written() -> None:
    """A caller's flush is a barrier: the daemon's write in flight counts as not written yet."""
    recorder = AccessRecorder(interval=3600)
    sink = _Sink()
    recorder.record(sink, ["m1", "m2"], SystemClock().now())
    in_flight = threading.Thread(target=recorder.flush)
    in_flight.start()
    assert sink.writing.wait(30)
    caller = threading.Thread(target=recorder.flush)
    caller.start()
    caller.join(0.3)
    assert caller.is_alive() and not sink.written  # nothing was left to it, yet it waits for the write in flight
    sink.release.set()
    caller.join(30)
    in_flight.join(30)
    assert [sorted(w) for w in sink.written] == [["m1", "m2"]]
    assert not recorder.flush()  # nothing is counted twice


class _LateRecorder(AccessRecorder):
    """Records one more count right after the daemon's first flush that found nothing, as another thread may."""

    def __init__(self, sink: _Sink) -> None:
        super().__init__(interval=0.01)
        self._sink, self._late = sink, True

    def flush(self) -> bool:
        found = super().flush()
        if not found and self._late and threading.current_thread().name == "hindsight-access":
            self._late = False
            self.record(self._sink, ["late"], SystemClock().now())  # the daemon is still alive to ``record``
        return found


def test_a_count_recorded_as_the_daemon_stops_is_still_written() -> None:
    sink = _Sink()
    sink.release.set()
    recorder = _LateRecorder(sink)
    recorder.record(sink, ["early"], SystemClock().now())
    deadline = threading.Event()
    for _ in range(300):
        if any("late" in w for w in sink.written):
            break
        deadline.wait(0.01)
    assert [sorted(w) for w in sink.written] == [["early"], ["late"]]


def test_recall_counts_applied_while_an_edit_is_under_way_are_not_written_over(tmp_path, monkeypatch) -> None:
    """The daemon's write waits for an edit between its read and its write, which would put back the counts it read."""
    from hindsight_integrations import MemoryEngine
    from hindsight_integrations.core.model.records import unpack
    from hindsight_integrations.core.storage.namespace_store import NamespaceStore

    engine = MemoryEngine(store=tmp_path / "store", llm=False)
    said = "My order number for the new standing desk is 48213, placed on Monday."  # English beyond doubt: one model
    memory_id = engine.store(said, namespace="u1").stored[0].id
    for _ in range(3):
        engine.recall("order number", namespace="u1")  # three counts queued
    real = NamespaceStore.rewrite
    flushing: list[threading.Thread] = []

    def rewrite_while_the_daemon_flushes(self: NamespaceStore, *args: object, **kwargs: object) -> None:
        daemon = threading.Thread(target=engine.chroma._access.flush)  # the daemon's turn, mid-edit
        daemon.start()
        daemon.join(1.0)  # done by now unless it waits for the edit
        flushing.append(daemon)
        real(self, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(NamespaceStore, "rewrite", rewrite_while_the_daemon_flushes)
    engine.update(memory_id, namespace="u1", content=said.replace("placed on Monday", "shipped on Friday"))
    monkeypatch.setattr(NamespaceStore, "rewrite", real)
    for daemon in flushing:
        daemon.join(30)
    engine.chroma.flush()
    stored = engine.chroma.namespace("u1").collection.get(ids=[memory_id], include=["metadatas", "documents"])
    assert unpack(stored["documents"][0], stored["metadatas"][0])["access_count"] == 3  # in Chroma
    assert engine.get(memory_id, namespace="u1").access_count == 3  # and in this process's copies
    assert engine.chroma.namespace("u1").facts.lookup([memory_id])[memory_id].access_count == 3
