"""Upkeep on a schedule: every ``upkeep_interval_seconds``, one round over the namespaces served.

``UpkeepSchedule.run_due`` does what is due *now* by the engine's clock: it takes the round's
lease (``lease.py``: only one replica runs a round), runs ``MemoryEngine.upkeep`` on each
namespace, renewing the lease before each one, and marks the round done with the next one due
an interval after this one began. A test moves a ``ManualClock`` and calls ``run_due``; the
HTTP server's background thread (``start``) calls it, then waits on an event until the next
check, so ``stop`` ends it promptly and ``wake`` makes it check at once.
"""

from __future__ import annotations

import contextlib
import logging
import os
import socket
import threading
import uuid
from collections.abc import Callable, Iterable, Iterator
from datetime import timedelta
from typing import TYPE_CHECKING

from pydantic import BaseModel, Field

from ..errors import ConfigurationError
from ..redaction import describe_error
from .lease import UpkeepLease
from .runner import StepReport, UpkeepReport

if TYPE_CHECKING:
    from ..engine import MemoryEngine

log = logging.getLogger("hindsight.upkeep")

MAX_CHECK_SECONDS = 60.0
"""The longest the background thread waits between checks: another replica may have run a round meanwhile."""

ReportListener = Callable[[UpkeepReport, int], None]
"""Called with each namespace's report and its round number, as the round goes on (logs, metrics)."""


class UpkeepRound(BaseModel):
    """A round this replica ran: its number, the namespaces' reports, and whether it ran to the end."""

    round: int
    holder: str
    taken_over_from: str | None = Field(None, description="the replica whose lease expired mid-round")
    reports: list[UpkeepReport] = Field(default_factory=list)
    completed: bool = Field(True, description="false: stopped, or the lease was lost, before the last namespace")


def replica_id() -> str:
    """A name for this process as a lease holder: host, process id and a random suffix (unique per start)."""
    return f"{socket.gethostname()}-{os.getpid()}-{uuid.uuid4().hex[:6]}"


class UpkeepSchedule:
    """Runs upkeep rounds for ``engine`` when they are due, one replica per round.

    ``namespaces`` gives the namespaces to keep (called each round); by default every namespace
    in the store. Namespaces not (yet) in the store are skipped, never created. ``interval_seconds``
    and ``lease_seconds`` default to the engine's settings (``upkeep_interval_seconds``,
    ``upkeep_lease_seconds``); ``holder`` names this replica in the lease.
    """

    def __init__(
        self,
        engine: MemoryEngine,
        *,
        namespaces: Callable[[], Iterable[str]] | None = None,
        interval_seconds: float | None = None,
        lease_seconds: float | None = None,
        holder: str | None = None,
        on_report: ReportListener | None = None,
    ) -> None:
        settings = engine.settings
        interval = settings.upkeep_interval_seconds if interval_seconds is None else interval_seconds
        if not interval > 0:
            raise ConfigurationError(
                f"an upkeep schedule needs an interval above 0 seconds, got {interval} "
                "(HINDSIGHT_UPKEEP_INTERVAL_SECONDS)"
            )
        self.engine = engine
        self.interval = timedelta(seconds=interval)
        self.holder = holder or replica_id()
        self.lease = UpkeepLease(
            engine.chroma.client,
            holder=self.holder,
            seconds=settings.upkeep_lease_seconds if lease_seconds is None else lease_seconds,
            shared_locks=engine.chroma.shared_locks,
        )
        self._namespaces = namespaces or engine.namespaces
        self._listeners: list[ReportListener] = [on_report] if on_report is not None else []
        self._running = threading.Lock()
        self._holding = False
        self._stop = threading.Event()
        self._wake = threading.Event()
        self._thread: threading.Thread | None = None

    @property
    def holds_lease(self) -> bool:
        """Whether this replica is running a round now (it holds the lease)."""
        return self._holding

    def on_report(self, listener: ReportListener) -> None:
        """Also call ``listener`` with each namespace's report."""
        self._listeners.append(listener)

    def run_due(self) -> UpkeepRound | None:
        """Run the round due now, if this replica gets its lease; None when nothing is due here.

        Nothing is due when the last round finished less than an interval ago, when another
        replica's lease on the current round is still live, or when this process is already
        running a round in another thread.
        """
        writers = self.engine.chroma.writers
        if writers is not None and not writers.may_write():
            return None  # another replica owns this Chroma server and runs its upkeep (replicas.py)
        if not self._running.acquire(blocking=False):
            return None
        try:
            clock = self.engine.clock
            taken = self.lease.take(clock.now())
            if taken is None:
                return None
            self._holding = True
            done = UpkeepRound(round=taken.round, holder=self.holder, taken_over_from=taken.taken_over_from)
            if taken.taken_over_from:
                log.info(
                    "upkeep round taken over",
                    extra={"fields": {"round": taken.round, "holder": self.holder, "from": taken.taken_over_from}},
                )
            try:
                with self._heartbeat(taken.round):
                    done.completed = self._run_round(taken.round, done.reports)
            finally:
                self._holding = False
            return done
        finally:
            self._running.release()

    @contextlib.contextmanager
    def _heartbeat(self, number: int) -> Iterator[None]:
        """Renew the lease of round ``number`` every third of its duration while the block runs.

        One namespace's upkeep (an LLM call per cluster, a read of every record) can outlast the
        lease; renewing only between namespaces would let another replica take the round over
        and keep the same namespace beside this one.
        """
        beating = threading.Event()
        every = max(1.0, self.lease.duration.total_seconds() / 3)

        def beat() -> None:
            while not beating.wait(every):
                try:
                    if not self.lease.renew(number, self.engine.clock.now()):
                        return  # taken over: the round's next renewal between namespaces says so
                except Exception as exc:  # noqa: BLE001 - the store may be down: the lease then expires
                    log.warning("upkeep lease renewal failed: %s", describe_error(exc))

        thread = threading.Thread(target=beat, name="hindsight-upkeep-lease", daemon=True)
        thread.start()
        try:
            yield
        finally:
            beating.set()
            thread.join(timeout=5)

    def _run_round(self, number: int, reports: list[UpkeepReport]) -> bool:
        """Upkeep of each namespace in turn; whether the round ran to its end (then it is marked done)."""
        clock = self.engine.clock
        started = clock.now()
        try:
            wanted = list(dict.fromkeys(self._namespaces()))
            present = set(self.engine.namespaces())
            for namespace in wanted:
                if self._stop.is_set():
                    self.lease.release(number, clock.now())
                    return False
                if not self.lease.renew(number, clock.now()):
                    log.warning(
                        "upkeep lease lost mid-round; the replica that took it over finishes the round",
                        extra={"fields": {"round": number, "holder": self.holder}},
                    )
                    return False
                if namespace in present:
                    reports.append(self._upkeep(namespace, number))
        except BaseException:
            with contextlib.suppress(Exception):  # the store may be what failed; the lease then expires by itself
                self.lease.release(number, clock.now())
            raise
        return self.lease.finish(number, clock.now(), next_due=started + self.interval)

    def _upkeep(self, namespace: str, number: int) -> UpkeepReport:
        try:
            report = self.engine.upkeep(namespace)
        except Exception as exc:  # noqa: BLE001 - the namespace could not be opened: reported, the round goes on
            report = UpkeepReport(
                namespace=namespace,
                started_at=self.engine.clock.now(),
                steps=[StepReport(step="open", ok=False, error=f"{type(exc).__name__}: {exc}"[:500])],
            )
        for listener in self._listeners:
            try:
                listener(report, number)
            except Exception:  # a listener's failure (a log handler) must not end the round
                log.exception("an upkeep report listener failed")
        return report

    # -- the background thread ------------------------------------------------------------------
    def start(self) -> None:
        """Run ``run_due`` in a daemon thread now and then at each check until ``stop``."""
        if self._thread is not None:
            return
        self._stop.clear()
        self._thread = threading.Thread(target=self._loop, name="hindsight-upkeep", daemon=True)
        self._thread.start()

    def wake(self) -> None:
        """Make the background thread check now rather than at its next check."""
        self._wake.set()

    def stop(self, timeout: float = 30.0) -> bool:
        """Stop the thread (a namespace being kept is finished, the rest of the round left to the next holder).

        Returns whether the thread ended within ``timeout`` seconds.
        """
        self._stop.set()
        self._wake.set()
        thread, self._thread = self._thread, None
        if thread is None:
            return True
        thread.join(timeout)
        return not thread.is_alive()

    @property
    def check_seconds(self) -> float:
        """Seconds between the thread's checks: the interval, at most ``MAX_CHECK_SECONDS``."""
        return min(self.interval.total_seconds(), MAX_CHECK_SECONDS)

    def _loop(self) -> None:
        while True:
            self._wake.clear()
            if self._stop.is_set():
                return
            try:
                self.run_due()
            except Exception:  # the store did not answer: logged, tried again at the next check
                log.exception("upkeep check failed", extra={"fields": {"holder": self.holder}})
            self._wake.wait(self.check_seconds)


__all__ = ["MAX_CHECK_SECONDS", "ReportListener", "UpkeepRound", "UpkeepSchedule", "replica_id"]
