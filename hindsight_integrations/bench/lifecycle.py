"""``hindsight bench lifecycle``: a scripted 14-month history, written week by week, scored as it ages.

The history (``lifecycle_history``, its data in ``data/lifecycle_history.toml``) is replayed
through the conversation path the adapters use: ``MemoryClient.in_process(engine, namespace=...)``
and one ``record_turn`` per turn, user and assistant, each at its own time (the browser tool's
untrusted write goes through ``store_memory(trusted=false)``). The engine runs on a
``ManualClock`` moved to each turn's time; after each week's session the clock moves to the end
of the week and upkeep runs on its schedule exactly as the HTTP server runs it
(``UpkeepSchedule.run_due``, here with a weekly interval: compress, consolidate, maintain). Every
four weeks, and at the end, a checkpoint (``lifecycle_scoring.Checkpoint``) asks the history's
questions and reads the store, scoring each case; the metrics are listed there. This module runs
all that and puts the result together; its tables and plot are ``lifecycle_report``'s.

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
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from ..core.clock import ManualClock
from ..core.embedding.protocol import Embedder
from ..core.engine import MemoryEngine
from ..core.model.records import MemoryRecord, Status, Tier
from ..core.storage.cold import ColdStorage
from ..core.upkeep.runner import UPKEEP_ACTIONS
from ..core.upkeep.schedule import UpkeepSchedule
from ..mcp.client import MemoryClient
from .lifecycle_cases import Turn
from .lifecycle_history import USER, WEEKS, History, Session, build_history
from .lifecycle_scoring import Checkpoint, Scores, first_naming

NAMESPACE = "lena"
MODES = ("none", "scripted")
WEEK = timedelta(weeks=1)
CHECK_EVERY_WEEKS = 4
TURN_GAP = timedelta(minutes=2)
UPKEEP_AT = timedelta(days=6, hours=8)  # 03:00 the next Monday, after a Monday 19:00 session
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


def cold_rows(engine: MemoryEngine) -> list[dict[str, Any]]:
    """The namespace's archived and evicted memories, from its cold-storage file."""
    return ColdStorage(engine.settings.resolved_cold_store).rows(NAMESPACE)


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
        options.update(server.engine_options(timeout=LLM_TIMEOUT, retries=LLM_RETRIES))
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
                engine.chroma.flush()
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
            model = engine.embedding_model(NAMESPACE)
        llm_stats = server.stats() if server is not None else None
    finally:
        if server is not None:
            server.close()
        engine.close()
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
            "embedding_model": model,
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
    "MODES",
    "NAMESPACE",
    "checkpoint_weeks",
    "cold_rows",
    "run_lifecycle",
    "run_mode",
    "store_size",
]
