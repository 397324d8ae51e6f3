"""Recall ranks on in-memory facts and fetches only finalists: other writers must still win.

Two engines on one store stand in for two server replicas. The reader never syncs on its
own here (a one-hour sync interval), so whatever it gets right comes from the finalist
re-check against Chroma, not from catching up.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from hindsight_integrations import MemoryEngine


@pytest.fixture
def reader(store_path: Path, embedder) -> MemoryEngine:
    return MemoryEngine(store=store_path, embedder=embedder, llm=False, lexical_sync_seconds=3600)


@pytest.fixture
def writer(store_path: Path, embedder) -> MemoryEngine:
    return MemoryEngine(store=store_path, embedder=embedder, llm=False)


FACTS = [
    "Invoice INV-4471 was paid on the second of March.",
    "Invoice INV-4472 is still waiting for approval from finance.",
    "Invoice INV-4473 was sent to the wrong address.",
    "The finance team meets on Thursdays.",
]


def _stored(engine: MemoryEngine) -> list[str]:
    return engine.store_memories(FACTS, namespace="inv", apply_filter=False, dedup=False).ids


def test_memory_forgotten_by_another_process_is_not_returned(reader: MemoryEngine, writer: MemoryEngine) -> None:
    ids = _stored(reader)
    assert ids[0] in [h.record.id for h in reader.recall("INV-4471 paid", namespace="inv", top_k=3).hits]
    writer.forget(ids[0], namespace="inv")
    hits = reader.recall("INV-4471 paid", namespace="inv", top_k=3).hits
    assert ids[0] not in [h.record.id for h in hits]
    assert len(hits) == 3  # the next candidates took its place


def test_memory_deleted_by_another_process_is_skipped(reader: MemoryEngine, writer: MemoryEngine) -> None:
    ids = _stored(reader)
    reader.recall("invoice", namespace="inv")
    writer.chroma.namespace("inv").delete([ids[1]])
    hits = reader.recall("INV-4472 approval", namespace="inv", top_k=4).hits
    assert ids[1] not in [h.record.id for h in hits] and len(hits) == 3


def test_hits_carry_the_current_record_not_the_cached_facts(reader: MemoryEngine, writer: MemoryEngine) -> None:
    ids = _stored(reader)
    reader.recall("invoice", namespace="inv")
    writer.update(ids[2], namespace="inv", importance=0.95)
    hit = next(
        h for h in reader.recall("INV-4473 wrong address", namespace="inv", top_k=4).hits if h.record.id == ids[2]
    )
    assert hit.record.importance == pytest.approx(0.95)


def test_memory_written_by_another_process_is_found_before_the_next_sync(
    reader: MemoryEngine, writer: MemoryEngine
) -> None:
    _stored(reader)
    reader.recall("invoice", namespace="inv")
    writer.store("Invoice INV-9001 covers the new laptops.", namespace="inv", apply_filter=False)
    # Not in the reader's lexical index or facts yet; the vector search still finds it, and its
    # metadata is read from Chroma because the facts do not know it.
    hits = reader.recall("invoice for the new laptops", namespace="inv", top_k=3).hits
    assert "Invoice INV-9001 covers the new laptops." in [h.record.content for h in hits]


def test_own_recalls_count_towards_access_in_the_ranking(engine: MemoryEngine) -> None:
    ids = _stored(engine)
    state = engine.chroma.namespace("inv")
    before = state.facts.lookup([ids[0]])[ids[0]].access_count
    engine.recall("INV-4471", namespace="inv", top_k=1)
    assert state.facts.lookup([ids[0]])[ids[0]].access_count == before + 1


def test_user_metadata_filters_read_chroma_metadata(engine: MemoryEngine) -> None:
    engine.store_memories(
        [{"content": f, "metadata": {"team": "finance" if "finance" in f else "billing"}} for f in FACTS],
        namespace="inv",
        apply_filter=False,
        dedup=False,
    )
    hits = engine.recall("invoice", namespace="inv", top_k=4, filters={"metadata": {"team": "billing"}}).hits
    assert {h.record.metadata["team"] for h in hits} == {"billing"} and len(hits) == 2


_CURRENT = ["Our daily team meeting takes place in the small room next to the kitchen.", "Standups are short."]


def _behind_a_wall_of_history(writer: MemoryEngine, monkeypatch, forgotten: int) -> list[object]:
    """Two current memories behind ``forgotten`` nearer ones; returns the ``where`` of each vector query made."""
    notes = [f"Standup note {n}: the team standup moved to room B at 9:{n % 60:02d}." for n in range(forgotten)]
    ids = writer.store_memories(notes + _CURRENT, namespace="s", apply_filter=False, dedup=False, supersede=False).ids
    for memory_id in ids[:forgotten]:
        writer.forget(memory_id, namespace="s")
    handle = writer.chroma.namespace("s")
    handle.sync_indexes(force=True)  # what the burst of writes started in the background, done now
    assert handle.copies_current()
    wheres: list[object] = []
    query = handle.query

    def spied(vector, *, n, where, from_copy=False):
        wheres.append(where)
        return query(vector, n=n, where=where, from_copy=from_copy)

    monkeypatch.setattr(handle, "query", spied)
    searched = handle.vector_copy.cosines

    def spied_copy(vector):  # a search of the copy counts as an unfiltered query
        wheres.append(None)
        return searched(vector)

    monkeypatch.setattr(handle.vector_copy, "cosines", spied_copy)
    return wheres


@pytest.mark.parametrize("forgotten", [150, 450])
def test_current_memories_behind_a_wall_of_history_are_found(writer: MemoryEngine, monkeypatch, forgotten: int) -> None:
    """The nearest hits are all forgotten: recall looks deeper unfiltered, then filters the whole copy.

    150 forgotten memories end within ``8 × pool`` nearest hits; past 450 recall ranks the whole
    in-memory copy and admits in that order, exactly: Chroma's filtered HNSW walk can miss one of
    two allowed records among 452 (it did in CI).
    """
    wheres = _behind_a_wall_of_history(writer, monkeypatch, forgotten)
    hits = writer.recall("the team standup moved to room B", namespace="s", top_k=10).hits
    assert [h.record.content for h in hits] == _CURRENT
    assert wheres and all(w is None for w in wheres)


def test_behind_a_wall_of_history_chroma_filters_when_the_copy_is_not_current(
    writer: MemoryEngine, monkeypatch
) -> None:
    """When another process may have written since the last sync, the last resort is Chroma's ``where``."""
    wheres = _behind_a_wall_of_history(writer, monkeypatch, 450)
    monkeypatch.setattr(writer.chroma.namespace("s"), "currency_checks", lambda: [lambda: False])
    hits = writer.recall("the team standup moved to room B", namespace="s", top_k=10).hits
    # Approximate: every hit is current, but the graph's filtered walk may miss one of the two.
    assert hits and {h.record.content for h in hits} <= set(_CURRENT)
    assert sum(w is not None for w in wheres) == 1
