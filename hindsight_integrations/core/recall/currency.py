"""Which of several recalled memories holds the current value, when the write path left them all current.

The write path makes an old value history when it can tell that a new statement replaces it
(``write/supersede.py``); when it cannot ("Our CI runs on Jenkins." then "Now our CI uses
GitHub Actions instead of Jenkins.": no slot names CI), both stay active and the older,
lexically closer to "What does our CI run on?", ranks first. At recall the question has picked
both, so what is left to tell is whether the later one announces a change of what the earlier
one says: it carries a change cue, is about the same subject, names a thing the earlier one
names (Jenkins) that few other hits name, or sets the same slot, and is as close to it as the
write path asks of a slot on one side (``current_first``). Sharing only words is not enough:
"I live in Paris now." does not change "My brother lives in Lyon.". Then the later one is
moved just above the earlier one, and the context block marks the earlier one as changed
since, whatever their scores.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from datetime import date
from functools import cache, lru_cache

import numpy as np

from ..language.keys import read
from ..language.rules import clear_with_packs, every
from ..language.sameness import compare
from ..language.speakers import speaker_of, without_speaker
from ..language.values import values_of
from ..model.records import MemoryRecord
from ..model.results import RecallHit


def _changes(earlier: MemoryRecord, later: MemoryRecord, common: Callable[[], frozenset[str]]) -> bool:
    """Whether ``later`` announces a change of what ``earlier`` says (see the module docstring).

    ``common`` is read only for a pair that gets as far as comparing the values it names.
    """
    if later.occurred_at <= earlier.occurred_at or not read(later.content).change_cue:
        return False
    both_named = _named_values(earlier.content) & _named_values(later.content)
    if not (earlier.slot and later.slot) and not both_named:
        return False  # the cheap test first: without ``common`` taken out, they still name nothing alike
    same = compare(earlier, later)
    if not same.comparable or same.disjoint_entities or same.different_subjects:
        return False
    if earlier.slot and later.slot and not same.different_slots:
        return True
    # a shared value holds even when the slots read differently ("I drive a silver Corolla to the
    # office." is a car, "Sold the Corolla, I take the train to work now." a commute)
    shared = common()
    return any(not any(p.startswith(value) or value.startswith(p) for p in shared) for value in both_named)


@lru_cache(maxsize=1)
def _places_in_chinese() -> frozenset[str]:
    """The places a Chinese text names with no capital to show it (云南 → yunnan: the zh pack's ``cities``)."""
    return frozenset(every().mapping("cities").values())


@lru_cache(maxsize=4096)
def _named_values(content: str) -> frozenset[str]:
    """The things a memory names (Jenkins, a Corolla, 38, 云南): with a capital or a digit, or a place.

    Not the time words ("yesterday") every chat turn has; who the hits are by or about is taken
    out by the caller (``_common``: people, and what starts one of their names: "Mel").
    """
    text = without_speaker(content)
    named = {w.lower() for w in text.split() if w[:1].isupper() or any(c.isdigit() for c in w)}
    places = _places_in_chinese()
    return frozenset(
        value
        for value in values_of(text)
        if any(c.isdigit() for c in value) or value in places or any(value in word for word in named)
    )


def _common(hits: Sequence[RecallHit]) -> frozenset[str]:
    """Who the hits are by or about (speakers, entities), and any value three or more of them name.

    A value one pair shares is what changed (Jenkins); one that half a chat names is whom it
    is said to ("Thanks, Caroline!") or what it is about anyway (LGBTQ), not a change.
    """
    found = {e.lower() for hit in hits for e in hit.record.entities}
    found |= {name.lower() for hit in hits if (name := speaker_of(hit.record.content))}
    counts = Counter(v for hit in hits for v in values_of(without_speaker(hit.record.content)))
    return frozenset(found | {v for v, n in counts.items() if n >= 3})


Closeness = Callable[[str, str], float]
"""The cosine between two memories' own vectors, by id."""


def closeness_by_vectors(
    vectors: Callable[[list[str]], Mapping[str, Sequence[float] | np.ndarray]], hits: Sequence[RecallHit]
) -> Closeness:
    """Cosines between the hits' own vectors (``vectors`` reads them), read once, when a pair is first asked about."""
    unit: dict[str, np.ndarray] = {}

    def cosine(a: str, b: str) -> float:
        if not unit:
            for memory_id, vector in vectors([h.record.id for h in hits]).items():
                array = np.asarray(vector, dtype=np.float32)
                unit[memory_id] = array / (float(np.linalg.norm(array)) or 1.0)
        if a not in unit or b not in unit:
            return 0.0
        return float(unit[a] @ unit[b])

    return cosine


def current_first(
    hits: Sequence[RecallHit], closeness: Closeness | None = None, *, floor: float = 0.0
) -> tuple[list[RecallHit], dict[str, date]]:
    """``hits`` with each memory that announces a change ranked just above the ones it changes.

    Also returns, for each memory changed since, the date of the memory that changed it (the
    context block says so). A pair must also be ``floor`` close by ``closeness`` (the engine
    passes the write path's own bar for a slot on one side, halfway between its neighbour floor
    and its update cosine: MiniLM 0.675): in a chat, a later turn naming the same thing with
    "now" in it is mostly about something else. Only memories both returned for the question
    are compared: a few dozen pairs at most.
    """
    ordered = list(hits)
    changed: dict[str, date] = {}
    announcing = [hit for hit in ordered if read(hit.record.content).change_cue]
    if not announcing:  # most recalls: nothing here says anything changed
        return ordered, changed
    common = cache(lambda: _common(hits))  # every hit's values: read only when a pair gets that far
    for later in announcing:
        changes = []
        for hit in ordered:
            if hit is later or hit.record.occurred_at >= later.record.occurred_at:
                continue
            if closeness is not None and closeness(hit.record.id, later.record.id) < floor:
                continue
            if _changes(hit.record, later.record, common):
                changes.append(hit)
        for hit in changes:
            changed.setdefault(hit.record.id, later.record.occurred_at.date())
        position = _position(ordered, later)
        above = [n for hit in changes if (n := _position(ordered, hit)) < position]
        if above:
            ordered.insert(min(above), ordered.pop(position))
    return _scores_in_order(ordered), changed


def _scores_in_order(hits: list[RecallHit]) -> list[RecallHit]:
    """A memory moved above the ones it changes takes the best of their scores: scores fall with the order.

    A caller that sorts or cuts by score (LangGraph's store search, a client's own threshold)
    then keeps the current value where recall put it.
    """
    for n in range(len(hits) - 2, -1, -1):
        if hits[n].score < hits[n + 1].score:
            hits[n] = hits[n].model_copy(update={"score": hits[n + 1].score})
    return hits


def _position(hits: Sequence[RecallHit], hit: RecallHit) -> int:
    """Where ``hit`` itself is in ``hits``: by identity, since comparing hits field by field is slow."""
    return next(n for n, other in enumerate(hits) if other is hit)


clear_with_packs(_places_in_chinese, _named_values)

__all__ = ["Closeness", "closeness_by_vectors", "current_first"]
