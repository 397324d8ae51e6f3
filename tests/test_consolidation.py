"""Consolidation (episodic → semantic), the periodic merge and provenance, offline, on a moved clock.

Histories are scripted session by session through the real write path (``record_turn`` and
``store_memories``) on a real embedded Chroma with the real MiniLM model; the clock moves a day
between sessions instead of anyone waiting.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

from hindsight_integrations import InvalidInputError, Kind, MemoryEngine, MemoryRecord, Status, Tier
from hindsight_integrations.core.clock import ManualClock
from hindsight_integrations.core.language.sameness import joins, same_fact, says_the_same
from hindsight_integrations.mcp.render import consolidate_text

from .conftest import CLOCK_START

NS = "u1"
START = CLOCK_START  # where the ``clock`` fixture starts
WINDOW_SEATS = [  # one preference in three sessions, in other words each time
    "I prefer window seats on trains.",
    "When I travel by train, I prefer window seats.",
    "On long train journeys I prefer a window seat.",
]


def _sessions(engine: MemoryEngine, clock: ManualClock, *sessions: list[str]) -> list[list[str]]:
    """Record each list of user turns as one session, a day apart; the turn ids per session."""
    ids = []
    for n, turns in enumerate(sessions, 1):
        ids.append(
            [
                engine.record_turn(
                    text, session_id=f"s{n}", namespace=NS, metadata={"app_message": f"m{n}.{k}"}
                ).turn.id
                for k, text in enumerate(turns)
            ]
        )
        clock.advance(days=1)
    return ids


def _state(engine: MemoryEngine) -> list[dict[str, Any]]:
    return sorted((r.public_dict() for r in engine.list(namespace=NS, include_history=True, limit=1000)), key=str)


def _consolidated(engine: MemoryEngine) -> list[MemoryRecord]:
    return [r for r in engine.list(namespace=NS, limit=1000) if r.source.origin == "consolidation"]


# -- the same-fact rules ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("a", "b", "same"),
    [
        ("I prefer window seats on trains.", "As I said, I prefer window seats on trains.", True),
        ("I prefer window seats on trains.", "I like window seats on trains.", True),
        ("I prefer window seats on trains.", "On long train journeys I prefer a window seat.", True),
        ("I prefer window seats on trains.", "I prefer aisle seats on trains.", False),  # cosine 0.80-0.86
        ("I prefer window seats on trains.", "I prefer window seats on planes.", False),
        ("I like red cars.", "I hate red cars.", False),
        ("I prefer concise answers.", "I prefer detailed answers.", False),  # 0.78, closer than a paraphrase
        ("I prefer window seats.", "My sister prefers window seats.", False),
        ("I prefer window seats.", "Priya prefers window seats.", False),
        ("I prefer window seats.", "I prefer window seats, Tom said.", False),
        ("I prefer it.", "I prefer window seats on trains.", False),  # a vague core does not take in everything
        ("我喜欢靠窗的座位", "我喜欢靠过道的座位", False),
        ("我喜欢靠窗的座位", "我还是喜欢靠窗的座位", True),
    ],
)
def test_says_the_same(a: str, b: str, same: bool) -> None:
    assert says_the_same(a, b) is same
    assert says_the_same(b, a) is same


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("The team meeting is on Tuesday at 3pm.", "The team meeting is on Thursday at 3pm."),
        ("Invoice INV-1001 was paid in full.", "Invoice INV-1002 was paid in full."),
        ("Our project uses PostgreSQL for storage.", "Our project uses MySQL for storage."),
        ("I am allergic to peanuts.", "I am no longer allergic to peanuts."),
        ("The budget is 5000 euros.", "The budget is 5000 dollars."),
    ],
)
def test_memories_with_different_values_are_not_one_fact(a: str, b: str) -> None:
    first, second = (MemoryRecord(namespace=NS, content=text) for text in (a, b))
    assert not same_fact(first, second)
    assert not joins([first], second)


# -- consolidation ----------------------------------------------------------------------------------


def test_a_preference_said_in_three_sessions_becomes_one_semantic_memory_with_provenance(
    timed: MemoryEngine, clock: ManualClock
) -> None:
    turns = _sessions(timed, clock, [WINDOW_SEATS[0]], [WINDOW_SEATS[1]], [WINDOW_SEATS[2]])
    before = {r.id: r for r in timed.list(namespace=NS)}
    report = timed.consolidate(NS)
    assert report.merged == [] and report.reinforced == []
    (fact,) = report.created
    assert fact.kind is Kind.PREFERENCE and fact.statements == 3 and fact.occasions == 3
    assert fact.distilled_by == "rules" and fact.content == "I prefer window seats on trains."
    semantic = timed.get(str(fact.id), namespace=NS)
    assert semantic.tier is Tier.SEMANTIC and semantic.kind is Kind.PREFERENCE and semantic.importance == 0.9
    assert semantic.created_at == clock.now() and semantic.valid_from == START
    # Provenance: every source, with its metadata, and through them every turn.
    assert semantic.source.origin == "consolidation"
    assert sorted(semantic.source.memory_ids) == sorted(fact.sources) == sorted(before)
    assert sorted(semantic.source.message_ids) == sorted(t for session in turns for t in session)
    members = {m["id"]: m for m in semantic.source.members}
    assert set(members) == set(before)
    assert {m["session_id"] for m in members.values()} == {"s1", "s3"}  # s2's statement repeats s1's memory
    assert sum(m["statements"] for m in members.values()) == 3
    assert members[semantic.source.memory_ids[0]]["metadata"] == {"app_message": "m1.0"}
    # The sources are kept, at half their importance, linked to the semantic memory.
    for source_id, old in before.items():
        source = timed.get(source_id, namespace=NS)
        assert source.status is Status.ACTIVE and source.consolidated_into == semantic.id
        assert source.importance == pytest.approx(old.importance * 0.5)


def test_recall_returns_the_semantic_memory_in_place_of_its_sources(timed: MemoryEngine, clock: ManualClock) -> None:
    turns = _sessions(timed, clock, [WINDOW_SEATS[0]], [WINDOW_SEATS[1]], [WINDOW_SEATS[2]])
    sources = {r.id for r in timed.list(namespace=NS)}
    (fact,) = timed.consolidate(NS).created
    result = timed.recall("Which seat do I like on the train?", namespace=NS, top_k=5)
    first = result.hits[0].record
    assert first.id == fact.id
    assert sources.isdisjoint(h.record.id for h in result.hits)  # no tokens spent on the same fact twice
    assert sorted(first.source.memory_ids) == sorted(sources)
    assert set(first.source.message_ids) == {t for session in turns for t in session}
    assert result.context.count("window seat") == 1
    # Asked for by a filter that leaves the semantic memory out, a source still answers.
    by_session = timed.recall("window seat", namespace=NS, filters={"session_id": "s3"})
    assert [h.record.consolidated_into for h in by_session.hits] == [fact.id]


POSTGRES_SESSIONS = (
    ["Our project uses PostgreSQL 15 for storage."],
    ["For storage our project uses PostgreSQL 15 in production."],
    ["In production, our project uses PostgreSQL 15 for storage and backups."],
)
"""One fact restated in three sessions: the write path merges the repeats into one episodic memory."""


def test_an_episode_said_in_several_sessions_becomes_semantic(timed: MemoryEngine, clock: ManualClock) -> None:
    _sessions(timed, clock, *POSTGRES_SESSIONS)
    (episode,) = timed.list(namespace=NS)  # the write path merged the repeats into one episodic memory
    assert episode.tier is Tier.EPISODIC and len(episode.sources) == 2
    (fact,) = timed.consolidate(NS).created
    assert fact.sources == [episode.id] and fact.statements == 3 and fact.occasions == 3
    semantic = timed.get(str(fact.id), namespace=NS)
    assert semantic.tier is Tier.SEMANTIC and semantic.kind is Kind.CONTEXT
    assert semantic.content == "Our project uses PostgreSQL 15 for storage."
    assert len(semantic.source.message_ids) == 3


def test_an_import_whose_merged_repeats_carry_no_usable_source_is_consolidated_and_forgotten(
    timed: MemoryEngine, clock: ManualClock
) -> None:
    """``sources`` come back from an import as the file has them: a repeat's ``source`` that is not the
    write path's object failed every ``consolidate`` of the namespace (``'str' object has no attribute 'get'``)."""
    _sessions(timed, clock, *POSTGRES_SESSIONS)
    exported = timed.export(namespace=NS)
    (episode,) = [r for r in exported["records"] if r["tier"] == Tier.EPISODIC.value]
    episode["sources"][0]["source"] = "hand-edited"
    episode["sources"][1]["source"] = {"message_ids": "not a list"}
    timed.import_data(exported, namespace="imported")
    (fact,) = timed.consolidate("imported").created
    semantic = timed.get(str(fact.id), namespace="imported")
    assert semantic.source.message_ids == episode["source"]["message_ids"]  # the turns the file names
    timed.forget(episode["id"], namespace="imported")
    assert timed.get(episode["id"], namespace="imported").status is Status.DELETED


def test_the_window_counts_from_the_latest_repeat(timed: MemoryEngine, clock: ManualClock) -> None:
    # Said in week 0, word for word again in week 4 (merged at write), restated in week 8: the
    # cluster's latest statement is week 4's, 28 days before the restatement, within the window.
    for week, text in (
        (0, "Please use metric units."),
        (4, "Please use metric units."),
        (8, "Please use metric units in recipes."),  # close to the first (0.79), not on the 0.75 edge
    ):
        clock.set(START + timedelta(weeks=week))
        timed.record_turn(text, session_id=f"w{week}", namespace=NS)
    assert timed.settings.consolidation_window_days == 30
    (fact,) = timed.consolidate(NS).created
    assert fact.statements == 3 and fact.occasions == 3 and len(fact.sources) == 2


def test_one_burst_in_one_session_is_not_a_stable_fact(timed: MemoryEngine, clock: ManualClock) -> None:
    burst = [
        "I take my coffee black.",
        "I take my coffee black every morning.",
        "I take my coffee black, always.",
        "Remember, I take my coffee black.",
    ]
    for text in burst:  # one chat, a few minutes apart
        timed.record_turn(text, session_id="burst", namespace=NS)
        clock.advance(minutes=3)
    report = timed.consolidate(NS)
    assert report.created == [] and report.examined >= 1
    clock.advance(days=10)
    timed.record_turn("I take my coffee black, as I told you.", session_id="later", namespace=NS)
    (fact,) = timed.consolidate(NS).created  # said in a second session: now it is one
    assert fact.occasions == 2 and fact.statements == 5


def test_a_preference_said_word_for_word_in_three_sessions_is_reported_as_one_semantic_memory(
    timed: MemoryEngine, clock: ManualClock
) -> None:
    """Repeats merged when written leave one semantic memory: consolidate says so, and writes nothing."""
    for session in ("s0", "s1", "s2"):
        timed.store("I always want my coffee to be an oat flat white.", namespace=NS, session_id=session)
        clock.advance(days=1)
    (memory,) = timed.list(namespace=NS, limit=10)
    assert memory.tier is Tier.SEMANTIC and len(memory.sources) == 2  # the two repeats, merged into it
    before = _state(timed)
    report = timed.consolidate(NS)
    assert report.created == [] and report.reinforced == []
    (fact,) = report.standing
    assert (fact.id, fact.statements, fact.occasions, fact.distilled_by) == (memory.id, 3, 3, "existing")
    assert _state(timed) == before  # nothing to distil: nothing written
    text = consolidate_text(report)
    assert "one semantic memory already" in text and "said 3 times in 3 sessions" in text
    assert "no fact was said often enough" not in text
    # said in one session only, it is not reported (no stable fact yet)
    timed.store("I like my tea green.", namespace="u2", session_id="s9")
    timed.store("I like my tea green.", namespace="u2", session_id="s9")
    assert timed.consolidate("u2").standing == []


def test_distinct_values_are_never_clustered_or_merged(timed: MemoryEngine, clock: ManualClock) -> None:
    pairs = [
        ("The team meeting is on Tuesday at 3pm.", "The team meeting is on Thursday at 3pm."),
        ("Invoice INV-1001 was paid in full.", "Invoice INV-1002 was paid in full."),
        ("Our project uses PostgreSQL for storage.", "Our project uses MySQL for storage."),
        ("I prefer window seats on trains.", "I prefer aisle seats on trains."),
    ]
    for session in range(1, 5):  # each value twice, in alternate sessions: four statements a pair
        timed.store_memories(
            [
                {"content": pair[session % 2], "kind": "fact", "importance": 0.6, "session_id": f"s{session}"}
                for pair in pairs
            ],
            namespace=NS,
            supersede=False,
        )
        clock.advance(days=1)
    report = timed.consolidate(NS)
    assert report.merged == [] and report.created == [] and report.reinforced == []
    assert all(r.consolidated_into is None for r in timed.list(namespace=NS, limit=100))


def test_running_twice_adds_nothing_and_a_new_statement_reinforces(timed: MemoryEngine, clock: ManualClock) -> None:
    _sessions(timed, clock, [WINDOW_SEATS[0]], [WINDOW_SEATS[1]], [WINDOW_SEATS[2]])
    (fact,) = timed.consolidate(NS).created
    state = _state(timed)
    again = timed.consolidate(NS)
    assert (again.merged, again.created, again.reinforced) == ([], [], [])
    assert _state(timed) == state
    # Said again later (imported, so the write path did not merge it): it joins the semantic memory.
    clock.advance(days=40)  # well past the window: a consolidated fact stays one however late
    late = timed.store_memories(
        [{"content": "Whenever I take a train, I prefer a window seat.", "session_id": "s9"}],
        namespace=NS,
        dedup=False,
    ).stored[0]
    report = timed.consolidate(NS)
    assert report.created == []
    (reinforced,) = report.reinforced
    assert reinforced.id == fact.id and reinforced.sources == [late.id] and reinforced.distilled_by == "existing"
    semantic = timed.get(str(fact.id), namespace=NS)
    assert late.id in semantic.source.memory_ids and len(semantic.source.members) == 3
    assert semantic.last_accessed_at == clock.now() and semantic.content == fact.content
    assert timed.get(late.id, namespace=NS).consolidated_into == fact.id
    assert len(_consolidated(timed)) == 1
    assert timed.consolidate(NS).reinforced == []


def test_a_dry_run_changes_nothing(timed: MemoryEngine, clock: ManualClock) -> None:
    _sessions(timed, clock, [WINDOW_SEATS[0]], [WINDOW_SEATS[1]], [WINDOW_SEATS[2]])
    timed.store_memories(
        [{"content": "The staging server is called hera-2.", "session_id": f"s{n}"} for n in (1, 2)],
        namespace=NS,
        dedup=False,
    )
    state = _state(timed)
    preview = timed.consolidate(NS, dry_run=True)
    assert preview.dry_run and len(preview.merged) == 1 and len(preview.created) == 1
    assert preview.created[0].id is None and preview.created[0].statements == 3
    assert _state(timed) == state
    done = timed.consolidate(NS)
    assert [m.merged for m in done.merged] == [m.merged for m in preview.merged]
    assert [f.sources for f in done.created] == [f.sources for f in preview.created]


def test_time_bound_memories_and_events_are_not_stable_facts(timed: MemoryEngine, clock: ManualClock) -> None:
    for session in range(1, 4):
        timed.store_memories(
            [
                {"content": "I have a meeting with the design team tomorrow at 10am.", "session_id": f"s{session}"},
                {
                    "content": "The office wifi password is blue-falcon.",
                    "session_id": f"s{session}",
                    "ttl_seconds": 10**6,
                },
            ],
            namespace=NS,
            dedup=False,
        )
        clock.advance(days=1)
    report = timed.consolidate(NS)
    assert report.created == [] and report.examined == 0


# -- the periodic merge -----------------------------------------------------------------------------


def test_repeats_that_slipped_in_are_merged_and_can_be_split_back(timed: MemoryEngine, clock: ManualClock) -> None:
    first = timed.store("The staging server is called hera-2.", namespace=NS, session_id="a", importance=0.5).stored[0]
    clock.advance(hours=1)
    second = timed.store_memories(
        [{"content": "The staging server is called hera-2", "session_id": "b", "metadata": {"replica": 2}}],
        namespace=NS,
        dedup=False,
    ).stored[0]
    (merged,) = timed.merge_repeats(NS)
    assert (merged.survivor, merged.merged) == (first.id, second.id) and merged.similarity >= 0.95
    survivor, history = timed.get(first.id, namespace=NS), timed.get(second.id, namespace=NS)
    assert history.status is Status.SUPERSEDED and history.superseded_by == first.id  # kept, not deleted
    entry = survivor.sources[-1]
    assert entry["memory_id"] == second.id and entry["metadata"] == {"replica": 2} and entry["session_id"] == "b"
    assert survivor.access_count == 1
    assert [h.record.id for h in timed.recall("staging server name", namespace=NS).hits] == [first.id]
    assert timed.merge_repeats(NS) == []
    clock.advance(hours=1)
    back = timed.unmerge(first.id, namespace=NS)
    assert back.id == second.id and back.status is Status.ACTIVE and back.superseded_by is None
    assert back.metadata == {"replica": 2} and back.updated_at == clock.now()
    assert timed.get(first.id, namespace=NS).sources == []


def test_the_more_important_repeat_survives(timed: MemoryEngine) -> None:
    low = timed.store_memories(
        [{"content": "Deploys go out from the release branch.", "importance": 0.4}], namespace=NS, dedup=False
    ).stored[0]
    high = timed.store_memories(
        [{"content": "Deploys go out from the release branch!", "importance": 0.8}], namespace=NS, dedup=False
    ).stored[0]
    (merged,) = timed.merge_repeats(NS, dry_run=True)
    assert (merged.survivor, merged.merged) == (high.id, low.id)
    assert timed.get(low.id, namespace=NS).status is Status.ACTIVE  # a dry run
    assert timed.consolidate(NS).merged == [merged]


def test_an_expired_repeat_absorbs_nothing(timed: MemoryEngine, clock: ManualClock) -> None:
    """Said again after it expired, a fact is a memory of its own: merged into the expired copy it would be hidden."""
    said = "The team offsite is at the Lakeside Hotel in Geneva."
    expired = timed.store(said, namespace=NS, ttl_seconds=3600, importance=0.9).stored[0]
    clock.advance(hours=2)
    again = timed.store(said, namespace=NS)
    assert [r.id for r in again.stored] != [expired.id] and again.stored[0].expires_at is None
    slipped = timed.store_memories([{"content": said.rstrip("."), "importance": 0.5}], namespace=NS, dedup=False)
    merges = timed.merge_repeats(NS)
    assert expired.id not in {m.survivor for m in merges} | {m.merged for m in merges}
    found = {h.record.id for h in timed.recall("Where is the team offsite?", namespace=NS).hits}
    assert found & {again.stored[0].id, slipped.stored[0].id}
    assert timed.get(expired.id, namespace=NS).is_expired(clock.now())


def test_distinct_facts_never_merge_however_close(timed: MemoryEngine) -> None:
    timed.store_memories(
        [
            "The team meeting is on Tuesday at 3pm.",
            "The team meeting is on Thursday at 3pm.",  # 0.92 with MiniLM
            "Invoice INV-1001 for 300 euros was paid.",
            "Invoice INV-1002 for 300 euros was paid.",  # 0.96
            "I am allergic to peanuts.",
            "I am not allergic to peanuts.",
        ],
        namespace=NS,
        dedup=False,
        supersede=False,
    )
    assert timed.merge_repeats(NS) == []
    assert len(timed.list(namespace=NS)) == 6


# -- bad inputs -------------------------------------------------------------------------------------


def test_unknown_or_invalid_namespaces_are_clear_errors(timed: MemoryEngine) -> None:
    with pytest.raises(InvalidInputError, match="nothing was ever stored in namespace 'nobody'") as caught:
        timed.consolidate("nobody")
    assert caught.value.field == "namespace" and "the store holds no namespace yet" in caught.value.message
    timed.store("The staging server is called hera-2.", namespace=NS)
    with pytest.raises(InvalidInputError, match="the namespaces are: u1"):
        timed.merge_repeats("nobody")
    with pytest.raises(InvalidInputError, match="not a valid namespace"):
        timed.consolidate("../etc")
    with pytest.raises(InvalidInputError, match="must be a string"):
        timed.consolidate(42)  # type: ignore[arg-type]
    assert timed.consolidate(NS).examined == 1  # the engine is fine afterwards
    with pytest.raises(InvalidInputError, match="no merged inputs"):
        timed.unmerge(timed.list(namespace=NS)[0].id, namespace=NS, index="last")  # type: ignore[arg-type]
