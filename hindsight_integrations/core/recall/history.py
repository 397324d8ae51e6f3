"""What an older value hands on to the memory that replaced it, when the search finds the older one."""

from __future__ import annotations

import numpy as np

from ..storage.namespace_store import NamespaceStore, Vector

_CHAIN = 8  # supersedes followed from a history hit to the memory current now, at most


def inherit_from_history(
    handle: NamespaceStore, dense: dict[str, float], query: Vector, context_weight: float
) -> dict[str, float]:
    """Give the memory current now the similarity of each older value of it the search found.

    "Where do I work?" is close to "I work at Zalando" (0.28) and far from "I left Feedzai and
    joined Farfetch" (0.15), which superseded it through "I started at Feedzai". History is not
    returned without ``include_history``, so the question would get the current value only if
    it matched it by itself, or nothing at all below the relevance floor. A question close to
    any earlier value of an attribute is about that attribute, and what answers it is the value
    current now (docs/architecture.md, "Recall"). Returns the similarities handed on, by memory:
    the relevance floor counts them as they are, since ranking mixes them with the memory's own
    context similarity, which its history does not hand on (context vectors frame one wording).
    The floor does count an older value's own closeness as a candidate would have it (its own
    vector mixed with its undated context vector, ``ranking.rank``): "I ride a blue Vespa scooter
    to work." is 0.16 from "How do I get to work?" dated and 0.31 undated, and the e-bike that
    replaced it 0.06 either way, so without it the question got nothing.
    """
    facts = handle.facts
    found = facts.lookup(list(dense))
    history = [i for i, f in found.items() if f.status == "superseded" and f.superseded_by]
    if not history:  # the default search leaves history out: nothing to hand on
        return {}
    framed = handle.vectors(history, context=True) if history and context_weight > 0 else {}
    q = np.asarray(query, dtype=np.float32)
    handed: dict[str, float] = {}
    for memory_id, similarity in list(dense.items()):
        current = found.get(memory_id)
        if memory_id in framed:
            blend = (1 - context_weight) * similarity + context_weight * float(np.asarray(framed[memory_id]) @ q)
            similarity = max(similarity, blend)
        steps = 0
        while current is not None and current.status == "superseded" and current.superseded_by and steps < _CHAIN:
            successor = current.superseded_by
            if similarity > dense.get(successor, -1.0):
                dense[successor] = handed[successor] = similarity
            current = facts.lookup([successor]).get(successor)
            steps += 1
    return handed


__all__ = ["inherit_from_history"]
