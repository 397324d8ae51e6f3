"""How a new memory finds what it may repeat or update, at any store size.

The write path searches Chroma without a metadata filter (one query for a whole batch) and
keeps the active long-term hits; slot-mates come from the facts index. These tests pin the
cases where that could miss: every nearest hit is deleted or history (a filtered query must
follow), another process wrote the slot-mate a moment ago, and a slot shared by many memories
about different people.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

from hindsight_integrations import MemoryEngine
from hindsight_integrations.core.embedding.local import LocalEmbedder
from hindsight_integrations.core.model.records import Status
from hindsight_integrations.core.storage.field_index import FactsIndex

T0 = datetime(2025, 3, 1, tzinfo=UTC)


def _one(engine: MemoryEngine, content: str, at: datetime, **fields):
    return engine.store_memories([{"content": content, "occurred_at": at, **fields}], namespace="u")


def test_an_update_finds_its_memory_behind_many_closer_deleted_ones(engine: MemoryEngine) -> None:
    old = _one(engine, "The team standup is at 9:30 in room B.", T0).ids[0]
    drafts = [f"The team standup moved to 10:00 in room B, draft {n}." for n in range(20)]
    for memory_id in engine.store_memories(drafts, namespace="u", dedup=False, supersede=False).ids:
        engine.forget(memory_id, namespace="u")
    result = _one(engine, "The team standup moved to 10:00 in room B.", T0 + timedelta(days=2))
    assert result.superseded == [old]
    assert engine.get(old, namespace="u").status is Status.SUPERSEDED


def test_a_batch_settles_each_item_against_the_store_and_its_earlier_items(engine: MemoryEngine) -> None:
    stored = _one(engine, "Mateo's phone number is 555-0100.", T0, entities=["Mateo"]).ids[0]
    result = engine.store_memories(
        [
            {"content": "Mateo has a new phone number: 555-0142.", "occurred_at": T0 + timedelta(days=1)},
            {"content": "Mateo changed his phone number again, to 555-0199.", "occurred_at": T0 + timedelta(days=2)},
            {"content": "Priya's phone number is 555-0300.", "occurred_at": T0 + timedelta(days=3)},
        ],
        namespace="u",
    )
    first, second, priya = result.ids
    assert engine.get(stored, namespace="u").status is Status.SUPERSEDED
    assert engine.get(first, namespace="u").status is Status.SUPERSEDED
    assert engine.get(second, namespace="u").status is Status.ACTIVE
    assert engine.get(priya, namespace="u").status is Status.ACTIVE


def test_a_slot_written_by_another_process_a_moment_ago_is_updated(store_path: Path, embedder: LocalEmbedder) -> None:
    ours = MemoryEngine(store=store_path, embedder=embedder, llm=False)
    _one(ours, "I like long walks.", T0)  # opens the namespace: our indexes are now filled
    theirs = MemoryEngine(store=store_path, embedder=embedder, llm=False)
    written = _one(theirs, "My phone number is 555-0100.", T0 + timedelta(days=1)).ids[0]
    result = _one(ours, "I have a new phone number: 555-0199.", T0 + timedelta(days=2))
    assert result.superseded == [written]


def test_slot_mates_are_the_latest_about_the_same_entity() -> None:
    facts = FactsIndex()

    def fields(n: int, status: str = "active", entities: str = '["Dana"]') -> dict[str, object]:
        kept = {"tier": "episodic", "kind": "fact", "slot": "project:deadline"}
        return {**kept, "status": status, "occurred_at": n, "entities_json": entities}

    facts.upsert((f"d{n}", fields(n)) for n in range(10))
    facts.upsert([("z", fields(50, entities='["Zoe"]')), ("anyone", fields(20, entities="[]"))])
    facts.upsert([("old", fields(99, status="superseded")), ("w", {**fields(98), "tier": "working"})])
    assert facts.slot_mates("project:deadline", ["Dana"], limit=3) == ["anyone", "d9", "d8"]
    assert facts.slot_mates("project:deadline", [], limit=2) == ["z", "anyone"]
    facts.upsert([("anyone", fields(20, status="superseded"))])
    facts.remove(["d9"])
    assert facts.slot_mates("project:deadline", ["Dana"], limit=2) == ["d8", "d7"]
    assert facts.slot_mates("user:phone", ["Dana"], limit=2) == []
