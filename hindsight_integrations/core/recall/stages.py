"""Where a recall's time goes, stage by stage (``hindsight bench peers`` reports it for hindsight's rows).

Recall (``pipeline.py``) marks the end of each stage on a ``Stopwatch``. Outside a
``timing_stages()`` block the stopwatch is a shared one that does nothing, so recall pays one
context-variable read for being measurable; inside one, each stage's seconds go to the block's
``StageTimes``. A context variable rather than an engine argument: measuring is the caller's
business, and a benchmark can time the public ``MemoryEngine.recall`` exactly as users call it.
Stages running in worker threads (BM25, the context-vector search) are timed as the wait for
them in the recall's own thread, which is what they cost the caller.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

import numpy as np


class StageTimes:
    """Seconds per stage over many recalls; thread-safe."""

    def __init__(self) -> None:
        self._seconds: dict[str, list[float]] = {}
        self._lock = threading.Lock()

    def add(self, stage: str, seconds: float) -> None:
        """Count ``seconds`` spent in ``stage`` by one recall."""
        with self._lock:
            self._seconds.setdefault(stage, []).append(seconds)

    def summary(self) -> dict[str, dict[str, float]]:
        """Per stage, in the order first seen: recalls timed, mean, p50 and p99 in ms."""
        with self._lock:
            found = {stage: np.asarray(values) * 1000 for stage, values in self._seconds.items()}
        return {
            stage: {
                "recalls": int(ms.size),
                "mean_ms": round(float(ms.mean()), 3),
                "p50_ms": round(float(np.percentile(ms, 50)), 3),
                "p99_ms": round(float(np.percentile(ms, 99)), 3),
            }
            for stage, ms in found.items()
        }


class Stopwatch:
    """Laps of one recall: ``lap(stage)`` ends ``stage`` and starts the next."""

    def __init__(self, times: StageTimes | None) -> None:
        self._times = times
        self._last = time.perf_counter() if times is not None else 0.0

    def lap(self, stage: str) -> None:
        """The time since the last lap (or the start) was ``stage``'s."""
        if self._times is None:
            return
        now = time.perf_counter()
        self._times.add(stage, now - self._last)
        self._last = now


_IDLE = Stopwatch(None)
_current: ContextVar[StageTimes | None] = ContextVar("hindsight_recall_stages", default=None)


def stopwatch() -> Stopwatch:
    """A stopwatch for the recall starting now: timing into the enclosing ``timing_stages`` block, if any."""
    times = _current.get()
    return _IDLE if times is None else Stopwatch(times)


@contextmanager
def timing_stages(times: StageTimes | None = None) -> Iterator[StageTimes]:
    """Time the stages of every recall made in this block (this thread or task) into ``times`` (a new one if None)."""
    times = times if times is not None else StageTimes()
    token = _current.set(times)
    try:
        yield times
    finally:
        _current.reset(token)


__all__ = ["StageTimes", "Stopwatch", "stopwatch", "timing_stages"]
