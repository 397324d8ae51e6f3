"""Racing writers lose nothing (#15): updates compose, a forget stays a forget, a request id is stored once.

Within one process the namespace's write lock serialises read-decide-write sequences; across
HTTP replicas sharing one Chroma server, a PostgreSQL advisory lock does (``HINDSIGHT_LOCK_URL``,
core/storage/locks.py), and without one the second replica refuses its writes (#24: the writer
registry, core/storage/replicas.py). Each race runs many trials with both writers released together.
"""

from __future__ import annotations

import threading
import uuid
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from hindsight_integrations import MemoryEngine, Status
from hindsight_integrations.core.errors import MemoryNotFoundError
from hindsight_integrations.mcp import MemoryClient, MemoryToolError
from hindsight_integrations.processes import chroma_server, postgres_binaries, postgres_server

from .mcp_support import http_server

TRIALS = 50


def _together(*calls: Callable[[], Any]) -> list[Any]:
    """Run ``calls`` at the same moment in threads; their results (or the exceptions they raised)."""
    start = threading.Barrier(len(calls))

    def run(call: Callable[[], Any]) -> Any:
        start.wait()
        try:
            return call()
        except Exception as exc:
            return exc

    with ThreadPoolExecutor(len(calls)) as pool:
        return list(pool.map(run, calls))


def test_racing_updates_and_forgets_in_one_process(engine: MemoryEngine) -> None:
    for n in range(TRIALS):
        _one_process_trial(engine, n)


def _one_process_trial(engine: MemoryEngine, n: int) -> None:
    (memory,) = engine.store_memories([f"Trial {n}: the staging server is called kestrel-{n}."], namespace="u1").stored
    _together(
        lambda: engine.update(memory.id, namespace="u1", metadata={"a": n}),
        lambda: engine.update(memory.id, namespace="u1", metadata={"b": n}),
        lambda: engine.update(memory.id, namespace="u1", importance=0.95),
    )
    after = engine.get(memory.id, namespace="u1")
    assert after.metadata.get("a") == n and after.metadata.get("b") == n and after.importance == 0.95
    outcomes = _together(
        lambda: engine.forget(memory.id, namespace="u1"),
        lambda: engine.update(memory.id, namespace="u1", content=f"Trial {n}: the server is now osprey-{n}."),
    )
    assert engine.get(memory.id, namespace="u1").status is Status.DELETED  # never brought back
    assert not isinstance(outcomes[0], Exception)
    assert not isinstance(outcomes[1], Exception) or isinstance(outcomes[1], MemoryNotFoundError)


def test_two_engines_of_one_process_on_one_store_share_its_locks(
    engine: MemoryEngine, store_path: Path, embedder
) -> None:
    """Two in-process clients, or an adapter's engine beside the application's: one writer, so one lock."""
    with MemoryEngine(store=store_path, embedder=embedder, llm=False) as other:
        for n in range(10):
            _two_engine_trial(engine, other, n)


def test_the_shared_namespace_lock_is_reentered_by_its_holder_and_excludes_other_threads() -> None:
    """A namespace reopened under its own write lock takes it again as it opens: that must not wait for itself."""
    from hindsight_integrations.core.storage.locks import NamespaceLock

    first, second = (NamespaceLock("u1", None, store="path:/somewhere") for _ in range(2))
    other_entered = threading.Event()

    def other() -> None:
        with second:
            other_entered.set()

    with first:
        with second:  # the same thread: re-entered
            assert first.locked()
        assert first.locked()  # still held by the outer block
        rival = threading.Thread(target=other)
        rival.start()
        assert not other_entered.wait(0.2)  # another thread waits while this one holds it
    assert other_entered.wait(10)
    rival.join(10)
    assert not first.locked()


def _two_engine_trial(engine: MemoryEngine, other: MemoryEngine, n: int) -> None:
    (memory,) = engine.store_memories([f"Trial {n}: the build agent is called heron-{n}."], namespace="u1").stored
    other.get(memory.id, namespace="u1")
    _together(
        lambda: engine.update(memory.id, namespace="u1", metadata={"a": n}),
        lambda: other.update(memory.id, namespace="u1", metadata={"b": n}),
    )
    after = engine.get(memory.id, namespace="u1")
    assert after.metadata.get("a") == n and after.metadata.get("b") == n, f"trial {n}: {after.metadata}"


@pytest.fixture(scope="module")
def replicas(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[MemoryClient, MemoryClient]]:
    """Two HTTP replicas of our server over one ``chroma run`` server, writes serialised by Postgres."""
    if postgres_binaries() is None:
        pytest.skip("PostgreSQL is not installed here (Debian: apt-get install postgresql)")
    token = "race-token-" + uuid.uuid4().hex
    with chroma_server(tmp_path_factory.mktemp("chroma")) as chroma, postgres_server() as locks:
        env = {"HINDSIGHT_CHROMA_URL": chroma.url, "HINDSIGHT_LOCK_URL": locks}
        store = tmp_path_factory.mktemp("unused-store")
        with (
            http_server(store, tokens={token: "racers"}, env=env) as a,
            http_server(store, tokens={token: "racers"}, env=env) as b,
            MemoryClient.http(a + "/mcp", token=token) as first,
            MemoryClient.http(b + "/mcp", token=token) as second,
        ):
            yield first, second


@pytest.mark.server
def test_racing_writes_across_two_replicas_lose_nothing(replicas: tuple[MemoryClient, MemoryClient]) -> None:
    for n in range(TRIALS):
        _two_replica_trial(*replicas, n)


def _two_replica_trial(first: MemoryClient, second: MemoryClient, n: int) -> None:
    tag = uuid.uuid4().hex[:8]
    memory_id = first.store(f"Trial {tag}: the build agent is called heron-{n}.").ids[0]
    _together(lambda: first.update(memory_id, metadata={"a": n}), lambda: second.update(memory_id, metadata={"b": n}))
    record = {r.id: r for r in second.list(limit=1000)}[memory_id]
    assert record.metadata.get("a") == n and record.metadata.get("b") == n, (n, record.metadata)

    _together(lambda: first.forget(memory_id), lambda: second.update(memory_id, importance=0.99))
    statuses = {r.id: r.status for r in first.list(include_history=True, limit=1000)}
    assert statuses.get(memory_id, Status.DELETED) is Status.DELETED  # a forget is never undone

    request_id, text = f"race-{tag}", f"Trial {tag}: the release train leaves on Thursday."
    _together(lambda: first.store(text, request_id=request_id), lambda: second.store(text, request_id=request_id))
    same_text = f"Trial {tag}: the on-call phone is in the blue drawer."
    _together(lambda: first.store(same_text), lambda: second.store(same_text))
    active = [r for r in first.list(limit=1000) if tag in r.content]
    assert sum("release train" in r.content for r in active) == 1  # the request id, stored once
    assert sum("blue drawer" in r.content for r in active) == 1  # the same text, one active copy


@pytest.fixture(scope="module")
def unlocked_replicas(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[MemoryClient, MemoryClient]]:
    """The same two replicas without ``HINDSIGHT_LOCK_URL``: the second one finds the first and refuses writes."""
    token = "race-token-" + uuid.uuid4().hex
    with chroma_server(tmp_path_factory.mktemp("chroma")) as chroma:
        env = {"HINDSIGHT_CHROMA_URL": chroma.url}
        store = tmp_path_factory.mktemp("unused-store")
        with (
            http_server(store, tokens={token: "racers"}, env=env) as a,
            http_server(store, tokens={token: "racers"}, env=env) as b,
            MemoryClient.http(a + "/mcp", token=token) as first,
            MemoryClient.http(b + "/mcp", token=token) as second,
        ):
            yield first, second


@pytest.mark.server
def test_without_a_lock_service_the_second_replica_refuses_its_writes_so_nothing_is_lost(
    unlocked_replicas: tuple[MemoryClient, MemoryClient],
) -> None:
    """Before the writer registry (core/storage/replicas.py) these races lost an update in 15 of 15 trials."""
    for n in range(TRIALS // 5):
        _refused_trial(*unlocked_replicas, n)


def _refused(outcome: Any) -> bool:
    return isinstance(outcome, MemoryToolError) and "HINDSIGHT_LOCK_URL" in outcome.message


def _refused_trial(first: MemoryClient, second: MemoryClient, n: int) -> None:
    tag = uuid.uuid4().hex[:8]
    memory_id = first.store(f"Trial {tag}: the build agent is called heron-{n}.").ids[0]
    outcomes = _together(
        lambda: first.update(memory_id, metadata={"a": n}), lambda: second.update(memory_id, metadata={"b": n})
    )
    assert not isinstance(outcomes[0], Exception) and _refused(outcomes[1]), outcomes
    record = {r.id: r for r in second.list(limit=1000)}[memory_id]
    assert record.metadata.get("a") == n and "b" not in record.metadata, (n, record.metadata)

    outcomes = _together(lambda: first.forget(memory_id), lambda: second.update(memory_id, importance=0.99))
    assert not isinstance(outcomes[0], Exception) and _refused(outcomes[1]), outcomes
    statuses = {r.id: r.status for r in first.list(include_history=True, limit=1000)}
    assert statuses.get(memory_id, Status.DELETED) is Status.DELETED

    request_id, text = f"race-{tag}", f"Trial {tag}: the release train leaves on Thursday."
    outcomes = _together(
        lambda: first.store(text, request_id=request_id), lambda: second.store(text, request_id=request_id)
    )
    assert not isinstance(outcomes[0], Exception) and _refused(outcomes[1]), outcomes
    active = [r for r in first.list(limit=1000) if tag in r.content]
    assert sum("release train" in r.content for r in active) == 1


def test_a_bad_lock_url_fails_at_start_with_what_to_do(store_path: Path, embedder) -> None:
    from hindsight_integrations.core.errors import ConfigurationError, StoreUnavailableError
    from hindsight_integrations.processes import free_port

    with pytest.raises(ConfigurationError, match="HINDSIGHT_LOCK_URL must be a postgresql:// URL"):
        MemoryEngine(store=store_path, embedder=embedder, llm=False, lock_url="redis://127.0.0.1:6379")
    with pytest.raises(StoreUnavailableError, match=r"lock database \(HINDSIGHT_LOCK_URL\) did not answer"):
        MemoryEngine(
            store=store_path, embedder=embedder, llm=False, lock_url=f"postgresql://postgres@127.0.0.1:{free_port()}/x"
        )


@pytest.mark.server
def test_the_load_benchmark_runs_two_replicas_and_loses_nothing() -> None:
    from hindsight_integrations.bench.load import load_table, run_load

    result = run_load(clients=3, operations=8)
    if result["errors"] or result["calls"] != 24:
        # Every error in full, then what the replicas logged: pytest cuts a long assertion message.
        report = [f"{result['calls']} of 24 calls succeeded; errors:", *result["error_texts"], "replica log lines:"]
        pytest.fail("\n".join([*report, *result["replica_problems"]]), pytrace=False)
    assert result["acknowledged_writes"] > 0 and result["lost_writes"] == 0
    assert result["lock_database"] is (postgres_binaries() is not None)
    assert "lost" in load_table(result) and result["latency_ms"]["recall"]["p50"] > 0
