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
