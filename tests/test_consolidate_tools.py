"""`consolidate_memory` over real MCP sessions (in-process, stdio) and `hindsight consolidate` on the command line."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from hindsight_integrations import ConsolidationReport, MemoryEngine
from hindsight_integrations.cli import app
from hindsight_integrations.core.clock import ManualClock
from hindsight_integrations.mcp import MemoryClient, MemoryToolInputError
from hindsight_integrations.mcp.render import consolidate_text

NS = "u1"
STATEMENTS = [
    "I prefer window seats on trains.",
    "When I travel by train, I prefer window seats.",
    "On long train journeys I prefer a window seat.",
]
DAY0 = datetime(2024, 3, 1, 9, tzinfo=UTC)


@pytest.fixture
def client(store_path: Path, embedder: Any) -> Iterator[MemoryClient]:
    clock = ManualClock(DAY0)
    engine = MemoryEngine(store=store_path, embedder=embedder, llm=False, clock=clock)
    with MemoryClient.in_process(engine, namespace=NS) as c:
        for n, text in enumerate(STATEMENTS, 1):
            c.record_turn(text, session_id=f"s{n}", metadata={"app_message": f"m{n}"})
            clock.advance(days=1)
        yield c
    engine.chroma.flush()


def test_consolidate_memory_in_process(client: MemoryClient) -> None:
    assert "consolidate_memory" in client.list_tools()
    preview = client.consolidate(dry_run=True)
    assert isinstance(preview, ConsolidationReport) and preview.dry_run and len(preview.created) == 1
    report = client.consolidate()
    (fact,) = report.created
    assert fact.id and fact.statements == 3 and report.namespace == NS
    assert client.consolidate().created == []  # idempotent
    # retrieve_memory carries the provenance: source ids, their metadata, the turns.
    data = client.call_tool("retrieve_memory", {"query": "Which seat do I like on trains?", "top_k": "3"})
    first = data["memories"][0]
    assert first["id"] == fact.id and first["tier"] == "semantic"
    assert sorted(first["source"]["memory_ids"]) == sorted(fact.sources)
    assert len(first["source"]["message_ids"]) == 3
    assert {m["metadata"]["app_message"] for m in first["source"]["members"]} == {"m1", "m3"}
    assert not set(fact.sources) & {m["id"] for m in data["memories"]}
    hit = client.recall("Which seat do I like on trains?").hits[0]
    assert hit.record.source.memory_ids == first["source"]["memory_ids"]
    text = consolidate_text(report)
    assert f"Created 1 semantic memory:\n- [{fact.id}] preference: I prefer window seats on trains." in text


def test_consolidate_memory_arguments_are_checked(client: MemoryClient) -> None:
    assert client.call_tool("consolidate_memory", {"dry_run": "true"})["dry_run"] is True
    with pytest.raises(MemoryToolInputError) as caught:
        client.call_tool("consolidate_memory", {"dry_run": "maybe"})
    assert caught.value.field == "dry_run"
    with pytest.raises(MemoryToolInputError, match="namespace"):
        client.call_tool("consolidate_memory", {"namespace": "other"})
    assert client.stats().total > 0  # the session still serves


def test_a_fresh_namespace_is_named_in_the_error(store_path: Path, embedder: Any) -> None:
    engine = MemoryEngine(store=store_path, embedder=embedder, llm=False)
    with MemoryClient.in_process(engine, namespace="empty") as c:
        with pytest.raises(MemoryToolInputError, match="nothing was ever stored in namespace 'empty'"):
            c.consolidate()
        assert c.list_tools()


@pytest.mark.server
def test_consolidate_memory_over_stdio(tmp_path: Path) -> None:
    env = {"HINDSIGHT_STORE": str(tmp_path / "store"), "HF_HUB_OFFLINE": "1", "HINDSIGHT_LOG_LEVEL": "WARNING"}
    with MemoryClient.stdio(env=env, namespace=NS, timeout=60) as c:
        c.store(
            [
                {"content": text, "session_id": f"s{n}", "occurred_at": (DAY0 + timedelta(days=n)).isoformat()}
                for n, text in enumerate(STATEMENTS)
            ]
        )
        (fact,) = c.consolidate().created
        assert fact.statements == 3 and fact.occasions == 3
        hit = c.recall("Which seat do I like on trains?").hits[0]
        assert hit.record.id == fact.id and sorted(hit.record.source.memory_ids) == sorted(fact.sources)
        with pytest.raises(MemoryToolInputError):
            c.call_tool("consolidate_memory", {"dry_run": ["no"]})
        assert c.consolidate().created == []


def _history(store: Path, embedder: Any, namespace: str = "cli") -> None:
    engine = MemoryEngine(store=store, embedder=embedder, llm=False)
    for n, text in enumerate(STATEMENTS):
        engine.store(text, namespace=namespace, session_id=f"s{n}", occurred_at=DAY0 + timedelta(days=n))
    engine.chroma.flush()


def test_the_consolidate_command(tmp_path: Path, embedder: Any) -> None:
    store = tmp_path / "store"
    _history(store, embedder)
    runner = CliRunner()
    preview = runner.invoke(app, ["--store", str(store), "consolidate", "-n", "cli", "--dry-run"])
    assert preview.exit_code == 0, preview.output
    assert "Dry run, nothing changed" in preview.output and "Would create 1 semantic memory" in preview.output
    done = runner.invoke(app, ["--store", str(store), "consolidate", "-n", "cli", "--json"])
    assert done.exit_code == 0, done.output
    report = json.loads(done.output)
    assert report["namespace"] == "cli" and len(report["created"]) == 1 and report["created"][0]["id"]
    again = runner.invoke(app, ["--store", str(store), "-n", "cli", "consolidate"])
    assert again.exit_code == 0 and "Nothing to merge or consolidate" in again.output


def test_the_consolidate_command_names_an_unknown_namespace(tmp_path: Path, embedder: Any) -> None:
    store = tmp_path / "store"
    _history(store, embedder)
    result = CliRunner().invoke(app, ["--store", str(store), "consolidate", "-n", "nobody"])
    assert result.exit_code == 2
    assert "nothing was ever stored in namespace 'nobody' (the namespaces are: cli)" in result.stderr
    assert "Traceback" not in result.output and len(result.stderr.strip().splitlines()) == 1
    bad = CliRunner().invoke(app, ["--store", str(store), "consolidate", "-n", "no/slash"])
    assert bad.exit_code == 2 and "not a valid namespace" in bad.stderr
