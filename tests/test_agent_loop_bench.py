"""``benchmarks/agent_loop.py``: both systems written a turn at a time and asked between turns."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

LOCOMO_DEV = Path(__file__).resolve().parents[2] / "shared" / "data" / "locomo_dev"


@pytest.mark.skipif(not LOCOMO_DEV.is_dir(), reason=f"LoCoMo dev data not found at {LOCOMO_DEV}")
def test_the_loop_times_each_question_of_both_systems(embedder) -> None:
    from benchmarks.agent_loop import SYSTEMS, loop, summary
    from hindsight_integrations.bench.locomo_data import load_directory

    conversations, _ = load_directory(LOCOMO_DEV)
    short = dataclasses.replace(conversations[0], turns=conversations[0].turns[:7])
    timings = loop([short], embedder, every=2, think=0.0)
    assert set(timings) == set(SYSTEMS)
    assert all(len(times) == 3 and min(times) > 0 for times in timings.values())  # after turns 2, 4 and 6
    assert summary(timings[SYSTEMS[0]])["recalls"] == 3
