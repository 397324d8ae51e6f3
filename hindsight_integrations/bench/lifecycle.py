"""``hindsight bench lifecycle``: a scripted 14-month history, written week by week, scored as it ages.

The history (``lifecycle_history.py``) is replayed through the conversation path the adapters
use: ``MemoryClient.in_process(engine, namespace=...)`` and one ``record_turn`` per turn, user and
assistant, each at its own time (the browser tool's untrusted write goes through
``store_memory(trusted=false)``). The engine runs on a ``ManualClock`` moved to each turn's time;
after each week's session the clock moves to the end of the week and upkeep runs on its
schedule exactly as the HTTP server runs it (``UpkeepSchedule.run_due``, here with a weekly
interval: compress, consolidate, maintain). Every four weeks, and at the end, a checkpoint asks
scripted questions through ``retrieve_memory`` with its defaults (``client.recall(q)``) and
reads the store, scoring each case (a fraction over its cases, per checkpoint and overall):

* ``current_first``: an attribute's question recalls its current value, and no memory naming an
  older (or a poisoned) value ranks above it;
* ``history_on_request``: with ``include_history=True`` each older value comes back, marked
  superseded, below the current one;
* ``live_events_recalled`` / ``expired_hidden``: an event is recalled right after it is said, and
  no longer once it is past;
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

Besides the scores each checkpoint records the store (active memories by tier, history,
quarantined, archived by tier: turns folded by compression in the store, memories archived or
evicted by upkeep in the cold file) and the tokens per recall. With ``llm="scripted"`` the engine
talks to ``scripted_llm.ScriptedLLMServer`` over HTTP, with faults injected; the result says how
many faults were served and how often the engine fell back to its rules.
"""

from __future__ import annotations

import logging
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from ..core.clock import ManualClock
from ..core.embedding.protocol import Embedder
from ..core.engine import MemoryEngine
from ..core.model.records import MemoryRecord, Status, Tier
from ..core.upkeep.merging import CONSOLIDATION_ORIGIN
from ..core.upkeep.retention import read_cold
from ..core.upkeep.runner import UPKEEP_ACTIONS
from ..core.upkeep.schedule import UpkeepSchedule
from ..mcp.client import MemoryClient
from .lifecycle_history import USER, WEEKS, History, Session, Turn, build_history, normalised

NAMESPACE = "lena"
MODES = ("none", "scripted")
METRICS = (
    "current_first",
    "history_on_request",
    "live_events_recalled",
    "expired_hidden",
    "repeats_one_copy",
    "consolidated",
    "preferences_after_a_year",
    "poisoning_quarantined",
    "everyday_facts_recalled",
    "small_talk_kept_out",
)
WEEK = timedelta(weeks=1)
CHECK_EVERY_WEEKS = 4
TURN_GAP = timedelta(minutes=2)
UPKEEP_AT = timedelta(days=6, hours=8)  # 03:00 the next Monday, after a Monday 19:00 session
YEAR = timedelta(days=365)
# The engine's LLM settings for a scripted run: a timeout well under the slow replies' delay.
LLM_TIMEOUT = 1.0
LLM_RETRIES = 3
# Fallback warnings the engine logs when an LLM call failed for good, by logger: the call it replaced.
FALLBACK_LOGGERS = {
    "hindsight.working": "extraction",
    "hindsight.updates": "update_judgement",
    "hindsight.consolidation": "distillation",
    "hindsight.compression": "summary",
}


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


def cold_rows(engine: MemoryEngine) -> list[dict[str, Any]]:
    """The namespace's archived and evicted memories, from its cold-storage file."""
    return read_cold(engine.settings.resolved_cold_store / f"{NAMESPACE}.jsonl")


def store_size(engine: MemoryEngine, records: Sequence[MemoryRecord], now: datetime) -> dict[str, Any]:
    """Active memories by tier, history, quarantined, archived by tier (in the store and cold), expired."""
    active: Counter[str] = Counter()
    archived: Counter[str] = Counter()
    by_status: Counter[str] = Counter()
    expired = 0
    for record in records:
        by_status[record.status.value] += 1
        if record.status is Status.ACTIVE:
            if record.is_expired(now):
                expired += 1
            else:
                active[record.tier.value] += 1
        elif record.status is Status.ARCHIVED:
            archived[record.tier.value] += 1
    cold: Counter[str] = Counter(str(row.get("tier")) for row in cold_rows(engine))
    tiers = [t.value for t in Tier]
    return {
        "active": {t: active.get(t, 0) for t in tiers},
        "active_long_term": active.get("episodic", 0) + active.get("semantic", 0),
        "expired": expired,
        "history": by_status.get(Status.SUPERSEDED.value, 0),
        "quarantined": by_status.get(Status.QUARANTINED.value, 0),
        "archived_in_store": {t: archived.get(t, 0) for t in tiers},
        "cold": {t: cold.get(t, 0) for t in tiers},
        "total_in_store": len(records),
    }


# -- the run -----------------------------------------------------------------------------------
class _FallbackCounter(logging.Handler):
    """Counts the engine's "LLM … failed, falling back" warnings by the call they replaced."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.counts: Counter[str] = Counter()

    def emit(self, record: logging.LogRecord) -> None:
        call = FALLBACK_LOGGERS.get(record.name)
        if call is not None and "LLM" in record.getMessage():
            self.counts[call] += 1


@contextmanager
def _counting_fallbacks() -> Iterator[_FallbackCounter]:
    counter = _FallbackCounter()
    loggers = [logging.getLogger(name) for name in FALLBACK_LOGGERS]
    for logger in loggers:
        logger.addHandler(counter)
    try:
        yield counter
    finally:
        for logger in loggers:
            logger.removeHandler(counter)


@dataclass
class _Timer:
    writing: float = 0.0
    upkeep: float = 0.0
    checkpoints: float = 0.0


def _write_session(
    client: MemoryClient, clock: ManualClock, session: Session, history: History, scores: Scores
) -> None:
    """Record the session's turns at their times, then check the events said in it are recalled."""
    at = session.starts
    for turn in session.turns:
        clock.set(at)
        _write(client, session, turn, at)
        at += TURN_GAP
    for event in history.events:
        if event.week == session.week:
            naming = first_naming(client.recall(event.question).records, event.marker)
            scores.case(
                "live_events_recalled",
                event.name,
                naming is not None,
                f"{event.question!r} recalled no {event.marker!r}",
            )


def _write(client: MemoryClient, session: Session, turn: Turn, at: datetime) -> None:
    if turn.untrusted:  # a browser tool's note, not a spoken turn
        client.store(
            turn.text, session_id=session.session_id, occurred_at=at, trusted=False, metadata={"writer": "browser-tool"}
        )
        return
    client.record_turn(
        turn.text,
        session_id=session.session_id,
        role=turn.role,
        occurred_at=at,
        speaker=USER if turn.role == "user" else None,
    )


def _upkeep_totals(rounds: Sequence[Any]) -> dict[str, Any]:
    totals: Counter[str] = Counter()
    failed: Counter[str] = Counter()
    for done in rounds:
        for report in done.reports:
            for action in UPKEEP_ACTIONS:
                totals[action] += report.count(action)
            totals["facts"] += report.count("facts")
            for step in report.errors:
                failed[step] += 1
    return {
        "rounds": len(rounds),
        **{k: totals[k] for k in (*UPKEEP_ACTIONS, "facts")},
        "failed_steps": dict(failed),
    }


def checkpoint_weeks(weeks: int) -> list[int]:
    """The weeks after whose upkeep a checkpoint is scored: every ``CHECK_EVERY_WEEKS``, and the last."""
    marks = [w for w in range(weeks) if (w + 1) % CHECK_EVERY_WEEKS == 0]
    return marks + ([weeks - 1] if weeks and (not marks or marks[-1] != weeks - 1) else [])


def run_mode(
    llm: str,
    *,
    history: History,
    store: Path,
    embedder: Embedder | None = None,
    fault_rate: float = 0.15,
    seed: int = 7,
    context_window_tokens: int = 1024,
    progress: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    """Replay ``history`` on a fresh engine in ``store`` with ``llm`` (``none`` or ``scripted``); score it."""
    if llm not in MODES:
        raise ValueError(f"unknown --llm {llm!r}; choose from {', '.join(MODES)}")
    from .scripted_llm import ScriptedLLMServer

    started = time.perf_counter()
    clock = ManualClock(history.sessions[0].starts - timedelta(hours=1))
    server = (
        ScriptedLLMServer(history, fault_rate=fault_rate, seed=seed, slow_seconds=LLM_TIMEOUT * 1.5 + 0.2)
        if llm == "scripted"
        else None
    )
    options: dict[str, Any] = {"context_window_tokens": context_window_tokens}
    if server is not None:
        options.update(
            openai_base_url=server.base_url,
            openai_api_key=server.api_key,
            llm_model="scripted",
            llm_timeout=LLM_TIMEOUT,
            llm_max_retries=LLM_RETRIES,
            use_llm=True,
        )
    engine = MemoryEngine(store=store, embedder=embedder, llm=None if server else False, clock=clock, **options)
    # As the HTTP server builds it (mcp/startup.start_scheduled_upkeep), over this one namespace.
    schedule = UpkeepSchedule(
        engine, namespaces=lambda: [NAMESPACE], interval_seconds=WEEK.total_seconds(), holder="lifecycle-bench"
    )
    timer = _Timer()
    rounds: list[Any] = []
    checkpoints: list[dict[str, Any]] = []
    overall = Scores()
    marks = set(checkpoint_weeks(len(history.sessions)))
    try:
        with _counting_fallbacks() as fallbacks, MemoryClient.in_process(engine, namespace=NAMESPACE) as client:
            since_checkpoint = Scores()  # the live-event checks of the weeks since the last checkpoint
            for session in history.sessions:
                begun = time.perf_counter()
                _write_session(client, clock, session, history, since_checkpoint)
                timer.writing += time.perf_counter() - begun
                begun = time.perf_counter()
                clock.set(session.starts + UPKEEP_AT)
                # Days pass here in milliseconds: recall's access counts, written every few seconds
                # of wall time, are written now, as a round days after the recalls would find them.
                engine.chroma.flush_access()
                if (done := schedule.run_due()) is not None:
                    rounds.append(done)
                timer.upkeep += time.perf_counter() - begun
                if session.week in marks:
                    begun = time.perf_counter()
                    point, scores = _checkpoint(client, engine, history, session, clock.now(), since_checkpoint)
                    checkpoints.append(point)
                    overall.add(scores)
                    since_checkpoint = Scores()
                    timer.checkpoints += time.perf_counter() - begun
                    if progress:
                        scored = checkpoints[-1]["scores"]
                        passed = sum(s["passed"] for s in scored.values())
                        asked = sum(s["cases"] for s in scored.values())
                        progress(f"{llm}: week {session.week} ({checkpoints[-1]['date']}): {passed}/{asked} cases")
            final = [r for r, _ in engine.chroma.namespace(NAMESPACE).iterate()]
            store_final = store_size(engine, final, clock.now())
        llm_stats = server.stats() if server is not None else None
    finally:
        if server is not None:
            server.close()
        engine.chroma.flush_access()
    result: dict[str, Any] = {
        "mode": "offline (rules)" if llm == "none" else "scripted LLM over HTTP, faults injected",
        "llm": llm,
        "weeks": len(history.sessions),
        "sessions": len(history.sessions),
        "turns": sum(len(s.turns) for s in history.sessions),
        "first_day": history.sessions[0].starts.date().isoformat(),
        "last_day": (history.sessions[-1].starts + UPKEEP_AT).date().isoformat(),
        "overall": overall.summary(),
        "checkpoints": checkpoints,
        "store_final": store_final,
        "upkeep": _upkeep_totals(rounds),
        "seconds": {
            "total": round(time.perf_counter() - started, 1),
            "writing": round(timer.writing, 1),
            "upkeep": round(timer.upkeep, 1),
            "checkpoints": round(timer.checkpoints, 1),
        },
        "settings": {
            "context_window_tokens": context_window_tokens,
            "upkeep_interval_days": WEEK.days,
            "checkpoint_every_weeks": CHECK_EVERY_WEEKS,
            "embedding_model": engine.embedder.name,
        },
    }
    if llm_stats is not None:
        result["llm_calls"] = {
            **llm_stats,
            "fallbacks_to_rules": dict(sorted(fallbacks.counts.items())),
            "fault_rate": fault_rate,
            "llm_timeout_seconds": LLM_TIMEOUT,
            "llm_max_retries": LLM_RETRIES,
        }
        result["settings"]["fault_seed"] = seed
    return result


def _checkpoint(
    client: MemoryClient, engine: MemoryEngine, history: History, session: Session, now: datetime, live_scores: Scores
) -> tuple[dict[str, Any], Scores]:
    """One checkpoint's row, and its scores (with ``live_scores``, the live-event checks since the last one)."""
    records = [r for r, _ in engine.chroma.namespace(NAMESPACE).iterate()]
    point = Checkpoint(client, records, history, session.week, now, cold_rows(engine))
    scores = Scores()
    scores.add(live_scores)
    scores.add(point.run())
    days = (now - history.sessions[0].starts).days
    row = {
        "week": session.week,
        "month": round(days / 30.44, 1),
        "date": now.date().isoformat(),
        "scores": scores.summary(),
        "failures": scores.failures,
        "store": store_size(engine, records, now),
        "tokens_per_recall": round(sum(point.tokens) / len(point.tokens), 1) if point.tokens else 0.0,
        "tokens_per_recall_max": max(point.tokens, default=0),
        "recalls": len(point.tokens),
    }
    return row, scores


def run_lifecycle(
    *,
    modes: Sequence[str] = ("none",),
    weeks: int = WEEKS,
    embedder: Embedder | None = None,
    fault_rate: float = 0.15,
    seed: int = 7,
    store: Path | None = None,
    progress: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    """The benchmark in each of ``modes`` on the first ``weeks`` weeks of the history; one result."""
    unknown = sorted(set(modes) - set(MODES))
    if unknown or not modes:
        raise ValueError(f"unknown --llm mode {', '.join(unknown) or '(none given)'}; choose from {', '.join(MODES)}")
    if not 1 <= weeks <= WEEKS:
        raise ValueError(f"weeks must be between 1 and {WEEKS}, got {weeks}")
    history = build_history(weeks)
    runs = []
    with tempfile.TemporaryDirectory(prefix="hindsight-lifecycle-") as tmp:
        root = store or Path(tmp)
        for mode in modes:
            runs.append(
                run_mode(
                    mode,
                    history=history,
                    store=root / f"store-{mode}",
                    embedder=embedder,
                    fault_rate=fault_rate,
                    seed=seed,
                    progress=progress,
                )
            )
    return {"benchmark": "lifecycle", "namespace": NAMESPACE, "user": USER, "runs": runs}


__all__ = [
    "METRICS",
    "MODES",
    "Checkpoint",
    "Scores",
    "checkpoint_weeks",
    "consolidated_memory",
    "copies",
    "current_first",
    "history_shown",
    "mentions",
    "run_lifecycle",
    "run_mode",
    "store_size",
]
