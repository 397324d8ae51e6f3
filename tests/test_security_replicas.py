"""Two replicas on one Chroma server without a shared lock service refuse to lose data (#24, finding 10).

Without ``HINDSIGHT_LOCK_URL`` two replicas lost a metadata update in 15 of 15 races and
brought a forgotten memory back in 8 of 15, and neither said anything. Now every process
writing through a Chroma server has an entry in the store's writer registry
(``core/storage/replicas.py``): a replica that finds another live writer it shares no lock database
with refuses its writes with an error naming ``HINDSIGHT_LOCK_URL``, and writes again once that
writer stops or its entry expires. Everything here runs on real processes: ``chroma run``, our
HTTP server, the CLI, throw-away PostgreSQL servers.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path

import chromadb
import pytest

from hindsight_integrations.core.errors import ConfigurationError, ReplicaConflictError
from hindsight_integrations.core.storage.replicas import WriterEntry, WriterRegistry, decide
from hindsight_integrations.mcp import MemoryClient, MemoryToolError
from hindsight_integrations.processes import chroma_server, free_port, postgres_binaries, postgres_server, running

from .mcp_support import REPO, SERVER_CMD, server_env

TOKEN = "replica-security-token-" + uuid.uuid4().hex  # 55 characters
EXPIRY = (
    3.0  # HINDSIGHT_REPLICA_EXPIRY_SECONDS in these tests: a killed replica's entry is gone 3 s after its last beat
)

needs_postgres = pytest.mark.skipif(postgres_binaries() is None, reason="PostgreSQL is not installed here")


@contextmanager
def _replica(
    chroma_url: str, log: Path, *, lock_url: str | None = None
) -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    """One ``--transport http`` replica on ``chroma_url``; yields its base URL and process."""
    port = free_port()
    extra = {
        "HINDSIGHT_CHROMA_URL": chroma_url,
        "HINDSIGHT_TOKENS": f"{TOKEN}=team",
        "HINDSIGHT_REPLICA_EXPIRY_SECONDS": str(EXPIRY),
        "HINDSIGHT_UPKEEP_INTERVAL_SECONDS": "0",
    }
    if lock_url:
        extra["HINDSIGHT_LOCK_URL"] = lock_url
    env = server_env(log.parent / "unused-store", **extra)
    if not lock_url:
        env.pop("HINDSIGHT_LOCK_URL", None)
    base = f"http://127.0.0.1:{port}"
    with (
        open(log, "wb") as sink,
        running(
            [*SERVER_CMD, "--transport", "http", "--port", str(port)],
            health_url=f"{base}/health",
            env=env,
            log=sink,
            cwd=REPO,
        ) as process,
    ):
        yield base, process


def _client(base: str) -> MemoryClient:
    return MemoryClient.http(base + "/mcp", token=TOKEN)


def _log_lines(log: Path) -> list[dict]:
    return [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines() if line.startswith("{")]


def _refusals(log: Path) -> list[dict]:
    return [line for line in _log_lines(log) if line.get("event", "").startswith("writes refused")]


def test_a_second_replica_without_a_lock_refuses_its_writes_and_the_first_keeps_writing(tmp_path: Path) -> None:
    with (
        chroma_server(tmp_path / "chroma") as chroma,
        _replica(chroma.url, tmp_path / "a.log") as (a, _),
        _client(a) as first,
    ):
        memory_id = first.store("The build agent is called heron.").ids[0]
        with _replica(chroma.url, tmp_path / "b.log") as (b, _), _client(b) as second:
            for n in range(3):
                with pytest.raises(MemoryToolError) as refused:
                    second.store(f"The second replica's note number {n}.")
                assert "HINDSIGHT_LOCK_URL" in refused.value.message and "another replica" in refused.value.message
                assert refused.value.error_type == "ReplicaConflictError"  # readable, not an internal error
            for change in (
                lambda: second.update(memory_id, metadata={"b": 1}),
                lambda: second.forget(memory_id),
                lambda: second.record_turn("A turn sent to the second replica.", session_id="s1"),
            ):
                with pytest.raises(MemoryToolError, match="HINDSIGHT_LOCK_URL"):
                    change()
            assert second.recall("what is the build agent called?").records[0].id == memory_id  # reads work
            first.update(memory_id, metadata={"a": 1})  # the first replica writes on, undisturbed
            first.store("The first replica keeps writing while the second is up.")
        first.store("And after the second replica stopped.")
        contents = [r.content for r in first.list(include_history=True, limit=100)]
        record = {r.id: r for r in first.list(limit=100)}[memory_id]
    assert not any("note number" in c for c in contents) and len(contents) == 3
    assert record.metadata.get("a") == 1 and "b" not in record.metadata
    assert len(_refusals(tmp_path / "b.log")) == 1  # one warning, not one per refused call
    warning = _refusals(tmp_path / "b.log")[0]
    assert warning["level"] == "warning" and "HINDSIGHT_LOCK_URL" in warning["fix"]
    assert not _refusals(tmp_path / "a.log")
    ready = next(line for line in _log_lines(tmp_path / "b.log") if line.get("event") == "ready")
    assert ready["writes"].startswith("refused")  # said at start-up, before any write


def test_when_the_writing_replica_dies_the_other_writes_once_its_entry_expires(tmp_path: Path) -> None:
    with chroma_server(tmp_path / "chroma") as chroma, _replica(chroma.url, tmp_path / "a.log") as (a, first_process):
        with _client(a) as first:
            first.store("The staging server is called kestrel.")
        with _replica(chroma.url, tmp_path / "b.log") as (b, _), _client(b) as second:
            with pytest.raises(MemoryToolError, match="HINDSIGHT_LOCK_URL"):
                second.store("Written while the first replica is alive.")
            first_process.send_signal(signal.SIGKILL)  # no clean exit: its registry entry stays until it expires
            first_process.wait()
            deadline = time.monotonic() + 60 * EXPIRY
            while True:
                try:
                    stored = second.store("Written once the first replica's entry expired.")
                    break
                except MemoryToolError as exc:
                    assert "HINDSIGHT_LOCK_URL" in exc.message, exc
                    assert time.monotonic() < deadline, "writes were never allowed again"
                    time.sleep(0.5)
            assert stored.ids and {r.id for r in second.list(limit=100)} >= set(stored.ids)
    events = [line.get("event", "") for line in _log_lines(tmp_path / "b.log")]
    assert any(e.startswith("writes refused") for e in events) and any(
        e.startswith("writes allowed again") for e in events
    )


@needs_postgres
def test_with_one_lock_database_both_replicas_write(tmp_path: Path) -> None:
    with (
        chroma_server(tmp_path / "chroma") as chroma,
        postgres_server() as locks,
        _replica(chroma.url, tmp_path / "a.log", lock_url=locks) as (a, _),
        _replica(chroma.url, tmp_path / "b.log", lock_url=locks) as (b, _),
        _client(a) as first,
        _client(b) as second,
    ):
        memory_id = first.store("The release train leaves on Thursday.").ids[0]
        second.store("The on-call phone is in the blue drawer.")
        second.update(memory_id, metadata={"b": 1})
        first.update(memory_id, metadata={"a": 1})
        metadata = {r.id: r for r in second.list(limit=100)}[memory_id].metadata
        assert metadata.get("a") == 1 and metadata.get("b") == 1
    assert not _refusals(tmp_path / "a.log") and not _refusals(tmp_path / "b.log")


@needs_postgres
def test_replicas_on_two_different_lock_databases_are_caught_too(tmp_path: Path) -> None:
    with (
        chroma_server(tmp_path / "chroma") as chroma,
        postgres_server() as locks_a,
        postgres_server() as locks_b,
        _replica(chroma.url, tmp_path / "a.log", lock_url=locks_a) as (a, _),
        _replica(chroma.url, tmp_path / "b.log", lock_url=locks_b) as (b, _),
        _client(a) as first,
        _client(b) as second,
    ):
        first.store("The garden gets morning sun.")
        with pytest.raises(MemoryToolError, match="different lock database") as refused:
            second.store("The garden has three apple trees.")
        assert "HINDSIGHT_LOCK_URL" in refused.value.message


def test_a_cli_write_beside_a_replica_without_a_lock_is_refused_and_a_read_is_not(tmp_path: Path) -> None:
    """A CLI command that writes through a Chroma server is a writer like a replica; one that reads is not."""
    hindsight = str(Path(sys.executable).with_name("hindsight"))
    env = {k: v for k, v in os.environ.items() if not k.startswith("HINDSIGHT_")}
    with chroma_server(tmp_path / "chroma") as chroma, _replica(chroma.url, tmp_path / "a.log") as (a, _):
        with _client(a) as first:
            first.store("The build agent is called heron.")
        common = [hindsight, "--chroma-url", chroma.url, "--namespace", "team"]
        add = subprocess.run([*common, "add", "The CLI tries to write this."], env=env, capture_output=True, text=True)
        stats = subprocess.run([*common, "stats", "--json"], env=env, capture_output=True, text=True)
        with _client(a) as first:
            first.store("The replica still writes after the CLI tried.")
            contents = [r.content for r in first.list(limit=100)]
    assert add.returncode == 2 and "HINDSIGHT_LOCK_URL" in add.stderr and "Traceback" not in add.stderr, add.stderr
    assert stats.returncode == 0 and json.loads(stats.stdout)["total"] == 1, stats.stderr
    assert not any("CLI tries" in c for c in contents)


def test_two_writers_starting_together_never_both_write(tmp_path: Path) -> None:
    """The start-up race, 20 times: two registries enter at the same moment; at most one may write, then one."""
    with chroma_server(tmp_path / "chroma") as chroma:
        client = chromadb.HttpClient(host="127.0.0.1", port=int(chroma.url.rsplit(":", 1)[1]))
        for _ in range(20):
            registries = [WriterRegistry(client, url=chroma.url, lock=None, expiry_seconds=30) for _ in range(2)]
            with ThreadPoolExecutor(2) as pool:
                outcomes = list(pool.map(_enter_together, registries, [threading.Barrier(2)] * 2))
            assert outcomes.count(True) <= 1, outcomes
            for registry in registries:
                registry.refresh()  # what the heartbeat does every few seconds
            assert [r.may_write() for r in registries].count(True) == 1
            for registry in registries:
                registry.close()


def _enter_together(registry: WriterRegistry, start: threading.Barrier) -> bool:
    start.wait()
    return registry.may_write()


def _entry(writer: str, started: float, *, lock: str | None = None, primary: bool = False, expires: float = 100.0):
    return WriterEntry(writer=writer, lock=lock, started_at=started, expires_at=expires, primary=primary)


def test_the_rule_every_writer_applies_to_its_view() -> None:
    now = 50.0
    alone = _entry("a", 1)
    assert decide(alone, [alone], now).allowed
    # The earlier of two writers without a lock writes; the later does not, even if it claimed first.
    first, second = _entry("a", 1, primary=True), _entry("b", 2)
    assert decide(first, [first, second], now).allowed and not decide(second, [first, second], now).allowed
    assert decide(second, [first, second], now).blocker == first
    # Two primaries that see each other both give up (the next round elects one).
    a, b = _entry("a", 1, primary=True), _entry("b", 2, primary=True)
    assert not decide(a, [a, b], now).allowed and not decide(b, [a, b], now).allowed
    # One lock database: a group; it joins its primary member however late it started.
    x1, x2 = _entry("x1", 1, lock="X", primary=True), _entry("x2", 9, lock="X")
    assert decide(x2, [x1, x2], now).allowed
    # Another lock database, or none, is refused beside that group.
    y, none = _entry("y", 5, lock="Y"), _entry("n", 6)
    assert not decide(y, [x1, y], now).allowed and not decide(none, [x1, none], now).allowed
    # An expired entry is a dead writer: ignored.
    dead = _entry("d", 0, primary=True, expires=40.0)
    assert decide(second, [dead, second], now).allowed
    assert issubclass(ReplicaConflictError, ConfigurationError)  # what a refused write raises
