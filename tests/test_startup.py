"""Start-up: with a cached ONNX export no process imports torch; the CLI checks arguments before loading anything.

Each check runs a fresh interpreter, since what matters is what a new process imports. No
test asserts on wall-clock time (see ``hindsight bench startup`` for the numbers).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from typer.testing import CliRunner

from hindsight_integrations import MemoryEngine
from hindsight_integrations.cli import app
from hindsight_integrations.core.embedding.local import LocalEmbedder
from hindsight_integrations.core.embedding.onnx import cache as onnx_cache
from hindsight_integrations.core.embedding.onnx import export as onnx_export

from .conftest import cache_with_the_installed_model

HEAVY = ("torch", "sentence_transformers", "transformers")
TEXTS = ["hi", "", "我喜欢在早上喝绿茶。", "The quarterly report is due on Friday. " * 60, "Ça va? naïve café!"]


@pytest.fixture(scope="module")
def warm_cache(tmp_path_factory: pytest.TempPathFactory, embedder: LocalEmbedder) -> Path:
    """A cache directory holding the default model's export and sidecar, as after a first use."""
    cache = cache_with_the_installed_model(tmp_path_factory.mktemp("warm-cache"))
    onnx_export.exported_model(embedder._load(), embedder._path, cache)
    assert onnx_cache.cached_export(embedder._path, cache) is not None
    return cache


def _env(cache: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HINDSIGHT_", "OPENAI_"))}
    env.update(
        {"HINDSIGHT_CACHE_DIR": str(cache), "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "COLUMNS": "1000"}
    )
    return env


def _python(code: str, cache: Path, *args: str) -> dict[str, Any]:
    """Run ``code`` in a fresh interpreter; it prints one JSON object as its last line."""
    done = subprocess.run(
        [sys.executable, "-c", code, *args], capture_output=True, text=True, env=_env(cache), timeout=300
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


EMBED = """
import json, sys
from hindsight_integrations.core.embedding.local import LocalEmbedder
model = LocalEmbedder()
dimension = model.dimension
after_dimension = sorted(m for m in ("onnxruntime", "torch", "sentence_transformers") if m in sys.modules)
vectors = model.embed(json.loads(sys.argv[1]))
print(json.dumps({
    "dimension": dimension,
    "after_dimension": after_dimension,
    "backend": model.backend_in_use,
    "vectors": vectors,
    "modules": {m: m in sys.modules for m in ("torch", "sentence_transformers", "transformers", "onnxruntime")},
}))
"""


def test_a_fresh_process_embeds_without_torch(warm_cache: Path) -> None:
    out = _python(EMBED, warm_cache, json.dumps(TEXTS))
    assert out["dimension"] == 384
    assert out["after_dimension"] == []  # the dimension comes from the sidecar: no model, no session
    assert out["backend"] == "onnx" and out["modules"]["onnxruntime"]
    assert not any(out["modules"][m] for m in HEAVY), out["modules"]
    expected = np.array(LocalEmbedder(backend="torch").embed(TEXTS))
    assert np.abs(np.array(out["vectors"]) - expected).max() <= 1e-5


def test_without_a_cached_export_the_first_process_builds_the_graph_without_torch(tmp_path: Path) -> None:
    """First use on a machine: the bundled model's graph is built from its files (onnx/build.py), not by torch."""
    cache = tmp_path / "cold-cache"
    first = _python(EMBED, cache, json.dumps(TEXTS[:2]))
    assert first["backend"] == "onnx" and not any(first["modules"][m] for m in HEAVY), first["modules"]
    assert [p.suffix for p in sorted((cache / "onnx").iterdir())] == [".json", ".onnx"]
    second = _python(EMBED, cache, json.dumps(TEXTS[:2]))
    assert not any(second["modules"][m] for m in HEAVY)
    assert np.abs(np.array(first["vectors"]) - np.array(second["vectors"])).max() == 0


CLI = """
import json, sys
from hindsight_integrations.cli import main
sys.argv = ["hindsight", *sys.argv[1:]]
code = 0
try:
    main()
except SystemExit as exc:
    code = exc.code
sys.stdout.flush()
watched = ("torch", "sentence_transformers", "transformers", "onnxruntime", "chromadb", "openai")
print("\\n" + json.dumps({"exit": code, **{m: m in sys.modules for m in watched}}))
"""


def _cli(cache: Path, *args: str) -> tuple[dict[str, Any], str, str]:
    done = subprocess.run(
        [sys.executable, "-c", CLI, *args], capture_output=True, text=True, env=_env(cache), timeout=300
    )
    lines = done.stdout.strip().splitlines()
    return json.loads(lines[-1]), "\n".join(lines[:-1]), done.stderr


@pytest.fixture(scope="module")
def filled_store(tmp_path_factory: pytest.TempPathFactory, embedder: LocalEmbedder) -> Path:
    store = tmp_path_factory.mktemp("startup") / "store"
    engine = MemoryEngine(store=store, embedder=embedder, llm=False)
    engine.store("The release branch is cut every Monday at 9am.", namespace="cli")
    engine.store("Alice prefers green tea in the morning.", namespace="cli")
    # Context vectors follow a write in the background; one still queued when the CLI opens the
    # store would be embedded there (the repair on open), and stats would load the model after all.
    assert engine.chroma.namespace("cli").wait_for_context(timeout=60)
    engine.chroma.flush()
    return store


@pytest.mark.parametrize("command", [["stats"], ["recall", "when is the release branch cut", "--top-k", "1"]])
def test_cli_commands_import_no_torch(warm_cache: Path, filled_store: Path, command: list[str]) -> None:
    modules, out, err = _cli(warm_cache, "--store", str(filled_store), "--namespace", "cli", *command)
    assert modules["exit"] == 0, err
    assert not any(modules[m] for m in HEAVY), modules
    assert not modules["openai"]  # no LLM configured: the client is never built
    assert "2 memories" in out if command == ["stats"] else "release branch" in out
    assert modules["onnxruntime"] == (command[0] == "recall")  # stats opens the store without running the model


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["recall", "x", "--top-k", "0"], "--top-k"),
        (["recall", "x", "--top-k", "100000"], "--top-k"),
        (["add", "   "], "content"),
        (["--namespace", "bad name", "stats"], "namespace"),
    ],
)
def test_bad_arguments_fail_before_anything_heavy_loads(
    warm_cache: Path, tmp_path: Path, args: list[str], needle: str
) -> None:
    modules, _, err = _cli(warm_cache, "--store", str(tmp_path / "s"), *args)
    assert modules["exit"] == 2
    assert needle in err and "Traceback" not in err and len(err.strip().splitlines()) == 1
    assert not any(modules[m] for m in (*HEAVY, "onnxruntime", "chromadb")), modules
    assert not (tmp_path / "s").exists()  # not even the store was opened


def test_help_imports_nothing_heavy(warm_cache: Path) -> None:
    modules, out, _ = _cli(warm_cache, "--help")
    assert modules["exit"] == 0 and "recall" in out
    assert not any(modules[m] for m in (*HEAVY, "onnxruntime", "chromadb", "openai")), modules


def test_bench_startup_writes_its_json(warm_cache: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HINDSIGHT_CACHE_DIR", str(warm_cache))
    out = tmp_path / "results" / "startup.json"
    result = CliRunner().invoke(
        app, ["bench", "startup", "--runs", "1", "--warmup", "0", "--memories", "4", "--out", str(out)]
    )
    assert result.exit_code == 0, result.output
    data = json.loads(out.read_text(encoding="utf-8"))
    assert data["benchmark"] == "startup" and data["runs"] == 1 and data["onnx_cache_was_warm"] is True
    assert set(data["commands"]) == {"help", "stats", "recall"}
    for name, command in data["commands"].items():
        assert len(command["seconds"]) == 1 and command["min"] == command["median"] > 0
        assert command["target"] > 0
        assert command["imports"]["torch"] is False and command["imports"]["sentence_transformers"] is False, name
    assert data["commands"]["recall"]["imports"]["onnxruntime"] is True
    assert "| hindsight stats |" in result.stdout


def test_bench_startup_refuses_zero_runs(tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["bench", "startup", "--runs", "0", "--out", str(tmp_path / "x.json")])
    assert result.exit_code == 2 and "runs" in result.output
    assert not (tmp_path / "x.json").exists()


SERVE = """
import gc, json, sys
from hindsight_integrations.mcp import startup
startup._serve_http = lambda server, host, port: print(json.dumps({"frozen": gc.get_freeze_count()}))
startup.run(transport="http", port=0, store=sys.argv[1], upkeep=False)
"""


def test_a_server_freezes_what_start_up_made_before_it_serves(warm_cache: Path, tmp_path: Path) -> None:
    """A full collection inside a request then walks what requests made, not the warmed libraries and model."""
    assert _python(SERVE, warm_cache, str(tmp_path / "store"))["frozen"] > 10_000
