"""Whether a new memory updates a stored one, and which of the two is current (docs/architecture.md, "Writing").

A new memory is compared with its nearest active memories. It *updates* one when both set the
same subject/attribute slot (``slots.detect_slot``: where someone lives, works, their
phone, a project's database, a deadline...), or when the two are close in meaning and the new
one signals a change ("moved to", "no longer", "new", "again", 改成, 搬到, 不再...,
``slots.change_cue``) *and* says something else: a different value (``values.py``) or the
opposite ("no longer", "again"). A change that says the old one's value is gone updates it
whatever slots the two read ("Sold the Corolla, …", "migrated CI from Jenkins to …":
``retired.retires``). Memories about different entities (two speakers, two
projects) never update each other, and neither do close statements about different things
(other identifiers, other people's relatives: ``subjects.different_subjects``). With an LLM configured, the
candidates are judged by the model instead (``keep_old | keep_new | merge | keep_both``, one
call), and the rules take over whenever the call fails.

Time decides which is current, not arrival order: the one that *occurred* later stays active
and the other becomes history with ``valid_until`` = the newer one's time, so a fact dated
before the current one, arriving later, goes straight to history. An important memory
(importance ≥ 0.9 when written: upkeep's decay does not lower it, ``protected``) is never
overwritten by a low-trust source (tool output, an assistant
turn, a caller that marks itself untrusted): the contradiction is stored ``quarantined``
until someone accepts or rejects it.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from enum import Enum

from ..errors import LLMError
from ..language.keys import read
from ..language.retired import retires
from ..language.sameness import Comparison, can_repeat, compare, names_a_relative_new, reversals, share_a_topic
from ..language.slots import is_named
from ..llm import LLMClient
from ..model.records import MemoryRecord, Role, Status
from ..model.reserved import STATED_IMPORTANCE
from ..redaction import describe_error

log = logging.getLogger("hindsight.updates")

PROTECTED_IMPORTANCE = 0.9


class Verdict(str, Enum):
    """What to do with a stored memory and a new one about the same thing."""

    KEEP_OLD = "keep_old"  # the new one is wrong or outdated: it goes to history
    KEEP_NEW = "keep_new"  # the new one replaces the old (which one is current is decided by time)
    MERGE = "merge"  # the same fact: the new one reinforces the old
    KEEP_BOTH = "keep_both"  # different facts after all


@dataclass(frozen=True)
class Neighbour:
    """A stored (or same-batch) memory close to the new one, with their cosine similarity."""

    record: MemoryRecord
    similarity: float


def protected(record: MemoryRecord) -> bool:
    """Whether a low-trust write may not overwrite ``record``: important when written, whatever decay did since."""
    stated = record.metadata.get(STATED_IMPORTANCE)
    stated = float(stated) if isinstance(stated, (int, float)) else 0.0
    return max(record.importance, stated) >= PROTECTED_IMPORTANCE


def is_low_trust(record: MemoryRecord, *, trusted: bool) -> bool:
    """Tool output, assistant turns and callers that say so may not overwrite important memories."""
    return not trusted or record.role in (Role.TOOL, Role.ASSISTANT)


def rule_verdict(
    existing: MemoryRecord, new: MemoryRecord, similarity: float, threshold: float, related: float | None = None
) -> Verdict:
    """The offline judgement: an update when slots match, or close meaning plus a change cue.

    ``threshold`` is how close two statements must be for a change cue alone to make one update
    the other. When one of the two sets a slot a rule names (``slots.is_named``: not a generic
    "my X is" one), it names the question they answer: then being
    ``related`` is close enough if a value was replaced ("我的房租是每月三千二" → "房东涨价了，
    下个月起每月三千五", 0.955 with e5, whose ``threshold`` is 0.97). The engine passes halfway
    between the neighbour search's floor and ``threshold``: at the floor itself, "Lena: Actually,
    I have 2 kids, not 3." (0.53 with MiniLM) would update "Lena: My budget for the apartment is
    1200 euros a month.". And the two must share a term about their topic
    (``sameness.share_a_topic``: 每月 in the rent pair): one speaker's unrelated turns are 0.94
    apart with e5, "我要跳槽了…" would have replaced "哇谢谢！你去的是东京吗？".
    """
    same = compare(existing, new)
    if not same.comparable or existing.id == new.id:
        return Verdict.KEEP_BOTH
    if same.disjoint_entities:
        return Verdict.KEEP_BOTH  # about different people or projects
    if _retires(existing, new, same):
        return Verdict.KEEP_NEW  # "Sold the Corolla": what the old one holds is gone, whichever slot each sets
    if new.slot and existing.slot:
        return Verdict.KEEP_BOTH if same.different_slots else Verdict.KEEP_NEW
    if same.reversal:
        return Verdict.KEEP_NEW  # "I'm no longer allergic to peanuts": the same words, turned around
    if not read(new.content).change_cue or same.different_subjects:
        return Verdict.KEEP_BOTH
    only_old, only_new = same.differing_values
    replaced = bool(only_old and only_new)
    one_slot = (
        related is not None
        and (is_named(new.slot) or is_named(existing.slot))
        and similarity >= related
        and share_a_topic(existing, new)
    )
    if similarity < threshold and not (one_slot and replaced):
        return Verdict.KEEP_BOTH
    # "no matter" is no reversal: only the packs' negations and reversals turn a statement round
    changed = replaced or bool(same.flipped & reversals())
    return Verdict.KEEP_NEW if changed else Verdict.KEEP_BOTH


def _retires(existing: MemoryRecord, new: MemoryRecord, same: Comparison) -> bool:
    """Whether ``new`` announces that what ``existing`` holds is gone, about the same people (``retired.retires``).

    "I moved from Lyon to Paris." leaves "My brother lives in Lyon." alone: a relative on one side only.
    """
    if not read(new.content).change_cue or same.different_subjects:
        return False
    return bool(retires(existing.content, new.content)) and not names_a_relative_new(existing.content, new.content)


class UpdateJudge:
    """Decides, for one new memory, which neighbours it updates; the LLM when configured, else rules."""

    def __init__(self, llm: LLMClient | None, *, threshold: float, related: float | None = None) -> None:
        self._llm = llm
        self.threshold = threshold
        self.related = related

    def verdicts(self, new: MemoryRecord, neighbours: Sequence[Neighbour]) -> list[tuple[Neighbour, Verdict]]:
        """A verdict for every neighbour (``KEEP_BOTH`` for the unrelated)."""
        candidates = [n for n in neighbours if can_repeat(n.record) and n.record.id != new.id]
        if not candidates or not can_repeat(new):
            return []
        if self._llm is not None:
            try:
                judged = self._llm.judge_update(new.content, [n.record.content for n in candidates])
                return [(n, Verdict(v)) for n, v in zip(candidates, judged)]
            except LLMError as exc:
                log.warning("LLM update judgement failed, falling back to rules: %s", describe_error(exc))
        return [(n, rule_verdict(n.record, new, n.similarity, self.threshold, self.related)) for n in candidates]


def history_of(record: MemoryRecord, current: MemoryRecord, now: datetime) -> MemoryRecord:
    """``record`` made history by ``current``: valid until the current one became true."""
    until = max(current.occurred_at, record.occurred_at)
    return record.model_copy(
        update={"status": Status.SUPERSEDED, "valid_until": until, "superseded_by": current.id, "updated_at": now}
    )


def quarantined(record: MemoryRecord, contradicted: MemoryRecord) -> MemoryRecord:
    """``record`` held back for review: it contradicts the important ``contradicted``."""
    return record.model_copy(update={"status": Status.QUARANTINED, "conflicts_with": contradicted.id})


__all__ = [
    "PROTECTED_IMPORTANCE",
    "Neighbour",
    "UpdateJudge",
    "Verdict",
    "history_of",
    "is_low_trust",
    "protected",
    "quarantined",
    "rule_verdict",
]
