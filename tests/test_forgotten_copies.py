"""A forgotten text leaves the copies upkeep made of it (``write/forgotten_copies.py``), as Chroma holds them.

Upkeep keeps a memory's text beyond its own record: the original the periodic merge absorbed
(history), a consolidated memory's members and text, an episodic summary of compressed turns.
Forgetting the memory must reach each of them: nothing left there is recalled, listed or
consolidated again.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from hindsight_integrations import MemoryEngine, MemoryRecord, Status, Tier
from hindsight_integrations.core.clock import ManualClock
from hindsight_integrations.core.errors import MemoryNotFoundError
from hindsight_integrations.core.storage.namespace_store import NamespaceStore

NS = "u1"


def _stored(handle: NamespaceStore, memory_id: str) -> tuple[dict, str]:
    """The metadata and document Chroma holds for ``memory_id``."""
    got = handle.collection.get(ids=[memory_id], include=["metadatas", "documents"])
    return got["metadatas"][0], got["documents"][0]


def _gone(engine: MemoryEngine, ids: list[str]) -> None:
    """No record of ``ids`` is left to read back: not in Chroma, not by ``get``, not in an export or cold storage.

    A copy of a forgotten text, forgotten with it: soft-deleted, it kept the words for anyone to read.
    """
    assert engine.chroma.namespace(NS).collection.get(ids=ids)["ids"] == []
    for memory_id in ids:
        with pytest.raises(MemoryNotFoundError):
            engine.get(memory_id, namespace=NS)
    exported = engine.export(namespace=NS, include_embeddings=False)
    assert not {r["id"] for r in [*exported["records"], *exported["cold_records"]]} & set(ids)


def test_the_original_upkeep_merged_into_a_forgotten_memory_is_forgotten_with_it(
    timed: MemoryEngine, clock: ManualClock
) -> None:
    """Merged away, the original is history in its own words: listed, and recalled with ``include_history``."""
    kept = timed.store("The staging server is called hera-2.", namespace=NS, session_id="a", importance=0.8)
    survivor = kept.stored[0]
    clock.advance(hours=1)
    original = timed.store_memories(
        [{"content": "The staging server is called hera-2", "session_id": "b"}], namespace=NS, dedup=False
    ).stored[0]
    (merge,) = timed.merge_repeats(NS)
    assert (merge.survivor, merge.merged) == (survivor.id, original.id)
    handle = timed.chroma.namespace(NS)
    assert _stored(handle, original.id)[0]["status"] == "superseded"

    timed.forget(survivor.id, namespace=NS)

    _gone(timed, [original.id])  # its words are the survivor's sources' (unmerge), not a record of its own
    assert timed.list(namespace=NS, include_history=True) == []
    assert timed.recall("staging server hera-2", namespace=NS, include_history=True).hits == []
    assert timed.get(survivor.id, namespace=NS).sources[0]["memory_id"] == original.id  # nothing lost
    timed.unforget(survivor.id, namespace=NS)
    _gone(timed, [original.id])  # unforget brings back the memory alone
    split = timed.unmerge(survivor.id, namespace=NS)  # rebuilt from the survivor's sources, under a new id
    assert split.status is Status.ACTIVE and split.content == "The staging server is called hera-2"


WINDOW_SEATS = [  # one preference in four sessions, in other words each time
    "I prefer window seats on trains.",
    "When I travel by train, I prefer window seats.",
    "On long train journeys I prefer a window seat.",
    "On the train I prefer a window seat.",
]


def _consolidate(engine: MemoryEngine, clock: ManualClock, texts: list[str]) -> tuple[list[str], MemoryRecord]:
    """Each text said in a session of its own, a day apart, then consolidated: the members' ids and the memory."""
    ids = []
    for n, text in enumerate(texts, 1):
        said = engine.store_memories([{"content": text, "session_id": f"s{n}"}], namespace=NS, dedup=False)
        ids.append(said.stored[0].id)
        clock.advance(days=1)
    (fact,) = engine.consolidate(NS).created
    return ids, engine.get(str(fact.id), namespace=NS)


def test_a_consolidated_memory_is_rebuilt_from_the_members_that_stay(timed: MemoryEngine, clock: ManualClock) -> None:
    """The forgotten member's words were the memory's own text: it now says what the others said, in their words."""
    ids, semantic = _consolidate(timed, clock, WINDOW_SEATS)
    assert sorted(semantic.source.memory_ids) == sorted(ids)
    said = WINDOW_SEATS.index(semantic.content)  # whose words the memory took
    stay = [n for n in range(len(ids)) if n != said]
    handle = timed.chroma.namespace(NS)

    timed.forget(ids[said], namespace=NS)

    metadata, document = _stored(handle, semantic.id)
    assert metadata["status"] == "active" and WINDOW_SEATS[said] not in json.dumps([metadata, document])
    rebuilt = timed.get(semantic.id, namespace=NS)
    assert rebuilt.content in [WINDOW_SEATS[n] for n in stay] and rebuilt.source.memory_ids == [ids[n] for n in stay]
    assert [m["content"] for m in rebuilt.source.members] == [WINDOW_SEATS[n] for n in stay]
    assert rebuilt.valid_from == timed.get(ids[stay[0]], namespace=NS).occurred_at
    vector = handle.vectors([semantic.id])[semantic.id]
    assert np.allclose(vector, timed._parts.embed_records([rebuilt])[0][0], atol=1e-5)  # embedded again
    hits = timed.recall("Which seat do I like on the train?", namespace=NS).hits
    assert hits[0].record.id == semantic.id


def test_a_consolidated_memory_too_few_members_make_is_forgotten_and_they_stand_alone(
    timed: MemoryEngine, clock: ManualClock
) -> None:
    ids, semantic = _consolidate(timed, clock, WINDOW_SEATS[:3])
    before = {i: timed.get(i, namespace=NS).importance for i in ids}

    timed.forget(ids[0], namespace=NS)

    _gone(timed, [semantic.id])  # it held the forgotten member's words, as text and in source.members
    for member in ids[1:]:
        record = timed.get(member, namespace=NS)
        assert record.status is Status.ACTIVE and record.consolidated_into is None
        assert record.importance == pytest.approx(before[member] / 0.5)  # as before consolidation halved it
    hits = timed.recall("Which seat do I like on the train?", namespace=NS).hits
    assert {h.record.id for h in hits} <= set(ids[1:]) and hits
    assert all(WINDOW_SEATS[0] != h.record.content for h in hits)


SWIMS = [
    "Swam 40 lengths at the leisure centre pool tonight.",
    "Back at the pool after work, 36 lengths.",
    "Another swim this evening, 42 lengths at the leisure centre.",
    "Pool again tonight, managed 45 lengths.",
]


def test_a_habit_is_told_again_without_a_forgotten_episode(timed: MemoryEngine, clock: ManualClock) -> None:
    """The habit quotes its first and latest episode: the first forgotten, it counts and quotes those that stay."""
    swims = []
    for n, text in enumerate(SWIMS):
        clock.advance(days=2)
        swims += timed.store(text, namespace=NS, session_id=f"d{n}", occurred_at=clock.now()).stored
    (made,) = timed.consolidate(NS).created
    assert made.content.startswith("Done on 4 days") and SWIMS[0] in made.content

    timed.forget(swims[0].id, namespace=NS)

    habit = timed.get(str(made.id), namespace=NS)
    assert habit.status is Status.ACTIVE and habit.content.startswith("Done on 3 days")
    assert SWIMS[0] not in habit.content and SWIMS[1] in habit.content and SWIMS[-1] in habit.content
    assert habit.metadata["_habit"] == 3 and habit.source.memory_ids == [s.id for s in swims[1:]]
    assert SWIMS[0] not in json.dumps(_stored(timed.chroma.namespace(NS), habit.id))


SECRET = "My bank PIN is 4417 and my mother's maiden name is Okonkwo."
TRACES = ("bank PIN", "Okonkwo")
LISBON = "I moved to Lisbon last spring with my two cats."


def _compressed(engine: MemoryEngine, first: list[str]) -> tuple[list[str], MemoryRecord]:
    """``first`` said as turns kept in the window only, then small talk; compressed: the turns' ids and the summary."""
    turns = [engine.record_turn(t, session_id="s1", namespace=NS, extract=False, compress=False).turn for t in first]
    for text, role in (
        ("What should I cook tonight?", "user"),
        ("Maybe pasta.", "assistant"),
        ("Sounds good.", "user"),
    ):
        engine.record_turn(text, session_id="s1", namespace=NS, role=role, compress=False)
    result = engine.compress(session_id="s1", namespace=NS, threshold_tokens=1)
    assert result is not None and len(result.summaries) == 1 and SECRET in result.summaries[0].content
    return [t.id for t in turns], result.summaries[0]


def test_a_forgotten_memory_leaves_the_summary_of_the_compressed_turn_that_said_it(engine: MemoryEngine) -> None:
    """The turn said it with no memory of its own, was compressed; the memory stored later is forgotten."""
    (said, _), summary = _compressed(engine, [SECRET, LISBON])
    memory = engine.store(SECRET, namespace=NS, session_id="s1").stored[0]
    handle = engine.chroma.namespace(NS)

    engine.forget(memory.id, namespace=NS)

    metadata, document = _stored(handle, summary.id)
    assert metadata["status"] == "active" and not any(t in json.dumps([metadata, document]) for t in TRACES)
    assert engine.get(summary.id, namespace=NS).content == f"user: {LISBON}"
    told = engine._parts.embed_records([engine.get(summary.id, namespace=NS)])[0][0]
    assert np.allclose(handle.vectors([summary.id])[summary.id], told, atol=1e-5)  # embedded again
    assert _stored(handle, said)[0]["status"] == "deleted"  # the compressed turn goes with the text, as a live one
    assert engine.recall("bank PIN maiden name Okonkwo", namespace=NS).hits == []


def test_a_forgotten_compressed_turn_leaves_its_summary_and_one_left_with_nothing_is_forgotten(
    engine: MemoryEngine,
) -> None:
    (said,), summary = _compressed(engine, [SECRET])

    engine.forget(said, namespace=NS)

    assert (
        engine.get(summary.id, namespace=NS).content == "user: What should I cook tonight?"
    )  # as compression tells it
    assert engine.recall("bank PIN maiden name Okonkwo", namespace=NS).hits == []
    # The other turns of this group were remembered: forgetting the one told leaves the summary nothing to tell.
    quiet = engine.record_turn(SECRET, session_id="s2", namespace=NS, extract=False, compress=False).turn
    for text in (LISBON, "I work as a nurse at the city hospital on weekdays.", "Sounds good."):
        engine.record_turn(text, session_id="s2", namespace=NS, compress=False)
    (second,) = engine.compress(session_id="s2", namespace=NS, threshold_tokens=1).summaries
    assert second.content == f"user: {SECRET}"

    engine.forget(quiet.id, namespace=NS)

    _gone(engine, [second.id])


def _quiet_secret_then_remembered(engine: MemoryEngine, session: str) -> tuple[str, list[str], MemoryRecord]:
    """A turn saying ``SECRET`` kept in the window only, then remembered ones, compressed: its id, group, summary."""
    quiet = engine.record_turn(SECRET, session_id=session, namespace=NS, extract=False, compress=False).turn
    for text in (LISBON, "I work as a nurse at the city hospital on weekdays.", "Sounds good."):
        engine.record_turn(text, session_id=session, namespace=NS, compress=False)
    result = engine.compress(session_id=session, namespace=NS, threshold_tokens=1)
    assert result is not None and len(result.summaries) == 1 and len(result.archived_ids) > 1
    return quiet.id, result.archived_ids, result.summaries[0]


def test_the_compressed_turns_that_stay_are_not_linked_to_a_summary_that_was_forgotten(engine: MemoryEngine) -> None:
    """Forgotten with nothing left to tell, or by the user: the turns that stay are archived without a summary."""
    quiet, group, summary = _quiet_secret_then_remembered(engine, "s1")

    engine.forget(quiet, namespace=NS)

    _gone(engine, [summary.id])
    stayed = [turn for turn in group if turn != quiet]
    for turn in stayed:
        record = engine.get(turn, namespace=NS)
        assert record.status is Status.ARCHIVED and "summary_id" not in record.metadata

    _, group, summary = _quiet_secret_then_remembered(engine, "s2")

    engine.forget(summary.id, namespace=NS)

    kept = [engine.get(turn, namespace=NS) for turn in group]
    assert [t.status for t in kept].count(Status.ARCHIVED) >= 1  # a remembered turn: its memory says it still
    assert all("summary_id" not in t.metadata for t in kept if t.status is not Status.DELETED)


def _cold_rows(engine: MemoryEngine) -> dict[str, dict]:
    """The namespace's cold storage as its file holds it: id → row (vectors included)."""
    return {row["id"]: row for row in engine._lanes.primary.backup.cold.rows(NS)}


WIFI = [
    "The office wifi password rotates every Monday.",
    "Every Monday the office wifi password rotates.",
    "The office wifi password is rotated each Monday.",
    "On Mondays the office wifi password rotates.",
]


def _consolidated_then_archived(timed: MemoryEngine, clock: ManualClock) -> tuple[list[str], MemoryRecord, list[str]]:
    """``WIFI`` said in four sessions a day apart and consolidated; 100 days later, upkeep archives the idle members.

    The first is said at 0.9, so it stays in Chroma; the others, at half of 0.4 once consolidated, are archived.
    Returns the ids said, the consolidated memory and the ids upkeep archived.
    """
    ids = []
    for n, text in enumerate(WIFI):
        said = [{"content": text, "session_id": f"s{n}", "importance": 0.9 if n == 0 else 0.4}]
        ids.append(timed.store_memories(said, namespace=NS, dedup=False).stored[0].id)
        clock.advance(days=1)
    (fact,) = timed.consolidate(NS).created
    clock.advance(days=100)
    return ids, fact, timed.maintain(namespace=NS).archived


def test_an_archived_member_of_a_consolidated_memory_forgotten_too_stands_alone_in_cold_storage(
    timed: MemoryEngine, clock: ManualClock
) -> None:
    """Archived since consolidation, it is unlinked there too: restored, it is a memory of its own again."""
    ids, fact, archived = _consolidated_then_archived(timed, clock)
    members = timed.get(str(fact.id), namespace=NS).source.memory_ids
    assert ids[0] in members and archived and set(archived) < set(members)

    timed.forget(ids[0], namespace=NS)

    _gone(timed, [str(fact.id)])
    rows = _cold_rows(timed)
    for member in archived:
        assert rows[member]["consolidated_into"] is None and rows[member]["importance"] == pytest.approx(0.4)
        assert rows[member]["embedding"] is not None  # its own text unchanged: restored without embedding again
    assert timed.restore(namespace=NS, ids=archived) == len(archived)
    assert all(timed.get(m, namespace=NS).consolidated_into is None for m in archived)


def test_an_archived_summary_is_told_again_without_the_forgotten_turn_in_cold_storage(
    timed: MemoryEngine, clock: ManualClock
) -> None:
    """Upkeep moved the summary to cold storage; ``restore`` would have brought back the forgotten text."""
    (said, _), summary = _compressed(timed, [SECRET, LISBON])
    clock.advance(days=30)
    assert timed.maintain(namespace=NS, caps={Tier.EPISODIC: 0}).evicted == [summary.id]
    memory = timed.store(SECRET, namespace=NS, session_id="s1").stored[0]

    timed.forget(memory.id, namespace=NS)

    assert _stored(timed.chroma.namespace(NS), said)[0]["status"] == "deleted"
    row = _cold_rows(timed)[summary.id]
    held = json.dumps({k: v for k, v in row.items() if k not in ("embedding", "window_embedding")})
    assert row["content"] == f"user: {LISBON}" and not any(t in held for t in TRACES)
    told = timed._parts.embed_records([timed.get(summary.id, namespace=NS)])[0][0]
    assert np.allclose(row["embedding"], told, atol=1e-5)  # embedded again, as a summary told again in Chroma is
    assert timed.restore(namespace=NS, ids=[summary.id]) == 1
    assert timed.get(summary.id, namespace=NS).content == f"user: {LISBON}"
    assert timed.recall("bank PIN maiden name Okonkwo", namespace=NS).hits == []


def test_an_archived_summary_left_nothing_to_tell_is_forgotten_out_of_cold_storage(
    timed: MemoryEngine, clock: ManualClock
) -> None:
    quiet, group, summary = _quiet_secret_then_remembered(timed, "s1")
    clock.advance(days=30)
    assert timed.maintain(namespace=NS, caps={Tier.EPISODIC: 2}).evicted == [summary.id]  # the memories stay

    timed.forget(quiet, namespace=NS)

    _gone(timed, [summary.id])  # ``restore`` cannot bring it back
    assert all("summary_id" not in timed.get(t, namespace=NS).metadata for t in group if t != quiet)


def test_forgetting_a_consolidated_memory_forgets_the_members_that_say_its_fact(
    timed: MemoryEngine, clock: ManualClock
) -> None:
    """Left, they were recalled as the fact forgotten (in its very words); unlinked, upkeep would distil it again."""
    ids, fact, archived = _consolidated_then_archived(timed, clock)
    members = timed.get(str(fact.id), namespace=NS).source.memory_ids
    assert archived and set(archived) < set(members)
    merged = [i for i in ids if timed.get(i, namespace=NS).status is Status.SUPERSEDED]  # into a member, by upkeep

    timed.forget(str(fact.id), namespace=NS)

    _gone(timed, members)  # the archived ones too: ``restore`` cannot bring one back
    assert [m["id"] for m in timed.get(str(fact.id), namespace=NS).source.members] == members  # with their words
    assert not {h.record.id for h in timed.recall("office wifi password", namespace=NS).hits} & set(members)
    assert timed.consolidate(NS).created == []
    _gone(timed, merged)  # as a member's own history
    others = [i for i in ids if i not in members and i not in merged]
    assert others and all(timed.get(i, namespace=NS).status is Status.ACTIVE for i in others)  # not of the fact
    timed.unforget(str(fact.id), namespace=NS)  # brings back the memory alone, as with merged originals
    _gone(timed, members)
