"""MCP overhead: ``retrieve_memory`` round trips over stdio and streamable HTTP versus a direct
engine call (p50/p99), and batch-store throughput (memories/s) through each path.

Each path gets its own fresh store, filled through that path (which is the throughput
measurement), then answers the same queries. Prints a table and writes
benchmarks/results/mcp.json.

    python benchmarks/bench_mcp.py            # 2000 memories, 200 queries per path
    python benchmarks/bench_mcp.py --quick    # CI: 100 memories, 30 queries (< 60 s)
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
os.environ.setdefault("HINDSIGHT_LOG_LEVEL", "WARNING")
REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from hindsight_integrations import MemoryEngine  # noqa: E402
from hindsight_integrations.mcp import MemoryClient  # noqa: E402
from tests.mcp_support import http_server  # noqa: E402

NAMES = [
    "Ana",
    "Bilal",
    "Chen",
    "Dara",
    "Emeka",
    "Freya",
    "Goran",
    "Hana",
    "Ivo",
    "Jun",
    "Kofi",
    "Lena",
    "Mateo",
    "Nia",
    "Omar",
    "Priya",
]
CITIES = [
    "Lisbon",
    "Nairobi",
    "Osaka",
    "Quito",
    "Tallinn",
    "Hanoi",
    "Perth",
    "Bergen",
    "Cusco",
    "Dakar",
    "Lyon",
    "Tbilisi",
]
TOPICS = [
    "the billing service",
    "the mobile app",
    "the data pipeline",
    "the search ranking",
    "the onboarding flow",
    "the audit log",
    "the GPU cluster",
    "the design system",
    "the payments API",
    "the mail relay",
]
HABITS = [
    "prefers written updates",
    "works late on Thursdays",
    "is vegetarian",
    "runs marathons",
    "speaks Portuguese",
    "collects vinyl",
    "is learning Korean",
    "cycles to work",
    "keeps bees",
    "plays chess online",
]


def corpus(n: int, seed: int = 7) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    out = []
    for i in range(n):
        name, city, topic, habit = rng.choice(NAMES), rng.choice(CITIES), rng.choice(TOPICS), rng.choice(HABITS)
        out.append({"content": f"My colleague {name} #{i} lives in {city}, owns {topic} and {habit}.", "kind": "fact"})
    return out


def queries(q: int, seed: int = 11) -> list[str]:
    rng = random.Random(seed)
    return [f"who owns {rng.choice(TOPICS)} and lives in {rng.choice(CITIES)}?" for _ in range(q)]


def percentile(values: list[float], p: float) -> float:
    ordered = sorted(values)
    k = (len(ordered) - 1) * p / 100
    lo, hi = int(k), min(int(k) + 1, len(ordered) - 1)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (k - lo)


def measure(
    store_batch: Callable[[list[dict[str, Any]], str], Any],
    recall: Callable[[str], Any],
    items: list[dict[str, Any]],
    qs: list[str],
    batch: int,
) -> dict[str, Any]:
    started = time.perf_counter()
    for n in range(0, len(items), batch):
        store_batch(items[n : n + batch], f"bench-{n}")
    store_seconds = time.perf_counter() - started
    for q in qs[:3]:  # warm caches and connections
        recall(q)
    latencies = []
    for q in qs:
        t = time.perf_counter()
        recall(q)
        latencies.append((time.perf_counter() - t) * 1000)
    return {
        "store_memories_per_s": round(len(items) / store_seconds, 1),
        "recall_ms": {
            "p50": round(percentile(latencies, 50), 2),
            "p99": round(percentile(latencies, 99), 2),
            "mean": round(statistics.fmean(latencies), 2),
        },
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="small sizes for CI (< 60 s)")
    parser.add_argument("--memories", type=int)
    parser.add_argument("--queries", type=int)
    parser.add_argument("--batch", type=int)
    parser.add_argument("--out", default=str(REPO / "benchmarks" / "results" / "mcp.json"))
    args = parser.parse_args()
    n = args.memories or (100 if args.quick else 2000)
    q = args.queries or (30 if args.quick else 200)
    batch = args.batch or (50 if args.quick else 200)
    items, qs = corpus(n), queries(q)
    results: dict[str, Any] = {}
    began = time.perf_counter()

    with tempfile.TemporaryDirectory(prefix="bench-mcp-") as tmp:
        root = Path(tmp)
        engine = MemoryEngine(store=root / "direct", llm=False)
        engine.warm()
        results["direct"] = measure(
            lambda chunk, rid: engine.store_memories(chunk, request_id=rid, origin="bench"),
            lambda query: engine.recall(query, top_k=5),
            items,
            qs,
            batch,
        )
        env = {"HINDSIGHT_STORE": str(root / "stdio"), "HINDSIGHT_LOG_LEVEL": "WARNING"}
        with MemoryClient.stdio(env=env, namespace="bench", errlog=open(os.devnull, "w"), timeout=120) as client:
            client.connect()
            results["stdio"] = measure(
                lambda chunk, rid: client.store(chunk, request_id=rid),
                lambda query: client.recall(query, top_k=5),
                items,
                qs,
                batch,
            )
        with (
            http_server(root / "http", namespace="bench") as base,
            MemoryClient.http(f"{base}/mcp", timeout=120) as client,
        ):
            client.connect()
            results["http"] = measure(
                lambda chunk, rid: client.store(chunk, request_id=rid),
                lambda query: client.recall(query, top_k=5),
                items,
                qs,
                batch,
            )

    direct = results["direct"]["recall_ms"]
    for name in ("stdio", "http"):
        r = results[name]["recall_ms"]
        results[name]["overhead_ms"] = {
            "p50": round(r["p50"] - direct["p50"], 2),
            "p99": round(r["p99"] - direct["p99"], 2),
        }
    report = {
        "benchmark": "mcp_overhead",
        "quick": args.quick,
        "memories": n,
        "queries": q,
        "batch_size": batch,
        "top_k": 5,
        "seconds": round(time.perf_counter() - began, 1),
        "environment": {"python": platform.python_version(), "platform": platform.platform(), "cpus": os.cpu_count()},
        "results": results,
    }
    print(f"MCP overhead: {n} memories (batches of {batch}), {q} retrieve_memory calls, top_k=5")
    print(f"{'path':<8}{'recall p50 ms':>15}{'recall p99 ms':>15}{'overhead p50':>14}{'store mem/s':>13}")
    for name, r in results.items():
        over = r.get("overhead_ms", {}).get("p50", 0.0)
        print(
            f"{name:<8}{r['recall_ms']['p50']:>15.2f}{r['recall_ms']['p99']:>15.2f}{over:>14.2f}{r['store_memories_per_s']:>13.1f}"
        )
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=2) + "\n")
    print(f"wrote {out} in {report['seconds']} s")


if __name__ == "__main__":
    main()
