"""The LLM update judge through the real ``openai`` client and a scripted server, with the rules as fallback."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from hindsight_integrations import MemoryEngine
from hindsight_integrations.core.llm import LLMClient
from hindsight_integrations.core.model.records import Status

from .openai_stub import OpenAIStub

T0 = datetime(2024, 5, 1, tzinfo=UTC)


@pytest.fixture
def stub() -> Iterator[OpenAIStub]:
    with OpenAIStub() as server:
        yield server


@pytest.fixture
def judged(stub: OpenAIStub, store_path: Path, embedder) -> Iterator[MemoryEngine]:
    llm = LLMClient(model="judge", base_url=stub.base_url, api_key="test", timeout=5, max_retries=2)
    engine = MemoryEngine(store=store_path, embedder=embedder, llm=llm)
    yield engine
    engine.chroma.flush()


def _verdicts(*names: str) -> str:
    return json.dumps({"verdicts": list(names)})


def _first(engine: MemoryEngine, stub: OpenAIStub) -> str:
    memory_id = engine.store_memories([{"content": "I work at Acme.", "occurred_at": T0}], namespace="u").ids[0]
    stub.requests.clear()
    return memory_id


def _second(engine: MemoryEngine, content: str = "These days I am at Initech."):
    return engine.store_memories([{"content": content, "occurred_at": T0 + timedelta(days=9)}], namespace="u")


def test_keep_new_supersedes_what_rules_would_miss(judged: MemoryEngine, stub: OpenAIStub) -> None:
    old = _first(judged, stub)
    stub.script(_verdicts("keep_new"))
    result = _second(judged)
    assert result.superseded == [old]
    assert judged.get(old, namespace="u").valid_until == T0 + timedelta(days=9)
    prompt = stub.requests[-1]["body"]["messages"][1]["content"]
    assert "NEW: These days I am at Initech." in prompt and "1. I work at Acme." in prompt


def test_keep_old_sends_the_new_memory_to_history(judged: MemoryEngine, stub: OpenAIStub) -> None:
    old = _first(judged, stub)
    stub.script(_verdicts("keep_old"))
    (new,) = _second(judged).stored
    assert new.status is Status.SUPERSEDED and new.superseded_by == old
    assert judged.get(old, namespace="u").status is Status.ACTIVE


def test_merge_reinforces_the_stored_memory(judged: MemoryEngine, stub: OpenAIStub) -> None:
    old = _first(judged, stub)
    stub.script(_verdicts("merge"))
    result = _second(judged, "I am employed by Acme.")
    assert result.merged == [old]
    assert judged.get(old, namespace="u").sources[0]["content"] == "I am employed by Acme."


def test_keep_both_changes_nothing(judged: MemoryEngine, stub: OpenAIStub) -> None:
    old = _first(judged, stub)
    stub.script(_verdicts("keep_both"))
    result = _second(judged, "I moved to a new job at Globex.")
    assert not result.superseded and not result.merged
    assert judged.get(old, namespace="u").status is Status.ACTIVE


@pytest.mark.parametrize(
    "replies",
    [
        [("status", 500)] * 3,  # retried, then given up
        [("status", 429), "not json at all"],
        [_verdicts("keep_new", "keep_new")],  # one verdict too many
        [_verdicts("replace")],  # not a verdict
    ],
)
def test_a_failed_judgement_falls_back_to_the_rules(judged: MemoryEngine, stub: OpenAIStub, replies) -> None:
    old = _first(judged, stub)
    stub.script(*replies)
    result = _second(judged, "I started a new job at Globex.")  # the rules see a new employer
    assert result.superseded == [old]
    assert judged.get(old, namespace="u").status is Status.SUPERSEDED
