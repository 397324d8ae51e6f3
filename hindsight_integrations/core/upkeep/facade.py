"""The upkeep part of ``MemoryEngine``'s facade: maintain, upkeep and its steps, consolidate, merge, restore.

``MemoryEngine`` inherits these methods from ``UpkeepFacade`` (they are its public API, see
``upkeep/__init__.py`` for the words); they live here, beside the modules that do the work,
so the engine's module stays a readable size. ``MemoryEngine.__init__`` sets the parts and
the lanes (``lanes.py``: the modules of each namespace's model) they use.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from ..errors import InvalidInputError, never_written
from ..lanes import ModelLane, ModelLanes, text_of_export
from ..model.records import Tier
from ..model.results import ConsolidationReport, MergedRepeat
from ..parts import EngineParts
from ..storage.namespace_store import NamespaceStore
from ..working.compression import Compressor
from .retention import MaintenanceReport
from .runner import (
    ConsolidationStepReport,
    SessionCompressionReport,
    UpkeepReport,
    UpkeepStep,
    compress_due_sessions,
    run_upkeep,
)


class UpkeepFacade:
    """``MemoryEngine``'s upkeep methods, over the engine's parts and the lane of each namespace's model."""

    _parts: EngineParts
    _lanes: ModelLanes

    def _existing(self, namespace: str | None) -> tuple[NamespaceStore, ModelLane]:
        """The handle and lane of a namespace that holds memories (upkeep of one never written is a mistake)."""
        name, handle, lane = self._lanes.reading(namespace)
        if handle is None:
            raise never_written(name, self._parts.store.list_namespaces())
        return handle, lane

    def maintain(
        self,
        *,
        namespace: str | None = None,
        now: datetime | None = None,
        caps: dict[Tier, int] | None = None,
        dry_run: bool = False,
    ) -> MaintenanceReport:
        """Decay idle memories, archive stale unimportant ones and enforce tier caps (``upkeep/retention.py``).

        Semantic memories decay slowly, and preferences and corrections are never archived or
        evicted. Idleness is measured at ``now``, by default the engine's clock. ``dry_run``
        reports what would happen and changes nothing. A namespace never written has nothing to keep
        (the report is empty), and it is not created.
        """
        name, handle, lane = self._lanes.reading(namespace)
        if handle is None:
            return MaintenanceReport(namespace=name, dry_run=dry_run, cold_store=str(lane.maintenance.cold_path(name)))
        return lane.maintenance.maintain(handle, now=now, caps=caps, dry_run=dry_run)

    def upkeep(self, namespace: str | None = None, *, dry_run: bool = False) -> UpkeepReport:
        """Run every upkeep step on ``namespace`` (default: the configured one), in order (``upkeep/runner.py``).

        Compresses the sessions whose working window is past its threshold, consolidates (merges
        repeats, distils facts said in several sessions), then ``maintain``s.
        Each step is reported with what it did (counts and ids), its time and its error: one that
        fails does not stop the next. ``dry_run`` reports what would happen and changes nothing.
        A namespace never written has nothing to keep: the report has no steps, and it is not created.
        """
        name = self._parts.namespace_name(namespace)
        if not isinstance(dry_run, bool):
            raise InvalidInputError("dry_run", f"must be true or false, got {type(dry_run).__name__}")
        if self._lanes.open(name, create=False, text=None) is None:
            return UpkeepReport(namespace=name, dry_run=dry_run, started_at=self._parts.clock.now())
        return run_upkeep(name, self.upkeep_steps(), dry_run=dry_run, clock=self._parts.clock)

    def upkeep_steps(self) -> list[UpkeepStep]:
        """The steps of ``upkeep``, in the order they run; each is ``run(namespace, dry_run) -> its report``."""
        return [
            UpkeepStep("compress", self._compress_due_sessions),
            UpkeepStep(
                "consolidate",
                lambda ns, dry_run: ConsolidationStepReport.of(self.consolidate(namespace=ns, dry_run=dry_run)),
            ),
            UpkeepStep(
                "maintain",
                lambda ns, dry_run: self.maintain(namespace=ns, now=self._parts.clock.now(), dry_run=dry_run),
            ),
        ]

    def _compress_due_sessions(self, namespace: str, dry_run: bool) -> SessionCompressionReport:
        """Upkeep's ``compress`` step: every session of ``namespace`` whose window was left past the threshold."""
        handle, lane = self._existing(namespace)
        return compress_due_sessions(
            handle,
            threshold=self._parts.settings.compress_threshold_tokens,
            window=lambda session_id: lane.working.window(handle, session_id=session_id),
            compress=lambda session_id: lane.working.compress(
                handle, session_id=session_id, threshold_tokens=None, force=False
            ),
            compressor=Compressor(lane.parts),
            dry_run=dry_run,
        )

    def consolidate(self, namespace: str | None = None, *, dry_run: bool = False) -> ConsolidationReport:
        """Distil what the namespace's memories say again and again into semantic memories (``consolidation.py``).

        First merges repeats that slipped past the write path (``merge_repeats``); then clusters
        related memories (vectors, values, people, time) and turns each cluster said at least
        ``consolidation_min_members`` times, in two sessions or days or more, into one semantic
        memory whose ``source`` names every source and their turns. The sources are kept at half
        their importance, linked by ``consolidated_into``; running it again adds nothing.
        ``dry_run`` reports what would happen, changes nothing and calls no LLM.
        """
        handle, lane = self._existing(namespace)
        return lane.consolidator.consolidate(handle, dry_run=dry_run)

    def merge_repeats(self, namespace: str | None = None, *, dry_run: bool = False) -> list[MergedRepeat]:
        """Merge active memories with cosine ≥ ``merge_threshold`` and the same values into one (``upkeep/merging.py``).

        The survivor is reinforced, the other becomes history pointing at it; ``unmerge`` splits
        them again. ``dry_run`` lists the pairs and changes nothing.
        """
        handle, lane = self._existing(namespace)
        return lane.merger.merge(handle, dry_run=dry_run)

    def restore(self, *, namespace: str | None = None, ids: Sequence[str] | None = None) -> int:
        """Bring archived memories back from cold storage (all, or the given ids) as active.

        A restored memory counts as used at the clock's now, so the next upkeep does not archive
        it again. Returns how many came back; ids not in cold storage are skipped (see ``archived_ids``).
        A namespace is created only when something comes back into it.
        """
        name, handle, lane = self._lanes.reading(namespace)
        if handle is None:
            rows = lane.maintenance.cold.rows(name)
            if not rows:
                return 0
            handle = self._lanes.open(name, create=True, text=text_of_export({"records": rows}))
            assert handle is not None  # created
            lane = self._lanes.of(handle)
        return lane.maintenance.restore(handle, ids, now=self._parts.clock.now())

    def archived_ids(self, *, namespace: str | None = None) -> list[str]:
        """The ids in the namespace's cold storage: what ``restore`` can bring back, oldest archive first."""
        name = self._parts.namespace_name(namespace)
        return self._lanes.primary.maintenance.archived_ids(name)  # every lane's cold storage is the store's


__all__ = ["UpkeepFacade"]
