"""Load against the scale-out topology (`hindsight bench load`): N clients × M mixed calls, two replicas.

Starts, on 127.0.0.1, one ``chroma run`` server, a throw-away PostgreSQL as the replicas' lock
service, and two HTTP replicas of our server (without PostgreSQL, one replica: a second one
without a lock service would refuse its writes, ``core/storage/replicas.py``; the run says so), then
runs ``clients`` threads, each with its own ``MemoryClient`` on one of the replicas
(alternating), making ``operations`` calls drawn from a fixed mix: store (with a
request id), recall, record a turn, update an earlier memory of its own. Every acknowledged
store is checked afterwards: a memory id the server returned and the store no longer has is
a lost write. Reported: calls per second, p50/p99 latency per kind, errors by type, lost.
"""

from __future__ import annotations

import json
import os
import random
import sys
import tempfile
import threading
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

from ..mcp import MemoryClient
from ..processes import chroma_server, free_port, postgres_binaries, postgres_server, running
from .scale import percentile

MIX = (("store", 0.4), ("recall", 0.4), ("record_turn", 0.1), ("update", 0.1))
TOPICS = ("garden", "train", "database", "holiday", "budget", "dentist", "guitar", "deadline")


@contextmanager
def topology(workdir: Path, token: str, *, replicas: int = 2) -> Iterator[tuple[list[str], bool]]:
    """Chroma server, lock database (if PostgreSQL is installed) and ``replicas`` servers; yields (URLs, locked).

    Without PostgreSQL only one replica starts: replicas without a shared lock service refuse
    each other's writes.
    """
    with ExitStack() as stack:
        chroma = stack.enter_context(chroma_server(workdir / "chroma"))
        env = {
            "HINDSIGHT_CHROMA_URL": chroma.url,
            "HINDSIGHT_TOKENS": f"{token}=load",
            "HF_HUB_OFFLINE": "1",
            "TOKENIZERS_PARALLELISM": "false",
        }
        locked = postgres_binaries() is not None
        if locked:
            env["HINDSIGHT_LOCK_URL"] = stack.enter_context(postgres_server())
        else:
            replicas = 1
        urls = []
        for n in range(replicas):
            port = free_port()
            command = [sys.executable, "-m", "hindsight_integrations.mcp", "--transport", "http", "--port", str(port)]
            log = stack.enter_context(open(workdir / f"replica-{n}.log", "wb"))
            base = f"http://127.0.0.1:{port}"
            full_env = {k: v for k, v in os.environ.items() if not k.startswith("HINDSIGHT_")}
            stack.enter_context(
                running(command, health_url=f"{base}/health", env={**full_env, **env}, log=log, startup_seconds=180)
            )
            urls.append(base + "/mcp")
        yield urls, locked


def run_load(
    *, clients: int = 8, operations: int = 50, seed: int = 7, progress: Callable[[str], None] | None = None
) -> dict[str, Any]:
    """Run the load (see the module docstring) and return the figures."""
    token = "load-" + uuid.uuid4().hex
    with tempfile.TemporaryDirectory(prefix="hindsight-load-") as tmp, topology(Path(tmp), token) as (urls, locked):
        if progress:
            progress(f"{len(urls)} replicas up{' with a lock database' if locked else ' (no PostgreSQL: one replica)'}")
        latencies: dict[str, list[float]] = {kind: [] for kind, _ in MIX}
        errors: Counter[str] = Counter()
        error_examples: dict[str, str] = {}
        error_texts: list[str] = []  # every error in full, so a failed run says exactly what went wrong
        acknowledged: list[str] = []
        lock = threading.Lock()

        def client_run(n: int) -> None:
            rng = random.Random(seed + n)
            mine: list[str] = []
            with MemoryClient.http(urls[n % len(urls)], token=token, retries=2) as client:
                for k in range(operations):
                    kind = rng.choices([m for m, _ in MIX], weights=[w for _, w in MIX])[0]
                    topic = rng.choice(TOPICS)
                    started = time.perf_counter()
                    try:
                        if kind == "store":
                            ids = client.store(
                                f"Client {n} note {k}: the {topic} plan changed to option {rng.randint(1, 99)}."
                            ).ids
                            mine.extend(ids)
                        elif kind == "recall":
                            client.recall(f"What is the {topic} plan?")
                        elif kind == "record_turn":
                            client.record_turn(f"Client {n} says the {topic} looks fine today.", session_id=f"load-{n}")
                        elif mine:
                            client.update(rng.choice(mine), metadata={"checked": k})
                    except Exception as exc:  # noqa: BLE001 - counted and reported, the load goes on
                        with lock:
                            errors[type(exc).__name__] += 1
                            error_examples.setdefault(type(exc).__name__, f"{kind}: {exc}"[:300])
                            error_texts.append(f"client {n} call {k} ({kind}): {type(exc).__name__}: {exc}")
                        continue
                    with lock:
                        latencies[kind].append((time.perf_counter() - started) * 1000)
            with lock:
                acknowledged.extend(mine)

        started = time.perf_counter()
        threads = [threading.Thread(target=client_run, args=(n,)) for n in range(clients)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        seconds = time.perf_counter() - started
        with MemoryClient.http(urls[0], token=token) as checker:
            present: set[str] = set()
            for offset in range(0, 1_000_000, 1000):
                page = checker.list(include_history=True, limit=1000, offset=offset)
                present.update(r.id for r in page)
                if len(page) < 1000:
                    break
        lost = [i for i in acknowledged if i not in present]
        replica_count = len(urls)
        replica_problems = _logged_problems(Path(tmp)) if errors or lost else []
    done = sum(len(v) for v in latencies.values())
    return {
        "clients": clients,
        "operations_per_client": operations,
        "replicas": replica_count,
        "lock_database": locked,
        "seconds": round(seconds, 2),
        "calls_per_second": round(done / seconds, 1) if seconds else 0.0,
        "calls": done,
        "errors": dict(errors),
        "error_examples": error_examples,
        "error_texts": error_texts,
        "replica_problems": replica_problems,
        "acknowledged_writes": len(acknowledged),
        "lost_writes": len(lost),
        "latency_ms": {
            kind: {"n": len(v), "p50": round(percentile(v, 50), 1), "p99": round(percentile(v, 99), 1)}
            for kind, v in latencies.items()
            if v
        },
    }


def _logged_problems(workdir: Path, most: int = 20) -> list[str]:
    """The replicas' last warning and error log lines, so a run with errors says what the servers saw."""
    lines = []
    for log in sorted(workdir.glob("replica-*.log")):
        for line in log.read_text(encoding="utf-8", errors="replace").splitlines():
            try:
                level = json.loads(line).get("level")
            except (ValueError, AttributeError):
                level = "error" if "Error" in line or "Traceback" in line else None
            if level in ("warning", "error", "critical"):
                lines.append(f"{log.stem}: {line}")
    return lines[-most:]


def load_table(result: dict[str, Any]) -> str:
    """The load run as Markdown: one row per call kind, then totals."""
    lines = ["| call | n | p50 ms | p99 ms |", "|---|---|---|---|"]
    for kind, row in result["latency_ms"].items():
        lines.append(f"| {kind} | {row['n']} | {row['p50']} | {row['p99']} |")
    errors = ", ".join(f"{k} {v}" for k, v in result["errors"].items()) or "none"
    lines.append(
        f"\n{result['clients']} clients × {result['operations_per_client']} calls on {result['replicas']} replicas "
        f"({'with' if result['lock_database'] else 'without'} the lock database): "
        f"{result['calls_per_second']} calls/s; errors: {errors}; "
        f"{result['acknowledged_writes']} acknowledged writes, {result['lost_writes']} lost"
    )
    return "\n".join(lines)


__all__ = ["load_table", "run_load", "topology"]
