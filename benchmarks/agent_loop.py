"""Recall in an agent's loop: turns written one at a time, and a question asked between them.

The LoCoMo and peers benchmarks write a whole conversation, then ask; an agent writes each turn
and recalls on the next, after its model has answered. So here a dev conversation is written one
turn at a time, and after every ``--every`` turns (a user's and a reply) the loop waits
``--think`` seconds (the model's turn) and asks the conversation's next question:
hindsight through the in-process MCP client (``record_turn``, ``recall``: what the LangChain and
LlamaIndex memories call), and LangChain's ``VectorStoreRetrieverMemory`` (``save_context``,
``load_memory_variables``) beside it on the same model, each question asked of both in turn, the
order alternating. It runs once with no pause (a recall right after a write) and once with the
pause, each on fresh stores. Prints a table and writes ``benchmarks/results/agent_loop.json``.

    python benchmarks/agent_loop.py                  # the first dev conversation, a question every 2 turns
    python benchmarks/agent_loop.py --conversations 0 --think 1.0
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from hindsight_integrations import MemoryEngine  # noqa: E402
from hindsight_integrations.bench.locomo_data import Conversation, load_directory  # noqa: E402
from hindsight_integrations.bench.locomo_default import record_turn  # noqa: E402
from hindsight_integrations.bench.peer_systems import LangChainSystem  # noqa: E402
from hindsight_integrations.bench.scale import percentile  # noqa: E402
from hindsight_integrations.core.config import load_settings  # noqa: E402
from hindsight_integrations.core.embedding.factory import build_embedder  # noqa: E402
from hindsight_integrations.core.embedding.protocol import Embedder  # noqa: E402
from hindsight_integrations.mcp import MemoryClient  # noqa: E402

SYSTEMS = ("hindsight (record_turn, recall)", "LangChain VectorStoreRetrieverMemory")


def loop(conversations: list[Conversation], embedder: Embedder, *, every: int, think: float) -> dict[str, list[float]]:
    """Both systems through the conversations on fresh stores; each system's recall times in ms."""
    import chromadb

    timings: dict[str, list[float]] = {name: [] for name in SYSTEMS}
    with tempfile.TemporaryDirectory(prefix="hindsight-loop-") as tmp:
        engine = MemoryEngine(store=Path(tmp) / "hindsight", embedder=embedder, llm=False)
        engine.warm()
        peer = LangChainSystem(
            chromadb.PersistentClient(
                path=str(Path(tmp) / "langchain"), settings=chromadb.Settings(anonymized_telemetry=False)
            ),
            embedder,
        )
        asked = 0
        for index, conversation in enumerate(conversations):
            peer.start(index)
            questions = [q.question for q in conversation.questions]
            with MemoryClient.in_process(engine, namespace=f"loop-{index:03d}") as client:
                recall: dict[str, Callable[[str], object]] = {
                    SYSTEMS[0]: lambda question: client.recall(question, top_k=10),
                    SYSTEMS[1]: peer.ask,
                }
                for n, turn in enumerate(conversation.turns, start=1):
                    record_turn(client, conversation, turn)
                    peer.save(turn)
                    if n % every:
                        continue
                    time.sleep(think)
                    question = questions[(n // every) % len(questions)]
                    for name in SYSTEMS if asked % 2 == 0 else SYSTEMS[::-1]:
                        started = time.perf_counter()
                        recall[name](question)
                        timings[name].append((time.perf_counter() - started) * 1000)
                    asked += 1
    return timings


def summary(timings: list[float]) -> dict[str, float]:
    """Percentiles as every other benchmark reports them (``bench.scale.percentile``: numpy's, linear)."""
    return {
        "recalls": len(timings),
        **{f"p{q}_ms": round(percentile(timings, q), 2) for q in (50, 90, 99)},
        "mean_ms": round(statistics.mean(timings), 2) if timings else 0.0,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=REPO.parent / "shared" / "data" / "locomo_dev")
    parser.add_argument("--every", type=int, default=2, help="turns written between two questions (a user's, a reply)")
    parser.add_argument("--think", type=float, default=0.5, help="seconds between the last write and the question")
    parser.add_argument("--conversations", type=int, default=1, help="how many dev conversations (0: all)")
    parser.add_argument("--out", type=Path, default=REPO / "benchmarks" / "results" / "agent_loop.json")
    args = parser.parse_args()
    conversations, _ = load_directory(args.data)
    conversations = conversations[: args.conversations or None]
    embedder = build_embedder(load_settings())
    embedder.embed(["warm up the model"])
    rows: list[dict[str, Any]] = []
    for think in (0.0, args.think):
        for name, timings in loop(conversations, embedder, every=args.every, think=think).items():
            rows.append({"system": name, "think_s": think, **summary(timings)})
    print("| system | pause before the question | recalls | p50 ms | p90 ms | p99 ms | mean ms |")
    print("|---|---|---|---|---|---|---|")
    for row in rows:
        print(
            f"| {row['system']} | {row['think_s']} s | {row['recalls']} | {row['p50_ms']} | {row['p90_ms']} "
            f"| {row['p99_ms']} | {row['mean_ms']} |"
        )
    result = {
        "benchmark": "agent_loop",
        "started_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version()},
        "config": {
            "data": str(args.data),
            "every": args.every,
            "think_s": args.think,
            "conversations": len(conversations),
        },
        "rows": rows,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
