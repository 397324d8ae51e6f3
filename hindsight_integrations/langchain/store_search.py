"""``HindsightStore.search(query=...)``'s ranking: every item the filter keeps, by similarity to the query.

LangGraph's stores filter first and rank what is left (``InMemoryStore``). Recall returns at most
the server's ``max_top_k`` memories, the nearest, and a search ``filter`` is on the item's value, which no recall
filter can express; so a filter applied to that one page lost every item it keeps that ranks below
it ("the only match ranks 250th" returned nothing).

One recall still answers nearly every search: its page (as large as the server allows, under a
filter) is complete when it came back short, and enough when the filter keeps ``wanted`` of it.
Otherwise every item under the prefix is listed, the filter applied, and the items it keeps that
the page did not score are scored by recalls that each come back whole: narrowed to a slice of the
items' times (``occurred_at``, ``since``/``until``) that holds at most ``max_top_k`` items, or, where
more share a moment, to the one item (its namespace and key). A search that filters out most of
thousands of items costs a listing and a recall per slice of ~``SLICE`` items, not a recall per item.

``max_top_k`` is what the server announced at connect (``MemoryClient.max_top_k``): a server set to
a lower one (``HINDSIGHT_MAX_TOP_K``) refuses a recall asking for more, and every search failed so.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Callable, Mapping
from datetime import timedelta
from typing import Any

from ..core.model.limits import MAX_TOKENS
from ..core.model.records import MemoryRecord, to_epoch

MAX_TOP_K = 200
"""The most memories one recall returns when the server does not say (an older one): the default ``max_top_k``."""
SLICE = 150
"""Items a time slice starts with (fewer under a low ``max_top_k``): its margin may add neighbours, up to that."""
_PER_KEY = 10  # memories one key may hold: one, a few after a race between two writers
_MARGIN = timedelta(milliseconds=1)  # a slice's bounds reach past its items, so no rounding of times loses one

# What a LangGraph store's semantic search ranks by (InMemoryStore: the cosine of the item's
# embedding to the query's), not recall's fusion, whose min-max normalised BM25 gives full
# weight to the one item sharing a stray word ("user") with the query.
BY_SIMILARITY: dict[str, float | None] = {
    "similarity": 1.0,
    "recency": 0.0,
    "importance": 0.0,
    "access": 0.0,
    "dense": 1.0,
    "lexical": 0.0,
    "context": 0.0,
    "entity_boost": 0.0,
    "time_boost": 0.0,
    "neighbour_boost": 0.0,
}

Scored = list[tuple[MemoryRecord, float]]


def _item_id(record: MemoryRecord) -> tuple[str, str]:
    return record.metadata["lg_ns"], record.metadata["lg_key"]


class SimilarItems:
    """The items under one prefix that a filter keeps, ranked by cosine similarity to one query.

    ``filters`` are the store's recall filters for the prefix's indexed items, ``keep`` the
    search filter on an item's record, ``every`` lists every memory matching recall filters.
    """

    def __init__(
        self,
        client: Any,
        query: str,
        filters: dict[str, Any],
        keep: Callable[[MemoryRecord], bool],
        every: Callable[[dict[str, Any]], list[MemoryRecord]],
    ) -> None:
        self._client = client
        self._query = query
        self._filters = filters
        self._keep = keep
        self._every = every
        self._max_top_k = MAX_TOP_K

    def best(self, wanted: int, *, filtered: bool = True) -> Scored:
        """The kept items, best first: all of them, or at least ``wanted`` distinct keys when that many are kept.

        A ``filtered`` search asks the first recall for all it may return (a page of 200 costs about
        what one of 50 does): what the filter keeps anywhere in it is found without a listing.
        """
        self._max_top_k = self._client.max_top_k() or MAX_TOP_K
        top_k = self._max_top_k if filtered else min(self._max_top_k, max(wanted * 4, 50))
        page = self._recall(self._filters, top_k)
        kept = [(record, score) for record, score in page if self._keep(record)]
        if len(page) < top_k or len({_item_id(r) for r, _ in kept}) >= wanted:
            return kept
        scored = {record.id: score for record, score in page}
        items = sorted(self._every(self._filters), key=lambda r: to_epoch(r.occurred_at) or 0.0)
        unscored = {r.id for r in items if r.id not in scored and self._keep(r)}
        more = self._score(items, unscored)
        rest = [(r, more[r.id]) for r in items if r.id in more]
        return sorted([*kept, *rest], key=lambda pair: pair[1], reverse=True)

    def _recall(self, filters: Mapping[str, Any], top_k: int) -> Scored:
        """Recall's hits for ``filters`` with their cosine, most similar first."""
        result = self._client.recall(
            self._query,
            top_k=top_k,
            filters=dict(filters),
            token_budget=MAX_TOKENS,  # the context block is unused: no budget may cut the page short
            weights=BY_SIMILARITY,
            touch=False,  # a store's read is not recall's use of a memory (``HindsightStore``'s module doc)
        )
        # Packing may move a memory announcing a change above others: the order is the similarity's.
        return sorted(((h.record, h.similarity) for h in result.hits), key=lambda pair: pair[1], reverse=True)

    def _score(self, items: list[MemoryRecord], wanted: set[str]) -> dict[str, float]:
        """The cosine of each ``wanted`` id among ``items`` (sorted by time); one gone meanwhile has none."""
        times = [to_epoch(r.occurred_at) or 0.0 for r in items]
        scores: dict[str, float] = {}
        step = max(1, min(SLICE, self._max_top_k * 3 // 4))  # room for neighbours in the margin
        for start in range(0, len(items), step):
            chunk = items[start : start + step]
            if not any(r.id in wanted for r in chunk):
                continue
            since, until = chunk[0].occurred_at - _MARGIN, chunk[-1].occurred_at + _MARGIN
            inside = bisect_right(times, to_epoch(until) or 0.0) - bisect_left(times, to_epoch(since) or 0.0)
            if inside <= self._max_top_k:  # the slice comes back whole
                window = {**self._filters, "since": since.isoformat(), "until": until.isoformat()}
                scores.update((r.id, s) for r, s in self._recall(window, inside) if r.id in wanted)
            for record in chunk:  # written in one crowded moment, or missed by the slice's search
                if record.id in wanted and record.id not in scores:
                    one = self._recall(self._one(record), min(_PER_KEY, self._max_top_k))
                    scores.update((r.id, s) for r, s in one if r.id in wanted)
        return scores

    def _one(self, record: MemoryRecord) -> dict[str, Any]:
        """Recall filters narrowed to ``record``'s item (its namespace and key)."""
        namespace, key = _item_id(record)
        return {**self._filters, "metadata": {**self._filters["metadata"], "lg_ns": namespace, "lg_key": key}}


__all__ = ["BY_SIMILARITY", "MAX_TOP_K", "SimilarItems"]
