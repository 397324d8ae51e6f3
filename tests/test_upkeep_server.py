"""Upkeep through the server (#16): the ``maintain_memory`` tool, and the HTTP server's own schedule.

Each namespace run is one JSON log line and counted on ``/metrics``. The in-process tests move
the engine's ``ManualClock``; the HTTP test starts a real server process over a store with a
session left past its threshold and polls ``/metrics`` until the scheduled round shows there.
"""

from __future__ import annotations

import json
import logging
import signal
import subprocess
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from hindsight_integrations import MemoryEngine
from hindsight_integrations.core.clock import ManualClock
from hindsight_integrations.mcp import MemoryClient
from hindsight_integrations.mcp.observability import JsonFormatter
from hindsight_integrations.mcp.startup import start_scheduled_upkeep
from hindsight_integrations.processes import free_port, running

from .mcp_support import REPO, SERVER_CMD, server_env

NS = "keeper"
WINDOW = "256"  # a 102-token compression threshold, which the seeded session passes
TURNS = [f"Point {i}: the cache TTL for region {i} must be {i * 10} seconds in production." for i in range(10)]


def _seed(engine: MemoryEngine) -> tuple[list[str], str]:
    """A session whose live window was left past its threshold, and a stale unimportant memory."""
    for turn in TURNS:
        engine.record_turn(turn, session_id="long", namespace=NS, compress=False, extract=False)
    stale = engine.store("The old build server was called zeus-1.", namespace=NS, importance=0.1).stored[0]
    return [t.id for t in engine.working_window(session_id="long", namespace=NS)], stale.id


@pytest.fixture
def seeded(store_path: Path, embedder) -> tuple[MemoryEngine, ManualClock, list[str], str]:
    clock = ManualClock()
    engine = MemoryEngine(
        store=store_path, embedder=embedder, llm=False, clock=clock, context_window_tokens=int(WINDOW)
    )
    turns, stale = _seed(engine)
    clock.advance(days=100)
    return engine, clock, turns, stale


def _sample(registry: Any, name: str, **labels: str) -> float:
    return registry.get_sample_value(name, labels) or 0.0


def _until(condition: Callable[[], bool], seconds: float = 60.0) -> None:
    """Wait for ``condition`` (work a background thread does), checking every 50 ms, failing after ``seconds``."""
    done = threading.Event()
    for _ in range(int(seconds / 0.05)):
        if condition():
            return
        done.wait(0.05)
    raise AssertionError("the condition did not become true in time")


def test_maintain_memory_runs_upkeep_over_mcp_logged_and_counted(seeded, caplog: pytest.LogCaptureFixture) -> None:
    engine, _clock, turns, stale = seeded
    caplog.set_level(logging.INFO, logger="hindsight.mcp")
    with MemoryClient.in_process(engine, namespace=NS) as client:
        preview = client.maintain(dry_run=True)
        assert preview.dry_run and preview.steps[0].ids["compressed"] == turns[: preview.count("compressed")]
        assert stale in preview.steps[2].ids["archived"] and stale not in engine.archived_ids(namespace=NS)
        done = client.maintain()
        assert done.steps[0].ids["compressed"] == preview.steps[0].ids["compressed"]
        assert stale in done.steps[2].ids["archived"] and stale in engine.archived_ids(namespace=NS)
        server = client.server
        assert server is not None
        registry = server.metrics.registry
        assert _sample(registry, "hindsight_upkeep_runs_total", trigger="tool", outcome="dry_run") == 1
        assert _sample(registry, "hindsight_upkeep_runs_total", trigger="tool", outcome="ok") == 1
        assert _sample(registry, "hindsight_upkeep_memories_total", action="compressed") == done.count("compressed")
        assert _sample(registry, "hindsight_upkeep_memories_total", action="archived") == done.count("archived")
        assert _sample(registry, "hindsight_upkeep_last_success_timestamp_seconds") > 0
        assert _sample(registry, "hindsight_upkeep_duration_seconds_count", trigger="tool") == 2

        async def as_a_model_reads_it() -> Any:
            return await server.call_tool("maintain_memory", {"dry_run": "true"})

        text = anyio.run(as_a_model_reads_it).content[0].text
        assert text.startswith(f"Dry run of upkeep for {NS}: nothing was changed")
        assert "- compress: sessions 0, compressed 0, summaries 0" in text and "- maintain: decayed" in text
    lines = [json.loads(JsonFormatter().format(r)) for r in caplog.records if r.getMessage() == "upkeep"]
    assert [(line["trigger"], line["outcome"]) for line in lines] == [
        ("tool", "dry_run"),
        ("tool", "ok"),
        ("tool", "dry_run"),
    ]
    assert lines[1]["namespace"] == NS and lines[1]["counts"]["compressed"] == done.count("compressed")
    assert lines[1]["steps"]["maintain"]["ok"] is True and "errors" not in lines[1]


def test_a_failed_step_is_an_error_run_in_the_log_and_metrics(
    tmp_path: Path, embedder, caplog: pytest.LogCaptureFixture
) -> None:
    cold = tmp_path / "cold"
    cold.write_text("not a directory", encoding="utf-8")
    clock = ManualClock()
    engine = MemoryEngine(store=tmp_path / "store", embedder=embedder, llm=False, clock=clock, cold_store=cold)
    engine.store("The old build server was called zeus-1.", namespace=NS, importance=0.1)
    clock.advance(days=100)
    caplog.set_level(logging.INFO, logger="hindsight.mcp")
    with MemoryClient.in_process(engine, namespace=NS) as client:
        report = client.maintain()  # a failed step is a report, not a tool error: the other steps' work stands
        assert not report.ok and set(report.errors) == {"maintain"} and report.steps[0].ok
        assert client.server is not None
        registry = client.server.metrics.registry
        assert _sample(registry, "hindsight_upkeep_runs_total", trigger="tool", outcome="error") == 1
        assert _sample(registry, "hindsight_upkeep_step_failures_total", step="maintain") == 1
        assert _sample(registry, "hindsight_upkeep_last_success_timestamp_seconds") == 0
    (line,) = [json.loads(JsonFormatter().format(r)) for r in caplog.records if r.getMessage() == "upkeep"]
    assert line["level"] == "warning" and "FileExistsError" in line["errors"]["maintain"]


def test_the_schedule_of_an_in_process_server_runs_rounds_and_reports_the_lease(seeded) -> None:
    engine, clock, turns, _stale = seeded
    with MemoryClient.in_process(engine, namespace=NS) as client:
        server = client.server
        assert server is not None
        registry = server.metrics.registry
        schedule = start_scheduled_upkeep(server)
        assert schedule is not None
        try:
            _until(lambda: _sample(registry, "hindsight_upkeep_runs_total", trigger="schedule", outcome="ok") == 1)
            assert _sample(registry, "hindsight_upkeep_memories_total", action="compressed") > 0
            assert len(client.working_memory("long")) < len(turns)
            held: list[float] = []
            schedule.on_report(lambda report, number: held.append(_sample(registry, "hindsight_upkeep_lease_held")))
            clock.advance(seconds=engine.settings.upkeep_interval_seconds)
            schedule.wake()
            _until(lambda: bool(held))
            assert held == [1.0]  # while it ran the round, this replica held the lease
            _until(lambda: _sample(registry, "hindsight_upkeep_runs_total", trigger="schedule", outcome="ok") == 2)
            _until(lambda: not schedule.holds_lease)
            assert _sample(registry, "hindsight_upkeep_lease_held") == 0
        finally:
            assert schedule.stop(timeout=30)


def test_no_schedule_when_the_interval_is_0(store_path: Path, embedder) -> None:
    engine = MemoryEngine(store=store_path, embedder=embedder, llm=False, upkeep_interval_seconds=0)
    with MemoryClient.in_process(engine, namespace=NS) as client:
        assert client.server is not None and start_scheduled_upkeep(client.server) is None


def _metric_values(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    return {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }


@pytest.fixture
def http_over_seeded_store(tmp_path: Path, embedder) -> Iterator[tuple[str, Path, Any]]:
    store = tmp_path / "store"
    engine = MemoryEngine(store=store, embedder=embedder, llm=False, context_window_tokens=int(WINDOW))
    _seed(engine)
    engine.chroma.flush()
    port, log_path = free_port(), tmp_path / "server.log"
    env = server_env(
        store,
        HINDSIGHT_TOKENS="keeper-token-0001-4b8d2f6a9c3e7150=keeper,other-token-0002-9e5c1a7f3b8d2046=other",
        HINDSIGHT_CONTEXT_WINDOW_TOKENS=WINDOW,
        HINDSIGHT_UPKEEP_INTERVAL_SECONDS="3600",
        HINDSIGHT_LOG_LEVEL="INFO",
    )
    base = f"http://127.0.0.1:{port}"
    command = [*SERVER_CMD, "--transport", "http", "--port", str(port)]
    with open(log_path, "wb") as log, running(command, health_url=f"{base}/health", env=env, log=log, cwd=REPO) as proc:
        yield base, log_path, proc


@pytest.mark.server
def test_the_http_server_runs_upkeep_on_its_schedule_shows_it_on_metrics_and_stops_promptly(
    http_over_seeded_store: tuple[str, Path, Any],
) -> None:
    base, log_path, process = http_over_seeded_store
    auth = {"Authorization": "Bearer keeper-token-0001-4b8d2f6a9c3e7150"}

    def scheduled_runs() -> float:
        values = _metric_values(httpx.get(f"{base}/metrics", headers=auth).text)
        return values.get(("hindsight_upkeep_runs_total", (("outcome", "ok"), ("trigger", "schedule"))), 0.0)

    _until(lambda: scheduled_runs() == 1)  # round 1 is due at start-up: the store never had one
    values = _metric_values(httpx.get(f"{base}/metrics", headers=auth).text)
    assert values[("hindsight_upkeep_memories_total", (("action", "compressed"),))] >= 6
    assert values[("hindsight_upkeep_last_success_timestamp_seconds", ())] > 0
    assert values[("hindsight_upkeep_lease_held", ())] in (0.0, 1.0)
    with MemoryClient.http(f"{base}/mcp", token="keeper-token-0001-4b8d2f6a9c3e7150") as keeper:
        assert len(keeper.working_memory("long")) < len(TURNS)
    with MemoryClient.http(f"{base}/mcp", token="other-token-0002-9e5c1a7f3b8d2046") as other:
        assert other.maintain().steps == []  # a token's own namespace only, and "other" holds nothing
    assert scheduled_runs() == 1  # "other" does not exist, so the round did not create or keep it

    process.send_signal(signal.SIGINT)
    assert process.wait(timeout=30) == 0  # the upkeep thread does not hold the server up
    lines = [json.loads(line) for line in log_path.read_text().splitlines() if line.startswith("{")]
    (scheduled,) = [line for line in lines if line["event"] == "upkeep" and line["trigger"] == "schedule"]
    assert scheduled["namespace"] == NS and scheduled["round"] == 1 and scheduled["outcome"] == "ok"
    assert scheduled["counts"]["compressed"] >= 6 and scheduled["holder"]
    assert any(line["event"] == "upkeep scheduled" and line["interval_seconds"] == 3600 for line in lines)
    assert lines[-1]["event"] == "stopped"


@pytest.mark.server
def test_a_bad_upkeep_setting_stops_the_server_at_start_with_what_to_fix(tmp_path: Path) -> None:
    env = server_env(tmp_path / "store", HINDSIGHT_UPKEEP_INTERVAL_SECONDS="half an hour")
    done = subprocess.run(
        [*SERVER_CMD, "--transport", "http", "--port", str(free_port())],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        cwd=REPO,
    )
    assert done.returncode == 2 and "HINDSIGHT_UPKEEP_INTERVAL_SECONDS" in done.stderr
    assert "Traceback" not in done.stderr
