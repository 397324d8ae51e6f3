"""One clock for everything that depends on the time: recency, expiry, decay, archive, upkeep.

Memory ages: a meeting "tomorrow" expires, an idle episode decays, a month-old fact ranks below
today's. Every such path asks the engine's clock instead of the wall clock, so a test or a
benchmark can move time by a week with ``ManualClock.advance`` instead of waiting a week, and a
scripted history replays months in seconds. ``SystemClock`` is the default.
"""

from __future__ import annotations

import threading
from datetime import UTC, datetime, timedelta
from typing import Protocol, runtime_checkable


@runtime_checkable
class Clock(Protocol):
    """Tells the current time, timezone-aware UTC (every stored time is UTC)."""

    def now(self) -> datetime:
        """The current time."""
        ...


class SystemClock:
    """The wall clock: what an engine uses unless given another."""

    def now(self) -> datetime:
        """``datetime.now(UTC)``."""
        return datetime.now(UTC)

    def __repr__(self) -> str:
        return "SystemClock()"


class ManualClock:
    """A clock that stands still until moved: for tests, benchmarks and replayed histories.

    ``now`` returns the same moment until ``advance`` or ``set`` moves it; it never goes
    backwards, since stored times (``updated_at`` watermarks, validity) assume time only grows.
    Thread-safe: a server's scheduler thread and a test can share one.
    """

    def __init__(self, start: datetime | None = None) -> None:
        self._now = _aware(start) if start is not None else datetime.now(UTC)
        self._lock = threading.Lock()

    def now(self) -> datetime:
        """The clock's current moment."""
        with self._lock:
            return self._now

    def advance(self, delta: timedelta | None = None, **parts: float) -> datetime:
        """Move forward by ``delta`` or by ``timedelta(**parts)`` (``days=7``); returns the new moment."""
        step = (delta or timedelta()) + timedelta(**parts)
        if step < timedelta():
            raise ValueError(f"a clock only moves forward, not by {step}")
        with self._lock:
            self._now += step
            return self._now

    def set(self, moment: datetime) -> datetime:
        """Jump to ``moment`` (not earlier than now); returns it."""
        moment = _aware(moment)
        with self._lock:
            if moment < self._now:
                raise ValueError(f"a clock only moves forward: {moment.isoformat()} is before {self._now.isoformat()}")
            self._now = moment
            return moment

    def __repr__(self) -> str:
        return f"ManualClock({self.now().isoformat()})"


def _aware(moment: datetime) -> datetime:
    """``moment`` in UTC; a naive datetime is taken as UTC, as stored times are."""
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)


__all__ = ["Clock", "ManualClock", "SystemClock"]
