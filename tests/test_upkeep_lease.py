"""Scheduled upkeep, one replica per round (#16): the lease in the store, taken under the lock.

Two schedules share one store and one ``ManualClock``: embedded in one process (the in-process
lock), and two engines over one ``chroma run`` server with a throw-away PostgreSQL as the lock
service (as in test_races.py). The clock is moved by hand; nothing waits for time to pass.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from hindsight_integrations import ConfigurationError, MemoryEngine
from hindsight_integrations.core.clock import ManualClock
from hindsight_integrations.core.upkeep.lease import LEASE_COLLECTION
from hindsight_integrations.core.upkeep.runner import UpkeepReport
from hindsight_integrations.core.upkeep.schedule import UpkeepRound, UpkeepSchedule
from hindsight_integrations.processes import chroma_server, postgres_binaries, postgres_server

INTERVAL, LEASE = 3600.0, 600.0
NAMESPACES = ["n1", "n2", "n3"]
TRIALS = 20


@dataclass
class Replicas:
    clock: ManualClock
    a: UpkeepSchedule
    b: UpkeepSchedule


def _replicas(first: MemoryEngine, second: MemoryEngine, clock: ManualClock) -> Replicas:
    for n, namespace in enumerate(NAMESPACES):
        first.store(f"The build agent of team {n} is called heron-{n}.", namespace=namespace)
    options: dict[str, Any] = {"interval_seconds": INTERVAL, "lease_seconds": LEASE}
    return Replicas(clock, UpkeepSchedule(first, holder="a", **options), UpkeepSchedule(second, holder="b", **options))


@pytest.fixture
def embedded(store_path: Path, embedder) -> Replicas:
    """Two engines on one embedded store in one process."""
    clock = ManualClock()
    first = MemoryEngine(store=store_path, embedder=embedder, llm=False, clock=clock)
    second = MemoryEngine(store=store_path, embedder=embedder, llm=False, clock=clock)
    return _replicas(first, second, clock)


@pytest.fixture(scope="module")
def lock_service(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, str]]:
    if postgres_binaries() is None:
        pytest.skip("PostgreSQL is not installed here (Debian: apt-get install postgresql)")
    with chroma_server(tmp_path_factory.mktemp("chroma")) as chroma, postgres_server() as locks:
        yield chroma.url, locks


@pytest.fixture
def served(lock_service: tuple[str, str], embedder) -> Iterator[Replicas]:
    """Two engines over one Chroma server, their lease's read-check-write serialised by Postgres."""
    url, locks = lock_service
    clock = ManualClock()
    first = MemoryEngine(chroma_url=url, lock_url=locks, embedder=embedder, llm=False, clock=clock)
    second = MemoryEngine(chroma_url=url, lock_url=locks, embedder=embedder, llm=False, clock=clock)
    yield _replicas(first, second, clock)
    for namespace in NAMESPACES:
        first.drop_namespace(namespace)
    first.chroma.client.delete_collection(LEASE_COLLECTION)  # the next test's schedule starts afresh


@pytest.fixture(params=["embedded", pytest.param("served", marks=pytest.mark.server)])
def replicas(request: pytest.FixtureRequest) -> Replicas:
    """The same two schedules embedded in one process, and as two engines over one Chroma server."""
    return request.getfixturevalue(request.param)


def _race(replicas: Replicas) -> list[UpkeepRound | None]:
    """Both replicas check at the same moment, as two servers' threads would."""
    start = threading.Barrier(2)

    def check(schedule: UpkeepSchedule) -> UpkeepRound | None:
        start.wait()
        return schedule.run_due()

    with ThreadPoolExecutor(2) as pool:
        return list(pool.map(check, [replicas.a, replicas.b]))


def test_exactly_one_of_two_schedules_runs_each_due_round(replicas: Replicas) -> None:
    done: list[int] = []
    for trial in range(TRIALS):
        ran = [r for r in _race(replicas) if r is not None]
        assert len(ran) == 1, (trial, ran)  # one replica ran the round, the other found it taken or done
        (round_,) = ran
        assert round_.completed and [r.namespace for r in round_.reports] == NAMESPACES
        done.append(round_.round)
        assert _race(replicas) == [None, None]  # done: not due again until an interval has passed
        replicas.clock.advance(seconds=INTERVAL - 1)
        assert replicas.a.run_due() is None and replicas.b.run_due() is None
        replicas.clock.advance(seconds=1)
    assert done == list(range(1, TRIALS + 1))  # no round ran twice, none was skipped


def test_a_dead_holders_round_is_taken_over_once_its_lease_expires(replicas: Replicas) -> None:
    clock, a, b = replicas.clock, replicas.a, replicas.b
    taken = a.lease.take(clock.now())  # replica a takes round 1 ... and dies before running it
    assert taken is not None and taken.round == 1
    assert b.run_due() is None  # a's lease is live
    clock.advance(seconds=LEASE - 1)
    assert b.run_due() is None
    clock.advance(seconds=1)
    over = b.run_due()  # expired: b takes the same round over and runs it to the end
    assert over is not None and (over.round, over.taken_over_from, over.completed) == (1, "a", True)
    assert [r.namespace for r in over.reports] == NAMESPACES
    # a comes back: it holds nothing, and round 1 is done
    assert not a.lease.renew(1, clock.now()) and not a.lease.finish(1, clock.now(), next_due=clock.now())
    assert a.run_due() is None and b.run_due() is None
    state = b.lease.state()
    assert (state.round, state.done, state.holder) == (1, True, "b")
    assert state.next_due == clock.now() + timedelta(seconds=INTERVAL)  # an interval after the round began


def test_the_holder_renews_its_lease_while_the_round_lasts(embedded: Replicas) -> None:
    """Each namespace takes 'longer' than the lease (the clock moves in the report listener): renewals keep it."""
    clock, a, b = embedded.clock, embedded.a, embedded.b
    refused: list[UpkeepRound | None] = []

    def slow_namespace(report: Any, number: int) -> None:
        clock.advance(seconds=LEASE * 0.9)
        refused.append(b.run_due())  # b checks mid-round: a's renewed lease is live

    a.on_report(slow_namespace)
    ran = a.run_due()
    assert ran is not None and ran.completed and len(ran.reports) == len(NAMESPACES)
    assert refused == [None, None, None]  # the round lasted 2.7 leases and b never took it


def test_a_holder_that_lost_its_lease_stops_and_the_new_holder_finishes(embedded: Replicas) -> None:
    clock, a, b = embedded.clock, embedded.a, embedded.b
    taken_over: list[UpkeepRound | None] = []

    def stalled(report: Any, number: int) -> None:
        if not taken_over:
            clock.advance(seconds=LEASE + 1)  # a stalls past its lease after the first namespace
            taken_over.append(b.run_due())

    a.on_report(stalled)
    ran = a.run_due()
    assert ran is not None and not ran.completed and [r.namespace for r in ran.reports] == ["n1"]
    (over,) = taken_over
    assert over is not None and over.round == ran.round and over.taken_over_from == "a" and over.completed
    assert b.lease.state().done and b.lease.state().holder == "b"


def test_the_background_thread_runs_what_is_due_and_stops_promptly(embedded: Replicas) -> None:
    clock, a = embedded.clock, embedded.a
    seen: list[tuple[str, int]] = []
    three = threading.Event()

    def heard(report: Any, number: int) -> None:
        seen.append((report.namespace, number))
        if len(seen) % len(NAMESPACES) == 0:
            three.set()

    a.on_report(heard)
    a.start()
    try:
        assert three.wait(60)  # round 1 is due at once
        three.clear()
        clock.advance(seconds=INTERVAL)
        a.wake()  # checks now instead of at its next check
        assert three.wait(60)
    finally:
        assert a.stop(timeout=30)  # the thread ends: it waits on an event, never sleeps
    assert seen == [(n, 1) for n in NAMESPACES] + [(n, 2) for n in NAMESPACES]
    assert not a.holds_lease


def test_namespaces_not_in_the_store_are_skipped_not_created(embedded: Replicas) -> None:
    engine = embedded.a.engine
    only = UpkeepSchedule(engine, namespaces=lambda: ["n2", "ghost"], interval_seconds=INTERVAL, holder="c")
    ran = only.run_due()
    assert ran is not None and [r.namespace for r in ran.reports] == ["n2"]
    assert "ghost" not in engine.namespaces() and LEASE_COLLECTION not in engine.namespaces()


def test_settings_are_validated_with_what_to_do(store_path: Path, embedder) -> None:
    with pytest.raises(ConfigurationError, match=r"upkeep_interval_seconds.*must be 0 \(no scheduled upkeep\)"):
        MemoryEngine(store=store_path, embedder=embedder, llm=False, upkeep_interval_seconds=0.5)
    with pytest.raises(ConfigurationError, match="upkeep_lease_seconds"):
        MemoryEngine(store=store_path, embedder=embedder, llm=False, upkeep_lease_seconds=0)
    off = MemoryEngine(store=store_path, embedder=embedder, llm=False, upkeep_interval_seconds=0)
    with pytest.raises(ConfigurationError, match="HINDSIGHT_UPKEEP_INTERVAL_SECONDS"):
        UpkeepSchedule(off)


def test_a_stopping_replica_gives_its_round_up_at_once(embedded: Replicas) -> None:
    a, b = embedded.a, embedded.b
    a.on_report(lambda report, number: a.stop())  # the server stops after the first namespace
    ran = a.run_due()
    assert ran is not None and not ran.completed and [r.namespace for r in ran.reports] == ["n1"]
    over = b.run_due()  # no need to wait for the lease to expire
    assert over is not None and (over.round, over.taken_over_from, over.completed) == (ran.round, "a", True)


def test_the_lease_is_renewed_while_one_namespace_takes_long(embedded: Replicas, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """A namespace's upkeep (LLM calls, a read of every record) may outlast the lease: a heartbeat renews it."""
    short = UpkeepSchedule(embedded.a.engine, holder="a", interval_seconds=INTERVAL, lease_seconds=3.0)
    other = UpkeepSchedule(embedded.b.engine, holder="b", interval_seconds=INTERVAL, lease_seconds=3.0)
    renewed = threading.Event()
    seen: list[Any] = []
    real_renew = short.lease.renew

    def renew(number: int, now: Any) -> bool:
        held = real_renew(number, now)
        if short.lease.state().expires_at > embedded.clock.now() + timedelta(seconds=2):
            renewed.set()
        return held

    monkeypatch.setattr(short.lease, "renew", renew)

    def slow_upkeep(namespace: str, number: int):  # type: ignore[no-untyped-def]
        embedded.clock.advance(seconds=2)  # the lease's first 3 s are nearly gone
        assert renewed.wait(30)  # the heartbeat (every second here) renewed it meanwhile
        seen.append(other.run_due())  # so the other replica cannot take the round over
        return UpkeepReport(namespace=namespace, started_at=embedded.clock.now())

    monkeypatch.setattr(short, "_upkeep", slow_upkeep)
    done = short.run_due()
    assert done is not None and done.completed and seen and all(s is None for s in seen)
