"""One upkeep run of a namespace (#16): compress what is past its threshold, then maintain; each step reported.

Time is moved with the engine's ``ManualClock``; nothing here waits for it to pass.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from hindsight_integrations import InvalidInputError, MemoryEngine, Status, Tier
from hindsight_integrations.core.clock import ManualClock
from hindsight_integrations.core.upkeep.runner import run_upkeep

NS = "keep"
TURNS = [
    f"Step {i}: the nightly export of shard {i} has to finish before {i + 1} am UTC, then the report is mailed."
    for i in range(10)
]


def _engine(store: Path, embedder: Any, clock: ManualClock, **settings: Any) -> MemoryEngine:
    # A 256-token window: its compression threshold is 102 tokens, which ten turns pass.
    return MemoryEngine(store=store, embedder=embedder, llm=False, clock=clock, context_window_tokens=256, **settings)


def _seed(engine: MemoryEngine) -> dict[str, str]:
    """A session left past its threshold, a short one, a stale unimportant memory and an important idle one."""
    for turn in TURNS:
        engine.record_turn(turn, session_id="long", namespace=NS, compress=False, extract=False)
    engine.record_turn("See you tomorrow at the stand-up.", session_id="short", namespace=NS, compress=False)
    stale = engine.store("The old staging host was called zeus-1.", namespace=NS, importance=0.2).stored[0]
    kept = engine.store("The team retro happens every other Thursday.", namespace=NS, importance=0.8).stored[0]
    return {"stale": stale.id, "kept": kept.id}


def _snapshot(engine: MemoryEngine) -> list[dict[str, Any]]:
    return sorted(engine.export(namespace=NS, include_embeddings=False)["records"], key=lambda r: r["id"])


def test_upkeep_compresses_the_sessions_past_their_threshold_then_maintains(store_path: Path, embedder) -> None:
    clock = ManualClock()
    engine = _engine(store_path, embedder, clock)
    ids = _seed(engine)
    long_window = [t.id for t in engine.working_window(session_id="long", namespace=NS)]
    clock.advance(days=100)  # the memories are now idle for 100 days

    report = engine.upkeep(NS)

    assert report.ok and not report.dry_run and report.namespace == NS
    assert [s.step for s in report.steps] == ["compress", "consolidate", "maintain"]
    compress, _consolidate, maintain = report.steps
    assert compress.ids["sessions"] == ["long"]  # the short session is under its threshold
    folded = compress.ids["compressed"]
    assert folded == long_window[: len(folded)] and len(folded) >= 6  # oldest turns first
    assert len(engine.working_window(session_id="long", namespace=NS)) == len(long_window) - len(folded)
    assert len(engine.working_window(session_id="short", namespace=NS)) == 1
    summaries = [engine.get(i, namespace=NS) for i in compress.ids["summaries"]]
    assert summaries and all(s.tier is Tier.EPISODIC for s in summaries)
    assert [turn for s in summaries for turn in s.source.message_ids] == folded  # each summary names its turns
    assert ids["stale"] in maintain.ids["archived"] and ids["kept"] in maintain.ids["decayed"]
    assert maintain.counts == {k: len(v) for k, v in maintain.ids.items()}
    assert engine.get(ids["kept"], namespace=NS).importance < 0.8
    assert ids["stale"] in engine.archived_ids(namespace=NS)  # moved to cold storage, restorable
    assert report.count("compressed") == len(folded) and report.count("archived") >= 1
    assert report.started_at == clock.now() and report.seconds >= 0

    again = engine.upkeep(NS)  # nothing is left to do
    assert again.ok and again.count("compressed") == again.count("archived") == again.count("decayed") == 0


def test_a_dry_run_reports_what_a_run_would_do_and_changes_nothing(store_path: Path, embedder) -> None:
    clock = ManualClock()
    engine = _engine(store_path, embedder, clock)
    ids = _seed(engine)
    clock.advance(days=100)
    before = _snapshot(engine)

    preview = engine.upkeep(NS, dry_run=True)

    assert preview.dry_run and preview.ok
    assert _snapshot(engine) == before and engine.archived_ids(namespace=NS) == []
    assert preview.steps[0].ids["sessions"] == ["long"] and preview.steps[0].ids["summaries"] == []
    assert ids["stale"] in preview.steps[2].ids["archived"]
    done = engine.upkeep(NS)
    assert done.steps[0].ids["compressed"] == preview.steps[0].ids["compressed"]  # exactly the turns previewed
    assert ids["stale"] in done.steps[2].ids["archived"]


def test_a_failing_step_is_reported_the_next_step_runs_and_nothing_is_lost(
    tmp_path: Path, store_path: Path, embedder
) -> None:
    """The cold store is a file, so maintain cannot archive: a real failure of a real step."""
    not_a_directory = tmp_path / "cold"
    not_a_directory.write_text("a file where the cold storage directory should be", encoding="utf-8")
    clock = ManualClock()
    engine = _engine(store_path, embedder, clock, cold_store=not_a_directory)
    ids = _seed(engine)
    clock.advance(days=100)
    turns_before = len(engine.working_window(session_id="long", namespace=NS))

    # maintain first, so the step after the failure is one with work to do
    report = run_upkeep(NS, list(reversed(engine.upkeep_steps())), dry_run=False, clock=clock)

    failed, _consolidate, compress = report.steps
    assert (failed.step, failed.ok) == ("maintain", False) and "FileExistsError" in (failed.error or "")
    assert failed.seconds >= 0 and failed.counts == {}
    assert compress.ok and compress.ids["sessions"] == ["long"]
    assert len(engine.working_window(session_id="long", namespace=NS)) < turns_before
    assert not report.ok and set(report.errors) == {"maintain"}
    stale = engine.get(ids["stale"], namespace=NS)
    assert stale.status is Status.ACTIVE  # still in the store: the archive failed before anything moved

    in_order = engine.upkeep(NS)  # the engine's own order: compress (nothing left), then the failing maintain
    assert [s.ok for s in in_order.steps] == [True, True, False] and in_order.errors.keys() == {"maintain"}
    assert engine.get(ids["stale"], namespace=NS).status is Status.ACTIVE


def test_a_namespace_never_written_has_nothing_to_keep_and_is_not_created(engine: MemoryEngine) -> None:
    report = engine.upkeep("nobody-here")
    assert report.steps == [] and report.ok and "nobody-here" not in engine.namespaces()


@pytest.mark.parametrize(
    ("call", "field"),
    [
        (lambda e: e.upkeep("bad name"), "namespace"),
        (lambda e: e.upkeep("a..b"), "namespace"),
        (lambda e: e.upkeep(3), "namespace"),
        (lambda e: e.upkeep("u1", dry_run="yes"), "dry_run"),
        (lambda e: e.upkeep("u1", dry_run=1), "dry_run"),
    ],
)
def test_bad_arguments_are_refused_by_name(engine: MemoryEngine, call, field: str) -> None:
    engine.store("The staging database is called kestrel.", namespace="u1")
    with pytest.raises(InvalidInputError) as err:
        call(engine)
    assert err.value.field == field
    assert engine.upkeep("u1").ok  # nothing broke


def test_a_restored_memory_is_not_archived_again_by_the_next_round(store_path: Path, embedder) -> None:
    clock = ManualClock()
    engine = _engine(store_path, embedder, clock)
    stale = engine.store("The old staging host was called zeus-1.", namespace=NS, importance=0.2).stored[0]
    clock.advance(days=100)
    assert stale.id in engine.upkeep(NS).steps[2].ids["archived"]
    assert engine.restore(namespace=NS, ids=[stale.id]) == 1
    assert engine.upkeep(NS).count("archived") == 0  # restoring it was a use: idle again from now
    assert engine.get(stale.id, namespace=NS).status is Status.ACTIVE
    clock.advance(days=91)
    assert stale.id in engine.upkeep(NS).steps[2].ids["archived"]  # unused for another 90 days: archived again


def test_a_scheduled_compression_racing_a_turns_compression_folds_the_window_once(store_path: Path, embedder) -> None:
    """Upkeep compresses a session while a new turn compresses it too: one of them folds it, links intact."""
    import threading
    from concurrent.futures import ThreadPoolExecutor

    engine = _engine(store_path, embedder, ManualClock())
    for trial in range(5):
        session = f"race-{trial}"
        for turn in TURNS:
            engine.record_turn(turn, session_id=session, namespace=NS, compress=False, extract=False)
        start = threading.Barrier(2)

        def compress(session: str = session, start: threading.Barrier = start) -> Any:
            start.wait()
            return engine.compress(session_id=session, namespace=NS)

        with ThreadPoolExecutor(2) as pool:
            results = [r for r in pool.map(lambda _: compress(), range(2)) if r is not None]
        assert len(results) == 1, trial  # the second found the window already folded
        summaries = {s.id for s in results[0].summaries}
        archived = {"tiers": ["working"], "session_id": session, "statuses": ["archived"]}
        folded = engine.list(namespace=NS, filters=archived, limit=100)
        assert {t.id for t in folded} == set(results[0].archived_ids)
        assert all(t.metadata.get("summary_id") in summaries for t in folded)  # each turn still names its summary
