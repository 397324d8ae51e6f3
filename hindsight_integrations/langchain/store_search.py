"""``HindsightStore.search(query=...)``'s ranking: every item the filter keeps, by similarity to the query.

LangGraph's stores filter first and rank what is left (``InMemoryStore``). Recall returns at most
the server's ``max_top_k`` memories, the nearest, and a search ``filter`` is on the item's value, which no recall
filter can express; so a filter applied to that one page lost every item it keeps that ranks below
it ("the only match ranks 250th" returned nothing).

One recall still answers nearly every search: its page (as large as the server allows, under a
filter) is complete when it came back short, and enough when the filter keeps ``wanted`` of it.
Otherwise the items under the prefix the filter can keep are listed (every item, unless the filter
names text fields: ``store_fields.py``), the filter applied, and the items it keeps that
the page did not score are scored by recalls narrowed to them by their keys (metadata ``lg_key``
``{"$in": [...]}`` within one namespace, ``lg_ns``), each asking for every memory those keys hold,
so each comes back whole: a recall per ~``max_top_k`` kept items, whenever they were written. (It
was a recall per slice of the items' times, and a recall per item where many shared one moment:
400 kept items put in one moment took 401 recalls, 10.8 s.) A server that refuses ``$in`` (older,
or set to smaller filters) scores them a key at a time, as before.

``max_top_k`` is what the server announced at connect (``MemoryClient.max_top_k``): a server set to
a lower one (``HINDSIGHT_MAX_TOP_K``) refuses a recall asking for more, and every search failed so.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from ..core.model.limits import MAX_TOKENS
from ..core.model.records import MemoryRecord
from ..mcp.errors import MemoryToolInputError

MAX_TOP_K = 200
"""The most memories one recall returns when the server does not say (an older one): the default ``max_top_k``."""
_KEY_BYTES = 4096  # the keys one recall names, as JSON: half the server's default filter limit (8 KB)

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
        self._touch_known = True  # False once the server refused ``touch``, which it predates

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
        scored = {record.id for record, _ in page}
        items = self._every(self._filters)
        unscored = [r for r in items if r.id not in scored and self._keep(r)]
        more = self._score(unscored, Counter(_item_id(r) for r in items))
        rest = [(r, more[r.id]) for r in unscored if r.id in more]
        return sorted([*kept, *rest], key=lambda pair: pair[1], reverse=True)

    def _recall(self, filters: Mapping[str, Any], top_k: int) -> Scored:
        """Recall's hits for ``filters`` with their cosine, most similar first.

        A store's read is not recall's use of a memory (``HindsightStore``'s module doc): it asks
        for ``touch=False``, except of a server that predates ``touch`` and refuses it.
        """
        arguments: dict[str, Any] = {
            "top_k": top_k,
            "filters": dict(filters),
            "token_budget": MAX_TOKENS,  # the context block is unused: no budget may cut the page short
            "weights": BY_SIMILARITY,
        }
        try:
            result = self._client.recall(self._query, **arguments, **({"touch": False} if self._touch_known else {}))
        except MemoryToolInputError as exc:
            if exc.field != "touch" or not self._touch_known:
                raise
            self._touch_known = False
            result = self._client.recall(self._query, **arguments)
        # Packing may move a memory announcing a change above others: the order is the similarity's.
        return sorted(((h.record, h.similarity) for h in result.hits), key=lambda pair: pair[1], reverse=True)

    def _score(self, wanted: list[MemoryRecord], held: Counter[tuple[str, str]]) -> dict[str, float]:
        """The cosine of each ``wanted`` record, by recalls of its keys; ``held``: memories per (namespace, key).

        A key a grouped recall missed, or a server refused to group, is recalled on its own; a
        record gone meanwhile has no score.
        """
        ids = {r.id for r in wanted}
        scores: dict[str, float] = {}
        for namespace, keys in self._chunks(wanted, held):
            try:
                scores.update((r.id, s) for r, s in self._keys(namespace, keys, held) if r.id in ids)
            except MemoryToolInputError as exc:
                if len(keys) == 1 or not exc.field.startswith("filters"):
                    raise
        for namespace, key in dict.fromkeys(_item_id(r) for r in wanted if r.id not in scores):
            scores.update((r.id, s) for r, s in self._keys(namespace, [key], held, every=True) if r.id in ids)
        return scores

    def _keys(self, namespace: str, keys: list[str], held: Counter[tuple[str, str]], *, every: bool = False) -> Scored:
        """Every memory of ``keys`` in ``namespace``, scored: recall filters narrowed to them, asking for all.

        ``held`` counts the memories listed, which a narrowed listing (``store_fields.py``) may not
        all be: a key a grouped recall missed is asked for ``every`` memory a recall returns.
        """
        narrowed = {
            **self._filters["metadata"],
            "lg_ns": namespace,
            "lg_key": keys[0] if len(keys) == 1 else {"$in": keys},
        }
        wanted = self._max_top_k if every else sum(held[namespace, key] for key in keys)
        top_k = min(self._max_top_k, max(1, wanted))
        return self._recall({**self._filters, "metadata": narrowed}, top_k)

    def _chunks(self, wanted: list[MemoryRecord], held: Counter[tuple[str, str]]) -> Iterator[tuple[str, list[str]]]:
        """The keys of ``wanted`` by namespace, in groups one recall returns whole (at most ``max_top_k`` memories)."""
        by_namespace: dict[str, dict[str, None]] = {}
        for record in wanted:
            namespace, key = _item_id(record)
            by_namespace.setdefault(namespace, {})[key] = None
        for namespace, keys in by_namespace.items():
            chunk: list[str] = []
            memories = size = 0
            for key in keys:
                count, length = held[namespace, key], len(json.dumps(key)) + 2
                if chunk and (memories + count > self._max_top_k or size + length > _KEY_BYTES):
                    yield namespace, chunk
                    chunk, memories, size = [], 0, 0
                chunk.append(key)
                memories, size = memories + count, size + length
            if chunk:
                yield namespace, chunk


__all__ = ["BY_SIMILARITY", "MAX_TOP_K", "SimilarItems"]
