"""One clock: every time-dependent path reads the engine's clock, so tests move time instead of sleeping.

The clock starts in the past (1 March 2024) on purpose: a path that still read the wall clock
would see every memory written here as more than a year old (expired, idle, decayed), and the
assertions below would fail.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from hindsight_integrations import Kind, MemoryEngine, Status, Tier
from hindsight_integrations.core.clock import ManualClock, SystemClock

from .conftest import CLOCK_START

START = CLOCK_START  # where the ``clock`` fixture starts
NS = "u1"


def _recalled(engine: MemoryEngine, query: str, **options: object) -> list[str]:
    return [h.record.id for h in engine.recall(query, namespace=NS, touch=False, **options).hits]  # type: ignore[arg-type]


def test_the_engine_uses_the_clock_it_was_given(timed: MemoryEngine, clock: ManualClock, engine: MemoryEngine) -> None:
    assert timed.clock is clock and timed._parts.clock is clock
    assert isinstance(engine.clock, SystemClock)


def test_writes_take_their_times_from_the_clock(timed: MemoryEngine, clock: ManualClock) -> None:
    record = timed.store("The deploy window is Friday at 5pm.", namespace=NS).stored[0]
    assert record.created_at == record.updated_at == record.occurred_at == record.valid_from == START
    clock.advance(hours=3)
    updated = timed.update(record.id, namespace=NS, importance=0.7, ttl_seconds=600)
    assert updated.updated_at == clock.now() and updated.expires_at == clock.now() + timedelta(seconds=600)
    assert updated.created_at == START
    clock.advance(minutes=1)
    assert timed.forget(record.id, namespace=NS).updated_at == clock.now()
    clock.advance(minutes=1)
    assert timed.unforget(record.id, namespace=NS).updated_at == clock.now()


def test_a_memory_with_a_ttl_expires_when_the_clock_passes_it(timed: MemoryEngine, clock: ManualClock) -> None:
    record = timed.store(
        "The staging password rotates at the end of the sprint.", namespace=NS, ttl_seconds=3600
    ).stored[0]
    assert record.expires_at == START + timedelta(hours=1)
    assert _recalled(timed, "staging password") == [record.id]
    assert [r.id for r in timed.list(namespace=NS)] == [record.id]
    clock.advance(minutes=59)
    assert _recalled(timed, "staging password") == [record.id]
    clock.advance(minutes=1)  # exactly at expiry: gone
    assert _recalled(timed, "staging password") == []
    assert timed.list(namespace=NS) == []
    # Hidden, not destroyed: history, get and the dump still have it.
    assert _recalled(timed, "staging password", include_history=True) == [record.id]
    assert [r.id for r in timed.list(namespace=NS, include_history=True)] == [record.id]
    assert timed.get(record.id, namespace=NS).status is Status.ACTIVE
    assert "staging password" in timed.dump(namespace=NS)


def test_tomorrow_expires_relative_to_the_clock(timed: MemoryEngine, clock: ManualClock) -> None:
    event = timed.store("I have a meeting with the design team tomorrow at 10am.", namespace=NS).stored[0]
    assert event.kind is Kind.EVENT and event.expires_at == START + timedelta(days=3)
    clock.advance(days=2)
    assert _recalled(timed, "meeting with the design team") == [event.id]
    clock.advance(days=1, seconds=1)
    assert _recalled(timed, "meeting with the design team") == []


def test_recency_is_age_on_the_clock(timed: MemoryEngine, clock: ManualClock) -> None:
    old = timed.store("The team lunch spot is the ramen bar on Main Street.", namespace=NS, importance=0.5).stored[0]
    clock.advance(days=200)
    new = timed.store("The team lunch spot is the taco truck by the park.", namespace=NS, importance=0.5).stored[0]
    assert new.occurred_at == START + timedelta(days=200)
    by_recency = {"similarity": 0.1, "recency": 1.0, "importance": 0, "access": 0}
    hits = timed.recall("team lunch spot", namespace=NS, top_k=2, weights=by_recency, touch=False).hits
    assert [h.record.id for h in hits] == [new.id, old.id]
    assert hits[0].recency == pytest.approx(1.0)  # written at the clock's now: age 0
    fresh = hits[1].recency
    clock.advance(days=100)  # both age; the newer one is no longer brand new
    later = {h.record.id: h.recency for h in timed.recall("team lunch spot", namespace=NS, top_k=2, touch=False).hits}
    assert later[new.id] < 1.0 and later[old.id] < fresh


def test_recall_records_access_at_the_clock(timed: MemoryEngine, clock: ManualClock) -> None:
    record = timed.store("The build server is called orion-7.", namespace=NS, importance=0.5).stored[0]
    clock.advance(days=20)
    hit = timed.recall("what is the build server called?", namespace=NS, top_k=1).hits[0]
    assert hit.record.id == record.id and hit.record.last_accessed_at == clock.now()
    timed.chroma.flush()
    assert timed.get(record.id, namespace=NS).last_accessed_at == clock.now()
    # Idle time counts from that access: 30 days after the write but 10 after the recall, no decay.
    clock.advance(days=10)
    assert timed.maintain(namespace=NS).decayed == []
    clock.advance(days=20)
    assert timed.maintain(namespace=NS).decayed == [record.id]


def test_decay_and_archive_follow_the_clock(timed: MemoryEngine, clock: ManualClock) -> None:
    minor = timed.store("The old staging host was called zeus-1.", namespace=NS, importance=0.2).stored[0]
    major = timed.store("The team retro happens every other Thursday.", namespace=NS, importance=0.6).stored[0]
    assert major.tier is Tier.EPISODIC
    nothing = timed.maintain(namespace=NS)
    assert (nothing.decayed, nothing.archived, nothing.evicted) == ([], [], [])
    clock.advance(days=29)
    assert timed.maintain(namespace=NS).decayed == []
    clock.advance(days=1)  # idle 30 days: decay
    assert sorted(timed.maintain(namespace=NS).decayed) == sorted([minor.id, major.id])
    assert timed.get(major.id, namespace=NS).importance == pytest.approx(0.54)
    clock.advance(days=15)
    assert timed.maintain(namespace=NS).decayed == []  # at most once per 30 days
    clock.advance(days=45)  # idle 90 days: the unimportant one goes to cold storage
    report = timed.maintain(namespace=NS)
    assert report.archived == [minor.id] and major.id in report.decayed
    assert _recalled(timed, "staging host zeus-1") == []
    assert timed.archived_ids(namespace=NS) == [minor.id]
    # maintain(now=) still overrides the clock, for a preview of the future.
    before = timed.get(major.id, namespace=NS).importance
    assert timed.maintain(namespace=NS, dry_run=True).decayed == []  # decayed at the clock's now already
    preview = timed.maintain(namespace=NS, now=clock.now() + timedelta(days=400), dry_run=True)
    assert preview.dry_run and preview.decayed == [major.id]
    assert timed.get(major.id, namespace=NS).importance == before


def test_a_restored_memory_is_idle_from_the_restore(timed: MemoryEngine, clock: ManualClock) -> None:
    stale = timed.store("The old staging host was called zeus-1.", namespace=NS, importance=0.2).stored[0]
    clock.advance(days=91)
    assert timed.maintain(namespace=NS).archived == [stale.id]
    clock.advance(days=5)
    assert timed.restore(namespace=NS, ids=[stale.id]) == 1
    restored = timed.get(stale.id, namespace=NS)
    assert restored.status is Status.ACTIVE and restored.occurred_at == START
    assert restored.updated_at == restored.last_accessed_at == clock.now()
    clock.advance(days=1)
    assert timed.maintain(namespace=NS).archived == []  # not straight back to cold storage
    clock.advance(days=90)
    assert timed.maintain(namespace=NS).archived == [stale.id]


def test_turns_compression_and_export_are_dated_by_the_clock(timed: MemoryEngine, clock: ManualClock) -> None:
    turns = []
    for n in range(6):
        turns.append(
            timed.record_turn(f"Step {n}: we configured the exporter on port 90{n}0.", session_id="s1", namespace=NS)
        )
        clock.advance(minutes=1)
    assert [t.turn.created_at for t in turns] == [START + timedelta(minutes=n) for n in range(6)]
    assert turns[0].turn.occurred_at == START
    result = timed.compress(session_id="s1", namespace=NS, force=True)
    assert result is not None
    for summary in result.summaries:
        assert summary.created_at == clock.now() and summary.occurred_at <= clock.now()
    archived = timed.get(result.archived_ids[0], namespace=NS)
    assert archived.status is Status.ARCHIVED and archived.updated_at == clock.now()
    clock.advance(hours=1)
    assert timed.export(namespace=NS, include_embeddings=False)["exported_at"] == clock.now().isoformat()


def test_manual_clock_only_moves_forward() -> None:
    clock = ManualClock(datetime(2024, 1, 1))  # naive: taken as UTC
    assert clock.now() == datetime(2024, 1, 1, tzinfo=UTC)
    assert clock.advance(days=1, hours=2) == datetime(2024, 1, 2, 2, tzinfo=UTC)
    assert clock.advance(timedelta(minutes=30)) == datetime(2024, 1, 2, 2, 30, tzinfo=UTC)
    with pytest.raises(ValueError, match="only moves forward"):
        clock.advance(days=-1)
    with pytest.raises(ValueError, match="only moves forward"):
        clock.set(datetime(2023, 12, 31, tzinfo=UTC))
    assert clock.set(datetime(2025, 1, 1, tzinfo=UTC)) == clock.now()
    assert clock.now() == clock.now()  # stands still until moved
