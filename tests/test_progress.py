"""Progress of long operations: what the engine reports, and what the `hindsight` command shows of it.

The engine reports through a ``ProgressCallback`` (``core/progress.py``) and never draws;
the command draws rich bars and spinners on stderr only when stderr is a terminal. The
command tests run it for real with stderr on a pseudo-terminal and stdout on a pipe, as
``hindsight export > file`` at a shell does, and check that stdout is exactly what it is
without a terminal.
"""

from __future__ import annotations

import json
import os
import pty
import subprocess
import sys
import threading
from collections import defaultdict
from itertools import pairwise
from pathlib import Path

import pytest
from typer.testing import CliRunner

from hindsight_integrations import MemoryEngine
from hindsight_integrations.bench.locomo import evaluate, ingest
from hindsight_integrations.bench.locomo_data import load_directory
from hindsight_integrations.cli import app
from hindsight_integrations.core.embedding.local import LocalEmbedder

MEMORIES = 520  # past one report interval (500), two embedding chunks (256) and one write chunk (500)


class Recorder:
    """A ``ProgressCallback`` that keeps every call, to check what an operation reported."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, int, int]] = []

    def __call__(self, stage: str, done: int, total: int) -> None:
        self.calls.append((stage, done, total))

    def stages(self) -> list[str]:
        """Stage names in the order they first appeared."""
        return list(dict.fromkeys(stage for stage, _, _ in self.calls))

    def counts(self) -> dict[str, list[tuple[int, int]]]:
        by_stage: dict[str, list[tuple[int, int]]] = defaultdict(list)
        for stage, done, total in self.calls:
            by_stage[stage].append((done, total))
        return by_stage

    def assert_well_formed(self) -> None:
        """Each stage starts at 0, never goes back, and ends at its total (the protocol's promise)."""
        for stage, counts in self.counts().items():
            assert counts[0][0] == 0, stage
            assert all(a[0] <= b[0] for a, b in pairwise(counts)), (stage, counts)
            assert all(done <= total for done, total in counts), (stage, counts)
            assert counts[-1][0] == counts[-1][1], (stage, counts)


@pytest.fixture(scope="module")
def filled(tmp_path_factory: pytest.TempPathFactory, embedder: LocalEmbedder) -> tuple[Path, MemoryEngine]:
    """A store whose namespace "big" holds MEMORIES memories, half of them with a context (tests write elsewhere)."""
    store = tmp_path_factory.mktemp("progress") / "store"
    engine = MemoryEngine(store=store, embedder=embedder, llm=False)
    items = [
        {
            "content": f"Service {i} listens on port {8000 + i} in region r{i % 7}.",
            "kind": "fact",
            "context": f"We were talking about service {i}." if i % 2 else None,
        }
        for i in range(MEMORIES)
    ]
    engine.store_memories(items, namespace="big", apply_filter=False, dedup=False)
    engine.chroma.flush()
    return store, engine


def test_export_reports_the_records_it_reads(filled: tuple[Path, MemoryEngine]) -> None:
    _, engine = filled
    progress = Recorder()
    data = engine.export(namespace="big", progress=progress)
    assert len(data["records"]) == MEMORIES
    assert progress.stages() == ["reading memories"]
    assert progress.counts()["reading memories"] == [(0, MEMORIES), (500, MEMORIES), (MEMORIES, MEMORIES)]
    progress.assert_well_formed()
    without_progress = engine.export(namespace="big")
    assert {**without_progress, "exported_at": None} == {**data, "exported_at": None}


def test_import_reports_checking_embedding_and_writing(filled: tuple[Path, MemoryEngine]) -> None:
    _, engine = filled
    without_vectors = engine.export(namespace="big", include_embeddings=False)
    progress = Recorder()
    assert engine.import_data(without_vectors, namespace="copy", progress=progress) == MEMORIES
    assert progress.stages() == ["checking memories", "embedding memories", "writing memories"]
    counts = progress.counts()
    assert counts["embedding memories"] == [(0, MEMORIES), (256, MEMORIES), (512, MEMORIES), (MEMORIES, MEMORIES)]
    assert counts["writing memories"] == [(0, MEMORIES), (500, MEMORIES), (MEMORIES, MEMORIES)]
    progress.assert_well_formed()
    assert engine.stats(namespace="copy").total == MEMORIES
    assert engine.recall("which port does service 17 listen on", namespace="copy").hits[0].record.content == (
        "Service 17 listens on port 8017 in region r3."
    )
    reused = Recorder()
    engine.import_data(engine.export(namespace="big"), namespace="again", progress=reused)
    assert reused.stages() == ["checking memories", "writing memories"]  # same model: the vectors are reused


def test_benchmark_ingest_reports_turns_and_questions(tmp_path: Path, embedder: LocalEmbedder) -> None:
    from tests.test_bench import FLAT_LIST, NESTED

    data = tmp_path / "locomo"
    data.mkdir()
    (data / "a.json").write_text(json.dumps(NESTED), encoding="utf-8")
    (data / "b.json").write_text(json.dumps(FLAT_LIST), encoding="utf-8")
    conversations, _ = load_directory(data)
    engine = MemoryEngine(store=tmp_path / "store", embedder=embedder, llm=False)
    stored = Recorder()
    assert ingest(engine, conversations[0], "one", stored) == 5
    assert stored.calls == [("storing turns", 0, 5), ("storing turns", 5, 5)]
    steps = Recorder()
    evaluate(engine, conversations, steps=steps)
    assert steps.stages() == [
        "tiny-a: storing turns",
        "tiny-a: asking questions",
        "tiny-b: storing turns",
        "tiny-b: asking questions",
    ]
    assert steps.counts()["tiny-a: asking questions"][-1] == (3, 3)
    steps.assert_well_formed()
    engine.chroma.flush()


def _terminal_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("FORCE_TERMINAL", "NO_COLOR", "TTY_COMPATIBLE")}
    return {**env, "TERM": "xterm-256color", "COLUMNS": "120", **extra}


def run_with_terminal_stderr(args: list[str], env: dict[str, str]) -> tuple[int, str, str]:
    """Run the command with stderr on a pseudo-terminal (a person watching) and stdout on a pipe (redirected)."""
    parent, child = pty.openpty()
    process = subprocess.Popen(
        [sys.executable, "-m", "hindsight_integrations.cli", *args], stdout=subprocess.PIPE, stderr=child, env=env
    )
    os.close(child)
    seen: list[bytes] = []

    def read_terminal() -> None:
        while True:
            try:
                chunk = os.read(parent, 65536)
            except OSError:  # the child closed the terminal
                return
            if not chunk:
                return
            seen.append(chunk)

    reader = threading.Thread(target=read_terminal, daemon=True)
    reader.start()
    assert process.stdout is not None
    out = process.stdout.read()
    code = process.wait(timeout=300)
    reader.join(timeout=30)
    os.close(parent)
    return code, out.decode(), b"".join(seen).decode(errors="replace")


def test_export_and_import_draw_bars_on_a_terminal_and_leave_stdout_alone(
    filled: tuple[Path, MemoryEngine], tmp_path: Path
) -> None:
    store, _ = filled
    code, out, terminal = run_with_terminal_stderr(["--store", str(store), "-n", "big", "export"], _terminal_env())
    assert code == 0, terminal
    assert "reading memories" in terminal and f"{MEMORIES}/{MEMORIES}" in terminal
    exported = json.loads(out)  # nothing but the export on stdout
    assert len(exported["records"]) == MEMORIES
    plain = CliRunner().invoke(app, ["--store", str(store), "-n", "big", "export"])
    assert plain.exit_code == 0 and plain.stderr == ""  # not a terminal: no progress at all
    assert {**json.loads(plain.stdout), "exported_at": None} == {**exported, "exported_at": None}

    file = tmp_path / "big.json"
    file.write_text(out, encoding="utf-8")
    code, out, terminal = run_with_terminal_stderr(
        ["--store", str(tmp_path / "other"), "import", str(file)], _terminal_env()
    )
    assert code == 0, terminal
    assert "writing memories" in terminal
    assert out == f"imported {MEMORIES} memories into namespace big\n"
    stats = CliRunner().invoke(app, ["--store", str(tmp_path / "other"), "-n", "big", "stats", "--json"])
    assert json.loads(stats.stdout)["total"] == MEMORIES and stats.stderr == ""


def test_the_first_model_export_shows_a_spinner_and_leaves_json_alone(tmp_path: Path, embedder: LocalEmbedder) -> None:
    """First use on a machine: ~10-30 s of loading and exporting the model, said on the terminal, once.

    Each run is a fresh process: whether the model must be exported depends on the cache
    directory and on what this process already loaded, so only a new process shows it.
    """
    cache = tmp_path / "cold-cache"
    store = tmp_path / "store"
    engine = MemoryEngine(store=store, embedder=embedder, llm=False)
    engine.store("The release branch is cut every Monday at 9am.", namespace="cli")
    engine.chroma.flush()
    env = _terminal_env(HINDSIGHT_CACHE_DIR=str(cache))
    code, out, terminal = run_with_terminal_stderr(["--store", str(store), "-n", "cli", "stats", "--json"], env)
    assert code == 0, terminal
    assert "preparing the embedding model all-MiniLM-L6-v2: building its ONNX graph" in terminal
    assert json.loads(out)["total"] == 1
    assert sorted(p.suffix for p in (cache / "onnx").iterdir()) == [".json", ".onnx"]
    code, out, terminal = run_with_terminal_stderr(["--store", str(store), "-n", "cli", "stats", "--json"], env)
    assert code == 0 and "preparing" not in terminal and json.loads(out)["total"] == 1  # cached: a quiet start
