"""Hybrid recall on real embedded Chroma: dense, lexical, filters, budget, provenance."""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from hindsight_integrations import Kind, MemoryEngine, RecallFilters, Status, Tier
from hindsight_integrations.core.clock import ManualClock
from hindsight_integrations.core.errors import InvalidInputError
from hindsight_integrations.core.recall.context import CONTEXT_FOOTER, CONTEXT_HEADER


def _orders(engine: MemoryEngine, ns: str = "orders") -> None:
    rng = random.Random(1)
    items = []
    for _ in range(200):
        code = f"ORD-{rng.randint(1000, 9999)}-{rng.choice('ABCDEFGHJK')}{rng.choice('XYZQW')}"
        items.append(
            f"Order {code} for a customer in {rng.choice(['Berlin', 'Paris', 'Lyon', 'Oslo'])} was shipped on time."
        )
    items.append("Order ORD-7731-KX for a customer in Oslo was shipped on time.")
    engine.store_memories(items, namespace=ns, apply_filter=False)


def test_exact_token_found_lexically_where_dense_cannot_tell(timed: MemoryEngine) -> None:
    # on a fixed clock: each memory's context vector embeds its date, so on a real clock the
    # similarities below change with the day the suite runs on
    engine = timed
    _orders(engine)
    target = "Order ORD-7731-KX for a customer in Oslo was shipped on time."
    dense_only = engine.recall(
        "ORD-7731-KX", namespace="orders", top_k=2, weights={"dense": 1, "lexical": 0}, touch=False
    )
    first, second = dense_only.hits
    assert first.similarity - second.similarity < 0.01  # all 201 look alike to the embedding model: a coin toss
    hybrid = engine.recall("ORD-7731-KX", namespace="orders", top_k=2, touch=False)
    assert hybrid.hits[0].record.content == target
    assert hybrid.hits[0].lexical == pytest.approx(1.0)
    assert hybrid.hits[0].score - hybrid.hits[1].score > 0.1  # the exact token decides, by a wide margin


def test_recall_returns_records_with_metadata_and_provenance(engine: MemoryEngine) -> None:
    stored = engine.store(
        "The staging server runs Ubuntu 22.04 with 16 GB of RAM.",
        namespace="u1",
        session_id="s1",
        metadata={"ticket": "OPS-12", "tags": ["infra"]},
        entities=["staging"],
    )
    record = stored.stored[0]
    hit = engine.recall("what OS does staging run?", namespace="u1").hits[0]
    assert hit.record.id == record.id
    assert hit.record.metadata == {"ticket": "OPS-12", "tags": ["infra"]}
    assert hit.record.entities == ["staging"]
    assert hit.record.source.session_id == "s1"
    assert hit.record.session_id == "s1"
    assert hit.record.embedding_model == "all-MiniLM-L6-v2" and hit.record.embedding_dim == 384
    assert hit.record.token_count > 0
    assert 0 < hit.score <= 1 and 0 < hit.relevance <= 1


def test_recall_updates_access_stats(engine: MemoryEngine) -> None:
    engine.store("My favourite editor is Neovim with the LazyVim config.", namespace="u1")
    first = engine.recall("which editor do I use", namespace="u1").hits[0].record
    assert first.access_count == 1 and first.last_accessed_at is not None
    engine.chroma.flush()
    again = engine.get(first.id, namespace="u1")
    assert again.access_count == 1
    engine.recall("which editor do I use", namespace="u1")
    engine.chroma.flush()
    assert engine.get(first.id, namespace="u1").access_count == 2


def test_filters_narrow_before_ranking(engine: MemoryEngine) -> None:
    base = datetime(2024, 1, 10, tzinfo=UTC)
    engine.store_memories(
        [
            {
                "content": "Standup notes: the API migration is blocked on auth.",
                "session_id": "a",
                "occurred_at": base,
                "importance": 0.3,
                "kind": "event",
            },
            {
                "content": "Standup notes: the API migration shipped to production.",
                "session_id": "b",
                "occurred_at": base + timedelta(days=5),
                "importance": 0.9,
                "kind": "fact",
                "metadata": {"team": "core"},
            },
        ],
        namespace="u1",
        apply_filter=False,
    )
    q = "API migration status"
    assert [h.record.session_id for h in engine.recall(q, namespace="u1", filters={"session_id": "a"}).hits] == ["a"]
    assert [h.record.kind for h in engine.recall(q, namespace="u1", filters={"kinds": ["fact"]}).hits] == [Kind.FACT]
    assert len(engine.recall(q, namespace="u1", filters={"since": base + timedelta(days=1)}).hits) == 1
    assert len(engine.recall(q, namespace="u1", filters={"until": base + timedelta(days=1)}).hits) == 1
    assert len(engine.recall(q, namespace="u1", filters={"min_importance": 0.5}).hits) == 1
    assert len(engine.recall(q, namespace="u1", filters=RecallFilters(metadata={"team": "core"})).hits) == 1
    assert engine.recall(q, namespace="u1", filters={"tiers": ["semantic"]}).hits[0].record.tier is Tier.SEMANTIC


def test_a_metadata_filter_names_any_of_several_values(engine: MemoryEngine) -> None:
    """``{"$in": [texts]}`` matches a memory whose value is any one of them, in recall (both searches) and list."""
    ids = {}
    for team in ("core", "web", "data"):
        stored = engine.store(
            f"The {team} team deploys on Fridays.", namespace="u1", metadata={"team": team}, dedup=False
        )
        ids[stored.stored[0].id] = team
    filters = {"metadata": {"team": {"$in": ["core", "data"]}}}
    hits = engine.recall("team deploys on Fridays", namespace="u1", filters=filters, top_k=10).hits
    assert sorted(ids[h.record.id] for h in hits) == ["core", "data"]
    assert sorted(ids[m.id] for m in engine.list(namespace="u1", filters=filters)) == ["core", "data"]
    what = r"'team': a value is a text, a number, a boolean, \{\"\$in\": \[texts\]\} \(one or more texts\) or"
    for wrong in ({"$in": []}, {"$in": [1]}, {"$nin": ["core"]}, {"$ne": ["core"]}, {"$ne": None}, {}):
        with pytest.raises(InvalidInputError, match=what):
            engine.recall("deploys", namespace="u1", filters={"metadata": {"team": wrong}})


def test_a_metadata_filter_leaves_out_one_value_and_keeps_memories_without_the_key(engine: MemoryEngine) -> None:
    """``{"$ne": value}`` keeps every memory whose value differs or that has no such key, in recall and list alike."""
    ids = {}
    for team in ("core", "web", None, True):
        metadata = {} if team is None else {"team": team}
        stored = engine.store(f"The {team} team deploys on Fridays.", namespace="u1", metadata=metadata, dedup=False)
        ids[stored.stored[0].id] = str(team)
    for operand, kept in (("core", ["None", "True", "web"]), (1, ["None", "True", "core", "web"])):
        filters = {"metadata": {"team": {"$ne": operand}}}
        hits = engine.recall("team deploys on Fridays", namespace="u1", filters=filters, top_k=10).hits
        assert sorted(ids[h.record.id] for h in hits) == kept
        assert sorted(ids[m.id] for m in engine.list(namespace="u1", filters=filters)) == kept
    with pytest.raises(InvalidInputError, match="must be a finite number"):
        engine.list(namespace="u1", filters={"metadata": {"team": {"$ne": float("nan")}}})


FLAG_VALUES = {"int": 1, "bool": True, "float": 1.0, "text": "1"}


@pytest.mark.parametrize("wanted", [True, 1, 1.0, "1"], ids=repr)
def test_a_metadata_filter_tells_booleans_from_numbers_as_list_does(engine: MemoryEngine, wanted: object) -> None:
    """Python's True == 1 == 1.0 let recall's own check (lexical candidates, the final re-check) pass
    memories flagged 1 or 1.0 to a filter on True, and the reverse; Chroma, which list() asks, keeps
    booleans apart from numbers and compares an int with a float as numbers."""
    names = {}
    for name, value in FLAG_VALUES.items():
        stored = engine.store(
            f"The staging server {name} runs Ubuntu and listens on port 8080.",
            namespace="u1",
            metadata={"flag": value},
            dedup=False,
        )
        names[stored.stored[0].id] = name
    filters = {"metadata": {"flag": wanted}}
    listed = sorted(names[m.id] for m in engine.list(namespace="u1", filters=filters))
    hits = engine.recall("staging server Ubuntu port", namespace="u1", filters=filters, top_k=10).hits
    recalled = sorted(names[h.record.id] for h in hits)
    expected = ["bool"] if wanted is True else ["text"] if wanted == "1" else ["float", "int"]
    assert listed == expected
    assert recalled == expected


CLAUSE_VALUES = {"int1": 1, "bool_t": True, "float1": 1.0, "text1": "1", "int2": 2, "bool_f": False, "int0": 0}
CONDITIONS = [True, False, 1, 1.0, 0, "1", {"$in": [True]}, {"$in": [1]}, {"$in": [0, 2]}, {"$in": ["1"]}]
CONDITIONS += [{"$gt": 0}, {"$gte": 1}, {"$lte": 1.0}, {"$gt": 0.5}]


@pytest.mark.parametrize("condition", CONDITIONS, ids=repr)
def test_the_python_check_of_a_clause_agrees_with_chroma(tmp_path, condition: object) -> None:
    import chromadb

    from hindsight_integrations.core.recall.filters import _compile

    values = CLAUSE_VALUES
    client = chromadb.PersistentClient(path=str(tmp_path), settings=chromadb.Settings(anonymized_telemetry=False))
    collection = client.create_collection("types")
    metadatas: list[Any] = [{"f": v} for v in values.values()]
    collection.add(ids=list(values), embeddings=[[0.1, 0.2]] * len(values), metadatas=metadatas)
    by_chroma = sorted(collection.get(where={"f": condition})["ids"])
    _, test = _compile({"f": condition})
    assert sorted(name for name, value in values.items() if test(value)) == by_chroma


def test_lexical_candidates_obey_filters(engine: MemoryEngine) -> None:
    engine.store_memories(
        [
            {"content": "Invoice INV-5521 was paid by Acme.", "session_id": "x"},
            {"content": "Invoice INV-5521 was disputed by Acme.", "session_id": "y"},
        ],
        namespace="u1",
        apply_filter=False,
    )
    hits = engine.recall("INV-5521", namespace="u1", filters={"session_id": "y"}).hits
    assert [h.record.session_id for h in hits] == ["y"]


def test_top_k_min_score_and_token_budget(engine: MemoryEngine) -> None:
    engine.store_memories(
        [f"Fact number {i}: the build cache lives in /var/cache/build{i}." for i in range(12)],
        namespace="u1",
        apply_filter=False,
    )
    assert len(engine.recall("where is the build cache", namespace="u1", top_k=3).hits) == 3
    assert engine.recall("where is the build cache", namespace="u1", top_k=10, min_score=0.99).hits == []
    small = engine.recall("where is the build cache", namespace="u1", top_k=10, token_budget=60)
    assert 0 < len(small.hits) < 10
    assert small.tokens <= 60


def test_context_is_dated_chronological_and_fenced(engine: MemoryEngine) -> None:
    engine.store_memories(
        [
            {
                "content": "The project deadline is Friday the 15th.",
                "occurred_at": datetime(2024, 1, 15, tzinfo=UTC),
            },
            {
                "content": "The project kickoff was held in the Berlin office.",
                "occurred_at": datetime(2023, 12, 1, tzinfo=UTC),
            },
        ],
        namespace="u1",
        apply_filter=False,
    )
    context = engine.recall("project deadline and kickoff", namespace="u1").context
    lines = context.splitlines()
    assert lines[0] == CONTEXT_HEADER and lines[-1] == CONTEXT_FOOTER
    assert lines[1] == '- (2023-12-01) "The project kickoff was held in the Berlin office."'
    assert lines[2] == '- (2024-01-15) "The project deadline is Friday the 15th."'


def test_cjk_text_ranks_lexically(engine: MemoryEngine) -> None:
    engine.store_memories(
        ["我住在上海，每天骑自行车上班。", "项目的数据库是PostgreSQL，部署在阿里云。", "我喜欢喝绿茶，不喜欢咖啡。"],
        namespace="zh",
        apply_filter=False,
    )
    hits = engine.recall("数据库", namespace="zh", top_k=1, weights={"dense": 0, "lexical": 1}).hits
    assert hits[0].record.content.startswith("项目的数据库")
    assert engine.chroma.namespace("zh").lexical.search("绿茶", 3)[0][1] > 0


def test_a_chinese_word_matches_lexically_wherever_it_stands() -> None:
    """BM25 indexes each character of a CJK run beside its bigrams: "猫" is in no bigram that the
    question and "我养了一只黑猫" share, and the question's particles and question words are no terms."""
    from hindsight_integrations.core.language.text import ranking_terms
    from hindsight_integrations.core.storage.lexical import LexicalIndex

    index = LexicalIndex()
    index.upsert(
        [
            ("cat", "我养了一只黑猫，今年三岁。", ""),
            ("tea", "我喜欢喝绿茶，不喜欢咖啡。", ""),
            ("bike", "我住在上海，每天骑自行车上班。", ""),
        ]
    )
    assert [memory_id for memory_id, _ in index.search("猫是什么颜色的？", 3)] == ["cat"]
    assert "什么" not in ranking_terms("猫是什么颜色的？") and "的" not in ranking_terms("猫是什么颜色的？")
    assert [memory_id for memory_id, _ in index.search("Which bike?", 3)] == []  # English text: words as before


def test_namespaces_are_isolated(engine: MemoryEngine) -> None:
    engine.store("My home town is Porto and I love the riverside.", namespace="alice")
    engine.store("My home town is Krakow and I love the old town.", namespace="bob")
    for hit in engine.recall("home town", namespace="alice", top_k=10).hits:
        assert "Porto" in hit.record.content
    assert sorted(engine.namespaces()) == ["alice", "bob"]


def test_weights_are_configurable_per_call(engine: MemoryEngine) -> None:
    now = datetime.now(UTC)
    engine.store_memories(
        [
            {
                "content": "The team lunch spot is the ramen bar on Main Street.",
                "occurred_at": now - timedelta(days=300),
                "importance": 0.5,
            },
            {"content": "The team lunch spot is the taco truck by the park.", "occurred_at": now, "importance": 0.5},
        ],
        namespace="u1",
        apply_filter=False,
        dedup=False,
    )
    by_recency = engine.recall(
        "team lunch spot",
        namespace="u1",
        top_k=1,
        weights={"similarity": 0.1, "recency": 1.0, "importance": 0, "access": 0},
    )
    assert "taco" in by_recency.hits[0].record.content
    by_age = engine.recall(
        "team lunch spot",
        namespace="u1",
        top_k=2,
        weights={"similarity": 1.0, "recency": 0, "importance": 0, "access": 0},
    )
    assert {h.record.content for h in by_age.hits} == {
        "The team lunch spot is the ramen bar on Main Street.",
        "The team lunch spot is the taco truck by the park.",
    }


def test_statuses_hidden_by_default(engine: MemoryEngine) -> None:
    kept = engine.store("The VPN endpoint is vpn.example.org on port 1194.", namespace="u1").stored[0]
    gone = engine.store("The old VPN endpoint was vpn-legacy.example.org.", namespace="u1").stored[0]
    engine.forget(gone.id, namespace="u1")
    ids = [h.record.id for h in engine.recall("VPN endpoint", namespace="u1", top_k=5).hits]
    assert ids == [kept.id]
    assert engine.get(gone.id, namespace="u1").status is Status.DELETED  # soft: still there


def test_an_off_topic_question_gets_nothing_unless_filters_ask(store_path, embedder) -> None:
    """The relevance floor: no memory reaches it, so nothing is injected; filters and floor 0 opt out."""
    from hindsight_integrations import MemoryEngine

    facts = [
        "We're building an order-tracking service for a bike shop.",
        "I prefer concise answers with Python code examples.",
        "The test customer's order number is ORD-7731-KX.",
    ]
    engine = MemoryEngine(store=store_path, embedder=embedder, llm=False)
    engine.store_memories([{"content": f, "session_id": "s1"} for f in facts], namespace="u1")
    off_topic = "What is the capital of Peru?"
    assert engine.recall(off_topic, namespace="u1").hits == []
    assert engine.recall(off_topic, namespace="u1").context == ""
    assert engine.recall("How should you format your answers?", namespace="u1").hits  # a fair question passes
    assert engine.recall(off_topic, namespace="u1", filters={"session_id": "s1"}).hits  # asked for that session
    unfloored = MemoryEngine(store=store_path, embedder=embedder, llm=False, relevance_floor=0)
    assert len(unfloored.recall(off_topic, namespace="u1").hits) == 3


@pytest.mark.parametrize("day", ["2026-09-30", "2026-12-01", "2026-12-29"])
def test_a_short_memory_is_found_by_a_paraphrase_whatever_the_date(store_path, embedder, day: str) -> None:
    """A memory without a context has an undated context vector: on these days "On 30 September
    2026, I prefer concise answers" was 0.18-0.20 similar to the question, under the relevance
    floor (the README's MCP example recalled nothing on them); undated it is 0.48."""
    clock = ManualClock(datetime.fromisoformat(day).replace(hour=12, tzinfo=UTC))
    engine = MemoryEngine(store=store_path, embedder=embedder, llm=False, clock=clock)
    stored = engine.store("I prefer concise answers", namespace="u1").stored[0]
    hits = engine.recall("how should answers look?", namespace="u1", top_k=3).hits
    assert [h.record.id for h in hits] == [stored.id]
    assert engine.recall("When did I say how answers should look?", namespace="u1").hits  # the date still matches


def test_a_memory_another_engine_forgot_lends_no_pass_through_the_floor(store_path, embedder) -> None:
    """Its cached facts rank the forgotten memory first for a moment: the floor is judged again without it."""
    with (
        MemoryEngine(store=store_path, embedder=embedder, llm=False) as mine,
        MemoryEngine(store=store_path, embedder=embedder, llm=False) as other,
    ):
        car = mine.store("My car is a green Skoda Octavia.", namespace="u1").stored[0]
        # Far under the floor on any day (a memory's own vector embeds its date: "My cat is called Miso."
        # measures 0.15-0.20 to the question by the day, and cleared the floor on 2026-12-08).
        for unrelated in ("I water the ferns every morning.", "I play the cello on Sundays."):
            mine.store(unrelated, namespace="u1")
        assert mine.recall("What car do I drive?", namespace="u1").hits[0].record.id == car.id
        other.forget(car.id, namespace="u1")
        assert mine.recall("What car do I drive?", namespace="u1").hits == []
