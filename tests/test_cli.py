"""The `hindsight` command, in-process (typer's runner) and as a real console script."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from hindsight_integrations.cli import app
from hindsight_integrations.core.context import CONTEXT_HEADER

runner = CliRunner()


def _run(store: Path, *args: str, namespace: str = "cli"):
    return runner.invoke(app, ["--store", str(store), "--namespace", namespace, *args])


def test_add_recall_stats_dump_export_import(tmp_path: Path, embedder) -> None:
    store = tmp_path / "store"
    added = _run(store, "add", "The release branch is cut every Monday at 9am.", "--json")
    assert added.exit_code == 0, added.output
    memory_id = json.loads(added.output)["stored"][0]["id"]
    skipped = _run(store, "add", "ok thanks")
    assert "skipped" in skipped.output and skipped.exit_code == 0
    recalled = _run(store, "recall", "when is the release branch cut", "--top-k", "1", "--json")
    data = json.loads(recalled.output)
    assert [h["record"]["id"] for h in data["hits"]] == [memory_id]
    assert data["context"].startswith(CONTEXT_HEADER)
    assert "release branch" in _run(store, "dump").output
    stats = json.loads(_run(store, "stats", "--json").output)
    assert stats["total"] == 1 and sum(stats["by_tier"].values()) == 1
    out = tmp_path / "export.json"
    assert _run(store, "export", "--out", str(out)).exit_code == 0
    imported = _run(tmp_path / "other", "import", str(out), namespace="copy")
    assert imported.exit_code == 0 and "imported 1" in imported.output
    again = _run(tmp_path / "other", "recall", "release branch", "--json", namespace="copy")
    assert json.loads(again.output)["hits"][0]["record"]["id"] == memory_id


def test_compress_command(tmp_path: Path, embedder) -> None:
    from hindsight_integrations import MemoryEngine

    store = tmp_path / "store"
    engine = MemoryEngine(store=store, embedder=embedder, llm=False)
    for i in range(8):
        engine.record_turn(
            f"Point {i}: the cache TTL for region {i} must be {i * 10} seconds.",
            session_id="s1",
            namespace="cli",
            compress=False,
            extract=False,  # no long-term memory holds these turns: the summary does
        )
    result = _run(store, "compress", "--session", "s1", "--force")
    assert result.exit_code == 0, result.output
    assert "archived into 1 summaries" in result.output
    assert "nothing to compress" in _run(store, "compress", "--session", "empty").output


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["recall", "x", "--top-k", "0"], "top_k"),
        (["add", "   "], "content"),
        (["--namespace", "bad name", "stats"], "namespace"),
    ],
)
def test_errors_are_one_clear_line(tmp_path: Path, args, needle: str, embedder) -> None:
    result = runner.invoke(app, ["--store", str(tmp_path / "s"), *args])
    assert result.exit_code == 2
    assert needle in result.output and "Traceback" not in result.output


def test_unreachable_chroma_url(tmp_path: Path) -> None:
    from hindsight_integrations.processes import free_port

    result = runner.invoke(
        app,
        ["--chroma-url", f"http://127.0.0.1:{free_port()}", "stats"],
        env={"HINDSIGHT_CHROMA_CONNECT_ATTEMPTS": "2"},
    )
    assert result.exit_code == 2
    assert "did not answer after 2 attempts" in result.output


def test_demo_runs_offline_as_a_console_script(tmp_path: Path) -> None:
    exe = Path(sys.executable).with_name("hindsight")
    env = {k: v for k, v in os.environ.items() if not k.startswith("OPENAI")}
    env["COLUMNS"] = "200"
    result = subprocess.run(
        [str(exe), "--store", str(tmp_path / "demo"), "demo"], capture_output=True, text=True, env=env, timeout=300
    )
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "Correction: the project actually uses PostgreSQL" in out
    assert "ORD-7731-KX" in out
    assert "fewer)" in out and "superseded" in out
    # the story: real weekdays, the window compressed, the tiers named, an off-topic question gets nothing
    assert re.search(r"Session 1: Monday \d+ \w+ \d{4}", out) and re.search(r"Session 2: Wednesday \d+", out)
    assert "oldest turns" in out and "window now" in out  # the window was compressed
    assert all(tier in out for tier in ("working", "episodic", "semantic"))
    assert "no memory reaches the relevance floor" in out
    history = re.search(r"history: (\d+) turns, ([\d,]+) tokens", out)
    assert history and int(history.group(1)) >= 300 and int(history.group(2).replace(",", "")) > 5000


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["recall", "x", "--top-k", "0"], "top_k"),
        (["recall", "x", "--top-k", "201"], "top_k"),
        (["recall", "x", "--budget", "0"], "token_budget"),
        (["recall", "  "], "query"),
        (["add", "   "], "content"),
        (["add", "a fact", "--kind", "gossip"], "kind"),
        (["add", "a fact", "--ttl", "0"], "ttl_seconds"),
        (["--namespace", "bad name", "stats"], "namespace"),
        (["--chroma-url", "not a url", "stats"], "chroma_url"),
        (["demo", "--namespace", "bad name"], "namespace"),
        (["compress", "--session", "s1", "--threshold", "0"], "threshold_tokens"),
        (["serve", "--transport", "ftp"], "transport"),
        (["serve", "--port", "0"], "port"),
    ],
)
def test_arguments_are_checked_before_the_engine_is_built(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, args: list[str], needle: str
) -> None:
    from hindsight_integrations import cli

    def no_engine(settings: object) -> None:
        raise AssertionError("the engine was built")

    monkeypatch.setattr(cli, "_engine", no_engine)
    result = runner.invoke(app, ["--store", str(tmp_path / "s"), *args])
    assert result.exit_code == 2, result.output
    assert needle in result.output and "Traceback" not in result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)


def test_settings_from_the_environment_are_checked_first(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from hindsight_integrations import cli

    monkeypatch.setattr(cli, "_engine", lambda settings: pytest.fail("the engine was built"))
    result = runner.invoke(
        app, ["--store", str(tmp_path / "s"), "recall", "x"], env={"HINDSIGHT_EMBEDDING_BACKEND": "tensorrt"}
    )
    assert result.exit_code == 2 and "HINDSIGHT_EMBEDDING_BACKEND" in result.output


def test_import_refuses_a_file_that_is_not_an_export(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from hindsight_integrations import cli

    monkeypatch.setattr(cli, "_engine", lambda settings: pytest.fail("the engine was built"))
    for text, needle in (("[1, 2]", "not a `hindsight export` document"), ("{oops", "could not read")):
        bad = tmp_path / "bad.json"
        bad.write_text(text, encoding="utf-8")
        result = runner.invoke(app, ["--store", str(tmp_path / "s"), "import", str(bad)])
        assert result.exit_code == 2 and needle in " ".join(result.output.split())  # rich wraps long lines
