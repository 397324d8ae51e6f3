"""The records held in memory, and how this process catches up with other writers.

Recall takes its finalists from memory only when the store found nothing changed elsewhere
since its sync; what it holds must then be exactly what Chroma would return, after this
process's writes, edits, forgets and recalls and after a sync of another process's writes.
Another process's write made just before one of this process's own must still reach this
process's indexes at the next sync (own writes do not move the watermark past it).
"""

from __future__ import annotations

import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from hindsight_integrations import MemoryEngine
from hindsight_integrations.core.clock import ManualClock
from hindsight_integrations.core.storage.catch_up import LOOKBACK_SECONDS, OWN_WRITES_CHECKED
from hindsight_integrations.core.storage.record_copy import RecordCopy

NS = "held"
FACTS = [
    "Invoice INV-5101 was paid on the fourth of May.",
    "Invoice INV-5102 is waiting for the CFO's approval.",
    "The finance team meets on Thursdays at ten.",
    "Order 77-0412 shipped to Porto by courier.",
]


def _store(engine: MemoryEngine, facts: list[str] = FACTS) -> list[str]:
    return engine.store_memories(facts, namespace=NS, apply_filter=False, dedup=False).ids


def _assert_held_as_in_chroma(engine: MemoryEngine) -> None:
    state = engine.chroma.namespace(NS)
    stored = {record.id: record for record, _ in state.iterate()}
    held = state.record_copy.flats(list(stored))
    assert held is not None and len(state.record_copy) == len(stored)
    for memory_id, record in stored.items():
        assert state.record_of(memory_id, held[memory_id]).model_dump() == record.model_dump()


def _count_record_reads(engine: MemoryEngine) -> list[list[str]]:
    """Record every read of whole records (with their content) from the namespace's collection."""
    state = engine.chroma.namespace(NS)
    reads: list[list[str]] = []
    inner = state.collection

    class Recording:
        def __getattr__(self, name: str) -> Any:
            return getattr(inner, name)

        def get(self, *args: Any, **kwargs: Any) -> Any:
            if "documents" in (kwargs.get("include") or []):
                reads.append(list(kwargs.get("ids") or []))
            return inner.get(*args, **kwargs)

    state.collection = Recording()
    return reads


# -- the copy itself -------------------------------------------------------------------------
def test_the_copy_answers_only_for_ids_it_all_holds_and_stops_past_its_limit() -> None:
    copy = RecordCopy(limit=3)
    copy.upsert(["a", "b"], [{"content": "A", "updated_at": 1.0}, {"content": "B", "updated_at": 1.0}])
    assert copy.flats(["a"]) == {"a": {"content": "A", "updated_at": 1.0}}
    assert copy.flats(["a", "z"]) is None  # one missing: ask Chroma for all
    copy.remove(["a"])
    assert copy.flats(["a"]) is None and len(copy) == 1
    copy.upsert(["c", "d", "e"], [{"content": x} for x in "CDE"])
    assert not copy.complete and len(copy) == 0 and copy.flats(["b"]) is None
    copy.upsert(["f"], [{"content": "F"}])  # off for good: a partial copy would answer wrongly
    assert copy.flats(["f"]) is None


def test_a_recall_counted_here_shows_in_the_record_held() -> None:
    copy = RecordCopy()
    flat = {"content": "A", "access_count": 2, "last_accessed_at": 10.0}
    copy.upsert(["a"], [flat])
    copy.count_access(["a", "unknown"], datetime(2026, 1, 1, tzinfo=UTC))
    held = copy.flats(["a"])
    assert held is not None and held["a"]["access_count"] == 3
    assert held["a"]["last_accessed_at"] == datetime(2026, 1, 1, tzinfo=UTC).timestamp()
    assert flat["access_count"] == 2  # a flat handed out earlier is never changed under its reader


# -- held records are Chroma's ---------------------------------------------------------------
def test_records_held_are_chromas_after_writes_edits_forgets_and_recalls(engine: MemoryEngine) -> None:
    ids = _store(engine)
    engine.update(ids[1], namespace=NS, content="Invoice INV-5102 was approved by the CFO.", importance=0.9)
    engine.forget(ids[2], namespace=NS)
    engine.recall("invoice", namespace=NS, top_k=3)
    engine.chroma.flush()  # the recall counts, as written in the background
    _assert_held_as_in_chroma(engine)


def test_records_synced_from_another_process_are_held_as_chroma_holds_them(store_path: Path, embedder) -> None:
    reader = MemoryEngine(store=store_path, embedder=embedder, llm=False, lexical_sync_seconds=3600)
    ids = _store(reader)
    writer = MemoryEngine(store=store_path, embedder=embedder, llm=False)
    _store(writer, ["Invoice INV-5199 covers the new chairs."])
    writer.update(ids[0], namespace=NS, content="Invoice INV-5101 was paid twice; one payment is refunded.")
    reader.chroma.namespace(NS).sync_indexes(force=True)
    _assert_held_as_in_chroma(reader)


# -- when recall reads from memory -----------------------------------------------------------
def test_recall_reads_no_record_from_chroma_while_nothing_changed_elsewhere(engine: MemoryEngine) -> None:
    _store(engine)
    engine.recall("invoice", namespace=NS)  # the first recall may sync
    reads = _count_record_reads(engine)
    hits = engine.recall("INV-5102 approval", namespace=NS, top_k=2).hits
    assert hits and hits[0].record.content == FACTS[1]
    assert reads == []
    _store(engine, ["Invoice INV-5103 is for the new printer."])  # this process's own write
    assert engine.chroma.namespace(NS).copies_current()
    assert "Invoice INV-5103 is for the new printer." in [
        h.record.content for h in engine.recall("invoice for the printer", namespace=NS, top_k=2).hits
    ]
    assert reads == []


@pytest.mark.parametrize("change", ["forget", "edit", "new"])
def test_any_change_elsewhere_makes_recall_read_from_chroma_until_the_sync(
    store_path: Path, embedder, change: str
) -> None:
    reader = MemoryEngine(store=store_path, embedder=embedder, llm=False, lexical_sync_seconds=3600)
    ids = _store(reader)
    state = reader.chroma.namespace(NS)
    assert state.copies_current()
    writer = MemoryEngine(store=store_path, embedder=embedder, llm=False)
    if change == "forget":
        writer.forget(ids[1], namespace=NS)
    elif change == "edit":
        writer.update(ids[1], namespace=NS, content="Invoice INV-5102 was rejected by the CFO.")
    else:
        _store(writer, ["Invoice INV-5104 pays for the CFO's approval software."])
    assert not state.copies_current()
    reads = _count_record_reads(reader)
    contents = [h.record.content for h in reader.recall("INV-5102 CFO approval", namespace=NS, top_k=2).hits]
    assert reads  # the finalists were read back from Chroma
    assert FACTS[1] not in contents if change != "new" else True
    if change == "edit":
        assert "Invoice INV-5102 was rejected by the CFO." in contents
    state.sync_indexes(force=True)
    assert state.copies_current()


def test_another_process_write_just_before_one_of_ours_reaches_our_indexes(store_path: Path, embedder) -> None:
    reader = MemoryEngine(store=store_path, embedder=embedder, llm=False, lexical_sync_seconds=3600)
    _store(reader)
    writer = MemoryEngine(store=store_path, embedder=embedder, llm=False)
    theirs = _store(writer, ["Invoice INV-5200 covers the standing desks."])
    ours = _store(reader, ["Invoice INV-5201 covers the monitors."])
    state = reader.chroma.namespace(NS)
    state.sync_indexes(force=True)
    assert state.facts.lookup(theirs) and state.facts.lookup(ours)
    assert theirs[0] in [i for i, _ in state.lexical.search("standing desks", 3)]
    assert state.copies_current()


def test_a_burst_of_own_writes_is_synced_as_it_is_written_so_the_next_recall_reads_memory(
    store_path: Path, embedder
) -> None:
    # past OWN_WRITES_CHECKED own writes above the watermark the currency check cannot tell them from
    # another process's: they are synced in the background as they are written, not by the next recall
    engine = MemoryEngine(store=store_path, embedder=embedder, llm=False, lexical_sync_seconds=3600)
    _store(engine, [f"Invoice INV-{6000 + n} covers desk number {n}." for n in range(OWN_WRITES_CHECKED + 6)])
    state = engine.chroma.namespace(NS)
    for _ in range(200):  # the sync the writes started (no recall, no check made meanwhile)
        if state._catch_up.own_writes() < OWN_WRITES_CHECKED:
            break
        time.sleep(0.05)
    reads = _count_record_reads(engine)
    hits = engine.recall("which invoice covers desk number 12?", namespace=NS, top_k=1).hits
    assert hits and "desk number 12" in hits[0].record.content
    assert reads == []  # the copies answered: nothing changed elsewhere, and the check could tell


def test_another_writers_record_stamped_before_a_sync_but_written_after_it_is_taken_in(
    store_path: Path, embedder
) -> None:
    # a record is stamped before its batch is embedded, so another writer's can land after a sync
    # has moved the watermark past its stamp: no watermark query finds it, the count does
    reader = MemoryEngine(store=store_path, embedder=embedder, llm=False, lexical_sync_seconds=3600)
    _store(reader)
    writer = MemoryEngine(store=store_path, embedder=embedder, llm=False)
    first = _store(writer, ["Invoice INV-5300 covers the whiteboards."])
    state = reader.chroma.namespace(NS)
    state.sync_indexes(force=True)
    late = _store(writer, ["Invoice INV-5301 covers the projector."])
    stamp = state.collection.get(ids=first, include=["metadatas"])["metadatas"][0]["updated_at"]
    state.collection.update(ids=late, metadatas=[{"updated_at": stamp - 5.0}])  # stamped before the first one
    assert not state.copies_current()
    found = reader.recall("the projector invoice", namespace=NS, top_k=2).hits  # from Chroma: may copy its vector
    assert "Invoice INV-5301 covers the projector." in [h.record.content for h in found]
    assert not state.facts.lookup(late)
    state.sync_indexes(force=True)
    assert state.facts.lookup(late) and late[0] in [i for i, _ in state.lexical.search("projector", 3)]
    assert state.copies_current()
    reads = _count_record_reads(reader)
    hits = reader.recall("the projector invoice", namespace=NS, top_k=2).hits
    assert "Invoice INV-5301 covers the projector." in [h.record.content for h in hits]
    assert reads == []  # from memory again


def test_another_writers_edit_stamped_before_a_sync_but_written_after_it_is_taken_in(
    store_path: Path, embedder
) -> None:
    # an edit is stamped before its text is embedded, so it can land after a sync has moved the
    # watermark past its stamp; the count does not change: the next sync lists the lookback again
    reader = MemoryEngine(store=store_path, embedder=embedder, llm=False, lexical_sync_seconds=3600)
    ids = _store(reader)
    writer = MemoryEngine(store=store_path, embedder=embedder, llm=False)
    first = _store(writer, ["Invoice INV-5300 covers the whiteboards."])
    state = reader.chroma.namespace(NS)
    state.sync_indexes(force=True)
    stamp = state.collection.get(ids=first, include=["metadatas"])["metadatas"][0]["updated_at"]
    edited = "Invoice INV-5102 was approved by the CFO on Friday."
    writer.update(ids[1], namespace=NS, content=edited)
    state.collection.update(ids=[ids[1]], metadatas=[{"updated_at": stamp - 0.5}])  # stamped before the first one
    assert state.copies_current()  # no watermark query shows it: recall would serve the old text from memory
    reads = _count_record_reads(reader)
    state.sync_indexes(force=True)
    assert reads == [[ids[1]]]  # only the edited record is read again, not the others the lookback lists
    hits = reader.recall("INV-5102 approval", namespace=NS, top_k=1).hits
    assert [h.record.content for h in hits] == [edited]
    assert edited in state.record_copy.flats([ids[1]])[ids[1]]["content"]
    state.sync_indexes(force=True)
    assert reads == [[ids[1]]]  # read once: a sync lists it again within the lookback, and skips it


def test_a_sync_lists_again_only_what_was_stamped_just_before_the_last_one(store_path: Path, embedder) -> None:
    """Records stamped long before the last sync are not listed again: the lookback is seconds, not the store."""
    clock = ManualClock(datetime(2024, 5, 1, tzinfo=UTC))
    engine = MemoryEngine(store=store_path, embedder=embedder, llm=False, lexical_sync_seconds=3600, clock=clock)
    _store(engine)
    state = engine.chroma.namespace(NS)
    state.sync_indexes(force=True)
    listed: list[int] = []
    inner = state.collection

    class Listing:
        def __getattr__(self, name: str) -> Any:
            return getattr(inner, name)

        def get(self, *args: Any, **kwargs: Any) -> Any:
            got = inner.get(*args, **kwargs)
            if kwargs.get("where"):
                listed.append(len(got["ids"]))
            return got

    state.collection = Listing()
    state.sync_indexes(force=True)  # the first sync ran within the lookback of the writes: lists them again
    clock.advance(seconds=LOOKBACK_SECONDS + 1)
    state.sync_indexes(force=True)  # began past the lookback: the next one lists only newer stamps
    state.sync_indexes(force=True)
    assert listed == [len(FACTS), len(FACTS), 0]
