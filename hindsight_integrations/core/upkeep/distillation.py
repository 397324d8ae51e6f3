"""One statement for a cluster of memories that say one thing: the distil half of consolidation.

Offline the statement is extractive: the words of the member that says what every member says,
closest to the cluster's centroid (a paraphrase offline would risk changing a value); its kind is the members' dominant
kind (a preference stays a preference) and its importance the highest of theirs. With an LLM
configured, one call per cluster gives the statement, kind and importance
(``LLMClient.distil_fact``, retried by tenacity on transient errors); any failure or unusable
reply falls back to the extractive statement, and so does a reply naming a value none of the
members has (a model must not invent a number or a name). The model may also answer that the
members are not one fact: the cluster is then left alone.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from ..errors import LLMError
from ..language.sameness import content_words
from ..language.values import values_of
from ..llm import LLMClient
from ..model.records import Kind, MemoryRecord
from ..redaction import describe_error

log = logging.getLogger("hindsight.consolidation")

# On a tie, the kind that lasts: what the user asked for, then corrections, facts, context.
_KIND_ORDER = (Kind.PREFERENCE, Kind.CORRECTION, Kind.FACT, Kind.CONTEXT, Kind.EVENT)


@dataclass(frozen=True)
class Distilled:
    """The statement a cluster is consolidated into, and who wrote it."""

    content: str
    kind: Kind
    importance: float
    by: Literal["rules", "llm"]


def statements(record: MemoryRecord) -> int:
    """How many times a memory was said: itself and every repeat merged into it."""
    return 1 + sum(_entry_statements(entry) for entry in record.sources)


def _entry_statements(entry: dict[str, Any]) -> int:
    return 1 + sum(_entry_statements(e) for e in entry.get("sources") or [] if isinstance(e, dict))


def dominant_kind(members: Sequence[MemoryRecord]) -> Kind:
    """The kind most of the members' statements have; on a tie the one that lasts longest."""
    counts: Counter[Kind] = Counter()
    for member in members:
        counts[member.kind] += statements(member)
    return max(counts, key=lambda kind: (counts[kind], -_KIND_ORDER.index(kind) if kind in _KIND_ORDER else -99))


def extractive(members: Sequence[MemoryRecord], unit: np.ndarray) -> Distilled:
    """The statement every member makes, in the words of the member closest to the centroid.

    Among the members whose content words all the others contain (the cluster's core: what
    everyone said), the one closest to the centroid of ``unit`` (the members' unit vectors, in
    order, each weighted by its statements); a detail only some members added is not promoted.
    """
    weights = np.asarray([statements(m) for m in members], dtype=np.float32)
    closeness = unit @ (unit * weights[:, None]).sum(axis=0)
    words = [content_words(m.content) for m in members]
    common = [n for n, mine in enumerate(words) if all(mine <= other for other in words)]
    closest = max(common or range(len(members)), key=lambda n: float(closeness[n]))
    return Distilled(
        content=members[closest].content,
        kind=dominant_kind(members),
        importance=max(m.importance for m in members),
        by="rules",
    )


class Distiller:
    """Distils clusters: by the LLM when configured (and asked), else, or when it fails, by rules."""

    def __init__(self, llm: LLMClient | None) -> None:
        self._llm = llm

    def distil(self, members: Sequence[MemoryRecord], unit: np.ndarray, *, use_llm: bool = True) -> Distilled | None:
        """The statement for ``members``; None when the LLM judged they do not state one fact."""
        rules = extractive(members, unit)
        if self._llm is None or not use_llm:
            return rules
        try:
            fact = self._llm.distil_fact([m.content for m in members])
        except LLMError as exc:
            log.warning("LLM consolidation failed, distilling by rules: %s", describe_error(exc))
            return rules
        if fact is None:
            log.info("the LLM found %d clustered memories not to state one fact; left as they are", len(members))
            return None
        known = frozenset().union(*(values_of(m.content) for m in members))
        invented = values_of(fact.content) - known
        if invented:
            log.warning("LLM consolidation named %d values no member has; distilling by rules", len(invented))
            return rules
        return Distilled(content=fact.content, kind=Kind(fact.kind), importance=fact.importance, by="llm")


__all__ = ["Distilled", "Distiller", "dominant_kind", "extractive", "statements"]
