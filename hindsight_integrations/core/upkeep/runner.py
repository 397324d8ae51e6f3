"""One upkeep run of a namespace: its steps in order, each reported, none able to stop the next.

Upkeep is what keeps a namespace tidy between conversations (SPEC §7): sessions whose working
window was left past its threshold are compressed (a turn recorded with ``compress=False``, a
compression that failed), then ``maintain`` decays, archives and enforces the tier caps. The
steps are an ordered list of ``UpkeepStep`` (``MemoryEngine.upkeep_steps``), so another step is
one more entry there; each returns its own report model, from which ``step_outcome`` reads what
it did (counts and ids) without knowing the model.

A step that raises is reported (its error, its time) and the next step still runs: the steps
are independent, and each one changes the store only through the engine's own operations, under
the namespace's write lock, so a failure part-way leaves every memory where it was or where the
step finished putting it (docs/architecture.md, "Upkeep").
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING

from pydantic import BaseModel, Field

if TYPE_CHECKING:  # the reports travel to MCP clients, which must not load the store to read them
    from ..clock import Clock
    from ..model.records import MemoryRecord
    from ..model.results import CompressionResult, ConsolidationReport
    from ..storage.namespace_store import NamespaceStore
    from ..working.compression import Compressor

UPKEEP_ACTIONS = ("compressed", "merged", "consolidated", "decayed", "archived", "evicted")
"""What upkeep does to memories, by the name of the report field listing them: the metrics count these."""

_ERROR_CHARS = 500


class StepReport(BaseModel):
    """What one step did to a namespace: counts and ids by what happened, its time, its error if it failed."""

    step: str
    ok: bool = True
    seconds: float = 0.0
    counts: dict[str, int] = Field(default_factory=dict, description="how many, by what happened (e.g. decayed)")
    ids: dict[str, list[str]] = Field(default_factory=dict, description="the ids, by what happened")
    error: str | None = Field(None, description="why the step failed (the steps after it still ran)")


class UpkeepReport(BaseModel):
    """One upkeep run of a namespace (or, with ``dry_run``, what it would do): its steps in the order they ran."""

    namespace: str
    dry_run: bool = False
    started_at: datetime
    seconds: float = 0.0
    steps: list[StepReport] = Field(default_factory=list, description="empty: the namespace holds nothing")

    @property
    def ok(self) -> bool:
        """Whether every step succeeded."""
        return all(step.ok for step in self.steps)

    @property
    def errors(self) -> dict[str, str]:
        """The failed steps' errors, by step."""
        return {step.step: step.error or "failed" for step in self.steps if not step.ok}

    def count(self, action: str) -> int:
        """How many memories ``action`` (e.g. ``"decayed"``) touched over every step."""
        return sum(step.counts.get(action, 0) for step in self.steps)


class SessionCompressionReport(BaseModel):
    """What the compress step did (or would do): the sessions past their threshold and the turns folded."""

    namespace: str
    dry_run: bool = False
    sessions: list[str] = Field(default_factory=list, description="sessions whose window was past the threshold")
    compressed: list[str] = Field(default_factory=list, description="turns folded into summaries (archived)")
    summaries: list[str] = Field(default_factory=list, description="episodic summaries written")


class ConsolidationStepReport(BaseModel):
    """The consolidate step as upkeep counts it: repeats merged away, memories consolidated, facts written.

    ``MemoryEngine.consolidate``'s own report (``ConsolidationReport``) has the detail; this is
    what the step's counts and ids, the log line and ``/metrics`` need.
    """

    namespace: str
    dry_run: bool = False
    merged: list[str] = Field(default_factory=list, description="repeats merged into another memory (now history)")
    consolidated: list[str] = Field(default_factory=list, description="sources distilled into a semantic memory")
    facts: list[str] = Field(default_factory=list, description="semantic memories created or reinforced")

    @classmethod
    def of(cls, report: ConsolidationReport) -> ConsolidationStepReport:
        """From ``MemoryEngine.consolidate``'s report (the semantic memories name their sources)."""
        written = [*report.created, *report.reinforced]
        return cls(
            namespace=report.namespace,
            dry_run=report.dry_run,
            merged=[m.merged for m in report.merged],
            consolidated=[source for fact in written for source in fact.sources],
            facts=[fact.id for fact in written if fact.id is not None],
        )


@dataclass(frozen=True)
class UpkeepStep:
    """A named step: ``run(namespace, dry_run)`` returns the step's own report model."""

    name: str
    run: Callable[[str, bool], BaseModel]


def step_outcome(report: BaseModel) -> tuple[dict[str, int], dict[str, list[str]]]:
    """(counts, ids) of a step's report: each list field is what happened to that many memories.

    A list of strings is a list of ids (``decayed``, ``archived``), any other list is counted
    only, and a whole-number field (not a flag) is a count as it is.
    """
    counts: dict[str, int] = {}
    ids: dict[str, list[str]] = {}
    for name in type(report).model_fields:
        value = getattr(report, name)
        if isinstance(value, list):
            counts[name] = len(value)
            if all(isinstance(item, str) for item in value):
                ids[name] = list(value)
        elif isinstance(value, int) and not isinstance(value, bool):
            counts[name] = value
    return counts, ids


def run_upkeep(namespace: str, steps: Sequence[UpkeepStep], *, dry_run: bool, clock: Clock) -> UpkeepReport:
    """Run ``steps`` on ``namespace`` in order; a step that raises is reported and the next one runs."""
    started_at = clock.now()
    begun = time.perf_counter()
    reports = []
    for step in steps:
        step_begun = time.perf_counter()
        try:
            counts, ids = step_outcome(step.run(namespace, dry_run))
        except Exception as exc:  # noqa: BLE001 - reported with the step; the next step still runs
            reports.append(
                StepReport(
                    step=step.name,
                    ok=False,
                    seconds=round(time.perf_counter() - step_begun, 4),
                    error=f"{type(exc).__name__}: {exc}"[:_ERROR_CHARS],
                )
            )
            continue
        reports.append(
            StepReport(step=step.name, seconds=round(time.perf_counter() - step_begun, 4), counts=counts, ids=ids)
        )
    return UpkeepReport(
        namespace=namespace,
        dry_run=dry_run,
        started_at=started_at,
        seconds=round(time.perf_counter() - begun, 4),
        steps=reports,
    )


def compress_due_sessions(
    handle: NamespaceStore,
    *,
    threshold: int,
    window: Callable[[str], list[MemoryRecord]],
    compress: Callable[[str], CompressionResult | None],
    compressor: Compressor,
    dry_run: bool,
) -> SessionCompressionReport:
    """Compress every session of ``handle`` whose live window is past ``threshold`` tokens.

    The sessions come from one read of the namespace's live turns (as the viewer's session list);
    ``compress`` re-reads each window under the write lock, so turns another writer added or
    compressed meanwhile are judged as they are then. A dry run folds nothing and reports the
    turns ``compress`` would fold (``Compressor.groups``).
    """
    live = handle.find({"$and": [{"tier": "working"}, {"status": "active"}]})
    tokens: dict[str, int] = {}
    for turn in live:
        if turn.session_id:
            tokens[turn.session_id] = tokens.get(turn.session_id, 0) + turn.token_count
    report = SessionCompressionReport(namespace=handle.name, dry_run=dry_run)
    for session_id in sorted(s for s, total in tokens.items() if total > threshold):
        if dry_run:
            groups = compressor.groups(window(session_id), threshold=threshold, force=False)
            folded = [turn.id for group in groups for turn in group]
            if folded:
                report.sessions.append(session_id)
                report.compressed.extend(folded)
            continue
        result = compress(session_id)
        if result is not None:
            report.sessions.append(session_id)
            report.compressed.extend(result.archived_ids)
            report.summaries.extend(summary.id for summary in result.summaries)
    return report


__all__ = [
    "UPKEEP_ACTIONS",
    "SessionCompressionReport",
    "StepReport",
    "UpkeepReport",
    "UpkeepStep",
    "compress_due_sessions",
    "run_upkeep",
    "step_outcome",
]
