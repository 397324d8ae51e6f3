"""Upkeep: decay, cold-storage archive, capacity caps and restore."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from hindsight_integrations import MemoryEngine, Status, Tier


def test_decay_archive_and_restore(engine: MemoryEngine) -> None:
    long_ago = datetime.now(UTC) - timedelta(days=400)
    stale = engine.store(
        "The old staging host was called zeus-1.", namespace="u1", importance=0.2, occurred_at=long_ago
    ).stored[0]
    idle = engine.store("The team retro happens every other Thursday.", namespace="u1", importance=0.8).stored[0]
    fresh = engine.store("The current staging host is hera-2.", namespace="u1", importance=0.2).stored[0]
    later = datetime.now(UTC) + timedelta(days=100)
    report = engine.maintain(namespace="u1", now=later)
    assert set(report.archived) == {stale.id, fresh.id}  # idle 100 days and unimportant
    assert report.decayed == [idle.id]
    assert engine.get(idle.id, namespace="u1").importance == 0.72
    recalled = {h.record.id for h in engine.recall("staging host", namespace="u1", top_k=5).hits}
    assert recalled.isdisjoint({stale.id, fresh.id})  # out of the index
    again = engine.maintain(namespace="u1", now=later + timedelta(days=1))
    assert again.decayed == []  # decays at most once per 30 days
    assert engine.restore(namespace="u1", ids=[stale.id]) == 1
    restored = engine.get(stale.id, namespace="u1")
    assert restored.status is Status.ACTIVE and restored.occurred_at == long_ago
    assert engine.recall("zeus-1", namespace="u1", top_k=1).hits[0].record.id == stale.id
    assert engine.restore(namespace="u1", ids=[stale.id]) == 0


def test_capacity_caps_evict_lowest_retention(engine: MemoryEngine) -> None:
    old = datetime.now(UTC) - timedelta(days=20)
    for i in range(5):
        engine.store(
            f"Episode {i}: deployed build {i} to the canary ring.",
            namespace="u1",
            importance=0.1 * (i + 1),
            kind="event",
            occurred_at=old,
            dedup=False,
        )
    later = datetime.now(UTC) + timedelta(days=10)
    report = engine.maintain(namespace="u1", now=later, caps={Tier.EPISODIC: 3})
    assert len(report.evicted) == 2
    left = engine.list(namespace="u1")
    assert len(left) == 3 and min(r.importance for r in left) >= 0.3
