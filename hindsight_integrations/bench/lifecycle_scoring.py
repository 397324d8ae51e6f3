"""How ``hindsight bench lifecycle`` scores a memory: the checks, and the checkpoint that asks them.

A checkpoint (``Checkpoint``) asks the history's questions through ``retrieve_memory`` with its
defaults (``client.recall(q)``) and reads the store, scoring each case (a fraction over its
cases, per checkpoint and overall; ``METRIC_LABELS`` says what each metric means):

* ``current_first``: an attribute's question recalls its current value, and no memory naming an
  older (or a poisoned) value ranks above it;
* ``history_on_request``: with ``include_history=True`` each older value comes back, marked
  superseded, below the current one;
* ``live_events_recalled`` / ``expired_hidden``: an event is recalled right after it is said (the
  runner checks that as the week is written), and no longer once it is past;
* ``repeats_one_copy``: a sentence said in several sessions is one active memory (a source
  consolidated into a semantic memory counts as part of it, as recall returns only that);
* ``consolidated``: a preference said in different words in several sessions is one semantic
  memory made by consolidation, with its sources and their turns (provenance), and it is what
  the preference's question recalls;
* ``preferences_after_a_year``: a preference said once in the first month, asked about only after
  a year, is recalled;
* ``poisoning_quarantined``: a low-trust write contradicting an important fact is quarantined and
  its false value never recalled;
* ``everyday_facts_recalled`` and ``small_talk_kept_out``: ordinary facts asked about later are
  recalled; greetings, thanks and chit-chat never became long-term memories.

The checks on their own (``mentions``, ``current_first``, …) are plain functions of recalled or
stored records, so they can be tried on hand-made records that must fail as well as pass.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from ..core.model.records import MemoryRecord, Status, Tier
from ..core.upkeep.merging import CONSOLIDATION_ORIGIN
from ..mcp.client import MemoryClient
from .lifecycle_history import History, normalised

# Each metric and how the report names it, in the order tables and plots show them.
METRIC_LABELS = {
    "current_first": "current value first",
    "history_on_request": "history on request",
    "live_events_recalled": "events recalled while upcoming",
    "expired_hidden": "expired events hidden",
    "repeats_one_copy": "repeats = 1 copy",
    "consolidated": "repeated preferences consolidated",
    "preferences_after_a_year": "once-said preferences after a year",
    "poisoning_quarantined": "poisoning held in quarantine",
    "everyday_facts_recalled": "everyday facts recalled",
    "small_talk_kept_out": "small talk kept out",
}
METRICS = tuple(METRIC_LABELS)
YEAR = timedelta(days=365)


# -- what a recalled or stored memory says ------------------------------------------------------
def mentions(text: str, value: str) -> bool:
    """Whether ``text`` names ``value``: case and spacing ignored, so "+351 912 345 678" matches however spaced."""
    return "".join(value.lower().split()) in "".join(text.lower().split())


def current_first(recalled: Sequence[MemoryRecord], current: str, wrong: Iterable[str]) -> bool:
    """The first recalled memory naming any value of the attribute names the current one (and one does)."""
    wrong = [w for w in wrong if not mentions(current, w)]
    for record in recalled:
        if mentions(record.content, current):
            return True
        if any(mentions(record.content, w) for w in wrong):
            return False
    return False


def history_shown(recalled: Sequence[MemoryRecord], current: str, old: str) -> bool:
    """Recalled with history: ``old`` comes back in a superseded memory, below the current value."""
    position = {id(r): n for n, r in enumerate(recalled)}
    superseded = [r for r in recalled if r.status is Status.SUPERSEDED and mentions(r.content, old)]
    currents = [position[id(r)] for r in recalled if r.status is Status.ACTIVE and mentions(r.content, current)]
    return bool(superseded and currents) and min(currents) < position[id(superseded[0])]


def live(record: MemoryRecord, now: datetime) -> bool:
    """An active long-term memory, not expired: what recall may return."""
    return record.tier is not Tier.WORKING and record.is_valid(now)


def copies(records: Iterable[MemoryRecord], marker: str, now: datetime) -> int:
    """Active long-term memories naming ``marker``; a source consolidated into another counts as that one."""
    return sum(1 for r in records if live(r, now) and r.consolidated_into is None and mentions(r.content, marker))


def one_copy(active: int, archived: int) -> bool:
    """A repeated fact is kept once: one active copy, or none while it waits in cold storage (forgotten by design)."""
    return active == 1 or (active == 0 and archived > 0)


def consolidated_memory(records: Iterable[MemoryRecord], marker: str, now: datetime) -> MemoryRecord | None:
    """The live semantic memory consolidation made of a fact naming ``marker``, with its provenance.

    Provenance: at least two source memories, each named with its turns (``source.members``),
    and the turns themselves (``source.message_ids``).
    """
    for record in records:
        if (
            live(record, now)
            and record.tier is Tier.SEMANTIC
            and record.source.origin == CONSOLIDATION_ORIGIN
            and mentions(record.content, marker)
            and len(record.source.memory_ids) >= 2
            and record.source.message_ids
            and all(member.get("message_ids") for member in record.source.members)
        ):
            return record
    return None


def first_naming(recalled: Sequence[MemoryRecord], marker: str) -> MemoryRecord | None:
    """The best-ranked recalled memory naming ``marker``."""
    return next((r for r in recalled if mentions(r.content, marker)), None)


# -- scores ------------------------------------------------------------------------------------
@dataclass
class Scores:
    """Cases passed and asked per metric, and what failed (metric, case, why)."""

    passed: Counter[str] = field(default_factory=Counter)
    cases: Counter[str] = field(default_factory=Counter)
    failures: list[dict[str, str]] = field(default_factory=list)

    def case(self, metric: str, name: str, ok: bool, why: str = "") -> bool:
        """Count one case of ``metric``; a failed one is listed with ``why``."""
        if metric not in METRICS:
            raise ValueError(f"unknown metric {metric!r}")
        self.cases[metric] += 1
        self.passed[metric] += int(ok)
        if not ok:
            self.failures.append({"metric": metric, "case": name, "why": why})
        return ok

    def add(self, other: Scores) -> None:
        """Add ``other``'s cases to these."""
        self.passed.update(other.passed)
        self.cases.update(other.cases)
        self.failures.extend(other.failures)

    def summary(self) -> dict[str, dict[str, Any]]:
        """Each metric with cases: passed, cases and the fraction (None when it had no case)."""
        return {
            m: {
                "passed": self.passed[m],
                "cases": self.cases[m],
                "score": round(self.passed[m] / self.cases[m], 4) if self.cases[m] else None,
            }
            for m in METRICS
        }


def _shown(records: Sequence[MemoryRecord], limit: int = 3) -> str:
    return " | ".join(f"{r.status.value}: {r.content[:60]}" for r in records[:limit]) or "nothing recalled"


class Checkpoint:
    """The questions and store checks of one checkpoint, at the end of ``week`` (see the module docstring)."""

    def __init__(
        self,
        client: MemoryClient,
        records: list[MemoryRecord],
        history: History,
        week: int,
        now: datetime,
        cold: Sequence[dict[str, Any]] = (),
    ) -> None:
        self.client = client
        self.records = records
        self.cold = cold
        self.history = history
        self.week = week
        self.now = now
        self.scores = Scores()
        self.tokens: list[int] = []

    def recall(self, question: str, *, include_history: bool = False) -> list[MemoryRecord]:
        """``retrieve_memory`` with its defaults; default recalls count towards tokens per recall."""
        result = self.client.recall(question, include_history=include_history)
        if not include_history:
            self.tokens.append(result.tokens)
        return result.records

    def run(self) -> Scores:
        """Every case due at this checkpoint; its scores."""
        self.attributes()
        self.events()
        self.repeats()
        self.preferences()
        self.poisonings()
        self.facts()
        self.small_talk()
        return self.scores

    def attributes(self) -> None:
        """Current value first for each question, and each older value on request."""
        week = self.week
        for attribute in self.history.attributes:
            values = attribute.said_by(week)
            if not values:
                continue
            current = values[-1][1]
            older = list(dict.fromkeys(v for _w, v, _t in values[:-1] if v != current))
            poisoned = [p.marker for p in self.history.poisonings if p.target == attribute.name and p.week <= week]
            for question in attribute.questions(week):
                recalled = self.recall(question)
                self.scores.case(
                    "current_first",
                    f"{attribute.name}: {question}",
                    current_first(recalled, current, older + poisoned),
                    f"expected {current!r} first; recalled {_shown(recalled, 5)}",
                )
            if older:
                recalled = self.recall(attribute.question, include_history=True)
                for old in older:
                    self.scores.case(
                        "history_on_request",
                        f"{attribute.name}: {old}",
                        history_shown(recalled, current, old),
                        f"expected {old!r} superseded below {current!r}; recalled {_shown(recalled, 5)}",
                    )

    def events(self) -> None:
        """Events past by now are no longer recalled."""
        for event in self.history.events:
            said_at = _start_of(self.history, event.week)
            if said_at is None or said_at + event.lasts >= self.now:
                continue
            recalled = self.recall(event.question)
            naming = first_naming(recalled, event.marker)
            self.scores.case(
                "expired_hidden",
                event.name,
                naming is None,
                f"past since {(said_at + event.lasts).date()}, still recalled: {naming.content[:60] if naming else ''}",
            )

    def repeats(self) -> None:
        """A sentence said in two sessions or more is one memory."""
        for repeat in self.history.exact_repeats:
            if sum(w <= self.week for w in repeat.weeks) < 2:
                continue
            found = copies(self.records, repeat.marker, self.now)
            archived = sum(1 for row in self.cold if mentions(str(row.get("content", "")), repeat.marker))
            self.scores.case(
                "repeats_one_copy",
                repeat.marker,
                one_copy(found, archived),
                f"{found} active memories name {repeat.marker!r} ({archived} archived)",
            )

    def preferences(self) -> None:
        """Repeated preferences consolidated; once-said ones recalled after a year."""
        for preference in self.history.repeated_preferences:
            weeks = [w for w, _t in preference.sayings if w <= self.week]
            if len(weeks) < 3:  # consolidation needs three sayings (``consolidation_min_members``)
                continue
            made = consolidated_memory(self.records, preference.marker, self.now)
            recalled = self.recall(preference.question)
            naming = first_naming(recalled, preference.marker)
            ok = made is not None and naming is not None and naming.id == made.id
            why = (
                "no consolidated memory with provenance"
                if made is None
                else f"recalled first instead: {naming.content[:60] if naming else 'nothing naming it'}"
            )
            self.scores.case("consolidated", preference.name, ok, why)
        for preference in self.history.once_said_preferences:
            week, _turn = preference.sayings[0]
            said_at = _start_of(self.history, week)
            if said_at is None or self.now - said_at < YEAR:
                continue
            recalled = self.recall(preference.question)
            poisoned = [p.marker for p in self.history.poisonings if p.target == preference.name]
            naming = first_naming(recalled, preference.marker)
            self.scores.case(
                "preferences_after_a_year",
                preference.name,
                naming is not None and not any(mentions(naming.content, m) for m in poisoned),
                f"said {said_at.date()}; recalled {_shown(recalled)}",
            )

    def poisonings(self) -> None:
        """Low-trust contradictions held in quarantine, their false values never recalled."""
        # An attribute's question is asked at every checkpoint anyway; a once-said preference's only
        # after a year (``preferences``, which also refuses the poisoned value), so it is not asked here.
        questions = {a.name: a.question for a in self.history.attributes}
        for poisoning in self.history.poisonings:
            if poisoning.week > self.week:
                continue
            stored = [
                r
                for r in self.records
                if r.tier is not Tier.WORKING and normalised(r.content) == normalised(poisoning.turn.text)
            ]
            held = bool(stored) and all(r.status is Status.QUARANTINED for r in stored)
            question = questions.get(poisoning.target)
            leaked = first_naming(self.recall(question), poisoning.marker) if question else None
            statuses = ", ".join(r.status.value for r in stored) or "not stored"
            self.scores.case(
                "poisoning_quarantined",
                poisoning.name,
                held and leaked is None,
                f"stored as {statuses}; recalled: {leaked.content[:60] if leaked else 'not recalled'}",
            )

    def facts(self) -> None:
        """Ordinary facts recalled when asked about."""
        for fact in self.history.everyday_facts:
            if fact.week > self.week:
                continue
            recalled = self.recall(fact.question)
            self.scores.case(
                "everyday_facts_recalled",
                fact.marker,
                first_naming(recalled, fact.marker) is not None,
                f"recalled {_shown(recalled)}",
            )

    def small_talk(self) -> None:
        """No greeting, thanks or chit-chat said so far is a long-term memory."""
        said = {
            normalised(t.text)
            for s in self.history.sessions
            if s.week <= self.week
            for t in s.turns
            if t.role == "user" and t.text in self.history.small_talk
        }
        remembered = {normalised(r.content) for r in self.records if live(r, self.now)}
        for text in sorted(said):
            self.scores.case("small_talk_kept_out", text, text not in remembered, "a long-term memory")


def _start_of(history: History, week: int) -> datetime | None:
    return next((s.starts for s in history.sessions if s.week == week), None)


__all__ = [
    "METRICS",
    "METRIC_LABELS",
    "Checkpoint",
    "Scores",
    "consolidated_memory",
    "copies",
    "current_first",
    "first_naming",
    "history_shown",
    "live",
    "mentions",
    "one_copy",
]
