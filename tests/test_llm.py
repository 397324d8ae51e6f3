"""The LLM path with the real `openai` client against a scripted server on 127.0.0.1."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from hindsight_integrations import Kind, LLMError, MemoryEngine
from hindsight_integrations.core.embedding.openai import OpenAIEmbedder
from hindsight_integrations.core.llm import LLMClient

from .openai_stub import OpenAIStub


@pytest.fixture
def stub() -> Iterator[OpenAIStub]:
    with OpenAIStub() as server:
        yield server


def _client(stub: OpenAIStub, **kw) -> LLMClient:
    return LLMClient(
        model="stub-model",
        base_url=stub.base_url,
        api_key="test",
        timeout=kw.pop("timeout", 5),
        max_retries=kw.pop("max_retries", 3),
    )


EXTRACTED = json.dumps(
    {
        "memories": [
            {
                "should_remember": True,
                "memory_type": "preference",
                "content": "User wants answers in Spanish.",
                "entities": ["Spanish"],
                "importance": 0.95,
            }
        ]
    }
)


def test_extraction_turns_an_exchange_into_memories(stub: OpenAIStub, store_path: Path, embedder) -> None:
    stub.script(EXTRACTED)
    engine = MemoryEngine(store=store_path, embedder=embedder, llm=_client(stub))
    result = engine.record_turn("From now on, reply to me in Spanish please.", session_id="s1", namespace="u1")
    stored = result.stored.stored
    assert [m.content for m in stored] == ["User wants answers in Spanish."]
    assert stored[0].kind is Kind.PREFERENCE and stored[0].importance == 0.95 and stored[0].entities == ["Spanish"]
    assert stored[0].source.message_ids == [result.turn.id]
    request = stub.requests[-1]["body"]
    assert request["response_format"] == {"type": "json_object"}
    assert "80 words" in request["messages"][0]["content"]


def test_an_extracted_event_expires_like_a_written_one(stub: OpenAIStub, store_path: Path, embedder) -> None:
    event = {"memory_type": "event", "content": "User has a dentist appointment tomorrow at 9.", "importance": 0.7}
    stub.script(json.dumps({"memories": [event]}))
    engine = MemoryEngine(store=store_path, embedder=embedder, llm=_client(stub))
    result = engine.record_turn("I have a dentist appointment tomorrow at 9.", session_id="s1", namespace="u1")
    (stored,) = result.stored.stored
    assert stored.kind is Kind.EVENT and stored.expires_at is not None
    assert (stored.expires_at - stored.occurred_at).total_seconds() == 3 * 86400  # "tomorrow", as the rules say


def test_transient_errors_are_retried(stub: OpenAIStub) -> None:
    stub.script(("status", 429), ("status", 500), ("status", 503), EXTRACTED)
    memories = _client(stub).extract_memories("user: reply in Spanish")
    assert memories[0].content == "User wants answers in Spanish."
    assert len(stub.requests) == 4


def test_retries_give_up_with_a_clear_error(stub: OpenAIStub) -> None:
    stub.script(*[("status", 500)] * 5)
    with pytest.raises(LLMError, match="stub-model"):
        _client(stub, max_retries=2).summarize("user: hi")
    assert len(stub.requests) == 3


def test_timeouts_are_retried(stub: OpenAIStub) -> None:
    stub.script(("sleep", 2.0, "late"), "A short summary.")
    assert _client(stub, timeout=0.5).summarize("user: something") == "A short summary."


def test_client_errors_are_not_retried(stub: OpenAIStub) -> None:
    stub.script(("status", 400), EXTRACTED)
    with pytest.raises(LLMError):
        _client(stub).extract_memories("user: hi")
    assert len(stub.requests) == 1


def test_unparseable_extraction_falls_back_to_rules(stub: OpenAIStub, store_path: Path, embedder) -> None:
    stub.script("this is not json")
    engine = MemoryEngine(store=store_path, embedder=embedder, llm=_client(stub))
    result = engine.record_turn("I prefer dark mode in all my tools.", session_id="s1", namespace="u1")
    assert [m.content for m in result.stored.stored] == ["I prefer dark mode in all my tools."]


def test_compression_uses_the_llm_summary_and_falls_back(stub: OpenAIStub, store_path: Path, embedder) -> None:
    engine = MemoryEngine(store=store_path, embedder=embedder, llm=_client(stub, max_retries=0))
    for i in range(6):
        engine.record_turn(
            f"Step {i}: the importer must skip rows older than {i + 2} days.",
            session_id="s1",
            namespace="u1",
            extract=False,
            compress=False,
        )
    stub.script("LLM SUMMARY: importer skips old rows.")
    first = engine.compress(session_id="s1", namespace="u1", force=True)
    assert first is not None
    assert first.summaries[0].content == "LLM SUMMARY: importer skips old rows."
    stub.script(("status", 500))
    second = engine.compress(session_id="s1", namespace="u1", force=True)
    assert second is not None
    assert "importer must skip rows" in second.summaries[0].content  # extractive fallback


def test_openai_compatible_embeddings(stub: OpenAIStub, store_path: Path) -> None:
    embedder = OpenAIEmbedder("stub-embed", base_url=stub.base_url, api_key="k", max_retries=2)
    stub.script(("status", 429))
    engine = MemoryEngine(store=store_path, embedder=embedder, llm=False)
    assert (
        engine.store("The office is closed on public holidays.", namespace="u1").stored[0].embedding_model
        == "stub-embed"
    )
    assert engine.recall("office holidays", namespace="u1").hits[0].record.embedding_dim == 16


def test_llm_is_configured_from_the_environment(stub: OpenAIStub, monkeypatch, store_path: Path, embedder) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", stub.base_url)
    monkeypatch.setenv("OPENAI_API_KEY", "test")
    monkeypatch.setenv("HINDSIGHT_LLM_MODEL", "env-model")
    engine = MemoryEngine(store=store_path, embedder=embedder)
    assert engine.llm is not None and engine.llm.model == "env-model"


def test_openai_is_imported_only_when_a_client_needs_it() -> None:
    """Importing the engine must not pay ~0.6 s for openai; building a client or its errors does."""
    import subprocess
    import sys

    code = """
import sys
from hindsight_integrations.core import llm
from hindsight_integrations.core.config import load_settings
from hindsight_integrations.core.engine import MemoryEngine
steps = ['openai' in sys.modules]
steps.append(llm.LLMClient.from_settings(load_settings(use_llm=False)) is None and 'openai' in sys.modules)
errors = llm.TRANSIENT_ERRORS
import openai
steps.append(errors == llm.transient_errors() and openai.RateLimitError in errors)
print(steps)
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[False, False, True]"


def test_unknown_module_attributes_still_raise() -> None:
    from hindsight_integrations.core import llm

    with pytest.raises(AttributeError, match="NO_SUCH_NAME"):
        llm.NO_SUCH_NAME  # noqa: B018
