"""Speed at scale (`hindsight bench scale`): store throughput and recall latency.

For each size, a fresh namespace is filled with seeded synthetic memories
(``bench/synthetic.py``) through ``store_memories`` in batches, then timed recalls are run
with distinct questions, so every recall pays for its query embedding as a new question
would. Two reference points keep the numbers honest on any machine:

* store throughput is compared with the raw throughput of the embedder the store uses for
  what it stores (``embed_index_matrix``: the int8 copy of the model on ONNX by default),
  measured in the same run on the same texts (the memory's indexed text), interleaved batch
  by batch with the store so that both see the same machine load; the float32 model's own
  rate on the same texts is reported beside it (what the store was compared with before the
  int8 copy);
* latency is split into stages (embedding, dense ANN, context-vector ANN, BM25, fetch, ranking,
  packing) over extra recalls at the largest size, plus a cProfile of a few recalls.

Embedded mode runs Chroma in-process; server mode starts ``chroma run`` from the same
environment on a free local port and talks to it over HTTP, like a shared deployment.
Peak RSS is ``getrusage`` for this process (so cumulative across sizes) and VmHWM for the
server process.
"""

from __future__ import annotations

import cProfile
import io
import json
import os
import platform
import pstats
import resource
import subprocess
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

from ..core.embedding.local import LocalEmbedder
from ..core.embedding.protocol import embed_index_matrix, embed_matrix
from ..core.engine import MemoryEngine
from ..core.model.records import to_epoch
from ..core.recall import pipeline as recall_module
from ..core.storage.indexing import body_text
from ..processes import chroma_server
from . import synthetic
from .settling import context_written, rebuilt

STORE_BATCH = 512
RAW_SAMPLE = 10_000
WARM_QUERIES = 5
PROFILE_QUERIES = 40
CONTEXT_EMBEDDING_STAGE = "context vectors (MiniLM, framed text)"


def _rss_mb() -> dict[str, float]:
    """This process's peak RSS (cumulative over the run) and current RSS, in MB."""
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux
    return {"peak_rss_mb": round(peak, 1), "rss_mb": round(_proc_status_mb(os.getpid(), "VmRSS"), 1)}


def _proc_status_mb(pid: int, field: str) -> float:
    """A ``/proc/<pid>/status`` memory field in MB; 0.0 where /proc is unavailable (not Linux)."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith(field + ":"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


def indexed_texts(items: Sequence[dict[str, Any]]) -> list[str]:
    """The text the engine embeds for each item (``core.indexing.body_text``)."""
    return [
        body_text(
            {
                "content": i["content"],
                "occurred_at": to_epoch(i["occurred_at"]),
                "entities_json": json.dumps(i.get("entities", [])),
            }
        )
        for i in items
    ]


def percentile(values: Sequence[float], q: float) -> float:
    """numpy's (linear) ``q``-th percentile; 0.0 for no values, so an empty run still reports."""
    return float(np.percentile(np.asarray(values, dtype=np.float64), q)) if values else 0.0


def _timed(totals: dict[str, float], label: str, fn: Callable[..., Any]) -> Callable[..., Any]:
    """``fn``, adding its wall time to ``totals[label]`` on every call."""

    def run(*args: Any, **kwargs: Any) -> Any:
        started = time.perf_counter()
        try:
            return fn(*args, **kwargs)
        finally:
            totals[label] += time.perf_counter() - started

    return run


PARALLEL_STAGE = "BM25 + its hits' vectors (beside the embedding over a large namespace)"
EXACT_STAGE = "exact search of the in-memory copies (a small namespace)"


@contextmanager
def stage_timer(engine: MemoryEngine, namespace: str) -> Iterator[dict[str, float]]:
    """Accumulate the wall time of each step ``MemoryEngine.recall`` makes (patched, then restored)."""
    totals: dict[str, float] = defaultdict(float)
    handle = engine.chroma.namespace(namespace)
    instance_patches = [
        (handle, "refresh_indexes", "index sync check (lexical + facts)"),
        (handle, "query", "dense ANN (Chroma query)"),
        (handle, "query_context", "context-vector ANN (Chroma query)"),
        (handle, "flat_views", "fetch finalists (Chroma get)"),
        (handle, "metadata", "candidate metadata (facts not cached)"),
        (handle, "record_access", "record access (queued)"),
        *[(copy, "cosines", EXACT_STAGE) for copy in (handle.vector_copy, handle.context_copy) if copy is not None],
    ]
    module_patches = [
        ("lexical_candidates", PARALLEL_STAGE),
        ("embed_query", "query embedding (MiniLM)"),
        ("rank", "fusion + ranking"),
        ("pack_within_budget", "packing"),
        ("format_context", "formatting"),
    ]
    originals = {name: getattr(recall_module, name) for name, _ in module_patches}
    for obj, name, label in instance_patches:
        setattr(obj, name, _timed(totals, label, getattr(obj, name)))
    for name, label in module_patches:
        setattr(recall_module, name, _timed(totals, label, originals[name]))
    try:
        yield totals
    finally:
        for obj, name, _ in instance_patches:
            delattr(obj, name)
        for name, fn in originals.items():
            setattr(recall_module, name, fn)


@contextmanager
def store_stage_timer(engine: MemoryEngine, namespace: str) -> Iterator[dict[str, float]]:
    """Split store time into embedding (own text, framed text) and the Chroma write (HNSW insert + SQLite metadata).

    Context vectors a batch is written with are embedded in the foreground (``EngineParts.embed_records``);
    those of a lone write are the background writer's and not counted here.
    """
    totals: dict[str, float] = defaultdict(float)
    parts, handle = engine._parts, engine.chroma.namespace(namespace)
    parts.embed = _timed(totals, "embedding (MiniLM)", parts.embed)  # type: ignore[method-assign]
    parts.embed_framed = _timed(totals, CONTEXT_EMBEDDING_STAGE, parts.embed_framed)  # type: ignore[method-assign]
    handle.add = _timed(totals, "chroma add (HNSW + SQLite)", handle.add)  # type: ignore[method-assign]
    try:
        yield totals
    finally:
        del parts.embed
        del parts.embed_framed
        del handle.add


def ann_filter_cost(engine: MemoryEngine, namespace: str, queries: Sequence[str], pool: int = 50) -> dict[str, float]:
    """Chroma ANN with recall's default ``where`` vs without it, same vectors: the cost of pre-filtering."""
    from ..core.model.records import utcnow
    from ..core.recall.filters import RecallFilters

    state = engine.chroma.namespace(namespace)
    vectors = engine.embedder.embed(list(queries))
    where = RecallFilters().where(include_history=False, now=utcnow())
    out = {}
    for label, clause in (("with_default_where_ms", where), ("unfiltered_ms", None)):
        started = time.perf_counter()
        for vector in vectors:
            state.collection.query(query_embeddings=[vector], n_results=pool, where=clause, include=["distances"])
        out[label] = round((time.perf_counter() - started) / len(vectors) * 1000, 2)
    return out


def profile_recall(engine: MemoryEngine, namespace: str, queries: Sequence[str]) -> dict[str, Any]:
    """Where one recall's time goes at this size: per-stage means (ms) and cProfile's top functions."""
    half = len(queries) // 2
    wall = 0.0
    with stage_timer(engine, namespace) as totals:
        for q in queries[:half]:
            started = time.perf_counter()
            engine.recall(q, namespace=namespace, top_k=10)
            wall += time.perf_counter() - started
    stages = {k: round(v / half * 1000, 2) for k, v in sorted(totals.items(), key=lambda kv: -kv[1])}
    copy = engine.chroma.namespace(namespace).vector_copy
    beside = copy is None or not copy.searchable  # a small namespace's BM25 runs after the embedding (pipeline.py)
    serial = sum(v for k, v in totals.items() if k != PARALLEL_STAGE or not beside)
    stages["other (validation, pydantic copies, result)"] = round(max(0.0, wall - serial) / half * 1000, 2)
    profiler = cProfile.Profile()
    profiler.enable()
    for q in queries[half:]:
        engine.recall(q, namespace=namespace, top_k=10)
    profiler.disable()
    buffer = io.StringIO()
    pstats.Stats(profiler, stream=buffer).sort_stats("tottime").print_stats(15)
    top = [line.strip() for line in buffer.getvalue().splitlines() if line.strip() and line.strip()[0].isdigit()]
    return {
        "queries": half,
        "recall_ms_mean": round(wall / half * 1000, 2),
        "stages_ms": stages,
        "ann_query_cost": ann_filter_cost(engine, namespace, queries),
        "cprofile_top_tottime": top[:15],
    }


def bench_size(
    engine: MemoryEngine,
    namespace: str,
    items: Sequence[dict[str, Any]],
    queries: Sequence[str],
    *,
    embedder: Any,
    raw_sample: int = RAW_SAMPLE,
    batch: int = STORE_BATCH,
    settled_queries: Sequence[str] = (),
    profile_queries: Sequence[str] = (),
) -> dict[str, Any]:
    """Store rate against the raw model's rate, then recall latencies, for one namespace size.

    Recall is timed twice: right after the import, while the context vectors the import queued
    may still be written in the background (what a user who asks at once gets), and again with
    ``settled_queries`` once they are all written (what every later recall gets). The two
    differ only by that background work, which one figure alone would mix in or hide.

    The raw reference is measured interleaved with the store, batch by batch (every
    ``every``-th batch is also embedded on its own, about ``raw_sample`` texts in all), so
    both see the same share of a CPU that other work may be using; measuring it once before
    or after can be off by 2x on a busy machine.
    """
    batches = [list(items[start : start + batch]) for start in range(0, len(items), batch)]
    every = max(1, round(len(items) / max(raw_sample, 1)))
    raw_texts = 0
    raw_seconds = 0.0
    float32_seconds = 0.0
    engine.drop_namespace(namespace)
    with store_stage_timer(engine, namespace) as store_stages:
        store_seconds = 0.0
        for n, chunk in enumerate(batches):
            if n % every == 0:
                texts = indexed_texts(chunk)
                started = time.perf_counter()
                embed_index_matrix(embedder, texts)  # as the store embeds what it stores
                raw_seconds += time.perf_counter() - started
                started = time.perf_counter()
                embed_matrix(embedder, texts)  # the float32 model itself, as queries run
                float32_seconds += time.perf_counter() - started
                raw_texts += len(texts)
            started = time.perf_counter()
            engine.store_memories(chunk, namespace=namespace, apply_filter=False, dedup=False)
            store_seconds += time.perf_counter() - started
    raw_rate = raw_texts / raw_seconds
    state = engine.chroma.namespace(namespace)
    stored = state.count()
    warm, timed = queries[:WARM_QUERIES], queries[WARM_QUERIES:]
    for q in warm:  # the first search after a bulk write starts the BM25 rebuild: let it land first
        engine.recall(q, namespace=namespace, top_k=10)
        rebuilt(state)
    latencies = _recall_latencies(engine, namespace, timed)
    started = time.perf_counter()
    context_written(state)
    context_wait = time.perf_counter() - started
    settled = _recall_latencies(engine, namespace, settled_queries)
    engine.chroma.flush()
    store_rate = len(items) / store_seconds
    result: dict[str, Any] = {
        "size": len(items),
        "stored": stored,
        "store_seconds": round(store_seconds, 2),
        "store_per_second": round(store_rate, 1),
        "raw_embed_per_second": round(raw_rate, 1),
        "raw_embed_sample": raw_texts,
        "store_vs_raw_embed": round(store_rate / raw_rate, 3),
        "float32_embed_per_second": round(raw_texts / float32_seconds, 1),
        "store_vs_float32_embed": round(store_rate * float32_seconds / raw_texts, 3),
        "store_stages_s": {
            **{k: round(v, 2) for k, v in store_stages.items()},
            "other (validation, records, lexical index)": round(
                max(0.0, store_seconds - sum(store_stages.values())), 2
            ),
        },
        "queries": len(latencies),
        "recall_p50_ms": round(percentile(latencies, 50), 2),
        "recall_p90_ms": round(percentile(latencies, 90), 2),
        "recall_p99_ms": round(percentile(latencies, 99), 2),
        "recall_mean_ms": round(float(np.mean(latencies)), 2) if latencies else 0.0,
        "context_vectors_wait_s": round(context_wait, 2),
        **_rss_mb(),
    }
    if settled:
        result["settled_queries"] = len(settled)
        result["settled_recall_p50_ms"] = round(percentile(settled, 50), 2)
        result["settled_recall_p99_ms"] = round(percentile(settled, 99), 2)
    if profile_queries:
        result["profile"] = profile_recall(engine, namespace, profile_queries)
        engine.chroma.flush()
    return result


def _recall_latencies(engine: MemoryEngine, namespace: str, questions: Sequence[str]) -> list[float]:
    """Milliseconds per recall, one new question each (so each pays for its query embedding)."""
    latencies = []
    for q in questions:
        started = time.perf_counter()
        engine.recall(q, namespace=namespace, top_k=10)
        latencies.append((time.perf_counter() - started) * 1000)
    return latencies


def run_scale(
    *,
    sizes: Sequence[int],
    queries: int,
    mode: str,
    out: Path | None,
    console: Any = None,
    embedder: Any = None,
    raw_sample: int = RAW_SAMPLE,
    batch: int = STORE_BATCH,
    profile: bool = True,
    seed: int = 7,
    torch_threads: int | None = None,
) -> dict[str, Any]:
    """Run every (mode, size), write ``out`` (JSON) and a plot beside it, return the results.

    ``torch_threads`` sets torch's intra-op threads for this process (default: torch's own
    choice, one per core); it matters only when the embedder runs on torch, not ONNX.
    """
    if mode not in ("embedded", "server", "both"):
        raise ValueError("mode must be embedded, server or both")
    sizes = sorted({int(s) for s in sizes})
    if not sizes or sizes[0] <= 0 or queries <= 0:
        raise ValueError("sizes and queries must be positive")
    say = console.print if console is not None else (lambda *a, **k: None)
    if torch_threads:
        import torch

        torch.set_num_threads(torch_threads)
    embedder = embedder or LocalEmbedder()
    embedder.embed(["warm up the model"])
    modes = ["embedded", "server"] if mode == "both" else [mode]
    per_run = 2 * queries + WARM_QUERIES + PROFILE_QUERIES
    all_questions = synthetic.questions(per_run * len(sizes) * len(modes), seed=seed + 1)
    largest = synthetic.memories(sizes[-1], seed=seed)  # smaller sizes are prefixes of the same stream
    results: dict[str, Any] = {
        "benchmark": "scale",
        "started_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "machine": _machine(),
        "config": {
            "sizes": sizes,
            "queries": queries,
            "store_batch": batch,
            "raw_embed_sample_max": raw_sample,
            "top_k": 10,
            "embedding_model": getattr(embedder, "name", "?"),
            "embedding_backend": getattr(embedder, "backend_in_use", "?"),
            "seed": seed,
        },
        "runs": [],
    }
    q_offset = 0
    for run_mode in modes:
        with (
            tempfile.TemporaryDirectory(prefix=f"hindsight-scale-{run_mode}-") as tmp,
            _backend(run_mode, Path(tmp)) as (kwargs, server),
        ):
            engine = MemoryEngine(embedder=embedder, llm=False, **kwargs)
            for size in sizes:
                qs = all_questions[q_offset : q_offset + per_run]
                q_offset += per_run
                say(f"[bold]{run_mode}[/bold] {size:,} memories: storing…")
                row = bench_size(
                    engine,
                    f"scale-{size}",
                    largest[:size],
                    qs[: queries + WARM_QUERIES],
                    embedder=embedder,
                    raw_sample=raw_sample,
                    batch=batch,
                    settled_queries=qs[queries + WARM_QUERIES : 2 * queries + WARM_QUERIES],
                    profile_queries=qs[2 * queries + WARM_QUERIES :] if profile and size == sizes[-1] else (),
                )
                row["mode"] = run_mode
                if server is not None:
                    row["server_peak_rss_mb"] = round(_proc_status_mb(server.pid, "VmHWM"), 1)
                engine.drop_namespace(f"scale-{size}")
                results["runs"].append(row)
                say(
                    f"  store {row['store_per_second']:,.0f}/s ({row['store_vs_raw_embed']:.0%} of raw embedding "
                    f"{row['raw_embed_per_second']:,.0f}/s); "
                    f"recall p50 {row['recall_p50_ms']} ms, p99 {row['recall_p99_ms']} ms "
                    f"(settled {row['settled_recall_p50_ms']} / {row['settled_recall_p99_ms']} ms); "
                    f"peak RSS {row['peak_rss_mb']} MB"
                )
                if out is not None:
                    write_results(results, out)
    results["machine"]["load_average_end"] = [round(x, 2) for x in os.getloadavg()]
    if out is not None:
        write_results(results, out)
    return results


def _machine() -> dict[str, Any]:
    """What the figures depend on: cores, torch threads, and how busy the machine was."""
    import torch

    return {
        "cpus": os.cpu_count(),
        "torch_threads": torch.get_num_threads(),
        "python": platform.python_version(),
        "platform": platform.platform(),
        "load_average_start": [round(x, 2) for x in os.getloadavg()],
    }


@contextmanager
def _backend(mode: str, tmp: Path) -> Iterator[tuple[dict[str, Any], subprocess.Popen[bytes] | None]]:
    """``MemoryEngine`` arguments for the mode, and the Chroma server process in server mode."""
    if mode == "embedded":
        yield {"store": tmp / "store"}, None
        return
    with open(tmp / "chroma-server.log", "wb") as log, chroma_server(tmp / "server", log=log) as server:
        yield {"chroma_url": server.url}, server.process


def write_results(results: dict[str, Any], out: Path) -> None:
    """Write the results as JSON and their plot beside it; called after every size, so a crash keeps the rest."""
    from .scale_report import plot_scale

    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    if results["runs"]:
        plot_scale(results, out.with_suffix(".png"))
