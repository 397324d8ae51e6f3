"""HindsightStore: LangGraph's store contract (modelled on langgraph's own store tests) over a real
Chroma store and a real in-process MCP session."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any, TypedDict

import pytest
from langgraph.graph import END, START, StateGraph
from langgraph.runtime import Runtime
from langgraph.store.base import GetOp, InvalidNamespaceError, ListNamespacesOp, MatchCondition, PutOp, SearchOp

from hindsight_integrations import MemoryEngine
from hindsight_integrations.core.clock import ManualClock
from hindsight_integrations.core.errors import ConfigurationError
from hindsight_integrations.core.model.records import Status, Tier
from hindsight_integrations.langchain import HindsightStore
from hindsight_integrations.mcp.client import MemoryClient
from hindsight_integrations.mcp.errors import MemoryToolInputError
from hindsight_integrations.mcp.protocol import announced_max_top_k, capability


@pytest.fixture
def store(engine: MemoryEngine) -> HindsightStore:
    return HindsightStore(namespace="u1", engine=engine)


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock()


@pytest.fixture
def timed_engine(store_path: Path, embedder: Any, clock: ManualClock) -> MemoryEngine:
    """An engine whose time the test moves (``clock``) instead of sleeping."""
    return MemoryEngine(store=store_path, embedder=embedder, llm=False, clock=clock)


def test_put_get_update_delete(timed_engine: MemoryEngine, clock: ManualClock) -> None:
    store = HindsightStore(namespace="u1", engine=timed_engine)
    ns = ("users", "u1", "prefs")
    assert store.get(ns, "food") is None
    store.put(ns, "food", {"food": "pizza"})  # short text the write filter would drop as chit-chat
    first = store.get(ns, "food")
    assert first is not None and first.value == {"food": "pizza"}
    assert first.namespace == ns and first.key == "food"

    clock.advance(seconds=1)
    store.put(ns, "food", {"food": "sushi", "rating": 5})
    second = store.get(ns, "food")
    assert second is not None and second.value == {"food": "sushi", "rating": 5}
    assert second.created_at == first.created_at and second.updated_at > first.updated_at
    assert len(store.search(ns)) == 1, "put of an existing key must update, not add"

    store.delete(ns, "food")
    assert store.get(ns, "food") is None
    assert store.search(ns) == []
    store.put(ns, "food", {"food": "ramen"})  # a deleted key can be reused
    assert store.get(ns, "food").value == {"food": "ramen"}  # type: ignore[union-attr]


def test_similar_values_under_different_keys_stay_separate(store: HindsightStore) -> None:
    # The engine merges near-duplicate memories; a key-value store must never do that.
    store.put(("notes",), "a", {"text": "The user prefers dark mode in the editor"})
    store.put(("notes",), "b", {"text": "The user prefers dark mode in the editor!"})
    store.put(("notes",), "c", {"text": "I live in Berlin"})
    store.put(("notes",), "d", {"text": "I moved to Paris"})  # same slot: the engine would supersede "c"
    assert {i.key for i in store.search(("notes",))} == {"a", "b", "c", "d"}
    assert store.get(("notes",), "c").value == {"text": "I live in Berlin"}  # type: ignore[union-attr]


def test_search_filters_and_pagination(store: HindsightStore) -> None:
    docs = [
        ("doc1", {"text": "red apple", "color": "red", "score": 4.5}),
        ("doc2", {"text": "red car", "color": "red", "score": 3.0}),
        ("doc3", {"text": "green apple", "color": "green", "score": 4.0}),
        ("doc4", {"text": "blue car", "color": "blue", "score": 3.5}),
    ]
    store.batch([PutOp(("test",), key, value) for key, value in docs])

    assert {i.key for i in store.search(("test",), filter={"color": "red"})} == {"doc1", "doc2"}
    assert {i.key for i in store.search(("test",), filter={"score": {"$gt": 3.2}})} == {"doc1", "doc3", "doc4"}
    assert [i.key for i in store.search(("test",), filter={"score": {"$gte": 4.0}, "color": "green"})] == ["doc3"]
    assert {i.key for i in store.search(("test",), filter={"color": {"$ne": "red"}})} == {"doc3", "doc4"}

    results = store.search(("test",), query="apple", filter={"color": "red"})
    assert [i.key for i in results][:1] == ["doc1"] and len(results) == 2
    assert results[0].score is not None
    assert store.search(("test",), query="car", filter={"color": "red"})[0].key == "doc2"
    assert store.search(("test",), query="a green fruit")[0].key == "doc3"

    page1 = store.search(("test",), limit=2)
    page2 = store.search(("test",), limit=2, offset=2)
    assert len(page1) == len(page2) == 2 and not {i.key for i in page1} & {i.key for i in page2}
    assert len(store.search(("test",), query="vehicle", limit=10)) == 4
    assert len(store.search(("test",), query="")) == 4  # empty query = plain listing
    assert store.search(("other",)) == []


def test_index_false_and_index_fields(store: HindsightStore) -> None:
    store.put(("docs",), "indexed", {"title": "x", "body": "notes about kubernetes deployment"}, index=["body"])
    store.put(("docs",), "hidden", {"body": "notes about kubernetes deployment"}, index=False)
    by_query = store.search(("docs",), query="kubernetes deployment")
    assert [i.key for i in by_query] == ["indexed"]
    assert {i.key for i in store.search(("docs",))} == {"indexed", "hidden"}
    assert store.get(("docs",), "hidden").value == {"body": "notes about kubernetes deployment"}  # type: ignore[union-attr]
    # Switching an item between indexed and not must keep exactly one copy.
    store.put(("docs",), "hidden", {"body": "now searchable kubernetes notes"})
    assert [i.key for i in store.search(("docs",), filter={"body": "now searchable kubernetes notes"})] == ["hidden"]
    assert "hidden" in [i.key for i in store.search(("docs",), query="searchable kubernetes notes")]


def test_ttl_expires_refreshes_and_can_be_removed(timed_engine: MemoryEngine, clock: ManualClock) -> None:
    engine = timed_engine
    store = HindsightStore(namespace="u1", engine=engine)
    assert store.supports_ttl
    store.put(("tmp",), "short", {"v": "gone soon"}, ttl=1 / 60)  # one second
    store.put(("tmp",), "long", {"v": "stays"}, ttl=60)
    assert store.get(("tmp",), "short") is not None
    before = _record(engine, "long").expires_at
    clock.advance(seconds=2)
    assert store.get(("tmp",), "short") is None
    assert [i.key for i in store.search(("tmp",))] == ["long"]
    after = _record(engine, "long").expires_at
    assert before is not None and after is not None and after > before, "reads refresh the TTL"
    store.get(("tmp",), "long", refresh_ttl=False)
    assert _record(engine, "long").expires_at == after
    store.put(("tmp",), "long", {"v": "stays forever"}, ttl=None)
    assert _record(engine, "long").expires_at is None
    assert store.get(("tmp",), "long").value == {"v": "stays forever"}  # type: ignore[union-attr]


def _record(engine: MemoryEngine, key: str) -> Any:
    (record,) = engine.list(namespace="u1", filters={"metadata": {"lg_key": key}, "tiers": ["semantic", "working"]})
    return record


def test_list_namespaces(store: HindsightStore) -> None:
    namespaces = [
        ("a", "b", "c"),
        ("a", "b", "d", "e"),
        ("a", "b", "d", "i"),
        ("a", "b", "f"),
        ("a", "c", "f"),
        ("b", "a", "f"),
        ("users", "123"),
        ("users", "456", "settings"),
        ("admin", "users", "789"),
    ]
    store.batch([PutOp(ns, f"id_{i}", {"data": f"value_{i:02d}"}, index=False) for i, ns in enumerate(namespaces)])
    assert store.list_namespaces(prefix=("a", "b")) == [
        ("a", "b", "c"),
        ("a", "b", "d", "e"),
        ("a", "b", "d", "i"),
        ("a", "b", "f"),
    ]
    assert store.list_namespaces(suffix=("f",)) == [("a", "b", "f"), ("a", "c", "f"), ("b", "a", "f")]
    assert store.list_namespaces(prefix=("a",), suffix=("f",)) == [("a", "b", "f"), ("a", "c", "f")]
    assert store.list_namespaces(prefix=("a", "b"), max_depth=3) == [("a", "b", "c"), ("a", "b", "d"), ("a", "b", "f")]
    assert store.list_namespaces(prefix=("a", "b"), limit=2) == [("a", "b", "c"), ("a", "b", "d", "e")]
    assert store.list_namespaces(prefix=("a", "b"), offset=2) == [("a", "b", "d", "i"), ("a", "b", "f")]
    assert store.list_namespaces(prefix=("a", "*", "f")) == [("a", "b", "f"), ("a", "c", "f")]
    assert store.list_namespaces(suffix=("*", "f")) == [("a", "b", "f"), ("a", "c", "f"), ("b", "a", "f")]
    assert store.list_namespaces(prefix=("nonexistent",)) == []
    assert store.list_namespaces(prefix=("users", "123")) == [("users", "123")]
    assert store.list_namespaces(max_depth=1) == [("a",), ("admin",), ("b",), ("users",)]
    assert len(store.list_namespaces()) == len(namespaces)


def test_invalid_namespaces(store: HindsightStore) -> None:
    for bad in [(), ("the", "thing.about"), ("some", "fun", ""), ("langgraph", "foo")]:
        with pytest.raises(InvalidNamespaceError):
            store.put(bad, "k", {"v": 1})
    with pytest.raises(InvalidNamespaceError):
        store.batch([GetOp(("a.b",), "k")])
    with pytest.raises(ValueError, match="unsupported filter operator"):
        store.put(("ok",), "k", {"v": 1}) or store.search(("ok",), filter={"v": {"$regex": "x"}})


def test_batch_runs_in_order_and_mixed_ops(store: HindsightStore) -> None:
    results = store.batch(
        [
            PutOp(("m",), "k", {"v": 1}),
            GetOp(("m",), "k"),
            SearchOp(("m",)),
            ListNamespacesOp(match_conditions=(MatchCondition("prefix", ("m",)),)),
            PutOp(("m",), "k", None),
            GetOp(("m",), "k"),
        ]
    )
    assert results[0] is None and results[1].value == {"v": 1}  # type: ignore[union-attr]
    assert [i.key for i in results[2]] == ["k"] and results[3] == [("m",)]  # type: ignore[union-attr]
    assert results[5] is None


async def test_async_api(store: HindsightStore) -> None:
    await asyncio.gather(*(store.aput(("async",), f"k{i}", {"n": i, "text": f"note number {i}"}) for i in range(4)))
    assert (await store.aget(("async",), "k2")).value == {"n": 2, "text": "note number 2"}  # type: ignore[union-attr]
    assert {i.key for i in await store.asearch(("async",), filter={"n": {"$lte": 1}})} == {"k0", "k1"}
    await store.adelete(("async",), "k0")
    assert await store.aget(("async",), "k0") is None
    assert await store.alist_namespaces() == [("async",)]


def test_users_are_isolated(engine: MemoryEngine) -> None:
    alice = HindsightStore(namespace="alice", engine=engine)
    bob = HindsightStore(namespace="bob", engine=engine)
    alice.put(("memories",), "diet", {"text": "Alice is vegetarian"})
    assert bob.get(("memories",), "diet") is None
    assert bob.search(("memories",), query="vegetarian") == []
    assert bob.list_namespaces() == []


def test_missing_namespace_is_a_clear_error(engine: MemoryEngine, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("HINDSIGHT_NAMESPACE", raising=False)
    with pytest.raises(ConfigurationError, match="namespace"):
        HindsightStore(engine=engine)
    with pytest.raises(ConfigurationError, match="serves namespace"):
        HindsightStore(namespace="bob", client=MemoryClient.in_process(engine, namespace="alice")).get(("a",), "b")


class State(TypedDict, total=False):
    question: str
    prompt: str


def test_langgraph_agent_memory_survives_a_new_engine(store_path: Path, embedder: Any) -> None:
    """A LangGraph graph writes through runtime.store; a later graph on a fresh engine reads it into its prompt."""

    def learn(state: State, runtime: Runtime) -> State:
        runtime.store.put(("memories", "u1"), "drink", {"text": "The user prefers green tea over coffee"})  # type: ignore[union-attr]
        return {}

    def answer(state: State, runtime: Runtime) -> State:
        found = runtime.store.search(("memories", "u1"), query=state["question"], limit=3)  # type: ignore[union-attr]
        return {
            "prompt": "Known about the user:\n"
            + "\n".join(i.value["text"] for i in found)
            + f"\nQ: {state['question']}"
        }

    def graph(node: Any, store: HindsightStore) -> Any:
        return StateGraph(State).add_node("n", node).add_edge(START, "n").add_edge("n", END).compile(store=store)

    first = MemoryEngine(store=store_path, embedder=embedder, llm=False)
    graph(learn, HindsightStore(namespace="u1", engine=first)).invoke({"question": "-"})
    first.chroma.flush()

    later = MemoryEngine(store=store_path, embedder=embedder, llm=False)
    out = graph(answer, HindsightStore(namespace="u1", engine=later)).invoke(
        {"question": "What should I offer to drink?"}
    )
    assert "green tea" in out["prompt"]


def test_search_results_come_best_score_first(store: HindsightStore) -> None:
    """The score reported is the one results are ranked by (a later "moved to Paris" ranks over "live in Berlin")."""
    for key, text in (("home", "I live in Berlin"), ("bike", "I moved to Paris"), ("food", "I love sushi")):
        store.put(("prefs",), key, {"text": text})
    found = store.search(("prefs",), query="where do I live")
    scores = [i.score for i in found]
    assert len(found) >= 2 and scores == sorted(scores, reverse=True)


def test_upkeep_never_decays_archives_evicts_or_merges_items(timed_engine: MemoryEngine, clock: ManualClock) -> None:
    """Items are a program's data: past a tier's cap, idle for months, repeated word for word, they stay as put."""
    engine = timed_engine
    store = HindsightStore(namespace="u1", engine=engine)
    values = {
        "a": {"text": "The user prefers dark mode in the editor"},
        "b": {"text": "The user prefers dark mode in the editor"},  # a repeat the periodic merge would fold
        "c": {"text": "Standup is at 9:30 every weekday"},
    }
    for key, value in values.items():
        store.put(("notes",), key, value)
    store.put(("notes",), "scratch", {"v": 1}, index=False)
    own = [{"content": text, "tier": "semantic"} for text in ("We deploy to GKE.", "The invoice total was 420 euros.")]
    engine.store_memories(own, namespace="u1", dedup=False)
    clock.advance(days=200)
    report = engine.upkeep(namespace="u1")
    assert report.ok and report.count("merged") == report.count("consolidated") == 0
    maintained = engine.maintain(namespace="u1", caps={Tier.SEMANTIC: 1})
    assert len(maintained.evicted) == 1, "the cap counts and evicts the engine's own memories, not the items"
    for key, value in values.items():
        item = store.get(("notes",), key)
        assert item is not None and item.value == value
        assert _record(engine, key).importance == store.importance
    assert {i.key for i in store.search(("notes",))} == {"a", "b", "c", "scratch"}


def test_a_conversation_memory_never_repeats_or_updates_an_item(store: HindsightStore, engine: MemoryEngine) -> None:
    """A user saying what an item holds, or that it changed, makes memories of their own: the item stays as put."""
    store.put(("profile",), "home", {"text": "I live in Berlin."})
    said = engine.store("I live in Berlin.", namespace="u1").stored
    moved = engine.store("I moved to Paris last month, I no longer live in Berlin.", namespace="u1").stored
    item = _record(engine, "home")
    assert item.status is Status.ACTIVE and item.superseded_by is None and item.sources == []
    assert said and moved and item.id not in {r.id for r in (*said, *moved)}
    found = store.get(("profile",), "home")
    assert found is not None and found.value == {"text": "I live in Berlin."}


def test_query_search_returns_the_whole_page(store: HindsightStore) -> None:
    """Recall's context budget (450 tokens by default) must not cut a page of results short."""
    notes = (
        "kubernetes deployment notes: the cluster runs on GKE in europe-west1 with three node pools, autoscaling "
        "between two and ten nodes, nightly backups of every persistent volume and a staging copy in us-east1"
    )
    store.batch([PutOp(("docs",), f"d{n}", {"text": f"Doc {n} {notes}", "n": n}) for n in range(30)])
    query = "kubernetes deployment"
    assert len(store.search(("docs",), query=query, limit=30)) == 30
    assert len(store.search(("docs",), query=query, limit=10, offset=20)) == 10
    assert len(store.search(("docs",), query=query, filter={"n": {"$gte": 10}}, limit=20)) == 20


def test_query_search_ranks_and_scores_by_similarity(store: HindsightStore, engine: MemoryEngine) -> None:
    """As LangGraph's stores: by embedding cosine, not recall's fusion, where the lone item matching "user" won."""
    texts = {
        "drink": "The user prefers green tea over coffee",
        "home": "The user lives in Berlin",
        "job": "The user works as a nurse",
    }
    for key, text in texts.items():
        store.put(("memories", "u1"), key, {"text": text})
    for query in ("what does the user drink", "what hot beverage should I offer the user"):
        found = store.search(("memories", "u1"), query=query)
        assert found[0].key == "drink"
        # The cosine of the query to each item's own vector (not blended with a context vector).
        only_own = {"context": 0.0}
        hits = engine.recall(query, namespace="u1", filters={"metadata": {"lg_item": True}}, weights=only_own).hits
        cosines = {h.record.metadata["lg_key"]: h.similarity for h in hits}
        assert [i.score for i in found] == pytest.approx([cosines[i.key] for i in found])
        assert [i.score for i in found] == sorted(cosines.values(), reverse=True)


def test_values_of_any_depth_round_trip(store: HindsightStore, engine: MemoryEngine) -> None:
    """A value is no metadata: the metadata nesting limit (6 levels) must not refuse a deeply nested value."""
    deep: dict[str, Any] = {"leaf": [1, {"x": None}]}
    for level in range(10):
        deep = {f"l{level}": deep}
    profile = {"profile": {"contacts": [{"name": "Ann", "address": {"city": {"name": "Berlin", "zip": ["10115"]}}}]}}
    for key, value in (("deep", deep), ("profile", profile)):
        store.put(("d",), key, value)
        assert store.get(("d",), key).value == value  # type: ignore[union-attr]
    assert [i.key for i in store.search(("d",), filter={"profile": profile["profile"]})] == ["profile"]
    # An item written when values were kept as metadata objects still reads back.
    store.memory_client.update(_record(engine, "deep").id, metadata={"lg_value": {"old": {"style": 1}}})
    assert store.get(("d",), "deep").value == {"old": {"style": 1}}  # type: ignore[union-attr]
    with pytest.raises(ValueError, match=r"value of 'big'.*limit is 8192"):
        store.put(("d",), "big", {"text": "x" * 9000})


def test_reads_refreshing_the_ttl_keep_updated_at(timed_engine: MemoryEngine, clock: ManualClock) -> None:
    """``updated_at`` is the time of the last put (as LangGraph's TTL stores): a refresh must not reorder listings."""
    store = HindsightStore(namespace="u1", engine=timed_engine)
    store.put(("t",), "a", {"v": "a"}, ttl=10)
    clock.advance(seconds=1)
    store.put(("t",), "b", {"v": "b"}, ttl=10)
    clock.advance(seconds=1)
    put_at = store.get(("t",), "a", refresh_ttl=False).updated_at  # type: ignore[union-attr]
    expires = _record(timed_engine, "a").expires_at
    assert store.get(("t",), "a") is not None  # refreshes the TTL
    assert _record(timed_engine, "a").expires_at > expires
    assert store.get(("t",), "a", refresh_ttl=False).updated_at == put_at  # type: ignore[union-attr]
    assert [i.key for i in store.search(("t",), refresh_ttl=False)] == ["b", "a"]


def test_sequence_filters_match_lists_and_tuples_alike(store: HindsightStore) -> None:
    """As InMemoryStore: a tuple filter matches a list value (tuples come back from JSON as lists)."""
    store.put(("a",), "k", {"tags": ["x", "y"], "pair": (1, 2), "nested": [{"n": (3,)}]})
    for filter in ({"tags": ("x", "y")}, {"pair": (1, 2)}, {"pair": [1, 2]}, {"nested": ({"n": [3]},)}):
        assert [i.key for i in store.search(("a",), filter=filter)] == ["k"], filter
    for filter in ({"tags": ("x",)}, {"pair": (2, 1)}, {"tags": ("x", "y", "z")}):
        assert store.search(("a",), filter=filter) == [], filter


def test_query_search_filters_before_ranking(store: HindsightStore) -> None:
    """As InMemoryStore: the filter picks the items, then they are ranked, so matches below recall's 200 are found."""
    infra = [
        PutOp(("docs",), f"d{n}", {"text": f"kubernetes deployment note {n}", "team": "infra"}) for n in range(205)
    ]
    kitchen = {"pie": "my grandmother's apple pie recipe", "cake": "a carrot cake for the office party"}
    store.batch([*infra, *(PutOp(("docs",), key, {"text": text, "team": "kitchen"}) for key, text in kitchen.items())])
    query = "kubernetes deployment"
    found = store.search(("docs",), query=query, filter={"team": "kitchen"})
    assert {i.key for i in found} == set(kitchen)
    assert [i.score for i in found] == sorted((i.score for i in found), reverse=True)
    first = store.search(("docs",), query=query, limit=200)
    deep = store.search(("docs",), query=query, offset=200, limit=10)  # past one recall's page, no filter
    assert len(deep) == 7 and not {i.key for i in deep} & {i.key for i in first}
    assert min(i.score for i in first) >= max(i.score for i in deep)  # type: ignore[type-var]


def test_query_search_scores_items_written_in_one_moment(store_path: Path, embedder: Any, clock: ManualClock) -> None:
    """Items too many to recall by their time (one moment, as a replayed history has) are scored one by one."""
    # A recall returns 10 at most: 30 items in one moment are too many.
    engine = MemoryEngine(store=store_path, embedder=embedder, llm=False, clock=clock, max_top_k=10)
    try:
        store = HindsightStore(namespace="u1", engine=engine)
        store.batch([PutOp(("docs",), f"d{n}", {"text": f"kubernetes deployment note {n}", "n": n}) for n in range(30)])
        found = store.search(("docs",), query="kubernetes deployment", filter={"n": {"$gte": 25}})
        assert sorted(i.key for i in found) == [f"d{n}" for n in range(25, 30)]
        assert [i.score for i in found] == sorted((i.score for i in found), reverse=True)
    finally:
        engine.close()


def test_query_search_asks_for_no_more_memories_than_the_server_allows(store_path: Path, embedder: Any) -> None:
    """A server set to a ``max_top_k`` below 50 refused every query search: the store asked for 50 or more."""
    engine = MemoryEngine(store=store_path, embedder=embedder, llm=False, max_top_k=12)
    try:
        store = HindsightStore(namespace="u1", engine=engine)
        infra = [
            PutOp(("docs",), f"d{n}", {"text": f"kubernetes deployment note {n}", "team": "infra"}) for n in range(30)
        ]
        kitchen = {"pie": "my grandmother's apple pie recipe", "cake": "a carrot cake for the office party"}
        store.batch([*infra, *(PutOp(("docs",), k, {"text": text, "team": "kitchen"}) for k, text in kitchen.items())])
        query = "kubernetes deployment"
        found = store.search(("docs",), query=query, filter={"team": "kitchen"})  # ranked below the first 12
        assert {i.key for i in found} == set(kitchen)
        every = store.search(("docs",), query=query, limit=40)
        assert len(every) == 32 and [i.score for i in every] == sorted((i.score for i in every), reverse=True)
        assert {i.key for i in every[:30]} == {f"d{n}" for n in range(30)}
        assert store.memory_client.max_top_k() == 12  # what the server announced at connect
    finally:
        engine.close()
    assert announced_max_top_k(capability(None, max_top_k=7)) == 7
    for junk in (None, {}, {"hindsight": {"max_top_k": True}}, {"hindsight": {"max_top_k": -1}}):
        assert announced_max_top_k(junk) is None  # an older server announces none: the store asks for 200 at most


def test_items_put_before_pinning_existed_are_pinned(timed_engine: MemoryEngine, clock: ManualClock) -> None:
    """An item the store wrote before it pinned its items (no "pinned" key) is still no memory upkeep may touch."""
    engine = timed_engine
    store = HindsightStore(namespace="u1", engine=engine)
    values = {"a": {"text": "The user prefers dark mode in the editor"}, "b": {"text": "Standup is at 9:30 daily"}}
    values["c"] = values["a"]  # a repeat the periodic merge would fold
    for key, value in values.items():  # as the store wrote an item then: its own metadata, no pin
        metadata = {
            "lg_item": True,
            "lg_ns": json.dumps(["notes"]),
            "lg_key": key,
            "lg_value": json.dumps(value),
            "lg_indexed": True,
            "lg_ttl": 0,
            "lg_ns_0": "notes",
        }
        item = {"content": value["text"], "kind": "fact", "tier": "semantic", "importance": 0.8, "metadata": metadata}
        store.memory_client.store([item], apply_filter=False, dedup=False, supersede=False)
    engine.store_memories([{"content": "We deploy to GKE.", "tier": "semantic"}], namespace="u1")
    clock.advance(days=200)
    report = engine.upkeep(namespace="u1")
    assert report.ok and report.count("merged") == report.count("consolidated") == 0
    assert len(engine.maintain(namespace="u1", caps={Tier.SEMANTIC: 1}).evicted) == 0
    for key, value in values.items():
        assert store.get(("notes",), key).value == value  # type: ignore[union-attr]
        assert _record(engine, key).importance == 0.8


def test_values_that_fit_the_metadata_limit_are_stored(store: HindsightStore) -> None:
    """Up to the server's metadata limit, a value is stored; past it the error says what to change.

    As JSON text inside the metadata, a value's quotes count twice: these took 9 KB there, over the 8 KB limit.
    """
    fields = {f"k{i}": f"v{i}" for i in range(500)}  # 6.8 KB as JSON
    quoted = {"text": 'she said "yes" ' * 450}  # 7.7 KB
    deep: dict[str, Any] = {"leaf": "x"}
    for level in range(8):
        deep = {f"l{level}": deep}
    for key, value in (("fields", fields), ("quoted", quoted), ("deep", deep)):
        store.put(("d",), key, value)
        assert store.get(("d",), key).value == value  # type: ignore[union-attr]
    assert [i.key for i in store.search(("d",), filter={"k7": "v7"})] == ["fields"]
    store.put(("d",), "fields", deep)  # an update replaces the whole value, whichever way either is kept
    store.put(("d",), "deep", {"k0": "v0"})
    assert store.get(("d",), "fields").value == deep  # type: ignore[union-attr]
    assert store.get(("d",), "deep").value == {"k0": "v0"}  # type: ignore[union-attr]
    limit = r"value of 'big'.*limit is 8192 \(HINDSIGHT_MAX_METADATA_BYTES\)\. Raise HINDSIGHT_MAX_METADATA_BYTES"
    with pytest.raises(ValueError, match=rf"{limit} where the memory server runs, or split the value"):
        store.put(("d",), "big", {"text": "lorem ipsum " * 1700})  # 20 KB
    assert store.get(("d",), "big") is None


def test_searches_leave_the_access_counts_alone(store: HindsightStore, engine: MemoryEngine) -> None:
    """A query search counted an access on every item its recalls scored, returned or not; reads count none now."""
    topics = ["apple pie recipe", "kubernetes deployment", "holiday in Lisbon", "guitar lessons", "tax return"]
    store.batch([PutOp(("docs",), f"d{n}", {"text": text, "n": n}) for n, text in enumerate(topics)])

    def counts() -> dict[str, int]:
        items = {"metadata": {"lg_item": True}}  # a narrowing filter: no relevance floor
        hits = engine.recall("notes", namespace="u1", top_k=50, filters=items, touch=False).hits
        return {h.record.metadata["lg_key"]: h.record.access_count for h in hits}

    assert [i.key for i in store.search(("docs",), query="kubernetes deployment", limit=1)] == ["d1"]
    assert [i.key for i in store.search(("docs",), query="kubernetes", filter={"n": {"$gte": 4}})] == ["d4"]
    assert store.get(("docs",), "d1") is not None
    assert counts() == dict.fromkeys((f"d{n}" for n in range(5)), 0)
    store.memory_client.recall("kubernetes deployment", top_k=1)  # recall's own use still counts
    assert counts()["d1"] == 1


def test_a_search_parses_each_value_once(store: HindsightStore, monkeypatch: pytest.MonkeyPatch) -> None:
    """A value kept as JSON text was parsed twice per item a filtered search returned: for the filter, for the item."""
    deep: dict[str, Any] = {"text": "kubernetes deployment", "team": "infra"}
    for level in range(8):  # deeper than metadata holds: kept as JSON text
        deep = {"text": "kubernetes deployment", "team": "infra", f"l{level}": deep}
    store.put(("docs",), "deep", deep)
    text = json.dumps(deep, ensure_ascii=False, separators=(",", ":"))
    parsed: list[str] = []
    loads = json.loads

    def counting(source: Any, *args: Any, **kwargs: Any) -> Any:
        if source == text:
            parsed.append(source)
        return loads(source, *args, **kwargs)

    monkeypatch.setattr(json, "loads", counting)
    for query in ("kubernetes", None):
        parsed.clear()
        found = store.search(("docs",), query=query, filter={"team": "infra"})
        assert [i.value for i in found] == [deep] and len(parsed) == 1, query


def test_a_filtered_search_finds_matches_in_one_recall_without_a_listing(
    store: HindsightStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Matches ranked below recall's first 50 made a filtered search list every item under the prefix."""
    infra = [PutOp(("docs",), f"d{n}", {"text": f"kubernetes deployment note {n}", "team": "infra"}) for n in range(60)]
    kitchen = {"pie": "my grandmother's apple pie recipe", "cake": "a carrot cake for the office party"}
    store.batch([*infra, *(PutOp(("docs",), key, {"text": text, "team": "kitchen"}) for key, text in kitchen.items())])
    client = store.memory_client
    listed: list[Any] = []
    monkeypatch.setattr(client, "list", lambda *args, **kwargs: listed.append(kwargs) or [])
    found = store.search(("docs",), query="kubernetes deployment", filter={"team": "kitchen"})
    assert {i.key for i in found} == set(kitchen) and listed == []


def test_items_written_in_one_moment_are_scored_a_group_at_a_time(
    store_path: Path, embedder: Any, clock: ManualClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Kept items ranked past the first recall were scored a recall each where they shared one moment (401 for 400).

    Now one recall scores a group of keys (``{"$in": [...]}``); a server that refuses that scores a key at a time.
    """
    engine = MemoryEngine(store=store_path, embedder=embedder, llm=False, clock=clock, max_top_k=10)
    try:
        store = HindsightStore(namespace="u1", engine=engine)
        store.batch([PutOp(("docs",), f"d{n}", {"text": f"kubernetes deployment note {n}", "n": n}) for n in range(30)])
        client = store.memory_client
        recall = client.recall
        recalls: list[Any] = []

        def counted(*args: Any, **kwargs: Any) -> Any:
            recalls.append(kwargs["filters"]["metadata"].get("lg_key"))
            return recall(*args, **kwargs)

        monkeypatch.setattr(client, "recall", counted)
        query, keep = "kubernetes deployment", {"n": {"$gte": 22}}
        found = store.search(("docs",), query=query, filter=keep)
        assert sorted(i.key for i in found) == [f"d{n}" for n in range(22, 30)]
        assert [i.score for i in found] == sorted((i.score for i in found), reverse=True)
        assert len(recalls) == 2  # the first page, then the eight kept keys at once

        def older_server(*args: Any, **kwargs: Any) -> Any:
            if isinstance(kwargs["filters"]["metadata"].get("lg_key"), dict):
                raise MemoryToolInputError(
                    "retrieve_memory", "Input should be a valid string", field="filters.metadata"
                )
            return counted(*args, **kwargs)

        monkeypatch.setattr(client, "recall", older_server)
        recalls.clear()
        again = store.search(("docs",), query=query, filter=keep)
        assert [(i.key, i.score) for i in again] == [(i.key, i.score) for i in found]
        # The first page, then a recall for each kept key it did not hold, one key at a time. Which
        # kept keys the first page holds follows the ranking (the first search counted an access to
        # each it returned), so only their number is not fixed.
        first, singles = recalls[0], recalls[1:]
        assert first is None and singles and len(set(singles)) == len(singles)
        assert set(singles) <= {f"d{n}" for n in range(22, 30)}
    finally:
        engine.close()


def test_a_server_that_predates_touch_still_answers_searches(
    store: HindsightStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Searches ask for ``touch=False``; a server without that argument refuses it, and is then asked without it."""
    store.batch([PutOp(("docs",), f"d{n}", {"text": f"kubernetes deployment note {n}", "n": n}) for n in range(5)])
    client = store.memory_client
    recall = client.recall
    refused: list[str] = []

    def older_server(*args: Any, **kwargs: Any) -> Any:
        if "touch" in kwargs:
            refused.append(kwargs["filters"]["metadata"].get("lg_key", "page"))
            raise MemoryToolInputError("retrieve_memory", "touch: unknown argument", field="touch")
        return recall(*args, **kwargs)

    monkeypatch.setattr(client, "recall", older_server)
    found = store.search(("docs",), query="kubernetes deployment", filter={"n": {"$lte": 1}})
    assert sorted(i.key for i in found) == ["d0", "d1"] and refused == ["page"]


def test_a_filtered_search_lists_only_the_items_its_filter_can_keep(
    store_path: Path, embedder: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A filtered search the first recall did not answer listed every item under the prefix (~0.2 s per 500).

    Now it lists the items whose text fields match and those that did not keep their fields (put by an
    older version, or too long to keep): the same results, fewer items read.
    """
    from hindsight_integrations.langchain import store as store_module

    engine = MemoryEngine(store=store_path, embedder=embedder, llm=False, max_top_k=10)
    try:
        store = HindsightStore(namespace="u1", engine=engine)
        store.batch(
            [PutOp(("docs",), f"d{n}", {"text": f"kubernetes deployment note {n}", "team": "infra"}) for n in range(30)]
        )
        store.put(("docs",), "pie", {"text": "my grandmother's apple pie recipe", "team": "kitchen"})
        store.put(("docs",), "moved", {"text": "a kubernetes cluster in the kitchen", "team": "kitchen"})
        store.put(
            ("docs",), "moved", {"text": "a kubernetes cluster in the kitchen", "team": "infra"}
        )  # no longer kept
        store.put(("docs",), "long", {"text": "cake " * 100, "team": "kitchen"})  # too long to keep as a field
        with monkeypatch.context() as older:
            older.setattr(store_module, "field_keys", lambda value, room: {}, raising=False)  # as versions before
            store.put(("docs",), "old", {"text": "a carrot cake for the office party", "team": "kitchen"})
            store.put(("docs",), "old-infra", {"text": "kubernetes deployment note old", "team": "infra"})
        client = store.memory_client
        listing = client.list
        read: list[int] = []

        def counted(*args: Any, **kwargs: Any) -> Any:
            found = listing(*args, **kwargs)
            read.append(len(found))
            return found

        monkeypatch.setattr(client, "list", counted)
        kitchen = {"pie", "long", "old"}
        for query in ("kubernetes deployment", None):
            for keep in ({"team": "kitchen"}, {"team": {"$in": ["kitchen", "garden"]}}, {"team": {"$eq": "kitchen"}}):
                read.clear()
                found = store.search(("docs",), query=query, filter=keep)
                assert {i.key for i in found} == kitchen, (query, keep)
                assert sum(read) == 4, (query, keep)  # pie, then long, old and old-infra: not the 31 others
        read.clear()
        assert {i.key for i in store.search(("docs",), query="kubernetes", filter={"team": "infra"}, limit=40)} == {
            *(f"d{n}" for n in range(30)),
            "moved",
            "old-infra",
        }
        numbers = store.search(("docs",), query="kubernetes deployment", filter={"n": {"$gte": 0}})
        assert numbers == []  # no text condition: every item listed, as before
    finally:
        engine.close()


def test_a_put_removes_the_fields_its_value_no_longer_has(
    store: HindsightStore, engine: MemoryEngine, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A put updating a key merged the item's metadata, so a field the new value dropped kept its ``lg_f.`` key.

    The memory's metadata still said ``b: y``, every search filtering on ``b`` read the item again, and an item
    whose fields changed from put to put grew past the metadata's own limits.
    """
    store.put(("docs",), "k", {"a": "x", "b": "y"})
    first = _record(engine, "k")
    store.put(("docs",), "k", {"a": "z"})
    updated = _record(engine, "k")
    assert updated.id == first.id, "a put of an existing key updates its memory in place"
    assert "lg_f.b" not in updated.metadata and updated.metadata["lg_f.a"] == "z"
    assert updated.metadata["lg_created_at"] == first.metadata["lg_created_at"]
    assert store.get(("docs",), "k").value == {"a": "z"}  # type: ignore[union-attr]

    client = store.memory_client
    listing = client.list
    read: list[str] = []

    def counted(*args: Any, **kwargs: Any) -> Any:
        found = listing(*args, **kwargs)
        read.extend(record.metadata["lg_key"] for record in found)
        return found

    monkeypatch.setattr(client, "list", counted)
    for query in ("z", None):
        read.clear()
        assert store.search(("docs",), query=query, filter={"b": "y"}) == []
        assert "k" not in read, query

    many = {f"old{n}": "x" for n in range(40)}  # these and the next value's fields: more keys than metadata holds
    store.put(("docs",), "wide", many)
    store.put(("docs",), "wide", {f"new{n}": "x" for n in range(40)})
    wide = _record(engine, "wide")
    assert not any(key.startswith("lg_f.old") for key in wide.metadata)
    assert sum(key.startswith("lg_f.new") for key in wide.metadata) == 40
    assert store.get(("docs",), "wide").value == {f"new{n}": "x" for n in range(40)}  # type: ignore[union-attr]
