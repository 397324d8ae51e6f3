"""Adapters built with nothing configured use the engine's embedded default, ``./.hindsight``.

The README's configuration table says ``HINDSIGHT_STORE`` defaults to ``./.hindsight`` and
``MemoryEngine()`` uses it; every adapter must land in that same store (real Chroma, real
in-process MCP sessions), so a memory written through LangChain is recalled by a plain
``MemoryEngine()`` opened in the same directory.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from hindsight_integrations import MemoryEngine
from hindsight_integrations.langchain import HindsightMemory, HindsightStore, memory_tools
from hindsight_integrations.langchain import HindsightRetriever as LangChainRetriever
from hindsight_integrations.llama_index import HindsightChatMemory, HindsightMemoryBlock
from hindsight_integrations.llama_index import HindsightRetriever as LlamaIndexRetriever
from hindsight_integrations.mcp import resolve


@pytest.fixture
def fresh_directory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A working directory with no store in the environment and no cached clients."""
    for var in resolve.CONFIG_VARS:
        monkeypatch.delenv(var, raising=False)
    monkeypatch.chdir(tmp_path)
    resolve.clear_client_cache()
    yield tmp_path
    resolve.clear_client_cache()


def test_every_adapter_writes_where_memory_engine_reads(fresh_directory: Path, embedder: Any) -> None:
    memory = HindsightMemory(namespace="u1", session_id="s1")
    memory.save_context({"input": "Our deploy target is Kubernetes on GKE."}, {"output": "Noted."})
    client = memory.memory_client
    assert client.transport == "in-process" and client.namespace == "u1"
    assert (fresh_directory / ".hindsight").is_dir()

    # The other adapters for the same user share that client (one MCP session, one model).
    assert HindsightChatMemory.from_defaults(namespace="u1", session_id="s2").client is client
    assert HindsightMemoryBlock(name="hindsight", namespace="u1").client is client
    assert LlamaIndexRetriever(namespace="u1").client is client
    HindsightStore(namespace="u1").put(("prefs",), "editor", {"editor": "Helix"})
    remember = next(t for t in memory_tools(namespace="u1") if t.name == "remember")
    assert "Remembered" in remember.invoke({"content": "Our staging cluster is in europe-west1."})
    docs = LangChainRetriever(namespace="u1", k=3).invoke("where do we deploy?")
    assert any("Kubernetes" in d.page_content for d in docs)
    # Another user is another namespace of the same store, through a client of its own.
    other = HindsightChatMemory.from_defaults(namespace="u2", session_id="s1").client
    assert other is not client and other.engine is client.engine

    assert client.engine is not None
    client.engine.chroma.flush()
    engine = MemoryEngine(embedder=embedder, llm=False)  # the engine's own default: ./.hindsight
    contents = [h.record.content for h in engine.recall("deploy target cluster editor", namespace="u1").hits]
    assert any("Kubernetes" in c for c in contents)
    assert any("europe-west1" in c for c in contents)
    assert any("Helix" in c for c in contents)
    assert engine.recall("deploy target", namespace="u2").hits == []


def test_another_directory_is_another_store(fresh_directory: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    first = HindsightChatMemory.from_defaults(namespace="u1", session_id="s1")
    first.client.store("Our deploy target is Kubernetes on GKE.")
    elsewhere = fresh_directory / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    second = HindsightChatMemory.from_defaults(namespace="u1", session_id="s1")
    assert second.client is not first.client, "a client cached for the old directory's store"
    assert second.client.recall("deploy target").hits == []
    assert (elsewhere / ".hindsight").is_dir()


def test_the_relative_default_follows_the_working_directory(
    fresh_directory: Path, monkeypatch: pytest.MonkeyPatch, embedder: Any
) -> None:
    """Chroma caches clients by path string: ``./.hindsight`` must still mean *this* directory's store."""
    first = MemoryEngine(embedder=embedder, llm=False)
    first.store("Our deploy target is Kubernetes on GKE.", namespace="u1")
    elsewhere = fresh_directory / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    assert MemoryEngine(embedder=embedder, llm=False).recall("deploy target", namespace="u1").hits == []
    monkeypatch.chdir(fresh_directory)
    assert MemoryEngine(embedder=embedder, llm=False).recall("deploy target", namespace="u1").hits
