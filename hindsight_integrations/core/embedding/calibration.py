"""The cosine thresholds of each embedding model: one model's 0.9 is another's 0.98.

Every place the engine compares a cosine with a fixed number (a repeat, a supersession by
meaning, the neighbours a write looks at, a periodic merge, a consolidation cluster, the
relevance floor) means a point on a model's similarity scale, and models spread their
cosines differently: all-MiniLM-L6-v2 puts unrelated English sentences near 0.1 and
paraphrases near 0.7; multilingual-e5-small puts them near 0.75 and 0.93. So the thresholds
are a property of the model, and a setting the user gives explicitly wins over them.

MiniLM's values are the ones the engine was built and measured with (README "Results"). The
multilingual model's are MiniLM's mapped through the two models' similarity distributions: on
LoCoMo's development turns (374,920 pairs of stored texts, ``passage: `` against ``passage: ``),
the e5 cosine at the same quantile as MiniLM's threshold, rounded. The relevance floor compares
a question with stored texts (``query: `` against ``passage: ``), a different distribution, so it
was set from questions with answers (the lowest best match over LoCoMo's 383 and zh_dev's 68
questions, 0.76 for e5) rather than mapped; for e5 it lets most off-topic questions through, so
its second, centred floor does that work (``centring.py``: 0.25, under the lowest answered
question's 0.30 on both dev sets with room for a cross-lingual question about a memory that
mixes languages, "Which database does the order service use?" against "我们的订单服务用
PostgreSQL，缓存用 Redis。": 0.28). A model not listed gets MiniLM's values, which
``thresholds_for`` says in its result's ``calibrated``; set the thresholds for such a model.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any


@dataclass(frozen=True)
class Thresholds:
    """The cosines an engine compares with, for one embedding model.

    ``dedup``: a new text this close to a memory (with the same values) repeats it.
    ``update``: this close, with a change cue, a new statement supersedes an older one.
    ``neighbours_rules`` / ``neighbours_llm``: how close a memory must be to be looked at when a
    new one is written, without and with an LLM judge. ``merge``: upkeep joins active memories
    this close (with the same values). ``consolidation``: memories this close form a cluster.
    ``relevance_floor``: a question none of whose candidates is this close gets nothing.
    ``centred_floor``: nor does one none of whose best candidates is this close once the model's
    language component is taken out of both (``centring.py``; None: no such second floor).
    """

    dedup: float
    update: float
    neighbours_rules: float
    neighbours_llm: float
    merge: float
    consolidation: float
    relevance_floor: float
    centred_floor: float | None = None
    calibrated: bool = True


MINILM = Thresholds(
    dedup=0.92,
    update=0.85,
    neighbours_rules=0.5,
    neighbours_llm=0.3,
    merge=0.95,
    consolidation=0.75,
    relevance_floor=0.2,
)

MULTILINGUAL_E5_SMALL = Thresholds(
    dedup=0.98,  # MiniLM 0.92: quantile 0.99999 of stored-text pairs
    update=0.97,  # 0.85
    neighbours_rules=0.90,  # 0.5
    neighbours_llm=0.86,  # 0.3
    merge=0.983,  # 0.95
    consolidation=0.95,  # 0.75
    relevance_floor=0.76,
    centred_floor=0.25,
)

_BY_MODEL = {
    "all-MiniLM-L6-v2": MINILM,
    "multilingual-e5-small": MULTILINGUAL_E5_SMALL,
}

# The settings that override a model's threshold, by field of ``Thresholds``.
SETTING_OF = {
    "dedup": "dedup_threshold",
    "update": "update_threshold",
    "merge": "merge_threshold",
    "consolidation": "consolidation_threshold",
    "relevance_floor": "relevance_floor",
}


def thresholds_for(model: str, settings: Any = None) -> Thresholds:
    """The thresholds for the embedding model named ``model``, with those ``settings`` sets explicitly.

    A setting left as ``None`` takes the model's value; an unknown model takes MiniLM's and is
    marked uncalibrated.
    """
    known = _BY_MODEL.get(model)
    base = known or replace(MINILM, calibrated=False)
    if settings is None:
        return base
    set_here = {field: getattr(settings, name) for field, name in SETTING_OF.items()}
    given = {field: value for field, value in set_here.items() if value is not None}
    return replace(base, **given) if given else base


__all__ = ["MINILM", "MULTILINGUAL_E5_SMALL", "SETTING_OF", "Thresholds", "thresholds_for"]
