"""Which stored memories a new one is compared with, found before any judgement is made.

Settling a new memory (``settle.py``) compares it with its nearest active long-term memories
and with the memories of the same slot. Finding them is most of a write's cost, so the search
is narrowed before anything is read: every item of a batch is searched in one Chroma query,
hits too far off to matter are dropped on the facts index (``field_index.py``), and only what
remains is read. With no LLM configured, a statement that announces no change and is not
checked for repeats is not searched for at all.
"""

from __future__ import annotations

import numpy as np

from ..language.keys import read
from ..language.retired import retired_spans
from ..language.slots import is_named
from ..model.records import MemoryRecord
from ..parts import EngineParts
from ..storage.namespace_store import NamespaceStore

_LONG_TERM = {"$and": [{"status": "active"}, {"tier": {"$in": ["episodic", "semantic"]}}]}
_NEIGHBOURS = 4  # nearest stored memories a new one is compared with
# Nearest of any status searched for them, before keeping the active long-term ones. However few
# are asked for, Chroma searches the graph max(ef_search, n) deep, and the collections search 200
# deep (``storage/store.py``): a store where small talk is said again and again ("Thanks for
# telling me." sixty times) trapped a 16-deep search among the copies, and in the lifecycle history
# (§9) missed the two memories 0.77 from "I'm no longer allergic to peanuts.".
_SEARCHED = 16
# Below the model's ``neighbours_rules`` / ``neighbours_llm`` cosines (embedding/calibration.py) nothing
# is compared (slots are found apart): the rules need close meaning, the LLM judge is shown looser
# neighbours ("I work at Acme" / "these days I'm at Initech": 0.31 with MiniLM).


class NeighbourFinder:
    """Finds, for each new memory of a store call, the stored ones it may repeat or supersede."""

    def __init__(self, parts: EngineParts) -> None:
        self._parts = parts

    @property
    def floor(self) -> float:
        """The cosine below which nothing is compared: the rules need close meaning, an LLM judge less."""
        cosines = self._parts.cosines
        return cosines.neighbours_rules if self._parts.llm is None else cosines.neighbours_llm

    def search_needed(self, record: MemoryRecord, dedup: bool) -> bool:
        """Whether to search the store for ``record``'s neighbours by meaning.

        Repeats need it, and so do supersedes by meaning, which the rules only see with a change cue;
        slot-mates are found by their slot. A bulk import without dedup thus searches only for
        the few items that announce a change.
        """
        return dedup or self._parts.llm is not None or read(record.content).change_cue

    def stored(
        self,
        handle: NamespaceStore,
        records: list[MemoryRecord],
        vectors: np.ndarray,
        searched: list[int],
        slotted: list[int],
        *,
        dedup: bool,
    ) -> dict[int, list[tuple[MemoryRecord, float]]]:
        """Stored active long-term memories close to each ``searched`` record and in the slot of each ``slotted`` one.

        All of a batch's searches go to Chroma as one query and one read. The search is unfiltered
        (a ``where`` makes Chroma scan metadata: ~9 ms a query at 5k memories, growing with the
        store) and filtered here on the facts index; only when every hit was filtered away while
        still close enough to matter is a filtered query made. Slot-mates come from the facts
        index, caught up first with other writers.
        """
        floor = self.floor
        hits: dict[int, list[tuple[str, float]]] = {}
        for n, found in zip(searched, handle.query_many(vectors[searched], n=_SEARCHED)):
            hits[n] = _long_term(handle, found, floor)
            if len(hits[n]) < _NEIGHBOURS and len(found) == _SEARCHED and found[-1][1] >= floor:
                hits[n] = [h for h in handle.query(vectors[n], n=_NEIGHBOURS, where=_LONG_TERM) if h[1] >= floor]
            hits[n] = _that_matter(handle, hits[n], records[n], self._cutoff(records[n], dedup))
        if slotted:
            handle.sync_indexes(force=True)
        facts = handle.facts
        mates = {n: facts.slot_mates(str(records[n].slot), records[n].entities, limit=_NEIGHBOURS) for n in slotted}
        wanted = {i for found in hits.values() for i, _ in found} | {i for ids in mates.values() for i in ids}
        now = self._parts.clock.now()
        # An expired memory is hidden from recall for good, and a pinned one is its writer's data (a key-value
        # store's item): what repeats or updates either stays a memory of its own.
        fetched = {r.id: r for r, _ in handle.get(list(wanted)) if not r.is_expired(now) and not r.pinned}
        out: dict[int, list[tuple[MemoryRecord, float]]] = {}
        for n in sorted({*searched, *slotted}):
            similarity = dict(hits.get(n, []))
            ids = dict.fromkeys([*similarity, *mates.get(n, [])])
            out[n] = [(fetched[i], similarity.get(i, 0.0)) for i in ids if i in fetched]
        return out

    def _cutoff(self, record: MemoryRecord, dedup: bool) -> float:
        """The cosine from which a stored neighbour may be repeated or superseded by ``record``.

        An LLM judge is shown everything above the floor. The rules repeat at the ``dedup`` cosine
        and supersede by meaning only with a change cue, at ``update``; a neighbour further
        off matters to them only as an exact repeat, a slot-mate or the other side of a reversal
        (``_that_matter``).
        """
        if self._parts.llm is not None:
            return self.floor
        bounds = [self._parts.cosines.dedup] if dedup else []
        if read(record.content).change_cue:
            bounds.append(self._parts.cosines.update)
        return min(bounds, default=float("inf"))


def _long_term(handle: NamespaceStore, found: list[tuple[str, float]], floor: float) -> list[tuple[str, float]]:
    """The first ``_NEIGHBOURS`` hits at ``floor`` or closer that are active long-term (or not known here yet)."""
    facts = handle.facts.lookup([i for i, _ in found])
    kept = [(i, s) for i, s in found if s >= floor and (i not in facts or facts[i].long_term_active)]
    return kept[:_NEIGHBOURS]


def _that_matter(
    handle: NamespaceStore, hits: list[tuple[str, float]], record: MemoryRecord, cutoff: float
) -> list[tuple[str, float]]:
    """The hits ``record`` can repeat or supersede, judged on the facts index before any is read.

    Below ``cutoff`` only an exact repeat (the same normalised text), a memory of the same slot,
    or the other side of a reversal (the same content words, the negation on one side only: "I
    don't eat meat" / "I eat meat again") can, or any of them when ``record`` says something is gone
    ("from Jenkins to …", ``retired.retired_spans``), and a change announced next to a slot on either
    side (``supersede.rule_verdict``: the slot names the question both answer); hits not in the facts index yet (another
    writer's, a moment ago) are kept to be read. Most writes then read no neighbour at all.
    """
    facts = handle.facts.lookup([i for i, s in hits if s < cutoff])
    if not facts:
        return hits
    reading = read(record.content)
    if reading.change_cue and retired_spans(record.content):
        return hits  # "Sold the Corolla": the one that holds it is read to be told (``retired.retires``)
    keys = reading.keys
    key, negation, about = keys.text_key, keys.negated, keys.reversal_key
    return [
        (i, s)
        for i, s in hits
        if s >= cutoff
        or (f := facts.get(i)) is None
        or f.text_key == key
        or (about and f.reversal_key == about and f.negated != negation)
        or (record.slot and f.slot == record.slot)
        or (reading.change_cue and (is_named(record.slot) or is_named(f.slot)))
    ]


__all__ = ["NeighbourFinder"]
