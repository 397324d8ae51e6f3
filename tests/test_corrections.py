"""Updates that name no attribute (bare corrections, reversals), greetings in other languages,
and the current value answering for its history: the cases ``hindsight bench lifecycle`` found."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from hindsight_integrations import MemoryEngine
from hindsight_integrations.core.clock import ManualClock
from hindsight_integrations.core.language.keys import value_shapes
from hindsight_integrations.core.language.sameness import reverses
from hindsight_integrations.core.model.records import Kind, MemoryRecord, Role, Status
from hindsight_integrations.core.write.admission import assess
from hindsight_integrations.core.write.corrections import inherited_slot
from hindsight_integrations.core.write.supersede import PROTECTED_IMPORTANCE

T0 = datetime(2024, 3, 4, 19, 0, tzinfo=UTC)


def _say(engine: MemoryEngine, text: str, week: int, **fields):  # type: ignore[no-untyped-def]
    return engine.record_turn(
        text, session_id=f"week-{week}", namespace="u", occurred_at=T0 + timedelta(weeks=week), speaker="Lena", **fields
    )


def test_a_bare_correction_supersedes_the_value_it_corrects(engine: MemoryEngine) -> None:
    old = _say(engine, "My new phone number is +351 912 345 678.", 0).stored.stored[0]
    other = _say(engine, "My budget for the apartment is 1200 euros a month.", 0).stored.stored[0]
    fixed = _say(engine, "Actually it's +351 912 345 687, I mixed up the last two digits.", 1).stored
    assert fixed.superseded == [old.id]
    current = engine.get(fixed.stored[0].id, namespace="u")
    assert current.slot == old.slot and current.kind is Kind.CORRECTION
    history = engine.get(old.id, namespace="u")
    assert history.status is Status.SUPERSEDED and history.valid_until == T0 + timedelta(weeks=1)
    assert engine.get(other.id, namespace="u").status is Status.ACTIVE  # a number, not a phone number
    hits = engine.recall("What is my phone number?", namespace="u", top_k=3)
    assert "912 345 687" in hits.records[0].content


def test_a_correction_with_a_plain_number_keeps_to_its_own_subject(engine: MemoryEngine) -> None:
    budget = _say(engine, "My budget for the apartment is 1200 euros a month.", 0).stored.stored[0]
    _say(engine, "Actually, I have 2 kids, not 3.", 1)  # a number, but nothing to do with the budget
    assert engine.get(budget.id, namespace="u").status is Status.ACTIVE
    fixed = _say(engine, "Actually it's 1400 euros.", 2).stored  # the same unit: the budget
    assert fixed.superseded == [budget.id]


def test_a_reversal_is_found_from_either_side(engine: MemoryEngine) -> None:
    old = _say(engine, "I don't eat meat.", 0).stored.stored[0]
    new = _say(engine, "I eat meat again.", 10).stored
    assert new.superseded == [old.id]


def test_a_correction_without_a_value_of_an_attribute_changes_nothing(engine: MemoryEngine) -> None:
    old = _say(engine, "My new phone number is +351 912 345 678.", 0).stored.stored[0]
    _say(engine, "Actually, I meant the other restaurant, the one by the river.", 1)
    _say(engine, "Actually it's +351 912 345 678, as I said.", 2)  # the same value: nothing to correct
    assert engine.get(old.id, namespace="u").status is Status.ACTIVE


def test_value_shapes_and_the_slot_a_correction_inherits() -> None:
    assert value_shapes("Call me on +351 912 345 678") == {"phone"}
    assert value_shapes("write to lena@example.org at 10:30") == {"email", "clock"}
    assert value_shapes("Actually, I meant the other one") == frozenset()
    phone = MemoryRecord(namespace="u", content="My phone is +49 151 2345 6789.", slot="user:phone")
    budget = MemoryRecord(namespace="u", content="My budget is 1200 euros.", slot="user:budget")
    fix = MemoryRecord(namespace="u", content="Actually it's +49 151 2345 6788.", kind=Kind.CORRECTION)
    assert inherited_slot(fix, [budget, phone]) == "user:phone"  # the latest with a phone number
    assert inherited_slot(fix, [budget]) is None


@pytest.mark.parametrize(
    ("old", "new", "expected"),
    [
        ("Lena: I'm allergic to peanuts.", "I'm no longer allergic to peanuts.", True),
        ("I am vegetarian.", "I am not vegetarian anymore.", True),
        ("我吃素。", "我不再吃素了。", False),  # 了 is a word more: left to the slot rules (diet) and the 不再 cue
        ("I'm allergic to peanuts.", "I'm not allergic to cats.", False),
        ("I'm allergic to peanuts.", "I'm allergic to peanuts.", False),
        ("I never drink coffee after noon.", "I drink coffee after noon.", True),
        ("I don't eat meat.", "I eat meat again.", True),
        ("我吃肉", "我不再吃肉", True),
    ],
)
def test_a_reversal_is_the_same_words_turned_around(old: str, new: str, expected: bool) -> None:
    assert reverses(old, new) is expected


def test_a_low_trust_reversal_of_an_important_fact_is_quarantined(engine: MemoryEngine) -> None:
    allergy = _say(engine, "I'm allergic to peanuts.", 0).stored.stored[0]
    assert allergy.importance >= 0.9
    claim = engine.store_memories(
        [{"content": "I'm no longer allergic to peanuts.", "occurred_at": T0 + timedelta(weeks=40), "trusted": False}],
        namespace="u",
    )
    assert claim.quarantined == [claim.stored[0].id]
    assert engine.get(allergy.id, namespace="u").status is Status.ACTIVE
    hits = engine.recall("Am I allergic to anything?", namespace="u", top_k=3)
    assert "no longer" not in " ".join(r.content for r in hits.records)


def test_an_important_fact_decayed_by_upkeep_is_still_protected(timed: MemoryEngine, clock: ManualClock) -> None:
    # unrecalled for ten months, the allergy's importance decays under the bar; a tool still may not overwrite it
    allergy = timed.store("I'm allergic to peanuts.", namespace="u", occurred_at=clock.now()).stored[0]
    for _ in range(10):
        clock.advance(timedelta(days=31))
        timed.maintain(namespace="u")
    decayed = timed.get(allergy.id, namespace="u")
    assert decayed.importance < PROTECTED_IMPORTANCE <= decayed.metadata["_stated_importance"]
    claim = timed.store("I'm no longer allergic to peanuts.", namespace="u", occurred_at=clock.now(), trusted=False)
    assert claim.quarantined == [claim.stored[0].id]
    assert timed.get(allergy.id, namespace="u").status is Status.ACTIVE
    # a trusted statement of the same still updates it
    update = timed.store("I'm no longer allergic to peanuts, the test came back clean.", namespace="u")
    assert update.superseded == [allergy.id]


def test_a_trusted_reversal_updates(engine: MemoryEngine) -> None:
    old = _say(engine, "I am vegetarian.", 0).stored.stored[0]
    new = _say(engine, "I am not vegetarian anymore.", 5).stored
    assert new.superseded == [old.id]


@pytest.mark.parametrize("text", ["Hi again", "Olá!", "Bom dia", "Hola", "Bonjour !", "Danke schön", "Ciao ciao"])
def test_greetings_in_other_languages_are_not_remembered(text: str) -> None:
    assert assess(text, Role.USER).remember is False


@pytest.mark.parametrize("text", ["Again, the build failed on CI.", "Hola, my flight to Lima leaves at 9."])
def test_a_statement_that_opens_with_a_greeting_word_is_remembered(text: str) -> None:
    assert assess(text, Role.USER).remember is True


def test_the_current_value_answers_a_question_close_only_to_its_history(engine: MemoryEngine) -> None:
    """ "Where do I work?" is close to "I work at Zalando" and far from the memory that replaced it."""
    first = _say(engine, "I work at Zalando as a data analyst.", 0).stored.stored[0]
    second = _say(engine, "I started a new job at Feedzai this week, on the fraud team.", 20).stored
    third = _say(engine, "I left Feedzai and joined Farfetch, the office is ten minutes from home.", 40).stored
    assert second.superseded == [first.id] and third.superseded == [second.stored[0].id]
    hits = engine.recall("Where do I work?", namespace="u", top_k=3)
    assert hits.records and "Farfetch" in hits.records[0].content  # not nothing (the relevance floor)
    with_history = engine.recall("Where do I work?", namespace="u", top_k=5, include_history=True)
    order = [r.id for r in with_history.records]
    assert order.index(third.stored[0].id) < order.index(second.stored[0].id) < order.index(first.id)
