"""HindsightRetriever: LangChain's standard retriever tests plus memory-specific behaviour."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from langchain_core.documents import Document
from langchain_tests.integration_tests import RetrieversIntegrationTests

from hindsight_integrations import MemoryEngine
from hindsight_integrations.langchain import HindsightMemory, HindsightRetriever
from hindsight_integrations.mcp.client import MemoryClient

FACTS = [
    "The user prefers concise answers without emojis.",
    "The project runs on Ubuntu 22.04 with PostgreSQL 16.",
    "The user's deadline for the report is Friday the 14th.",
    "The user is allergic to peanuts.",
    "The team decided to deploy with docker-compose.",
]


@pytest.fixture(scope="class")
def shared_client(tmp_path_factory: pytest.TempPathFactory, embedder: Any) -> Iterator[MemoryClient]:
    engine = MemoryEngine(store=tmp_path_factory.mktemp("retriever"), embedder=embedder, llm=False)
    engine.store_memories(FACTS, namespace="u1")
    client = MemoryClient.in_process(engine, namespace="u1")
    yield client
    client.close()


class TestStandardRetriever(RetrieversIntegrationTests):
    """langchain-tests' contract: k at construction and per call, invoke/ainvoke return Documents."""

    @pytest.fixture(autouse=True)
    def _client(self, shared_client: MemoryClient) -> None:
        self.client = shared_client

    @property
    def retriever_constructor(self) -> type[HindsightRetriever]:
        return HindsightRetriever

    @property
    def retriever_constructor_params(self) -> dict[str, Any]:
        return {"namespace": "u1", "client": self.client}

    @property
    def retriever_query_example(self) -> str:
        return "what does the user prefer?"


def test_documents_carry_memory_metadata(engine: MemoryEngine) -> None:
    engine.store_memories(FACTS, namespace="u1")
    retriever = HindsightRetriever(namespace="u1", engine=engine, k=2)
    docs = retriever.invoke("Which database does the project use?")
    assert len(docs) == 2 and all(isinstance(d, Document) for d in docs)
    top = docs[0]
    assert "PostgreSQL" in top.page_content and top.id == top.metadata["id"]
    for field in (
        "tier",
        "kind",
        "occurred_at",
        "created_at",
        "score",
        "relevance",
        "importance",
        "source",
        "namespace",
    ):
        assert field in top.metadata, field
    assert top.metadata["namespace"] == "u1" and top.metadata["score"] >= docs[1].metadata["score"]
    assert len(retriever.invoke("peanut allergy", k=1)) == 1
    only_context = retriever.invoke("anything about the user", k=5, filters={"kinds": ["context"]})
    assert 0 < len(only_context) < len(FACTS) and all(d.metadata["kind"] == "context" for d in only_context)


def test_two_users_and_a_later_engine(store_path: Path, embedder: Any) -> None:
    first = MemoryEngine(store=store_path, embedder=embedder, llm=False)
    HindsightMemory(namespace="alice", session_id="s", engine=first).save_context(
        {"input": "I prefer window seats on long flights."}, {"output": "Noted."}
    )
    first.chroma.flush()
    later = MemoryEngine(store=store_path, embedder=embedder, llm=False)
    alice = HindsightRetriever(namespace="alice", engine=later).invoke("which seat should I book?")
    assert any("window seats" in d.page_content for d in alice)
    assert HindsightRetriever(namespace="bob", engine=later).invoke("which seat should I book?") == []


def test_over_a_stdio_mcp_server_from_the_environment(
    store_path: Path, embedder: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """HINDSIGHT_MCP_COMMAND: the adapters spawn a real MCP server process and talk stdio to it."""
    import sys

    from hindsight_integrations.mcp.resolve import clear_client_cache

    monkeypatch.setenv("HINDSIGHT_STORE", str(store_path))
    monkeypatch.setenv("HINDSIGHT_MCP_COMMAND", f"{sys.executable} -m hindsight_integrations.mcp")
    clear_client_cache()
    try:
        memory = HindsightMemory(namespace="carol", session_id="s1")
        assert memory.memory_client.transport == "stdio"
        memory.save_context({"input": "My favourite editor is Helix, please remember it."}, {"output": "Will do."})
        docs = HindsightRetriever(namespace="carol", k=3).invoke("which editor do I use?")
        assert any("Helix" in d.page_content for d in docs)
        assert HindsightRetriever(namespace="dave", k=3).invoke("which editor do I use?") == []
    finally:
        clear_client_cache()
    # The server process wrote to the shared store: an embedded engine sees the same memory.
    later = MemoryEngine(store=store_path, embedder=embedder, llm=False)
    assert any("Helix" in h.record.content for h in later.recall("editor", namespace="carol").hits)


def test_k_is_not_cut_by_recalls_context_budget(engine: MemoryEngine) -> None:
    """Documents are returned, not recall's 450-token context block: ``k`` of them when that many match."""
    notes = (
        "kubernetes deployment notes: the cluster runs on GKE in europe-west1 with three node pools, autoscaling "
        "between two and ten nodes, nightly backups of every persistent volume and a staging copy in us-east1"
    )
    engine.store_memories(
        [{"content": f"Doc {n} {notes}", "kind": "fact"} for n in range(30)], namespace="u1", dedup=False
    )
    retriever = HindsightRetriever(namespace="u1", engine=engine, k=30)
    assert len(retriever.invoke("kubernetes deployment")) == 30


def test_a_query_over_the_size_limit_is_recalled_for_its_end(engine: MemoryEngine) -> None:
    engine.store_memories(FACTS, namespace="u1")
    long_query = "Which operating system and database does the project run on? " * 600  # ~38 KB
    (first, *_) = HindsightRetriever(namespace="u1", engine=engine, k=1).invoke(long_query)
    assert first.page_content == FACTS[1]
