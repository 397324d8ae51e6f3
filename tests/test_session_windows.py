"""The live windows and neighbour checks a conversation turn needs, answered from memory, not Chroma."""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from hindsight_integrations import MemoryEngine
from hindsight_integrations.core.embedding.local import LocalEmbedder
from hindsight_integrations.core.errors import InvalidInputError
from hindsight_integrations.core.storage.session_windows import SessionWindows, context_line

TURNS = [
    ("Maya", "My dog Biscuit loves the beach at Ocean Park."),
    ("Tom", "My retriever Juno swims in the lake by our cabin every summer."),
    ("Maya", "He runs along the water and never goes in."),
]


def _count_reads(engine: MemoryEngine, namespace: str, monkeypatch) -> list[dict]:  # type: ignore[no-untyped-def]
    """Every Chroma ``get`` of the namespace's collection (its arguments), while still reading for real."""
    handle = engine.chroma.namespace(namespace)
    reads: list[dict] = []
    real = handle.collection.get

    def counting(*args, **kwargs):  # type: ignore[no-untyped-def]
        reads.append(kwargs)
        return real(*args, **kwargs)

    monkeypatch.setattr(handle.collection, "get", counting)
    return reads


def test_a_turn_gets_the_preceding_turns_as_context_without_reading_the_window(
    engine: MemoryEngine, monkeypatch
) -> None:
    engine.record_turn(*TURNS[0][1:], session_id="s1", namespace="u1", speaker=TURNS[0][0])
    reads = _count_reads(engine, "u1", monkeypatch)
    results = [
        engine.record_turn(text, session_id="s1", namespace="u1", speaker=speaker) for speaker, text in TURNS[1:]
    ]
    assert [r for r in reads if r.get("where")] == []  # no metadata-filtered read of the window
    memory = results[-1].stored.stored[0]
    assert memory.context == f"Maya: {TURNS[0][1]} Tom: {TURNS[1][1]}"
    handle = engine.chroma.namespace("u1")
    window = engine.working_window(session_id="s1", namespace="u1")
    assert handle.windows.tokens("s1") == sum(t.token_count for t in window)
    assert handle.windows.latest_lines("s1", 2) == [context_line(t.content, t.entities[0]) for t in window[-2:]]


def test_a_new_process_continues_the_window_it_finds_in_the_store(store_path: Path, embedder: LocalEmbedder) -> None:
    first = MemoryEngine(store=store_path, embedder=embedder, llm=False)
    for speaker, text in TURNS[:2]:
        first.record_turn(text, session_id="s1", namespace="u1", speaker=speaker)
    first.chroma.flush()
    second = MemoryEngine(store=store_path, embedder=embedder, llm=False)  # filled from Chroma when opened
    result = second.record_turn(TURNS[2][1], session_id="s1", namespace="u1", speaker=TURNS[2][0])
    assert result.stored.stored[0].context == f"Maya: {TURNS[0][1]} Tom: {TURNS[1][1]}"


def test_compressed_and_cleared_turns_leave_the_window(engine: MemoryEngine) -> None:
    for n in range(12):
        engine.record_turn(f"Step {n}: we configured the staging host number {n}.", session_id="s1", namespace="u1")
    handle = engine.chroma.namespace("u1")
    before = handle.windows.tokens("s1")
    result = engine.compress(session_id="s1", namespace="u1", threshold_tokens=20)
    assert result is not None and result.archived_ids
    live = engine.working_window(session_id="s1", namespace="u1")
    assert handle.windows.tokens("s1") == sum(t.token_count for t in live) < before
    engine.clear_working(session_id="s1", namespace="u1")
    assert handle.windows.tokens("s1") == 0 and handle.windows.latest_lines("s1", 2) == []


def test_a_cleared_window_is_no_context_of_the_next_memory(engine: MemoryEngine) -> None:
    """The settler's note of the session's latest texts outlived ``clear_working``: the next turn's memory
    was stored with the cleared turns as its context (and context vector), found by their words."""
    engine.record_turn("My bank PIN is 4921, please remember it.", session_id="s1", namespace="u1")
    engine.record_turn("Actually, forget this whole conversation.", session_id="s1", namespace="u1")
    assert engine.clear_working(session_id="s1", namespace="u1") == 2
    memory = engine.record_turn("I am training for the Berlin half marathon.", session_id="s1", namespace="u1")
    stored = memory.stored.stored[0]
    assert stored.context is None and engine.get(stored.id, namespace="u1").context is None
    hits = engine.recall("bank PIN 4921", namespace="u1", touch=False).hits
    assert stored.id not in {h.record.id for h in hits if h.lexical > 0}


def test_a_forgotten_memory_is_no_context_of_the_next_one(engine: MemoryEngine) -> None:
    engine.store("My sister lives in Lisbon.", namespace="u1", session_id="s1")
    pin = engine.store("My bank PIN is 4921.", namespace="u1", session_id="s1").stored[0]
    engine.forget(pin.id, namespace="u1")
    later = engine.store("I am training for the Berlin half marathon.", namespace="u1", session_id="s1").stored[0]
    assert "4921" not in (later.context or "")
    other = engine.store("My brother lives in Porto.", namespace="u1", session_id="s2").stored[0]
    assert engine.store("I play chess on Sundays.", namespace="u1", session_id="s2").stored[0].context == other.content


def test_the_window_index_keeps_live_turns_only_in_their_order() -> None:
    windows = SessionWindows()
    turn = {"tier": "working", "status": "active", "session_id": "s", "token_count": 5, "entities_json": '["Ana"]'}
    windows.upsert(
        [
            ("b", {**turn, "content": "second", "occurred_at": 2.0, "created_at": 1.0}),
            ("a", {**turn, "content": "first", "occurred_at": 1.0, "created_at": 9.0}),
            ("m", {**turn, "tier": "episodic", "content": "a memory", "occurred_at": 3.0}),
            ("x", {**turn, "session_id": None, "content": "no session", "occurred_at": 4.0}),
        ]
    )
    assert windows.latest_lines("s", 5) == ["Ana: first", "Ana: second"] and windows.tokens("s") == 10
    windows.upsert([("a", {**turn, "status": "archived", "content": "first", "occurred_at": 1.0})])
    assert windows.latest_lines("s", 5) == ["Ana: second"]
    windows.remove(["b"])
    assert windows.tokens("s") == 0 and windows.latest_lines("other", 2) == []


def test_a_write_reads_no_neighbour_that_cannot_repeat_or_update_it(engine: MemoryEngine, monkeypatch) -> None:
    engine.store("The lint job complains about line length in the admin panel.", namespace="u1")
    reads = _count_reads(engine, "u1", monkeypatch)
    stored = engine.store("The admin panel fonts look blurry on Windows.", namespace="u1")  # related, no repeat
    assert stored.stored and not stored.merged
    assert [r for r in reads if r.get("ids")] == []  # nothing read back from Chroma to compare


def test_an_exact_repeat_far_off_in_meaning_is_still_merged(engine: MemoryEngine) -> None:
    """The same text on dates years apart embeds differently (time-aware text) but is one repeat."""
    then = datetime(2021, 1, 4, tzinfo=UTC)
    first = engine.store("Ship it.", namespace="u1", occurred_at=then, kind="fact", importance=0.6)
    again = engine.store(
        "ship it!", namespace="u1", occurred_at=then + timedelta(days=900), kind="fact", importance=0.6
    )
    assert again.merged == [first.stored[0].id]
    assert len(engine.list(namespace="u1")) == 1


def test_a_sessions_memories_are_kept_in_the_order_they_were_said() -> None:
    windows = SessionWindows()
    memory = {"tier": "episodic", "status": "active", "session_id": "s", "content": "a memory"}
    windows.upsert(
        [
            ("c", {**memory, "occurred_at": 1.0, "created_at": 3.0}),
            ("a", {**memory, "occurred_at": 1.0, "created_at": 1.0}),
            ("b", {**memory, "occurred_at": 1.0, "created_at": 2.0}),
            ("later", {**memory, "occurred_at": 2.0, "created_at": 0.5}),  # a later session date comes after
            ("turn", {**memory, "tier": "working", "occurred_at": 1.0, "created_at": 1.5}),
            ("elsewhere", {**memory, "session_id": "t", "occurred_at": 1.0, "created_at": 2.5}),
            ("loose", {**memory, "session_id": None, "occurred_at": 1.0}),
        ]
    )
    assert windows.adjacent(["a", "b", "c", "later", "turn", "elsewhere", "loose", "unknown"]) == {
        "a": ("b",),
        "b": ("a", "c"),
        "c": ("b", "later"),
        "later": ("c",),
        "elsewhere": (),
    }
    windows.upsert([("b", {**memory, "status": "superseded", "occurred_at": 1.0, "created_at": 2.0})])
    windows.remove(["later"])
    assert windows.adjacent(["a", "b", "c"]) == {"a": ("c",), "c": ("a",)}


def test_recall_lends_each_memory_a_share_of_its_neighbours_score(engine: MemoryEngine) -> None:
    """A score is ``(own + 0.1 · the better neighbour's) / 1.1``: the memories said just before and after."""
    for speaker, text in PUPPY:
        engine.record_turn(text, session_id="s1", namespace="u1", speaker=speaker)
    question = "What name did Tom give his puppy?"
    plain = engine.recall(question, namespace="u1", top_k=20, touch=False, weights={"neighbour_boost": 0})
    lent = engine.recall(question, namespace="u1", top_k=20, touch=False)
    own = {h.record.id: h.score for h in plain.hits}
    said = [h.record.id for h in sorted(plain.hits, key=lambda h: h.record.created_at)]
    assert len(said) >= 5 and len(lent.hits) == len(said)
    for hit in lent.hits:
        at = said.index(hit.record.id)
        around = [own[said[i]] for i in (at - 1, at + 1) if 0 <= i < len(said)]
        assert hit.score == pytest.approx((own[hit.record.id] + 0.1 * max(around)) / 1.1, abs=1e-4)
    strong = engine.recall(question, namespace="u1", top_k=20, touch=False, weights={"neighbour_boost": 1.0})
    assert [h.record.id for h in strong.hits] != [h.record.id for h in plain.hits]  # a larger share moves the order


@pytest.mark.parametrize("question", ["When did Tom adopt his puppy?", "What day did Tom adopt his puppy?"])
def test_a_question_asking_when_gets_no_share_of_the_neighbours(engine: MemoryEngine, question: str) -> None:
    """The memory that dates the event answers it; what was said beside it is not lifted by it."""
    for speaker, text in PUPPY:
        engine.record_turn(text, session_id="s1", namespace="u1", speaker=speaker)

    def scores(query: str, share: float) -> list[tuple[str, float]]:
        hits = engine.recall(query, namespace="u1", top_k=20, touch=False, weights={"neighbour_boost": share}).hits
        return [(h.record.id, h.score) for h in hits]

    def same(left: list[tuple[str, float]], right: list[tuple[str, float]]) -> bool:
        # Two recalls' float sums may differ in the last bits; a neighbour's share moves a score by far more.
        return [i for i, _ in left] == [i for i, _ in right] and all(
            a == pytest.approx(b, abs=1e-5) for (_, a), (_, b) in zip(left, right, strict=True)
        )

    assert len(scores(question, 0)) >= 5
    assert same(scores(question, 1.0), scores(question, 0))
    other = "Which puppy did Tom adopt?"
    assert not same(scores(other, 1.0), scores(other, 0))  # another kind of question shares


PUPPY = [
    ("Maya", "We're painting the spare room this weekend, finally."),
    ("Tom", "Nice! What colour did you pick?"),
    ("Maya", "Sage green, the one from the sample pots."),
    ("Tom", "I adopted a puppy from the shelter on Saturday."),
    ("Maya", "Oh wow, what did you call the puppy?"),
    ("Tom", "Pickle. The kids chose it."),
    ("Maya", "Our neighbour's puppy keeps barking at night."),
    ("Tom", "The shelter had so many puppies, it was hard to choose."),
    ("Maya", "My sister wants a puppy too but her flat is small."),
    ("Tom", "Work has been busy, the quarterly report is due Friday."),
]


def test_a_batch_keeps_the_order_it_was_said_in(engine: MemoryEngine) -> None:
    """One ``store_memories`` call stamps its items a microsecond apart: a history imported at once keeps its order."""
    said = [
        "Our office moved to Leeds in March.",
        "The new espresso machine arrived on Tuesday.",
        "Priya leads the billing migration project.",
        "The staging database runs PostgreSQL 15.",
        "We renamed the mobile app to Tally.",
    ]
    result = engine.store_memories([{"content": text, "session_id": "s1"} for text in said], namespace="u1")
    ids = [r.id for r in result.stored]
    assert [r.content for r in result.stored] == said
    stamps = [engine.get(i, namespace="u1").created_at for i in ids]
    assert stamps == sorted(set(stamps))
    adjacent = engine.chroma.namespace("u1").windows.adjacent(ids)
    assert [adjacent[i] for i in ids] == [(ids[1],), *[(ids[n - 1], ids[n + 1]) for n in range(1, 4)], (ids[3],)]


def test_the_memories_beside_each_stay_right_through_writes_and_removals() -> None:
    """Random adds, rewrites, status changes and removals: ``adjacent`` equals the sessions' order read afresh."""
    rng = random.Random(7)
    windows = SessionWindows()
    live: dict[str, tuple[str, float, float]] = {}  # id → (session, occurred_at, created_at)
    for step in range(600):
        memory_id = f"m{rng.randrange(60)}"
        if rng.random() < 0.2:
            windows.remove([memory_id])
            live.pop(memory_id, None)
            continue
        session, occurred, created = rng.choice("abc"), float(rng.randrange(3)), float(step)
        active = rng.random() < 0.85
        windows.upsert(
            [(memory_id, {"tier": "episodic", "status": "active" if active else "superseded",
                          "session_id": session, "occurred_at": occurred, "created_at": created})]
        )  # fmt: skip
        live.pop(memory_id, None)
        if active:
            live[memory_id] = (session, occurred, created)
        expected: dict[str, tuple[str, ...]] = {}
        for name in "abc":
            said = sorted(((o, c), m) for m, (s, o, c) in live.items() if s == name)
            for n, (_, m) in enumerate(said):
                expected[m] = tuple(said[i][1] for i in (n - 1, n + 1) if 0 <= i < len(said))
        assert windows.adjacent([f"m{i}" for i in range(60)]) == expected


@pytest.mark.parametrize("weight", ["neighbour_boost", "time_boost", "similarity"])
def test_an_infinite_weight_is_refused_with_its_name(engine: MemoryEngine, weight: str) -> None:
    """``inf`` times a zero bonus is NaN: such a weight would leave every score unordered, so it is refused."""
    engine.store("The boat is moored at pier 9.", namespace="u1")
    with pytest.raises(InvalidInputError, match=weight):
        engine.recall("where is the boat?", namespace="u1", weights={weight: float("inf")})
    assert engine.recall("where is the boat?", namespace="u1").hits  # nothing lost, still answering
