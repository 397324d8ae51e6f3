"""``MemoryEngine.list`` reads only its page from Chroma, and lists exactly what reading every match would.

The page is picked on the facts each namespace keeps in memory (``storage/listing.py``); these
tests hold it to the plain definition (every matching record read from Chroma, sorted newest
first, ties in Chroma's order), on many random filters and pages, and count what it reads.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from hindsight_integrations import MemoryEngine
from hindsight_integrations.core.clock import ManualClock
from hindsight_integrations.core.embedding.local import LocalEmbedder
from hindsight_integrations.core.model.records import MemoryRecord, Status
from hindsight_integrations.core.recall.filters import RecallFilters

NS = "u1"
START = datetime(2024, 1, 1, tzinfo=UTC)
NOW = datetime(2024, 6, 1, tzinfo=UTC)  # the namespace's records expire and stop being valid around it


def _record(n: int, pick: random.Random) -> dict[str, Any]:
    """A record of every kind of fact a filter can ask about; times drawn from few values, so many are tied."""
    tier = pick.choice(["episodic", "semantic", "working"])
    item: dict[str, Any] = {
        "id": f"m{n:04d}",
        "content": f"memory number {n}",
        "tier": tier,
        "kind": pick.choice(["fact", "preference", "event", "context"]),
        "role": "user",
        "status": pick.choice(["active", "active", "active", "superseded", "quarantined", "deleted"]),
        "session_id": pick.choice([None, "s1", "s2"]),
        "agent_id": pick.choice([None, "a1", "a2"]),
        "importance": pick.choice([0.1, 0.5, 0.5, 0.9]),
        "occurred_at": (START + timedelta(days=pick.randrange(12))).isoformat(),
        "metadata": pick.choice([{}, {"topic": "cats"}, {"topic": "dogs", "n": n % 3}]),
    }
    if pick.random() < 0.2:
        item["expires_at"] = (NOW + timedelta(days=pick.choice([-3, 3]))).isoformat()
    if pick.random() < 0.2:
        item["valid_until"] = (NOW + timedelta(days=pick.choice([-3, 3]))).isoformat()
    return item


def _random_filters(pick: random.Random) -> dict[str, Any]:
    filters: dict[str, Any] = {}
    if pick.random() < 0.3:
        filters["session_id"] = pick.choice(["s1", "s2"])
    if pick.random() < 0.3:
        filters["agent_id"] = pick.choice(["a1", "a2"])
    if pick.random() < 0.4:
        filters["tiers"] = pick.sample(["episodic", "semantic", "working"], pick.randint(1, 3))
    if pick.random() < 0.3:
        filters["kinds"] = pick.sample(["fact", "preference", "event", "context"], pick.randint(1, 2))
    if pick.random() < 0.3:
        filters["statuses"] = pick.sample(["active", "superseded", "quarantined", "deleted"], pick.randint(1, 2))
    if pick.random() < 0.3:
        filters["since"] = (START + timedelta(days=pick.randrange(12))).isoformat()
    if pick.random() < 0.3:
        filters["until"] = (START + timedelta(days=pick.randrange(12))).isoformat()
    if pick.random() < 0.3:
        filters["min_importance"] = pick.choice([0.3, 0.5, 0.9])
    if pick.random() < 0.2:
        filters["metadata"] = pick.choice([{"topic": "cats"}, {"topic": "dogs"}, {"n": 1}])
    return filters


@pytest.fixture
def listed(store_path: Path, embedder: LocalEmbedder) -> Iterator[MemoryEngine]:
    """An engine whose clock reads ``NOW``, with 300 varied records in ``NS`` given their vectors (nothing to embed)."""
    engine = MemoryEngine(store=store_path, embedder=embedder, llm=False, clock=ManualClock(NOW))
    pick = random.Random(7)
    dimension = engine._parts.embedding_dim
    records = []
    for n in range(300):
        item = _record(n, pick)
        item["embedding"] = [pick.uniform(-1, 1) for _ in range(dimension)]
        records.append(item)
    export = {"format": "hindsight-export", "embedding_model": engine._parts.embedder.name, "records": records}
    engine.import_data(export, namespace=NS)
    # Written again, these keep their place in Chroma's order and move to the end of the facts index's.
    engine.import_data({**export, "records": records[150::-1]}, namespace=NS)
    yield engine
    engine.close()


def _every_match(engine: MemoryEngine, filters: dict[str, Any], history: bool) -> list[MemoryRecord]:
    """The list by its definition: every matching record read from Chroma, newest first, ties in Chroma's order."""
    handle = engine._namespace(NS)
    chosen = RecallFilters.model_validate(filters)
    if history and not chosen.statuses:
        chosen = chosen.model_copy(update={"statuses": [Status.ACTIVE, Status.SUPERSEDED, Status.QUARANTINED]})
    records = handle.find(chosen.where(include_history=history, now=NOW))
    records.sort(key=lambda r: r.occurred_at, reverse=True)
    return records


def test_a_page_is_what_reading_every_match_gives_on_random_filters(listed: MemoryEngine) -> None:
    pick = random.Random(11)
    for _ in range(250):
        filters, history = _random_filters(pick), pick.random() < 0.4
        every = _every_match(listed, filters, history)
        limit = pick.choice([1, 2, 3, 5, 10, 25, 100])
        offset = pick.choice([0, 0, 1, 2, 7, 20, 50, len(every), len(every) + 3])
        page = listed.list(namespace=NS, filters=filters, include_history=history, limit=limit, offset=offset)
        expected = every[offset : offset + limit]
        assert [r.id for r in page] == [r.id for r in expected], (filters, history, limit, offset)
        assert page == expected


def test_every_page_in_turn_is_the_whole_list(listed: MemoryEngine) -> None:
    every = _every_match(listed, {}, True)
    pages = [listed.list(namespace=NS, include_history=True, limit=7, offset=o) for o in range(0, len(every), 7)]
    assert [r.id for page in pages for r in page] == [r.id for r in every]


class _CountingReads:
    """A namespace's collection whose ``get`` calls, and the records they return, are counted."""

    def __init__(self, collection: Any) -> None:
        self._collection = collection
        self.calls: list[int] = []

    def __getattr__(self, name: str) -> Any:
        return getattr(self._collection, name)

    def get(self, **kwargs: Any) -> Any:
        got = self._collection.get(**kwargs)
        self.calls.append(len(got["ids"]) if "documents" in kwargs.get("include", ["documents"]) else 0)
        return got


def test_a_page_reads_only_its_records(listed: MemoryEngine) -> None:
    handle = listed._namespace(NS)
    counting = _CountingReads(handle.collection)
    handle.collection = counting
    assert len(listed.list(namespace=NS, include_history=True, limit=10, offset=40)) == 10
    # Besides the currency check's small read: the page, and the ids of records sharing its edge times.
    assert sum(counting.calls) == 10
    assert len([c for c in counting.calls if c]) == 1


def test_a_record_forgotten_by_another_process_is_not_listed(listed: MemoryEngine, store_path: Path) -> None:
    first = listed.list(namespace=NS, limit=5)
    other = MemoryEngine(store=store_path, embedder=listed._parts.embedder, llm=False, clock=ManualClock(NOW))
    try:
        other.forget(first[0].id, namespace=NS)
    finally:
        other.close()
    assert first[0].id not in [r.id for r in listed.list(namespace=NS, limit=5)]
    assert listed.list(namespace=NS, limit=5) == _every_match(listed, {}, False)[:5]
