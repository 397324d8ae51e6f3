"""Full-size benchmark runs (marked slow; they fit in CI's budget, see README "Results").

The LoCoMo tests are quality gates: the development split must keep evidence recall@10
≥ 0.75 inside the 450-token budget with the tuned settings, and close to the 0.78 target on the
default path (``record_turn`` as the adapters write, default recall). The scale test checks
that a 25k namespace stores completely and recalls; its timings are written out, never
asserted. The 100k figures come from ``hindsight bench scale`` (README §5): at 100k, with two
vectors per memory, the store alone takes ~20 min on two cores, a quarter of CI's budget.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from hindsight_integrations.bench.locomo import run_locomo
from hindsight_integrations.bench.locomo_data import load_directory
from hindsight_integrations.bench.locomo_default import run_default_path
from hindsight_integrations.bench.scale import run_scale
from hindsight_integrations.core.engine import MemoryEngine

DEV = Path(
    os.environ.get("HINDSIGHT_LOCOMO_DEV", Path(__file__).resolve().parents[2] / "shared" / "data" / "locomo_dev")
)


@pytest.mark.slow
@pytest.mark.skipif(not DEV.is_dir(), reason=f"LoCoMo dev split not found at {DEV} (set HINDSIGHT_LOCOMO_DEV)")
def test_locomo_dev_split_meets_the_retrieval_target(embedder) -> None:
    result = run_locomo(DEV, embedder=embedder)
    assert result["questions"] > 300
    assert result["recall@10"] >= 0.75
    assert result["context_tokens@10_max"] <= 450
    assert result["recall@5"] <= result["recall@20"]
    assert result["tokens"]["ours_mean"] < result["tokens"]["full_history_mean"] * 0.1


@pytest.mark.slow
@pytest.mark.timeout(1800)
def test_scale_25k_embedded(tmp_path: Path, embedder) -> None:
    results = run_scale(
        sizes=[25_000], queries=100, mode="embedded", out=tmp_path / "scale.json", embedder=embedder, raw_sample=2_000
    )
    (run,) = results["runs"]
    assert run["stored"] == 25_000
    assert run["queries"] == 100
    assert run["recall_p50_ms"] <= run["recall_p99_ms"]


@pytest.mark.slow
@pytest.mark.skipif(not DEV.is_dir(), reason=f"LoCoMo dev split not found at {DEV} (set HINDSIGHT_LOCOMO_DEV)")
def test_locomo_default_path_is_close_to_the_tuned_one(tmp_path: Path, embedder) -> None:
    """What a user gets: turns through record_turn as the adapters write them, default recall."""
    conversations, _ = load_directory(DEV)
    engine = MemoryEngine(store=tmp_path / "store", embedder=embedder, llm=False)
    (row,) = run_default_path(engine, conversations, modes=["record_turn"])
    assert row["questions"] > 300
    assert row["recall@10"] >= 0.775  # README: 0.781 against 0.793 tuned (target 0.78, within 0.03)
    assert row["context_tokens@10_max"] <= 450
