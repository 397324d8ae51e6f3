"""What the write path decides: repeats, updates, time, quarantine — offline rules on a real store.

A lifecycle of its own: distinct facts that look alike are both kept, true repeats are one
copy that remembers every input, updates (English and Chinese, with words in between) make
the older value history as of the newer one's time, an older-dated fact arriving late goes
straight to history, history comes back on request after the current value, expired events
are hidden, and an important memory is not overwritten by a low-trust source.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from hindsight_integrations import MemoryEngine
from hindsight_integrations.core.errors import InvalidInputError
from hindsight_integrations.core.model.records import Kind, Role, Status

# Recent enough that time-bound events (with their TTLs) have not expired.
T0 = datetime.now(UTC).replace(microsecond=0) - timedelta(days=40)


def _store(engine: MemoryEngine, content: str, *, at: datetime = T0, apply_filter: bool = True, **fields):
    item = {"content": content, "occurred_at": at, **fields}
    return engine.store_memories([item], namespace="u", apply_filter=apply_filter)


def _active(engine: MemoryEngine) -> list[str]:
    return sorted(r.content for r in engine.list(namespace="u", limit=1000))


def _status(engine: MemoryEngine, memory_id: str) -> Status:
    return engine.get(memory_id, namespace="u").status


# -- repeats ---------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("first", "second"),
    [
        ("Meeting with Dana on Tuesday at 3pm.", "Meeting with Dana on Thursday at 3pm."),
        ("The invoice INV-1001 total was 250 euros.", "The invoice INV-1002 total was 990 euros."),
        ("My flight to Lisbon leaves at 7:40.", "My flight to Lisbon leaves at 9:15."),
        ("Order 55812 shipped on 3 May.", "Order 55813 shipped on 3 May."),
        ("Dinner with Priya on Friday.", "Dinner with Marco on Friday."),
    ],
)
def test_distinct_facts_that_look_alike_are_both_kept(engine: MemoryEngine, first: str, second: str) -> None:
    _store(engine, first, at=T0 + timedelta(days=39))
    result = _store(engine, second, at=T0 + timedelta(days=39, minutes=1))
    assert not result.merged
    assert _active(engine) == sorted([first, second])


def test_a_repeat_is_one_copy_that_keeps_every_input(engine: MemoryEngine) -> None:
    first = _store(engine, "I prefer dark mode in every editor.", importance=0.6, metadata={"dia_id": "D1:3"})
    again = _store(
        engine,
        "I prefer dark mode in every editor!",
        at=T0 + timedelta(days=2),
        importance=0.9,
        metadata={"dia_id": "D7:1"},
    )
    assert again.merged == first.ids
    (memory,) = engine.list(namespace="u")
    assert memory.content == "I prefer dark mode in every editor."  # never overwritten
    assert memory.metadata == {"dia_id": "D1:3"}
    assert memory.importance == 0.9 and memory.access_count == 1
    assert [s["metadata"] for s in memory.sources] == [{"dia_id": "D7:1"}]
    assert memory.sources[0]["content"] == "I prefer dark mode in every editor!"


def test_a_merge_can_be_undone(engine: MemoryEngine) -> None:
    kept = _store(engine, "We deploy with Kamal.", metadata={"msg": "a"}).ids[0]
    _store(engine, "we deploy with kamal", at=T0 + timedelta(hours=1), metadata={"msg": "b"})
    restored = engine.unmerge(kept, namespace="u")
    assert restored.content == "we deploy with kamal" and restored.metadata == {"msg": "b"}
    assert restored.occurred_at == T0 + timedelta(hours=1)
    assert engine.get(kept, namespace="u").sources == []
    assert _active(engine) == ["We deploy with Kamal.", "we deploy with kamal"]
    with pytest.raises(InvalidInputError):
        engine.unmerge(kept, namespace="u")


def test_repeats_within_one_batch_are_one_copy(engine: MemoryEngine) -> None:
    result = engine.store_memories(["I drink oat milk.", "I drink oat milk."], namespace="u")
    assert len(result.merged) == 1
    assert _active(engine) == ["I drink oat milk."]


# -- updates ---------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("I work at Acme as a backend engineer.", "I started a new job at Globex last week."),
        ("My phone number is 555-0100.", "I have a new phone number: 555-0199."),
        ("The deadline for the report is Friday.", "The report deadline moved to next Tuesday."),
        ("我住在北京。", "我上个月搬到上海了。"),
        ("Our budget for the launch is 3000 dollars.", "Update: the launch budget is now 5000 dollars."),
        ("We use MySQL for the project database.", "We switched the project database to PostgreSQL."),
    ],
)
def test_an_update_makes_the_older_value_history_as_of_the_new_time(engine: MemoryEngine, old: str, new: str) -> None:
    old_id = _store(engine, old).ids[0]
    later = T0 + timedelta(days=30)
    result = _store(engine, new, at=later)
    assert result.superseded == [old_id]
    previous = engine.get(old_id, namespace="u")
    assert previous.status is Status.SUPERSEDED
    assert previous.valid_until == later  # when the new value became true, not the wall clock
    assert previous.superseded_by == result.ids[0]
    assert _active(engine) == [new]


def test_an_older_fact_arriving_later_goes_straight_to_history(engine: MemoryEngine) -> None:
    current = _store(engine, "I moved to Shanghai.", at=datetime(2023, 6, 1, tzinfo=UTC)).ids[0]
    late = _store(engine, "I live in Beijing.", at=datetime(2022, 1, 1, tzinfo=UTC))
    (old,) = late.stored
    assert old.status is Status.SUPERSEDED and old.superseded_by == current
    assert old.valid_until == datetime(2023, 6, 1, tzinfo=UTC)
    assert _status(engine, current) is Status.ACTIVE
    assert _active(engine) == ["I moved to Shanghai."]


@pytest.mark.parametrize(
    ("first", "second"),
    [
        ("I like red.", "I hate red clothes."),
        ("My sister lives in Paris.", "I live in Berlin."),
        ("I use vim keybindings.", "I use tabs, not spaces."),
        ("Order LZ-56379 for Ximena was delayed by a dead battery.",
         "Order ZW-68766 for Ximena was delayed by a dead battery."),
        ("Ivan's cousin started salsa lessons in Osaka last month.",
         "Ivan's daughter started salsa lessons in Quito last month."),
        ("We use MySQL for the Falcon project database.", "We switched the Ember project database to PostgreSQL."),
        ("Priya's phone number is 555-0300.", "Mateo has a new phone number: 555-0142."),
    ],
)  # fmt: skip
def test_different_attributes_are_both_kept(engine: MemoryEngine, first: str, second: str) -> None:
    _store(engine, first)
    result = _store(engine, second, at=T0 + timedelta(days=1))
    assert not result.superseded
    assert _active(engine) == sorted([first, second])


def test_history_comes_back_on_request_after_the_current_value(engine: MemoryEngine) -> None:
    _store(engine, "I live in Berlin.", at=datetime(2023, 1, 1, tzinfo=UTC))
    _store(engine, "I moved to Lisbon.", at=datetime(2023, 9, 1, tzinfo=UTC))
    current = engine.recall("Where do I live now?", namespace="u")
    assert [h.record.content for h in current.hits] == ["I moved to Lisbon."]
    both = engine.recall("Where did I live in Berlin?", namespace="u", include_history=True)
    assert [h.record.content for h in both.hits][:2] == ["I moved to Lisbon.", "I live in Berlin."]


def test_expired_events_are_hidden_but_kept(engine: MemoryEngine) -> None:
    past = datetime.now(UTC) - timedelta(days=10)
    event = _store(engine, "Dentist appointment tomorrow at 10am.", at=past).ids[0]
    assert engine.recall("When is the dentist appointment?", namespace="u").hits == []
    assert engine.get(event, namespace="u").is_expired()


@pytest.mark.parametrize(
    "text",
    [
        "I started a new job at Feedzai this week.",
        "I moved to Lisbon yesterday.",
        "My new phone number is +351 912 345 678, since today.",
    ],
)
def test_a_lasting_attribute_said_with_its_date_does_not_expire(engine: MemoryEngine, text: str) -> None:
    (memory,) = _store(engine, text, at=datetime.now(UTC) - timedelta(days=30)).stored
    assert memory.expires_at is None and memory.kind.value == "context" and memory.importance == 0.8
    assert engine.recall(text, namespace="u").hits[0].record.id == memory.id  # a month later: still current
    (event,) = _store(engine, "The report deadline is tomorrow.").stored  # a deadline is time-bound
    assert event.expires_at is not None


# -- what a statement is kept as ------------------------------------------------------------
@pytest.mark.parametrize(
    ("text", "kind", "importance"),
    [
        ("When you review my code, point out performance problems first.", Kind.PREFERENCE, 0.9),
        ("When you write Python for me, always add type hints.", Kind.PREFERENCE, 0.9),
        ("When you plan trips for us, avoid red-eye flights.", Kind.PREFERENCE, 0.9),
        ("When you go to the store, grab some milk.", Kind.FACT, 0.5),
        ("When you go to the store for me, grab some milk.", Kind.FACT, 0.5),
    ],
)
def test_an_instruction_for_whenever_the_assistant_works_for_the_user_is_a_preference(
    engine: MemoryEngine, text: str, kind: Kind, importance: float
) -> None:
    """A short object before "for me" ("write Python for me") makes the same instruction; an errand does not."""
    (memory,) = _store(engine, text).stored
    assert (memory.kind, memory.importance) == (kind, importance)


# -- quarantine ------------------------------------------------------------------------------
def _important(engine: MemoryEngine) -> str:
    return _store(engine, "I am allergic to peanuts.", importance=1.0, kind="preference").ids[0]


@pytest.mark.parametrize(
    "origin", [{"role": "tool"}, {"role": "assistant", "apply_filter": False, "kind": "fact"}, {"trusted": False}]
)
def test_a_low_trust_contradiction_of_an_important_memory_is_quarantined(engine: MemoryEngine, origin) -> None:
    allergy = _important(engine)
    result = _store(engine, "I am no longer allergic to peanuts.", at=T0 + timedelta(days=1), **origin)
    assert result.quarantined == result.ids and not result.superseded
    (held,) = result.stored
    assert held.status is Status.QUARANTINED and held.conflicts_with == allergy
    assert _status(engine, allergy) is Status.ACTIVE
    assert [h.record.id for h in engine.recall("peanut allergy", namespace="u").hits] == [allergy]
    assert held.id in {r.id for r in engine.list(namespace="u", include_history=True)}
    assert "quarantined" in engine.dump(namespace="u")


def test_review_accepts_or_rejects_a_quarantined_memory(engine: MemoryEngine) -> None:
    allergy = _important(engine)
    held = _store(engine, "I am no longer allergic to peanuts.", at=T0 + timedelta(days=1), role=Role.TOOL).ids[0]
    accepted, old = engine.review(held, accept=True, namespace="u")
    assert accepted.status is Status.ACTIVE and old.id == allergy and old.status is Status.SUPERSEDED
    with pytest.raises(InvalidInputError, match="not quarantined"):
        engine.review(held, accept=False, namespace="u")
    again = _store(engine, "I am allergic to peanuts again.", at=T0 + timedelta(days=2), importance=1.0)
    assert _status(engine, held) is Status.SUPERSEDED and again.superseded == [held]
    poison = _store(engine, "I am not allergic to peanuts anymore.", at=T0 + timedelta(days=3), trusted=False).ids[0]
    (rejected,) = engine.review(poison, accept=False, namespace="u")
    assert rejected.status is Status.DELETED
    assert _active(engine) == ["I am allergic to peanuts again."]


def test_the_user_themself_can_overwrite_an_important_memory(engine: MemoryEngine) -> None:
    allergy = _important(engine)
    result = _store(engine, "I am no longer allergic to peanuts.", at=T0 + timedelta(days=1))
    assert result.superseded == [allergy] and not result.quarantined
