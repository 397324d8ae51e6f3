"""The relevance floors: whether anything a recall found is about the question at all.

A store always has *some* nearest memory; the floors decide when the nearest is still not
close enough to return (the off-topic questions of the benchmarks). Two numbers are read from
the best candidates, their raw closeness and, for models whose cosines crowd together, a
centred similarity (``embedding/centring.py``); each is compared with the model's calibrated
floor (``EngineParts.cosines``).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence

import numpy as np

from ..embedding.centring import Centring
from ..parts import EngineParts
from ..storage.namespace_store import NamespaceStore, Vector
from .ranking import Ranked

_CENTRED_CHECKED = 20  # best-ranked candidates the centred floor looks at


def best_closeness(ranked: Sequence[Ranked], inherited: dict[str, float]) -> float | None:
    """The closest candidate's similarity to the query, own text or blend (``closeness``); None without one.

    A memory that replaced one close to the question counts with that closeness (``inherited``):
    "Where do I work?" is about the job, whichever wording holds its value now.
    """
    return max((max(r.closeness, inherited.get(r.id, 0.0)) for r in ranked), default=None)


def best_centred(ranked: Sequence[Ranked], handle: NamespaceStore, query: Vector, parts: EngineParts) -> float | None:
    """The best candidates' highest centred similarity (``embedding/centring.py``), or None where none applies.

    Its own vector and its context vector both count, as in ranking. None for a model without a
    centred floor, and without a vector copy in memory (``HINDSIGHT_COPY_VECTORS=false``).
    """
    centring = Centring.for_model(parts.embedder.name) if parts.cosines.centred_floor is not None else None
    if centring is None or not ranked or handle.vector_copy is None:
        return None
    ids = [r.id for r in ranked[:_CENTRED_CHECKED]]
    found = [*handle.vector_copy.lookup(ids).values()]
    if handle.context_copy is not None:
        found += handle.context_copy.lookup(ids).values()
    if not found:
        return None
    return float(centring.similarities(np.asarray(query), np.stack(found)).max())


def passes_floors(parts: EngineParts, closeness: float | None, centred: Callable[[], float | None]) -> bool:
    """Whether a recall's best candidates clear the model's floors (``centred`` is asked only when it matters)."""
    floors = parts.cosines
    return clears_floors(closeness, centred, floor=floors.relevance_floor, centred_floor=floors.centred_floor)


def ranked_passes(
    parts: EngineParts,
    ranked: Sequence[Ranked],
    inherited: dict[str, float],
    handle: NamespaceStore,
    query: Vector,
    without: Collection[str] = (),
) -> bool:
    """Whether the best of ``ranked`` (leaving out ``without``) clear the model's floors, as a recall asks."""
    kept = [r for r in ranked if r.id not in without] if without else ranked
    return passes_floors(parts, best_closeness(kept, inherited), lambda: best_centred(kept, handle, query, parts))


def clears_floors(
    closeness: float | None, centred: Callable[[], float | None], *, floor: float, centred_floor: float | None
) -> bool:
    """Whether a question whose best candidates measure ``closeness`` / ``centred()`` gets anything back.

    ``centred`` is called only when the raw floor is passed and there is a centred floor; a
    centred similarity that does not apply (None) passes.
    """
    if floor > 0 and (closeness is None or closeness < floor):
        return False
    if centred_floor is None:
        return True
    best = centred()
    return best is None or best >= centred_floor


__all__ = ["best_centred", "best_closeness", "clears_floors", "passes_floors", "ranked_passes"]
