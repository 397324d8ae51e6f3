"""One page of ``MemoryEngine.list``: newest first, read from Chroma only for the page.

The list is every record matching the filter, ordered by ``occurred_at`` newest first, records
that share a time left in Chroma's own order (what ``get`` returns: the order records were first
written). Reading all of them to keep ten cost seconds at 5k–100k memories (the ``list_memories``
tool, the viewer's pages, the LangGraph store's search without a query). Unless the filter is on
user metadata, the records are picked and ordered on the facts the namespace keeps in memory
(``field_index.py``), once they are known to be Chroma's: as many records, and nothing newer
than the watermark but this process's own writes (else they are synced first). Only the page is
then read, with the records that share its first or last time (their ids only, for Chroma's
order among them), and each is checked again on what Chroma holds now: one changed or deleted
by another process meanwhile makes the indexes sync and the page be picked again, and failing
that the whole list is read as before. A filter on user metadata, which the facts do not keep,
asks Chroma for the ids that have it (ids only, on those keys only: a fifth of the cost of the
whole filter's, measured at 20k memories), in Chroma's order, and picks among them on the facts.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any

from ..model.records import MemoryRecord, unpack
from ..recall.filters import RecallFilters, bounded_where
from .chroma_reads import record_fields, records_of
from .namespace_store import NamespaceStore

_PICKS = 2  # pickings from the facts before the whole list is read: the first, and one after a sync
Timed = tuple[str, float]  # (memory id, occurred_at as epoch seconds)


def newest_first(
    handle: NamespaceStore, filters: RecallFilters, *, include_history: bool, now: datetime, limit: int, offset: int
) -> list[MemoryRecord]:
    """The records matching ``filters``, newest first, ``limit`` of them after the first ``offset``."""
    where = filters.where(include_history=include_history, now=now)  # refused here if too large for Chroma
    matches = filters.matcher(include_history=include_history, now=now)
    on_facts = filters.model_copy(update={"metadata": None}).attribute_matcher(include_history=include_history, now=now)
    on_metadata = [c for c in filters.clauses(include_history=include_history, now=now) if _user_metadata(c)]
    for _ in range(_PICKS):
        if handle.facts_current():
            found = _by_facts(handle, on_facts, on_metadata, matches, limit, offset)
            if found is not None:
                return found
        handle.sync_indexes(force=True)
    return _read_all(handle, where, limit, offset)


def _read_all(handle: NamespaceStore, where: dict[str, Any], limit: int, offset: int) -> list[MemoryRecord]:
    """Every matching record read and sorted: what the page is when the indexes cannot be trusted for it."""
    records = handle.find(where)
    records.sort(key=lambda r: r.occurred_at, reverse=True)
    return records[offset : offset + limit]


def _by_facts(
    handle: NamespaceStore,
    on_facts: Callable[[object], bool],
    on_metadata: list[dict[str, Any]],
    matches: Callable[[Any], bool],
    limit: int,
    offset: int,
) -> list[MemoryRecord] | None:
    """The page picked on the in-memory facts and read from Chroma; None if Chroma no longer agrees with them."""
    timed = handle.facts.matching(on_facts)
    if on_metadata:  # the facts keep no user metadata: Chroma's ids that have it, in Chroma's order (its ties' order)
        times = dict(timed)
        held = handle.collection.get(where=bounded_where(_joined(on_metadata)), include=[])["ids"]
        timed = [(i, times[i]) for i in held if i in times]
    timed.sort(key=_time, reverse=True)
    if offset >= len(timed):
        return []
    end = min(offset + limit, len(timed))
    if on_metadata:  # in Chroma's order already
        return _checked_page(handle, dict(timed[offset:end]), matches)
    start, stop = _tied_bounds(timed, offset, end)
    window = timed[start:stop]
    if len(window) > end - offset:  # records share the page's first or last time: Chroma's order decides
        held = handle.collection.get(ids=[i for i, _ in window], include=[])["ids"]
        if len(held) < len(window):
            return None  # deleted by another process since it was indexed
        times = dict(window)
        window = sorted(((i, times[i]) for i in held), key=_time, reverse=True)  # get answers in Chroma's order
    wanted = dict(window[offset - start : end - start])
    return _checked_page(handle, wanted, matches)


def _tied_bounds(timed: list[Timed], offset: int, end: int) -> tuple[int, int]:
    """The slice of ``timed`` holding ``[offset, end)`` and every record sharing its first or last time."""
    start, stop = offset, end
    while start > 0 and timed[start - 1][1] == timed[offset][1]:
        start -= 1
    while stop < len(timed) and timed[stop][1] == timed[end - 1][1]:
        stop += 1
    return start, stop


def _checked_page(
    handle: NamespaceStore, wanted: dict[str, float], matches: Callable[[Any], bool]
) -> list[MemoryRecord] | None:
    """The records of ``wanted`` (id → the time it was picked by), newest first, if Chroma holds each as picked.

    Records sharing a time stay in the order ``get`` gives them: Chroma's own, whatever the order the ids were asked in.
    """
    got = handle.collection.get(ids=list(wanted), include=record_fields(False))
    flats = {i: unpack(d, m) for i, d, m in zip(got["ids"], got["documents"], got["metadatas"])}
    if len(flats) < len(wanted) or any(not matches(f) or f.get("occurred_at") != wanted[i] for i, f in flats.items()):
        return None
    records = [record for record, _ in records_of(got, False)]
    records.sort(key=lambda r: wanted[r.id], reverse=True)
    return records


def _user_metadata(clause: dict[str, Any]) -> bool:
    return next(iter(clause)).startswith("m.")


def _joined(clauses: list[dict[str, Any]]) -> dict[str, Any]:
    return clauses[0] if len(clauses) == 1 else {"$and": clauses}


def _time(item: Timed) -> float:
    return item[1]


__all__ = ["newest_first"]
