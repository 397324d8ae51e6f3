"""Start-up time of the CLI (`hindsight bench startup`): whole processes, as a user runs them.

A CLI command pays for its imports and its model before doing any work, and a memory
command's work is milliseconds, so start-up is most of what a user waits for. Each command
(``--help``, ``stats``, ``recall``) is run ``runs`` times as a fresh ``hindsight`` process
against a small temporary store, timed from outside (spawn to exit), and reported as min
and median: min is what the code costs, median what a user sees on a busy machine.

A second variant of each command runs through ``python -c`` calling the CLI's ``main`` and
then reports which heavy modules the process imported (torch, sentence-transformers,
onnxruntime, chromadb, openai), since the targets below only hold when torch stays out.

The store is filled in this process first, which also exports the embedding model to ONNX
if that has not happened on this machine yet, so the timed processes find a warm cache.
"""

from __future__ import annotations

import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

# Whole-process targets on a 2-core machine with the ONNX backend and a warm export cache.
TARGETS = {"help": 0.5, "stats": 1.5, "recall": 2.5}
WATCHED_MODULES = ("torch", "sentence_transformers", "transformers", "onnxruntime", "chromadb", "openai")
NAMESPACE = "startup"

_MARKER = "@@hindsight-modules "
_PROBE = """
import json, sys
from hindsight_integrations.cli import main
sys.argv = ["hindsight", *json.loads(sys.argv[1])]
code = 0
try:
    main()
except SystemExit as exc:
    code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
finally:
    sys.stdout.flush()
    print("\\n" + MARKER + json.dumps({"exit": code, **{m: m in sys.modules for m in WATCHED}}), flush=True)
"""


def _probe_source() -> str:
    return _PROBE.replace("MARKER", repr(_MARKER)).replace("WATCHED", repr(list(WATCHED_MODULES)))


def hindsight_command() -> list[str]:
    """How to start the CLI: the ``hindsight`` script of this interpreter's environment, else ``python -m``."""
    script = Path(sys.executable).with_name("hindsight")
    if script.is_file() and os.access(script, os.X_OK):
        return [str(script)]
    found = shutil.which("hindsight")
    return [found] if found else [sys.executable, "-m", "hindsight_integrations.cli"]


def _environment(store: Path) -> dict[str, str]:
    """The caller's environment, offline, without an LLM (no command here calls one), on this store."""
    env = dict(os.environ)
    env.update(
        {
            "HF_HUB_OFFLINE": "1",
            "TRANSFORMERS_OFFLINE": "1",
            "TOKENIZERS_PARALLELISM": "false",
            "HINDSIGHT_USE_LLM": "false",
            "COLUMNS": "200",
        }
    )
    env.pop("HINDSIGHT_CHROMA_URL", None)
    return env


def fill_store(store: Path, memories: int) -> dict[str, Any]:
    """Write ``memories`` synthetic memories with the configured embedder; say which backend it used."""
    from ..core.config import load_settings
    from ..core.embedding.factory import local_model
    from ..core.embedding.local import LocalEmbedder, resolve_local_model
    from ..core.embedding.onnx.cache import cached_export
    from ..core.engine import MemoryEngine
    from .synthetic import memories as synthetic_memories

    settings = load_settings(store=store, namespace=NAMESPACE).model_copy(update={"chroma_url": None})
    engine = MemoryEngine(settings, llm=False)
    embedder = engine.embedder
    warm = None
    if isinstance(embedder, LocalEmbedder):
        path = resolve_local_model(local_model(settings), settings.cache_dir)[0]
        warm = cached_export(path, settings.cache_dir) is not None
    started = time.perf_counter()
    engine.store_memories(synthetic_memories(memories), apply_filter=False)
    engine.chroma.flush()
    return {
        "embedding_model": embedder.name,
        "embedding_backend": getattr(embedder, "backend_in_use", "remote"),
        "onnx_cache_was_warm": warm,
        "fill_seconds": round(time.perf_counter() - started, 3),
    }


def _timed(argv: list[str], env: dict[str, str]) -> float:
    started = time.perf_counter()
    done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=600)
    elapsed = time.perf_counter() - started
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)} exited with {done.returncode}: {done.stderr.strip()[-500:]}")
    return elapsed


def imported_modules(args: list[str], env: dict[str, str]) -> dict[str, Any]:
    """Run the CLI's ``main`` with ``args`` in a fresh interpreter and report which watched modules it imported."""
    done = subprocess.run(
        [sys.executable, "-c", _probe_source(), json.dumps(args)],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    lines = [line for line in done.stdout.splitlines() if line.startswith(_MARKER)]
    if not lines:
        raise RuntimeError(f"the module probe of {args} printed no report: {done.stderr.strip()[-500:]}")
    report: dict[str, Any] = json.loads(lines[-1][len(_MARKER) :])
    if report["exit"] != 0:
        raise RuntimeError(f"hindsight {' '.join(args)} exited with {report['exit']}: {done.stderr.strip()[-500:]}")
    return report


def run_startup(
    *,
    runs: int = 7,
    warmup: int = 1,
    memories: int = 30,
    query: str | None = None,
    progress: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    """Time each command ``runs`` times (after ``warmup`` untimed runs) against a fresh temporary store."""
    say = progress or (lambda _m: None)
    from .synthetic import questions

    query = query or questions(1)[0]
    with tempfile.TemporaryDirectory(prefix="hindsight-startup-") as tmp:
        store = Path(tmp) / "store"
        say(f"filling a temporary store with {memories} memories")
        fill = fill_store(store, memories)
        env = _environment(store)
        base = ["--store", str(store), "--namespace", NAMESPACE]
        commands = {"help": ["--help"], "stats": [*base, "stats"], "recall": [*base, "recall", query]}
        labels = {"help": "hindsight --help", "stats": "hindsight stats", "recall": f"hindsight recall {query!r}"}
        cli = hindsight_command()
        results: dict[str, Any] = {}
        for name, args in commands.items():
            say(f"{labels[name]}: {warmup} warm-up + {runs} timed runs")
            for _ in range(warmup):
                _timed([*cli, *args], env)
            times = [_timed([*cli, *args], env) for _ in range(runs)]
            modules = imported_modules(args, env)
            results[name] = {
                "command": labels[name],
                "argv": ["hindsight", *args],
                "seconds": [round(t, 4) for t in times],
                "min": round(min(times), 4),
                "median": round(statistics.median(times), 4),
                "target": TARGETS[name],
                "imports": {m: bool(modules[m]) for m in WATCHED_MODULES},
            }
    return {
        "benchmark": "startup",
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "runs": runs,
        "warmup": warmup,
        "memories": memories,
        "query": query,
        "cpus": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count(),
        "python": platform.python_version(),
        "command": cli,
        **fill,
        "commands": results,
    }


def startup_table(result: dict[str, Any]) -> str:
    """One row per command: min and median seconds against the target, and the heavy imports seen."""
    from .report import markdown_table

    def yes(flag: bool) -> str:
        return "yes" if flag else "no"

    rows = [
        [
            c["command"],
            f"{c['min']:.3f}",
            f"{c['median']:.3f}",
            f"{c['target']:.1f}",
            yes(c["imports"]["torch"]),
            yes(c["imports"]["sentence_transformers"]),
            yes(c["imports"]["onnxruntime"]),
            yes(c["imports"]["chromadb"]),
        ]
        for c in result["commands"].values()
    ]
    headers = ["command", "min s", "median s", "target s", "torch", "sentence-transformers", "onnxruntime", "chromadb"]
    note = (
        f"{result['runs']} runs each on {result['cpus']} cores, {result['memories']} memories, "
        f"embedding backend {result['embedding_backend']}"
    )
    return markdown_table(headers, rows) + "\n\n" + note
