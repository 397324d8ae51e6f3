"""The `hindsight` command, in-process (typer's runner) and as a real console script."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner, Result

from hindsight_integrations.cli import app
from hindsight_integrations.core.recall.context import CONTEXT_HEADER

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


def test_a_memory_that_looks_like_markup_is_printed_as_written(tmp_path: Path, embedder) -> None:
    store = tmp_path / "store"
    for text in ("In my templates I close blocks with [/section] tags.", "My word is [bold]shouting[/bold]."):
        assert _run(store, "add", text, "--force").exit_code == 0
    closing = _run(store, "recall", "templates close blocks", "--top-k", "1")
    assert closing.exit_code == 0, closing.output
    assert "[/section]" in closing.output
    assert "[bold]shouting[/bold]" in _run(store, "recall", "what is my word", "--top-k", "1").output


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


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["recall", "x", "--top-k", "0"], "--top-k"),
        (["add", "   "], "content"),
        (["--namespace", "bad name", "stats"], "--namespace"),
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
    assert "did not answer after 2 attempts" in result.stderr
    assert "--chroma-url or HINDSIGHT_CHROMA_URL" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


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
        (["recall", "x", "--top-k", "0"], "--top-k: must be between 1 and 200"),
        (["recall", "x", "--top-k", "201"], "HINDSIGHT_MAX_TOP_K"),
        (["recall", "x", "--budget", "0"], "--budget"),
        (["recall", "  "], "query"),
        (["add", "   "], "content"),
        (["add", "a fact", "--kind", "gossip"], "--kind"),
        (["add", "a fact", "--ttl", "0"], "--ttl"),
        (["--namespace", "bad name", "stats"], "--namespace"),
        (["--chroma-url", "not a url", "stats"], "--chroma-url"),
        (["demo", "--namespace", "bad name"], "--namespace"),
        (["demo", "--lang", "fr"], "--lang"),
        (["compress", "--session", "s1", "--threshold", "0"], "--threshold"),
        (["compress", "--session", " "], "--session: is empty"),
        (["export", "--out", "/nonexistent-dir/x.json"], "the directory /nonexistent-dir does not exist"),
        (["serve", "--transport", "ftp"], "--transport"),
        (["serve", "--port", "0"], "--port"),
    ],
)
def test_arguments_are_checked_before_the_engine_is_built(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, args: list[str], needle: str
) -> None:
    from hindsight_integrations.cli import options

    def no_engine(settings: object) -> None:
        raise AssertionError("the engine was built")

    monkeypatch.setattr(options, "engine", no_engine)
    result = runner.invoke(app, ["--store", str(tmp_path / "s"), *args])
    assert result.exit_code == 2, result.output
    assert needle in result.output and "Traceback" not in result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)


def test_settings_from_the_environment_are_checked_first(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from hindsight_integrations.cli import options

    monkeypatch.setattr(options, "engine", lambda settings: pytest.fail("the engine was built"))
    result = runner.invoke(
        app, ["--store", str(tmp_path / "s"), "recall", "x"], env={"HINDSIGHT_EMBEDDING_BACKEND": "tensorrt"}
    )
    assert result.exit_code == 2 and "HINDSIGHT_EMBEDDING_BACKEND" in result.output


@pytest.mark.parametrize(
    ("content", "needle"),
    [
        (b"[1, 2]", "is not a `hindsight export` document (it holds a JSON array, not an object)"),
        (b'{"format": "csv"}', "its \"format\" is 'csv', not 'hindsight-export'"),
        (b"{oops", "is not valid JSON (Expecting property name enclosed in double quotes at line 1, column 2)"),
        (b"\xff\xfe\x00binary", "is not UTF-8 text"),
        (
            b'{"format": "hindsight-export", "namespace": "bad name", "records": []}',
            "bad.json: \"namespace\": 'bad name' is not a valid namespace",
        ),
    ],
)
def test_import_refuses_a_file_that_is_not_an_export(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, content: bytes, needle: str
) -> None:
    from hindsight_integrations.cli import options

    monkeypatch.setattr(options, "engine", lambda settings: pytest.fail("the engine was built"))
    bad = tmp_path / "bad.json"
    bad.write_bytes(content)
    result = runner.invoke(app, ["--store", str(tmp_path / "s"), "import", str(bad)])
    assert result.exit_code == 2 and needle in result.stderr, result.stderr
    assert "Traceback" not in result.output and len(result.stderr.strip().splitlines()) == 1


# -- every command, bad inputs: one line on stderr naming the fix, a non-zero exit, no traceback --------------------

NAMESPACE_COMMANDS = [
    ["add", "a fact"],
    ["recall", "x"],
    ["forget", "some-id"],
    ["dump"],
    ["export"],
    ["import", "FILE"],
    ["stats"],
    ["compress", "--session", "s1"],
    ["maintain"],
    ["review"],
    ["restore"],
    ["serve"],
]


def _with_file(args: list[str], tmp_path: Path) -> list[str]:
    export = tmp_path / "export.json"
    export.write_text('{"format": "hindsight-export", "records": []}', encoding="utf-8")
    return [str(export) if a == "FILE" else a for a in args]


@pytest.mark.parametrize("command", NAMESPACE_COMMANDS, ids=lambda c: c[0])
def test_every_namespace_command_takes_namespace_and_blames_the_option(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, command: list[str]
) -> None:
    """A bad --namespace is named as --namespace, whether given before or after the command, not as the variable."""
    from hindsight_integrations.cli import options

    monkeypatch.setattr(options, "engine", lambda settings: pytest.fail("the engine was built"))
    args = _with_file(command, tmp_path)
    for placed in (["--namespace", "bad name", *args], [*args, "--namespace", "bad name"], [*args, "-n", "a..b"]):
        result = runner.invoke(app, ["--store", str(tmp_path / "s"), *placed])
        assert result.exit_code == 2, (placed, result.output)
        assert "--namespace: '" in result.stderr and "HINDSIGHT_NAMESPACE" not in result.stderr, result.stderr
        assert len(result.stderr.strip().splitlines()) == 1
        assert result.exception is None or isinstance(result.exception, SystemExit)
    from_env = runner.invoke(app, ["--store", str(tmp_path / "s"), *args], env={"HINDSIGHT_NAMESPACE": "bad name"})
    if command[0] != "import":  # import's default is the export's own namespace, not the variable
        assert from_env.exit_code == 2 and "namespace (env HINDSIGHT_NAMESPACE)" in from_env.stderr


def test_a_command_level_namespace_wins_over_the_global_one(tmp_path: Path, embedder) -> None:
    store = tmp_path / "store"
    assert _run(store, "add", "The staging database is called kestrel.", namespace="alice").exit_code == 0
    stats = runner.invoke(app, ["--store", str(store), "--namespace", "bob", "stats", "-n", "alice", "--json"])
    assert stats.exit_code == 0, stats.output
    assert json.loads(stats.stdout)["namespace"] == "alice" and json.loads(stats.stdout)["total"] == 1
    dumped = runner.invoke(app, ["--store", str(store), "dump", "--namespace", "alice"])
    assert "kestrel" in dumped.stdout


def test_export_to_a_path_under_a_file_is_refused_before_the_engine(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from hindsight_integrations.cli import options

    monkeypatch.setattr(options, "engine", lambda settings: pytest.fail("the engine was built"))
    a_file = tmp_path / "notes.txt"
    a_file.write_text("x", encoding="utf-8")
    for out, needle in ((a_file / "x.json", "is not a directory"), (tmp_path, "is a directory; give a file name")):
        result = runner.invoke(app, ["--store", str(tmp_path / "s"), "export", "-o", str(out)])
        assert result.exit_code == 2 and needle in result.stderr and result.stdout == ""


def test_restore_of_unknown_or_live_ids_restores_nothing_and_fails(tmp_path: Path, embedder) -> None:
    store = tmp_path / "store"
    added = _run(store, "add", "The VPN gateway is vpn2.example.org.", "--json")
    memory_id = json.loads(added.stdout)["stored"][0]["id"]
    unknown = _run(store, "restore", "deadbeef")
    assert unknown.exit_code == 2 and unknown.stdout == ""
    assert "nothing restored: no memory deadbeef" in unknown.stderr and "namespace 'cli'" in unknown.stderr
    live = _run(store, "restore", memory_id, "deadbeef")
    assert live.exit_code == 2 and f"{memory_id} is active, not in cold storage" in live.stderr
    nothing_archived = _run(store, "restore")
    assert nothing_archived.exit_code == 0 and "nothing to restore" in nothing_archived.stdout


def test_forget_forgets_a_memory_by_id_in_the_namespace_given_and_refuses_an_unknown_one(
    tmp_path: Path, embedder
) -> None:
    from hindsight_integrations import MemoryEngine

    store = tmp_path / "store"
    added = _run(store, "add", "The VPN gateway is vpn2.example.org.", "--json", namespace="alice")
    memory_id = json.loads(added.stdout)["stored"][0]["id"]
    elsewhere = _run(store, "forget", memory_id)  # namespace "cli": not there
    assert elsewhere.exit_code == 2 and elsewhere.stdout == "" and len(elsewhere.stderr.strip().splitlines()) == 1
    assert f"nothing forgotten: no memory '{memory_id}' in namespace 'cli'" in elsewhere.stderr
    assert "--namespace" in elsewhere.stderr
    unknown = runner.invoke(app, ["--store", str(store), "forget", "deadbeef", "-n", "alice"])
    assert unknown.exit_code == 2 and "no memory 'deadbeef' in namespace 'alice'" in unknown.stderr

    forgotten = runner.invoke(app, ["--store", str(store), "forget", memory_id, "-n", "alice"])

    assert forgotten.exit_code == 0, forgotten.output
    assert " ".join(forgotten.stdout.split()) == f"forgotten {memory_id}: The VPN gateway is vpn2.example.org."
    engine = MemoryEngine(store=store, embedder=embedder, llm=False)
    try:
        got = engine.chroma.namespace("alice").collection.get(ids=[memory_id], include=["metadatas"])
        assert got["metadatas"][0]["status"] == "deleted"  # soft, as engine.forget: unforget brings it back
    finally:
        engine.close()
    assert "nothing recalled" in _run(store, "recall", "VPN gateway", namespace="alice").stdout


def test_restore_brings_back_an_archived_memory(tmp_path: Path, embedder) -> None:
    from hindsight_integrations import MemoryEngine

    store = tmp_path / "store"
    engine = MemoryEngine(store=store, embedder=embedder, llm=False, namespace="cli")
    stale = engine.store("The old build server was called zeus-1.", importance=0.1).stored[0]
    report = engine.maintain(now=stale.occurred_at.replace(year=stale.occurred_at.year + 3))
    assert stale.id in report.archived
    restored = _run(store, "restore", stale.id)
    assert restored.exit_code == 0 and "restored 1 memories" in restored.stdout, restored.output


def _maintain_store(tmp_path: Path, embedder) -> tuple[Path, str, int]:
    """Namespace "talk" with a session left past its threshold, "old" with a memory idle for 400 days."""
    from datetime import UTC, datetime, timedelta

    from hindsight_integrations import MemoryEngine

    store = tmp_path / "store"
    engine = MemoryEngine(store=store, embedder=embedder, llm=False, context_window_tokens=256)
    for i in range(10):
        engine.record_turn(
            f"Point {i}: the cache TTL for region {i} must be {i * 10} seconds in production.",
            session_id="long",
            namespace="talk",
            compress=False,
            extract=False,
        )
    long_ago = (datetime.now(UTC) - timedelta(days=400)).isoformat()
    old = {"id": "old-build-server", "content": "The old build server was called zeus-1.", "importance": 0.1}
    old |= {"created_at": long_ago, "updated_at": long_ago, "occurred_at": long_ago}
    engine.import_data({"format": "hindsight-export", "records": [old]}, namespace="old")
    return store, old["id"], len(engine.working_window(session_id="long", namespace="talk"))


MAINTAIN_ENV = {"HINDSIGHT_CONTEXT_WINDOW_TOKENS": "256"}  # the window the store was written with


def test_maintain_all_reports_every_namespace_and_a_dry_run_changes_nothing(tmp_path: Path, embedder) -> None:
    from hindsight_integrations import MemoryEngine

    store, old_id, turns = _maintain_store(tmp_path, embedder)
    base = ["--store", str(store), "maintain"]
    preview = runner.invoke(app, [*base, "--all", "--dry-run", "--json"], env=MAINTAIN_ENV)
    assert preview.exit_code == 0, preview.output
    reports = {r["namespace"]: r for r in json.loads(preview.stdout)}
    assert sorted(reports) == ["old", "talk"] and all(r["dry_run"] for r in reports.values())
    talk, old = reports["talk"]["steps"], reports["old"]["steps"]
    assert talk[0]["step"] == "compress" and talk[0]["ids"]["sessions"] == ["long"]
    assert old[2]["step"] == "maintain" and old[2]["ids"]["archived"] == [old_id]
    engine = MemoryEngine(store=store, embedder=embedder, llm=False)
    assert len(engine.working_window(session_id="long", namespace="talk")) == turns  # nothing changed
    assert engine.archived_ids(namespace="old") == []

    table = runner.invoke(app, [*base, "--all"], env=MAINTAIN_ENV)
    assert table.exit_code == 0, table.output
    rows = [line.split() for line in table.stdout.splitlines()]
    header = next(row for row in rows if row and row[0] == "namespace")
    assert header == ["namespace", "compressed", "merged", "consolidated", "decayed", "archived", "evicted"]
    by_namespace = {row[0]: dict(zip(header[1:], map(int, row[1:]))) for row in rows if row and row[0] in reports}
    assert by_namespace["talk"]["compressed"] == len(talk[0]["ids"]["compressed"])
    assert by_namespace["old"]["archived"] == 1 and by_namespace["old"]["compressed"] == 0
    assert len(engine.working_window(session_id="long", namespace="talk")) < turns
    assert engine.archived_ids(namespace="old") == [old_id]

    restored = _run(store, "restore", old_id, namespace="old")
    assert restored.exit_code == 0 and "restored 1 memories" in restored.stdout
    again = runner.invoke(app, [*base, "-n", "old", "--json"], env=MAINTAIN_ENV)  # one namespace, as before
    assert again.exit_code == 0 and json.loads(again.stdout)[0]["steps"][2]["ids"]["archived"] == []


def test_maintain_of_a_namespace_never_written_says_so_and_creates_nothing(tmp_path: Path, embedder) -> None:
    store = tmp_path / "store"
    assert _run(store, "add", "The VPN gateway is vpn2.example.org.").exit_code == 0
    nothing = _run(store, "maintain", namespace="nobody")
    assert nothing.exit_code == 0 and "holds nothing" in nothing.stdout
    listed = runner.invoke(app, ["--store", str(store), "maintain", "--all", "--json"])
    assert [r["namespace"] for r in json.loads(listed.stdout)] == ["cli"]  # "nobody" was not created
    empty = runner.invoke(app, ["--store", str(tmp_path / "empty"), "maintain", "--all"])
    assert empty.exit_code == 0 and "the store holds no namespaces" in empty.stdout


def test_maintain_all_with_a_namespace_is_refused_before_the_engine(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from hindsight_integrations.cli import options

    monkeypatch.setattr(options, "engine", lambda settings: pytest.fail("the engine was built"))
    for args in (["maintain", "--all", "-n", "alice"], ["--namespace", "alice", "maintain", "--all"]):
        result = runner.invoke(app, ["--store", str(tmp_path / "s"), *args])
        assert result.exit_code == 2 and "--all: runs every namespace of the store" in result.stderr
        assert len(result.stderr.strip().splitlines()) == 1


def test_maintain_reports_a_failed_step_and_exits_2(tmp_path: Path, embedder) -> None:
    store, old_id, _turns = _maintain_store(tmp_path, embedder)
    cold = tmp_path / "cold"
    cold.write_text("a file where the cold storage directory should be", encoding="utf-8")
    env = {**MAINTAIN_ENV, "HINDSIGHT_COLD_STORE": str(cold)}
    result = runner.invoke(app, ["--store", str(store), "maintain", "--all"], env=env)
    assert result.exit_code == 2 and "Traceback" not in result.output
    assert "upkeep failed in 1 step (the other steps ran):" in result.stderr
    assert "old: maintain failed: FileExistsError" in result.stderr
    rows = {
        line.split()[0]: line.split()[1:]
        for line in result.stdout.splitlines()
        if line.split()[:1] in (["old"], ["talk"])
    }
    assert rows["old"][-3:] == ["failed"] * 3 and int(rows["talk"][0]) > 0  # the table still shows every namespace
    from hindsight_integrations import MemoryEngine

    engine = MemoryEngine(store=store, embedder=embedder, llm=False)
    assert engine.get(old_id, namespace="old").status.value == "active"  # not archived, not lost


def test_compress_says_why_it_did_nothing(tmp_path: Path, embedder) -> None:
    from hindsight_integrations import MemoryEngine

    store = tmp_path / "store"
    engine = MemoryEngine(store=store, embedder=embedder, llm=False)
    engine.record_turn("The deploy freeze starts on Thursday.", session_id="s1", namespace="cli", compress=False)
    engine.store("The office wifi password rotates monthly.", session_id="notes", namespace="cli")
    under = _run(store, "compress", "--session", "s1")
    assert under.exit_code == 0, under.output
    text = " ".join(under.stdout.split())
    assert "nothing to compress: session 's1' holds 1 live turns" in text
    assert "within the threshold of 3276 tokens (40% of the 8192-token context window" in text
    assert "--force summarises its oldest turns anyway" in text
    own = " ".join(_run(store, "compress", "--session", "s1", "--threshold", "5000").stdout.split())
    assert "within the threshold of 5000 tokens (--threshold)" in own
    long_term_only = _run(store, "compress", "--session", "notes")
    assert long_term_only.exit_code == 0 and "has no live turns in working memory" in long_term_only.stdout
    missing = _run(store, "compress", "--session", "s2")
    assert missing.exit_code == 2 and "no session 's2' in namespace 'cli'" in missing.stderr


def _refused_import(tmp_path: Path, records: list[object]) -> tuple[Path, Result]:
    """``hindsight import`` of an export file holding ``records``, which it must refuse: exit 2, nothing on stdout."""
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"format": "hindsight-export", "records": records}), encoding="utf-8")
    result = _run(tmp_path / "store", "import", str(bad))
    assert result.exit_code == 2 and result.stdout == ""
    return bad, result


def test_import_names_every_bad_record_in_one_line_each(tmp_path: Path, embedder) -> None:
    records = [
        {"id": "a", "content": "The backup bucket is s3://acme-backups."},
        {"id": "b", "content": "   "},
        {"id": "c", "content": "Deploys need two approvals.", "kind": "gossip", "importance": 3},
        {"id": "a", "content": "A second record with the first one's id."},
        "not an object",
    ]
    bad, result = _refused_import(tmp_path, records)
    lines = result.stderr.strip().splitlines()
    assert lines[0].startswith(f"error: {bad}: 4 of 5 records cannot be imported, so nothing was imported.")
    assert lines[1:] == [
        "  records[1].content: is empty; every memory needs its text",
        "  records[2].kind: input should be 'preference', 'context', 'fact', 'correction', 'event', 'summary' or "
        "'turn' (got 'gossip')",
        "  records[2].importance: input should be less than or equal to 1 (got 3)",
        "  records[3].id: 'a' is also the id of records[0]; ids must be unique",
        "  records[4]: must be an object (one record of `hindsight export`), got str",
    ]
    assert "pydantic" not in result.stderr and "http" not in result.stderr
    stats = _run(tmp_path / "store", "stats", "--json")  # the refused import made no namespace
    assert stats.exit_code == 2 and "nothing was ever stored in namespace 'cli'" in stats.stderr


def test_import_refuses_a_blank_context_naming_the_record(tmp_path: Path, embedder) -> None:
    records = [
        {"id": "a", "content": "The backup bucket is s3://acme-backups.", "context": "Where do backups go?"},
        {"id": "b", "content": "Deploys need two approvals.", "context": " \n\t "},
    ]
    bad, result = _refused_import(tmp_path, records)
    lines = result.stderr.strip().splitlines()
    assert lines[0].startswith(f"error: {bad}: 1 of 2 records cannot be imported, so nothing was imported.")
    assert lines[1:] == ["  records[1].context: is empty or only whitespace/control characters"]
    stats = _run(tmp_path / "store", "stats", "--json")  # the refused import made no namespace
    assert stats.exit_code == 2 and "nothing was ever stored in namespace 'cli'" in stats.stderr


def test_stats_dump_and_export_of_a_namespace_never_written_name_the_ones_that_exist(tmp_path: Path, embedder) -> None:
    store = tmp_path / "store"
    assert _run(store, "add", "The release branch is cut every Monday at 9am.").exit_code == 0
    for command in (["stats"], ["dump"], ["export", "-o", str(tmp_path / "t.json")]):
        result = _run(store, *command, namespace="cil")
        assert result.exit_code == 2, result.output
        assert "nothing was ever stored in namespace 'cil' (the namespaces are: cli)" in result.stderr
    assert not (tmp_path / "t.json").exists()
    assert json.loads(_run(store, "stats", "--json").stdout)["total"] == 1
    from hindsight_integrations import MemoryEngine

    assert MemoryEngine(store=store, embedder=embedder, llm=False).namespaces() == ["cli"]  # nothing created


def test_a_store_path_that_is_a_file(tmp_path: Path) -> None:
    a_file = tmp_path / "store"
    a_file.write_text("x", encoding="utf-8")
    result = runner.invoke(app, ["--store", str(a_file), "stats"])
    assert result.exit_code == 2 and "is a file, not a directory" in result.stderr


def test_a_damaged_cold_storage_file_is_named_with_its_line(tmp_path: Path, embedder) -> None:
    store = tmp_path / "store"
    (store / "cold").mkdir(parents=True)
    (store / "cold" / "cli.jsonl").write_text('{"id": "x"}\n{"id": \n', encoding="utf-8")
    result = _run(store, "restore")
    assert result.exit_code == 2 and "cli.jsonl is damaged at line 2" in result.stderr


def test_an_unforeseen_error_is_one_line_and_exit_1(capsys: pytest.CaptureFixture[str]) -> None:
    """What no check foresaw is still one line, saying it is a bug and how to see more; --debug shows the traceback."""
    import typer

    from hindsight_integrations.terminal import debug, reported

    with pytest.raises(typer.Exit) as exit_info, reported():
        {}["missing"]  # a real KeyError, as a bug would raise
    assert exit_info.value.exit_code == 1
    err = capsys.readouterr().err
    assert err.startswith("error: unexpected KeyError: 'missing'. This is a bug") and "--debug" in err
    assert len(err.strip().splitlines()) == 1
    debug.tracebacks = True
    try:
        with pytest.raises(KeyError), reported():
            {}["missing"]
    finally:
        debug.tracebacks = False


def test_debug_shows_the_traceback_of_an_error(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "hindsight_integrations.cli", "--debug", "--store", str(tmp_path / "s"), "recall", " "],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 1 and "Traceback" in done.stderr and "InvalidInputError: query" in done.stderr


def test_bench_options_are_checked_before_a_long_run(tmp_path: Path) -> None:
    a_file = tmp_path / "notes.txt"
    a_file.write_text("x", encoding="utf-8")
    for args, needle in (
        (["bench", "scale", "--sizes", "1000,abc", "--out", str(tmp_path / "s.json")], "--sizes: 'abc' is not"),
        (["bench", "scale", "--out", str(a_file / "scale.json")], "is not a directory"),
        (["bench", "tokens", "--data", str(tmp_path), "--out", str(a_file / "t.json")], "is not a directory"),
    ):
        result = runner.invoke(app, args)
        assert result.exit_code == 2 and needle in result.stderr, result.output
        assert len(result.stderr.strip().splitlines()) == 1


def test_a_reader_that_stops_early_gets_no_traceback(tmp_path: Path, embedder) -> None:
    """`hindsight export | head`: the export is larger than a pipe's buffer and the reader leaves after 100 bytes."""
    from hindsight_integrations import MemoryEngine

    store = tmp_path / "store"
    engine = MemoryEngine(store=store, embedder=embedder, llm=False, namespace="cli")
    engine.store_memories([f"Service {i} listens on port {8000 + i}." for i in range(40)], apply_filter=False)
    engine.chroma.flush()
    command = [sys.executable, "-m", "hindsight_integrations.cli", "--store", str(store), "-n", "cli", "export"]
    with subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE) as process:
        assert process.stdout is not None and process.stderr is not None
        assert process.stdout.read(100).startswith(b'{"format": "hindsight-export"')
        process.stdout.close()
        err = process.stderr.read().decode()
        process.wait(timeout=120)
    assert "Traceback" not in err and "Exception ignored" not in err and "error" not in err, err
