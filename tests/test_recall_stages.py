"""Recall timed stage by stage (``core/recall/stages.py``), as ``hindsight bench peers`` reports it (issue #28)."""

from __future__ import annotations

from pathlib import Path

from hindsight_integrations import MemoryEngine
from hindsight_integrations.bench.peers_report import peers_table
from hindsight_integrations.core.recall.stages import StageTimes, stopwatch, timing_stages

STAGES = ["indexes", "embed", "search", "admit", "rank", "currency", "floor", "fetch", "pack"]


def test_every_stage_of_a_recall_is_timed_inside_the_block_only(tmp_path: Path) -> None:
    engine = MemoryEngine(store=tmp_path / "store", llm=False)
    engine.store("I ride a blue Vespa scooter to work.", namespace="n")
    engine.store("My sister lives in Lyon.", namespace="n")
    with timing_stages() as times:
        engine.recall("How do I get to work?", namespace="n")
        engine.recall("Where does my sister live?", namespace="n")
    engine.recall("Where does my sister live?", namespace="n")  # outside: not counted
    summary = times.summary()
    assert list(summary) == STAGES
    assert all(s["recalls"] == 2 and 0 <= s["p50_ms"] <= s["p99_ms"] for s in summary.values())


def test_timing_blocks_nest_and_restore() -> None:
    outer, inner = StageTimes(), StageTimes()
    with timing_stages(outer):
        with timing_stages(inner) as got:
            assert got is inner
        stopwatch().lap("after")  # the outer block is current again
    assert list(outer.summary()) == ["after"] and inner.summary() == {}


def test_the_peers_table_lists_the_stages_of_a_row_that_has_them() -> None:
    row = {
        "name": "hindsight (defaults)",
        "status": "ok",
        **dict.fromkeys(["recall@5", "recall@10", "all_found@10", "mrr@10"], 0.5),
        **dict.fromkeys(["context_tokens_mean", "context_tokens_max", "latency_p50_ms", "latency_p99_ms"], 1),
        "ingest_seconds": 1.0,
        "stages_ms": {"embed": {"recalls": 3, "mean_ms": 4.0, "p50_ms": 3.5, "p99_ms": 9.0}},
    }
    assert "- **hindsight (defaults)**, p50 ms by stage: embed 3.50" in peers_table({"peers": [row]})
