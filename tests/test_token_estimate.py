"""The built-in token estimate against OpenAI's real encodings: never under, not far over.

A context budget that the estimate undercounts is a prompt that overflows, so the estimate
must stay at or above o200k_base (GPT-4o and later) on Chinese and English turns alike; by at
most a third, or budgets waste room. The turns are the two demos' (always here) and zh_dev's
when the shared data is present. ``bpe-openai`` ships the encodings: nothing is downloaded.
"""

from __future__ import annotations

from datetime import date
from pathlib import Path

import pytest

from hindsight_integrations.core.language.tokens import estimate_tokens
from hindsight_integrations.demo_conversation import build_sessions as english_sessions
from hindsight_integrations.demo_conversation_zh import build_sessions as chinese_sessions

bpe_openai = pytest.importorskip("bpe_openai")

ZH_DEV = Path(__file__).resolve().parents[2] / "shared" / "data" / "zh_dev"


def _turns(build) -> list[str]:
    return [turn.content for session in build(date(2026, 12, 1)) for turn in session.turns]


def _ratio(texts: list[str], encoding: str) -> float:
    real = sum(len(bpe_openai.get_encoding(encoding).encode(t)) for t in texts)
    return sum(estimate_tokens(t) for t in texts) / real


@pytest.mark.parametrize("build", [english_sessions, chinese_sessions], ids=["en demo", "zh demo"])
def test_the_estimate_covers_o200k_without_wasting_a_third(build) -> None:
    assert 1.0 <= _ratio(_turns(build), "o200k_base") <= 1.33


def test_chinese_is_no_longer_counted_at_half_its_tokens() -> None:
    """1.8 ideographs per token counted the zh demo at ~0.6 of o200k; one per ideograph is above it."""
    texts = _turns(chinese_sessions)
    assert _ratio(texts, "o200k_base") >= 1.0
    assert _ratio(texts, "cl100k_base") >= 0.7  # cl100k spends more on Chinese; the older encoding


@pytest.mark.skipif(not ZH_DEV.is_dir(), reason=f"zh_dev not found at {ZH_DEV}")
def test_zh_dev_turns_are_not_undercounted() -> None:
    from benchmarks.token_estimate import compare, turn_texts

    row = compare(turn_texts(ZH_DEV))
    assert row["texts"] > 200 and row["cjk_chars"] > 5000
    assert row["estimate_over_o200k_base"] >= 1.0
