"""Consolidation with an LLM: the real ``openai`` client against the scripted server, rules as the fallback."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from hindsight_integrations import Kind, MemoryEngine
from hindsight_integrations.core.clock import ManualClock
from hindsight_integrations.core.llm import LLMClient

from .openai_stub import OpenAIStub

NS = "u1"
STATEMENTS = [
    "I prefer window seats on trains.",
    "When I travel by train, I prefer window seats.",
    "On long train journeys I prefer a window seat.",
]
DISTILLED = {
    "same_fact": True,
    "content": "The user prefers a window seat when travelling by train.",
    "kind": "preference",
    "importance": 0.95,
}


@pytest.fixture
def stub() -> Iterator[OpenAIStub]:
    with OpenAIStub() as server:
        yield server


def _engine(store_path: Path, embedder: Any, stub: OpenAIStub, **llm: Any) -> MemoryEngine:
    options = {"timeout": 5.0, "max_retries": 2, **llm}
    client = LLMClient(model="distil", base_url=stub.base_url, api_key="test", **options)
    clock = ManualClock(datetime(2024, 3, 1, 9, tzinfo=UTC))
    engine = MemoryEngine(store=store_path, embedder=embedder, llm=client, clock=clock)
    for n, text in enumerate(STATEMENTS, 1):  # as an import: no write-time LLM calls
        engine.store_memories([{"content": text, "session_id": f"s{n}"}], namespace=NS, dedup=False, supersede=False)
        clock.advance(days=1)
    assert stub.requests == []
    return engine


@pytest.fixture
def distilling(store_path: Path, embedder: Any, stub: OpenAIStub) -> Iterator[MemoryEngine]:
    engine = _engine(store_path, embedder, stub)
    yield engine
    engine.chroma.flush()


def test_one_call_per_cluster_writes_the_statement(distilling: MemoryEngine, stub: OpenAIStub) -> None:
    stub.script(json.dumps(DISTILLED))
    (fact,) = distilling.consolidate(NS).created
    assert fact.distilled_by == "llm" and fact.content == DISTILLED["content"]
    semantic = distilling.get(str(fact.id), namespace=NS)
    assert semantic.kind is Kind.PREFERENCE and semantic.importance == 0.95 and len(semantic.source.memory_ids) == 3
    (request,) = stub.requests
    prompt = request["body"]["messages"][1]["content"]
    assert all(f"{n}. " in prompt for n in (1, 2, 3)) and all(text in prompt for text in STATEMENTS)
    assert request["body"]["response_format"] == {"type": "json_object"}
    assert distilling.consolidate(NS).created == [] and len(stub.requests) == 1  # idempotent: no second call


def test_rate_limits_and_server_errors_are_retried(distilling: MemoryEngine, stub: OpenAIStub) -> None:
    stub.script(("status", 429), ("status", 500), json.dumps(DISTILLED))
    (fact,) = distilling.consolidate(NS).created
    assert fact.distilled_by == "llm" and len(stub.requests) == 3


@pytest.mark.parametrize(
    "reply",
    [
        "this is not JSON {",
        json.dumps({"same_fact": True, "kind": "preference", "importance": 0.9}),  # no content
        json.dumps({**DISTILLED, "kind": "event"}),
        json.dumps({**DISTILLED, "importance": 1.5}),
        json.dumps({**DISTILLED, "same_fact": "perhaps"}),
        json.dumps(["a list"]),
        json.dumps({**DISTILLED, "content": "The user prefers window seats on trains to Berlin."}),  # invented value
        ("status", 500),  # still failing after the retries
    ],
)
def test_an_unusable_reply_falls_back_to_the_rules(distilling: MemoryEngine, stub: OpenAIStub, reply: Any) -> None:
    stub.script(*([reply] * 3 if isinstance(reply, tuple) else [reply]))
    (fact,) = distilling.consolidate(NS).created
    assert fact.distilled_by == "rules" and fact.content == STATEMENTS[0]
    assert distilling.get(str(fact.id), namespace=NS).kind is Kind.PREFERENCE


def test_a_timeout_falls_back_to_the_rules(store_path: Path, embedder: Any, stub: OpenAIStub) -> None:
    engine = _engine(store_path, embedder, stub, timeout=0.5, max_retries=0)
    stub.script(("sleep", 2.0, json.dumps(DISTILLED)))
    (fact,) = engine.consolidate(NS).created
    assert fact.distilled_by == "rules" and len(stub.requests) == 1


def test_the_model_may_say_it_is_not_one_fact(distilling: MemoryEngine, stub: OpenAIStub) -> None:
    stub.script(json.dumps({"same_fact": False}))
    before = {r.id: r.importance for r in distilling.list(namespace=NS)}
    report = distilling.consolidate(NS)
    assert report.created == [] and len(stub.requests) == 1
    assert {r.id: r.importance for r in distilling.list(namespace=NS)} == before
    assert all(r.consolidated_into is None for r in distilling.list(namespace=NS))


def test_a_dry_run_calls_no_model(distilling: MemoryEngine, stub: OpenAIStub) -> None:
    (fact,) = distilling.consolidate(NS, dry_run=True).created
    assert fact.distilled_by == "rules" and fact.id is None and stub.requests == []
