"""Full-size benchmark runs (marked slow; they fit in CI's budget, see README "Results").

The LoCoMo test is a quality gate: the development split must keep evidence recall@10
≥ 0.75 inside the 450-token budget. The 100k scale test checks that a namespace of that
size stores completely and recalls; its timings are written out, never asserted.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from hindsight_integrations.bench.locomo import run_locomo
from hindsight_integrations.bench.scale import run_scale

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
@pytest.mark.timeout(3600)
def test_scale_100k_embedded(tmp_path: Path, embedder) -> None:
    results = run_scale(sizes=[100_000], queries=100, mode="embedded", out=tmp_path / "scale.json", embedder=embedder)
    (run,) = results["runs"]
    assert run["stored"] == 100_000
    assert run["queries"] == 100
    assert run["recall_p50_ms"] <= run["recall_p99_ms"]
