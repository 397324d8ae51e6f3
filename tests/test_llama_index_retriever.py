"""HindsightRetriever: recalled memories as NodeWithScore, alone and inside a query engine."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from llama_index.core.llms.mock import MockLLM
from llama_index.core.query_engine import RetrieverQueryEngine
from llama_index.core.schema import MetadataMode, TextNode

from hindsight_integrations.core.errors import ConfigurationError, InvalidInputError
from hindsight_integrations.llama_index import HindsightRetriever

from .llama_index_support import Stores, stores  # noqa: F401

DEADLINE = "The project deadline is Friday the 14th and the demo is for the board."
DATABASE = "Our team uses PostgreSQL 16 as the main database for the billing project."
PREFERENCE = "I prefer concise answers with code examples."


@pytest.fixture
def seeded(stores: Stores) -> Stores:
    client = stores.client("u1")
    client.store(DEADLINE, kind="fact", session_id="s1", occurred_at=datetime(2024, 1, 15, tzinfo=UTC))
    client.store(DATABASE, kind="context", session_id="s2", metadata={"project": "billing"})
    client.store(PREFERENCE, kind="preference", session_id="s2")
    stores.client("u2").store("My cat is named Pixel and loves the PostgreSQL elephant mascot.", kind="fact")
    return stores


def test_nodes_carry_the_memory_id_and_metadata(seeded: Stores) -> None:
    client = seeded.client("u1")
    nodes = HindsightRetriever(namespace="u1", client=client, top_k=3).retrieve(
        "Which database does the billing project use?"
    )
    assert nodes[0].node.get_content() == DATABASE
    assert [n.score for n in nodes] == sorted((n.score for n in nodes), reverse=True)
    node = nodes[0].node
    assert isinstance(node, TextNode)
    record = client.list(limit=10, filters={"kinds": ["context"]})[0]
    assert node.node_id == record.id
    meta = node.metadata
    assert meta["memory_id"] == record.id and meta["namespace"] == "u1"
    assert (meta["tier"], meta["kind"], meta["status"], meta["session_id"]) == (
        record.tier.value,
        "context",
        "active",
        "s2",
    )
    assert meta["occurred_at"] == record.occurred_at.isoformat() and meta["created_at"]
    assert meta["source"]["session_id"] == "s2" and meta["metadata"] == {"project": "billing"}
    assert 0 < meta["relevance"] <= 1
    # The LLM sees the date and kind, not ids and bookkeeping.
    llm_view = node.get_content(metadata_mode=MetadataMode.LLM)
    assert "occurred_at" in llm_view and "memory_id" not in llm_view and DATABASE in llm_view
    assert node.get_content(metadata_mode=MetadataMode.EMBED) == DATABASE


def test_dates_are_the_memory_dates(seeded: Stores) -> None:
    nodes = HindsightRetriever(namespace="u1", client=seeded.client("u1")).retrieve("When is the deadline?")
    (deadline,) = [n for n in nodes if n.node.get_content() == DEADLINE]
    assert deadline.node.metadata["occurred_at"].startswith("2024-01-15")


async def test_async_retrieve_and_filters(seeded: Stores) -> None:
    retriever = HindsightRetriever(namespace="u1", client=seeded.client("u1"), session_id="s1")
    nodes = await retriever.aretrieve("database deadline answers")
    assert [n.node.get_content() for n in nodes] == [DEADLINE]
    prefs = HindsightRetriever(namespace="u1", client=seeded.client("u1"), filters={"kinds": ["preference"]})
    assert [n.node.get_content() for n in prefs.retrieve("how should answers look?")] == [PREFERENCE]


def test_namespaces_are_isolated(seeded: Stores) -> None:
    u2 = HindsightRetriever(namespace="u2", client=seeded.client("u2")).retrieve("What is my cat called?")
    assert [n.node.get_content() for n in u2] == ["My cat is named Pixel and loves the PostgreSQL elephant mascot."]


def test_in_a_query_engine(seeded: Stores) -> None:
    retriever = HindsightRetriever(namespace="u1", client=seeded.client("u1"), top_k=2)
    engine = RetrieverQueryEngine.from_args(retriever, llm=MockLLM())
    response = engine.query("Which database does the billing project use?")
    # MockLLM echoes its prompt: the recalled memory reached the LLM, and is the top source.
    assert DATABASE in str(response)
    assert response.source_nodes[0].node.get_content() == DATABASE


def test_engine_argument_and_bad_arguments(seeded: Stores) -> None:
    retriever = HindsightRetriever(namespace="u1", engine=seeded.engine())
    seeded.clients.append(retriever.client)  # closed with the others
    assert retriever.retrieve("database")
    with pytest.raises(ValueError):
        HindsightRetriever(namespace="u1", client=seeded.client("u1"), top_k=0)
    with pytest.raises(ConfigurationError):
        HindsightRetriever(namespace="u1", client=seeded.client("u1"), engine=seeded.engine())
    with pytest.raises(InvalidInputError, match="namespace"):
        HindsightRetriever(namespace="not a namespace!", engine=seeded.engine())


def test_top_k_is_not_cut_by_a_context_budget(stores: Stores) -> None:
    """Without a ``token_budget``, recall's 450-token default for the context block must not drop nodes."""
    client = stores.client("u3")
    notes = (
        "kubernetes deployment notes: the cluster runs on GKE in europe-west1 with three node pools, autoscaling "
        "between two and ten nodes, nightly backups of every persistent volume and a staging copy in us-east1"
    )
    client.store([{"content": f"Doc {n} {notes}", "kind": "fact"} for n in range(30)], dedup=False)
    assert len(HindsightRetriever(namespace="u3", client=client, top_k=30).retrieve("kubernetes deployment")) == 30
    budgeted = HindsightRetriever(namespace="u3", client=client, top_k=30, token_budget=200)
    assert len(budgeted.retrieve("kubernetes deployment")) < 30


async def test_a_chat_message_over_the_size_limit_is_recalled_for_its_end(seeded: Stores) -> None:
    """A context chat engine passes the user's whole message as the query: a 40 KB paste must not end the chat."""
    paste = "Here is the log:\n" + "ERROR billing database connection lost\n" * 1100 + "What does billing use?"
    retriever = HindsightRetriever(namespace="u1", client=seeded.client("u1"))
    assert [n.node.get_content() for n in retriever.retrieve(paste)][:1] == [DATABASE]
    assert [n.node.get_content() for n in await retriever.aretrieve(paste)][:1] == [DATABASE]
