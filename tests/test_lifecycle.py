"""Upkeep: decay, cold-storage archive, capacity caps and restore."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from hindsight_integrations import ConfigurationError, MemoryEngine, Status, Tier
from hindsight_integrations.core.errors import MemoryNotFoundError, StoreUnavailableError
from hindsight_integrations.core.storage.cold import ColdStorage


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
    assert engine.get(idle.id, namespace="u1").importance == 0.784  # an important fact is semantic: 0.8 × 0.98
    recalled = {h.record.id for h in engine.recall("staging host", namespace="u1", top_k=5).hits}
    assert recalled.isdisjoint({stale.id, fresh.id})  # out of the index
    again = engine.maintain(namespace="u1", now=later + timedelta(days=1))
    assert again.decayed == []  # decays at most once per 30 days
    assert engine.restore(namespace="u1", ids=[stale.id]) == 1
    restored = engine.get(stale.id, namespace="u1")
    assert restored.status is Status.ACTIVE and restored.occurred_at == long_ago
    assert engine.recall("zeus-1", namespace="u1", top_k=1).hits[0].record.id == stale.id
    assert engine.restore(namespace="u1", ids=[stale.id]) == 0


def test_an_id_archived_twice_is_restored_once_as_it_was_last_archived(timed: MemoryEngine, clock) -> None:
    """Archive, roll back from a backup, archive again: cold storage holds the id once and restore brings it back."""
    stale = timed.store("The old staging host was called zeus-1.", namespace="u1", importance=0.2).stored[0]
    backup = timed.export(namespace="u1")
    clock.advance(days=100)
    assert timed.maintain(namespace="u1").archived == [stale.id]
    timed.import_data(backup, namespace="u1")  # the nightly backup brings it back
    timed.update(stale.id, namespace="u1", content="The old staging host was called zeus-2.")
    clock.advance(days=100)
    assert timed.maintain(namespace="u1").archived == [stale.id]
    assert timed.archived_ids(namespace="u1") == [stale.id]  # one row: the second archive replaced the first
    assert timed.restore(namespace="u1") == 1
    assert timed.get(stale.id, namespace="u1").content == "The old staging host was called zeus-2."
    assert timed.archived_ids(namespace="u1") == []


def test_a_memory_in_cold_storage_is_read_by_id_and_changed_only_once_restored(timed: MemoryEngine, clock) -> None:
    """``get`` finds a memory whatever its status, archived ones included; an edit says to restore it first."""
    stale = timed.store("The old staging host was called zeus-1.", namespace="u1", importance=0.2).stored[0]
    clock.advance(days=100)
    assert timed.maintain(namespace="u1").archived == [stale.id]
    archived = timed.get(stale.id, namespace="u1")
    assert archived.status is Status.ARCHIVED and archived.content == stale.content
    with pytest.raises(MemoryNotFoundError, match="archived in cold storage; restore it first"):
        timed.update(stale.id, namespace="u1", importance=0.9)
    assert timed.restore(namespace="u1", ids=[stale.id]) == 1
    assert timed.update(stale.id, namespace="u1", importance=0.9).status is Status.ACTIVE


def test_a_lookup_by_id_parses_only_the_cold_rows_that_hold_it(
    timed: MemoryEngine, clock, store_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A ``get`` that misses parsed every archived row and its vectors, and failed on any damaged line."""
    stale = timed.store("The old staging host was called zeus-1.", namespace="u1", importance=0.2).stored[0]
    clock.advance(days=100)
    assert timed.maintain(namespace="u1").archived == [stale.id]
    (cold,) = store_path.rglob("u1.jsonl")
    with cold.open("a", encoding="utf-8") as out:
        out.write('{"id": "half-written\n')  # another row, damaged
    parsed = []
    real_loads = json.loads
    monkeypatch.setattr(json, "loads", lambda text, *a, **k: parsed.append(text) or real_loads(text, *a, **k))
    with pytest.raises(MemoryNotFoundError):
        timed.get("00000000-0000-4000-8000-000000000000", namespace="u1")
    assert parsed == []
    assert timed.get(stale.id, namespace="u1").status is Status.ARCHIVED
    assert len(parsed) == 1  # its own row, once
    with pytest.raises(StoreUnavailableError, match=r"u1\.jsonl is damaged at line 2"):
        timed.restore(namespace="u1")  # reading every row still names the damaged line


def test_a_memory_holding_a_line_separator_is_archived_and_restored(timed: MemoryEngine, clock) -> None:
    """JSON keeps U+2028 and U+0085 as they are; the cold file was split there, every archived row then unreadable."""
    text = "The old staging host was called zeus-1.\u2028It ran on the second floor.\x85Nobody misses it."
    stale = timed.store(text, namespace="u1", importance=0.2).stored[0]
    clock.advance(days=100)
    assert timed.maintain(namespace="u1").archived == [stale.id]
    assert timed.get(stale.id, namespace="u1").status is Status.ARCHIVED
    assert timed.restore(namespace="u1") == 1
    assert timed.get(stale.id, namespace="u1").content == text


def test_archiving_appends_without_reading_the_rows_archived_before(
    timed: MemoryEngine, clock, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each archive parsed every row of the cold file and its vectors, and wrote them all again (4 min at 100k rows)."""
    first = timed.store("The old staging host was called zeus-1.", namespace="u1", importance=0.2).stored[0]
    clock.advance(days=100)
    assert timed.maintain(namespace="u1").archived == [first.id]
    cold = timed.settings.resolved_cold_store / "u1.jsonl"
    before = cold.read_text(encoding="utf-8")
    cold.write_text(before + '{"id": "torn-by-a-crash", "content": "The', encoding="utf-8")  # no newline
    second = timed.store("The old build server was called ares-3.", namespace="u1", importance=0.2).stored[0]
    parsed: list[str] = []
    real_loads = json.loads
    monkeypatch.setattr(json, "loads", lambda text, *a, **k: parsed.append(text) or real_loads(text, *a, **k))
    clock.advance(days=100)
    assert timed.maintain(namespace="u1").archived == [second.id]
    assert not [text for text in parsed if first.id in text]
    lines = cold.read_text(encoding="utf-8").splitlines(keepends=True)
    assert "".join(lines[:2]) == before + '{"id": "torn-by-a-crash", "content": "The\n'  # a line of its own
    assert json.loads(lines[2])["id"] == second.id
    assert timed.get(second.id, namespace="u1").status is Status.ARCHIVED
    with pytest.raises(StoreUnavailableError, match=r"u1\.jsonl is damaged at line 2"):
        timed.restore(namespace="u1")


def test_a_row_another_process_archived_is_replaced_not_written_twice(tmp_path: Path) -> None:
    """What this process knows of the file's ids is read again once another process has written it."""
    here, there = ColdStorage(tmp_path), ColdStorage(tmp_path)
    here.put("u1", [{"id": "a", "content": "one"}])
    there.put("u1", [{"id": "b", "content": "two"}])
    here.put("u1", [{"id": "b", "content": "two, again"}])
    assert here.rows("u1") == [{"id": "a", "content": "one"}, {"id": "b", "content": "two, again"}]
    assert len(here.path("u1").read_text(encoding="utf-8").splitlines()) == 2
    there.put("u1", [], leaving={"a"})
    here.put("u1", [{"id": "c", "content": "three"}])
    assert [row["id"] for row in there.rows("u1")] == ["b", "c"]


def test_a_memory_imported_again_leaves_cold_storage(timed: MemoryEngine, clock) -> None:
    """A backup brings an archived memory back: its older archived copy must not come back over it at ``restore``."""
    stale = timed.store("The old staging host was called zeus-1.", namespace="u1", importance=0.2).stored[0]
    backup = timed.export(namespace="u1")
    clock.advance(days=100)
    assert timed.maintain(namespace="u1").archived == [stale.id]
    timed.import_data(backup, namespace="u1")
    assert timed.archived_ids(namespace="u1") == []
    timed.update(stale.id, namespace="u1", content="The old staging host was called zeus-2.")
    assert timed.restore(namespace="u1") == 0
    assert timed.get(stale.id, namespace="u1").content == "The old staging host was called zeus-2."


def test_a_dropped_namespace_leaves_no_cold_storage_behind(timed: MemoryEngine, clock) -> None:
    """Deleted for good: a namespace made again under the name does not inherit its archived memories."""
    timed.store("The old staging host was called zeus-1.", namespace="u1", importance=0.2)
    clock.advance(days=100)
    assert timed.maintain(namespace="u1").archived
    timed.drop_namespace("u1")
    timed.store("The new staging host is hera-2.", namespace="u1")
    assert timed.archived_ids(namespace="u1") == [] and timed.restore(namespace="u1") == 0
    assert "zeus-1" not in json.dumps(timed.export(namespace="u1"))


def test_a_cold_file_written_with_an_id_twice_restores_its_last_row(timed: MemoryEngine, clock) -> None:
    """Cold files written before one id had one row: the last row (the latest archive) is the one restored."""
    stale = timed.store("The old staging host was called zeus-1.", namespace="u1", importance=0.2).stored[0]
    clock.advance(days=100)
    timed.maintain(namespace="u1")
    cold = timed.settings.resolved_cold_store / "u1.jsonl"
    row = json.loads(cold.read_text(encoding="utf-8"))
    later = {**row, "content": "The old staging host was called zeus-2."}
    cold.write_text(json.dumps(row) + "\n" + json.dumps(later) + "\n", encoding="utf-8")
    assert timed.archived_ids(namespace="u1") == [stale.id]
    assert timed.restore(namespace="u1") == 1
    assert timed.get(stale.id, namespace="u1").content == later["content"]
    assert cold.read_text(encoding="utf-8") == ""


def test_a_memory_recalled_a_moment_ago_is_not_archived_as_idle(timed: MemoryEngine, clock) -> None:
    """Recall's counts are queued (written every few seconds); maintain writes the namespace's first, then judges."""
    stale = timed.store("The old staging host was called zeus-1.", namespace="u1", importance=0.2).stored[0]
    clock.advance(days=100)
    assert timed.recall("what was the old staging host called?", namespace="u1").hits[0].record.id == stale.id
    report = timed.maintain(namespace="u1")
    assert report.archived == [] and timed.archived_ids(namespace="u1") == []
    kept = timed.get(stale.id, namespace="u1")
    assert kept.access_count == 1 and kept.last_accessed_at == clock.now()
    clock.advance(days=91)
    assert timed.maintain(namespace="u1").archived == [stale.id]  # idle 90 days since that recall


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


def test_what_lasts_decays_slowly_and_preferences_are_never_archived(engine: MemoryEngine) -> None:
    """Tier-aware retention: a year of upkeep keeps a never-recalled preference; a dry run changes nothing."""
    episode = engine.store("We had pizza at the offsite.", namespace="u1", kind="event", importance=0.9).stored[0]
    preference = engine.store("I prefer window seats on trains.", namespace="u1", kind="preference").stored[0]
    low = engine.store("I like green tea a little.", namespace="u1", kind="preference", importance=0.2).stored[0]
    assert preference.tier is Tier.SEMANTIC and episode.tier is Tier.EPISODIC
    start = datetime.now(UTC)
    preview = engine.maintain(namespace="u1", now=start + timedelta(days=100), dry_run=True)
    assert preview.dry_run and preview.decayed and engine.get(episode.id, namespace="u1").importance == 0.9
    for month in range(1, 13):
        engine.maintain(namespace="u1", now=start + timedelta(days=31 * month))
    after = {r.id: r for r in engine.list(namespace="u1")}
    assert after[preference.id].importance > 0.7  # semantic: 0.98 a month
    assert episode.id not in after  # the episode faded (0.9 a month) and went to cold storage
    assert low.id in after  # a preference is never archived silently, however unimportant
    assert (
        engine.recall("Which seats do I like on the train?", namespace="u1", top_k=1).hits[0].record.id == preference.id
    )


def test_the_semantic_tiers_decay_is_a_setting(store_path, embedder, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """HINDSIGHT_SEMANTIC_DECAY=1: a year idle leaves a semantic memory's importance as it was; 0 is refused."""
    monkeypatch.setenv("HINDSIGHT_SEMANTIC_DECAY", "1")
    engine = MemoryEngine(store=store_path, embedder=embedder, llm=False)
    assert engine.settings.semantic_decay == 1.0
    preference = engine.store("I prefer window seats on trains.", namespace="u1", kind="preference").stored[0]
    episode = engine.store("We had pizza at the offsite.", namespace="u1", kind="event", importance=0.9).stored[0]
    start = datetime.now(UTC)
    decayed: set[str] = set()
    for month in range(1, 13):
        decayed.update(engine.maintain(namespace="u1", now=start + timedelta(days=31 * month)).decayed)
    assert preference.id not in decayed and episode.id in decayed
    assert engine.get(preference.id, namespace="u1").importance == preference.importance
    monkeypatch.setenv("HINDSIGHT_SEMANTIC_DECAY", "0")
    with pytest.raises(ConfigurationError, match="HINDSIGHT_SEMANTIC_DECAY"):
        MemoryEngine(store=store_path, embedder=embedder, llm=False)


def test_maintain_dry_run_on_the_command_line(tmp_path, embedder) -> None:
    from typer.testing import CliRunner

    from hindsight_integrations.cli import app

    store = tmp_path / "store"
    engine = MemoryEngine(store=store, embedder=embedder, llm=False)
    engine.store("The old staging host was called zeus-1.", namespace="cli", importance=0.2)
    result = CliRunner().invoke(app, ["--store", str(store), "maintain", "-n", "cli", "--dry-run"])
    assert result.exit_code == 0, result.output
    assert "dry run: what would happen (nothing was changed)" in result.output
    row = next(line.split() for line in result.stdout.splitlines() if line.split()[:1] == ["cli"])
    assert row[1:] == ["0"] * 6  # compressed, merged, consolidated, decayed, archived, evicted
