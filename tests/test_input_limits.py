"""Every field has a bound (#15): a clear error naming the field and the limit, nothing written, the engine alive."""

from __future__ import annotations

import math
from datetime import UTC, datetime

import pytest

from hindsight_integrations import MemoryEngine
from hindsight_integrations.core.errors import ConfigurationError, InvalidInputError
from hindsight_integrations.mcp import MemoryClient, MemoryToolInputError

BIG = "x" * 20_000


@pytest.mark.parametrize(
    ("item", "field", "needle"),
    [
        ({"content": "fact", "metadata": {"blob": BIG}}, "metadata", "HINDSIGHT_MAX_METADATA_BYTES"),
        ({"content": "fact", "metadata": {f"k{i}": i for i in range(200)}}, "metadata", "keys"),
        (
            {"content": "fact", "metadata": {"a": {"b": {"c": {"d": {"e": {"f": {"g": {"h": {"i": 1}}}}}}}}}},
            "metadata",
            "deep",
        ),
        ({"content": "fact", "session_id": "s" * 1000}, "session_id", "HINDSIGHT_MAX_ID_CHARS"),
        ({"content": "fact", "agent_id": "a" * 1000}, "agent_id", "HINDSIGHT_MAX_ID_CHARS"),
        ({"content": "fact", "entities": [f"e{i}" for i in range(500)]}, "entities", "HINDSIGHT_MAX_ENTITIES"),
        ({"content": "fact", "entities": ["e" * 5000]}, "entities", "characters"),
        ({"content": "fact", "session_id": "bad\ud800id"}, "session_id", "UTF-8"),
        ({"content": "fact", "importance": math.nan}, "importance", ""),
        ({"content": "fact", "importance": math.inf}, "importance", ""),
        ({"content": "fact", "occurred_at": "3000-01-01T00:00:00Z"}, "occurred_at", "between"),
        ({"content": "fact", "occurred_at": datetime(1, 1, 1, tzinfo=UTC)}, "occurred_at", "between"),
        ({"content": "fact", "ttl_seconds": 10**12}, "ttl_seconds", "at most"),
        # kept as m.<key> for Chroma to filter on, which cannot: no filter ever matched 2**70
        ({"content": "fact", "metadata": {"build": 2**63}}, "metadata", "'build' is an integer outside"),
        ({"content": "fact", "metadata": {"build": -(2**63) - 1}}, "metadata", "64-bit"),
    ],
)
def test_every_field_of_a_memory_is_bounded(engine: MemoryEngine, item: dict, field: str, needle: str) -> None:
    with pytest.raises(InvalidInputError) as caught:
        engine.store_memories([{"content": "a good fact about the garden"}, item], namespace="u1")
    assert caught.value.field.startswith("memories[1]." + field), caught.value.field
    assert needle in str(caught.value)
    assert engine.list(namespace="u1") == []  # the whole batch was refused
    assert engine.store_memories([{"content": "still alive and writing"}], namespace="u1").stored


@pytest.mark.parametrize(
    ("filters", "field", "needle"),
    [
        ({"metadata": {f"k{i}": i for i in range(200)}}, "filters.metadata", "keys"),
        ({"metadata": {"k": "v" * 20_000}}, "filters", "HINDSIGHT_MAX_FILTER_BYTES"),
        ({"session_id": "s" * 1000}, "filters.session_id", "HINDSIGHT_MAX_ID_CHARS"),
        ({"min_importance": math.nan}, "filters.min_importance", ""),
        # past int64 Chroma raised its own error (2**63) or matched nothing (2**70)
        ({"metadata": {"build": 2**63}}, "filters.metadata", "'build' is an integer outside"),
        ({"metadata": {"build": 2**70}}, "filters.metadata", "64-bit"),
    ],
)
def test_filters_are_bounded(engine: MemoryEngine, filters: dict, field: str, needle: str) -> None:
    engine.store_memories([{"content": "The garden gets sun in the morning."}], namespace="u1")
    for call in (
        lambda: engine.recall("garden", namespace="u1", filters=filters),
        lambda: engine.list(namespace="u1", filters=filters),
    ):
        with pytest.raises(InvalidInputError) as caught:
            call()
        assert caught.value.field == field and needle in str(caught.value)


def test_the_integers_chroma_holds_are_stored_and_filtered_on(engine: MemoryEngine) -> None:
    for build in (2**63 - 1, -(2**63)):
        engine.store("The staging server runs Ubuntu.", namespace="u1", metadata={"build": build}, dedup=False)
        listed = engine.list(namespace="u1", filters={"metadata": {"build": build}})
        assert [m.metadata["build"] for m in listed] == [build]
    nested = engine.store("The build farm is in Oslo.", namespace="u1", metadata={"builds": [2**70]}).stored[0]
    assert engine.get(nested.id, namespace="u1").metadata == {"builds": [2**70]}  # JSON only: any integer


def test_min_score_must_be_a_real_number(engine: MemoryEngine) -> None:
    for bad in (math.nan, math.inf, -math.inf):
        with pytest.raises(InvalidInputError, match="min_score"):
            engine.recall("garden", namespace="u1", min_score=bad)


def test_a_namespace_with_a_trailing_newline_is_refused(engine: MemoryEngine) -> None:
    with pytest.raises(InvalidInputError, match="namespace"):
        engine.store_memories([{"content": "fact"}], namespace="u1\n")


def test_recall_on_an_unknown_namespace_does_not_create_it(engine: MemoryEngine) -> None:
    assert engine.recall("anything at all", namespace="never-written").hits == []
    assert engine.list(namespace="never-written") == []
    assert "never-written" not in engine.namespaces()


def test_limits_are_configurable(store_path, embedder) -> None:
    engine = MemoryEngine(store=store_path, embedder=embedder, llm=False, max_metadata_bytes=100_000)
    assert engine.store_memories([{"content": "fact", "metadata": {"blob": BIG}}], namespace="u1").stored
    with pytest.raises(ConfigurationError, match=r"max_id_chars \(argument\)"):
        MemoryEngine(store=store_path, embedder=embedder, llm=False, max_id_chars=0)


@pytest.mark.parametrize(
    ("call", "field", "where"),
    [
        (lambda c, m: c.update(m, importance=math.nan), "importance", ""),
        (lambda c, m: c.update(m, metadata={"score": math.inf}), "metadata", "score"),
        (lambda c, m: c.store("I ride a blue bike.", importance=math.nan), "importance", ""),
        (lambda c, m: c.store("I live in Rome.", metadata={"limits": [1.0, -math.inf]}), "metadata", "limits[1]"),
        (lambda c, m: c.store([{"content": "I ride a bike.", "importance": math.inf}]), "memories", "[0].importance"),
    ],
)
def test_a_client_refuses_what_json_cannot_carry(engine: MemoryEngine, call, field: str, where: str) -> None:
    """NaN and infinities travel as null, "not given": ``update(importance=nan)`` reported success and did nothing."""
    with MemoryClient.in_process(engine, namespace="u1") as client:
        (memory_id,) = client.store("My favourite colour is green.", importance=0.9).ids
        with pytest.raises(MemoryToolInputError, match="must be a finite number") as refused:
            call(client, memory_id)
        assert refused.value.field == field and where in str(refused.value)
        assert [(r.content, r.importance, r.metadata.get("score")) for r in client.list(limit=10)] == [
            ("My favourite colour is green.", 0.9, None)
        ]


@pytest.mark.parametrize("memories", [None, 5, 2.5, b"raw bytes"])
def test_a_client_store_of_what_is_no_memory_is_a_clear_error(engine: MemoryEngine, memories: object) -> None:
    with MemoryClient.in_process(engine, namespace="u1") as client:
        with pytest.raises(InvalidInputError, match="must be a text, a memory"):
            client.store(memories)
        assert client.store(m for m in ["My cat is called Miso."]).ids  # any other iterable is a batch


@pytest.mark.parametrize(
    ("arguments", "needle"),
    [
        ({"content": "I like green tea.", "session_id": ""}, "session_id: is empty"),
        ({"memories": [{"content": "I like green tea.", "session_id": "   "}]}, r"memories\[0\]\.session_id: is empty"),
    ],
)
def test_a_session_is_named_where_a_memory_needs_one(engine: MemoryEngine, arguments: dict, needle: str) -> None:
    """An empty session id names no conversation: refused, as ``record_turn`` refuses it."""
    with MemoryClient.in_process(engine, namespace="u1") as client:
        with pytest.raises(MemoryToolInputError, match=needle):
            client.call_tool("store_memory", arguments)
        assert client.list(limit=10) == []
        fixed = (
            {**arguments, "session_id": "s1"}
            if "content" in arguments
            else {"memories": [{"content": "Tea, green.", "session_id": "s1"}]}
        )
        stored = client.call_tool("store_memory", fixed)
        assert [m["session_id"] for m in stored["stored"]] == ["s1"]
