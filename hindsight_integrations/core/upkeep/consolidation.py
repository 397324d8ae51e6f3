"""Consolidation: episodes that say one thing several times become one semantic memory (docs/architecture.md, "Upkeep").

SPEC §3: episodic → semantic by clustering related episodes, distilling a fact and keeping
provenance links to its sources; run periodically, not every turn. One run of ``consolidate``:

1. **merge** repeats that slipped past the write path (``merging.py``), so a repeat is counted
   once below;
2. **cluster** the namespace's active, current statements of facts: episodic memories and the
   write path's one-statement semantic memories (a preference is filed semantic when it is
   said, yet one saying is an episode of it), not working turns, summaries, events or
   time-bound memories (those are moments, not stable facts), not history. A memory joins a
   cluster when it is ``consolidation_threshold`` close to it by vector and states its fact
   (``same_fact.py``: the same values, negations and people as every member, and all that the
   cluster's core says, no word of it replaced), within ``consolidation_window_days`` of the cluster's latest member
   (``clustering.py``);
3. a cluster that says its fact ``consolidation_min_members`` times (a memory reinforced by
   repeats counts each of them) on at least two *occasions* (sessions, or days for memories
   without a session) is **distilled** into one semantic memory (``distillation.py``): one chat
   burst is not a stable fact;
4. the semantic memory's ``source`` lists its sources (``memory_ids``; ``members`` with each one's
   content, session, time, kind, importance, metadata and turn ids) and the turns they came
   from (``message_ids``). The sources are kept, at half their importance, each linked to it
   (``consolidated_into``), so recall returns the semantic memory in their place
   (``ranking.prefer_consolidated``) instead of spending tokens on both.

5. **habits**: episodes of one activity (events, each with its own values, which the facts above
   never join) done on ``consolidation_min_members`` days or more become one semantic memory
   of the habit: how often, from when to when, the first and latest in their own words
   (``habits.py``).

Running it again adds nothing: consolidated sources are skipped, and a memory that states an
existing consolidated fact again *reinforces* it (importance, access count, provenance) rather
than starting a second one. The LLM, when configured, is called outside the namespace's write
lock; what changed meanwhile is left for the next run.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Literal

import numpy as np

from ..language.paraphrase import joins_related, joins_rephrased, states_one_fact
from ..language.sameness import joins
from ..language.slots import detect_slot
from ..model.records import Kind, MemoryRecord, Role, Source, Status, Tier
from ..model.results import ConsolidatedFact, ConsolidationReport
from ..parts import EngineParts
from ..storage.namespace_store import NamespaceStore
from .clustering import Cluster, cluster, loose_threshold, unit_rows
from .distillation import Distilled, Distiller, statements
from .habits import (
    HABIT_KEY,
    days_done,
    episodes_of,
    habit_text,
    is_episode,
    is_habit,
    same_activity,
)
from .merging import CONSOLIDATION_ORIGIN, RepeatMerger, mergeable
from .provenance import member_entry, occasions, restated, turn_ids

SOURCE_IMPORTANCE_FACTOR = 0.5  # a source weighs half once its semantic memory speaks for it
_MOMENTS = frozenset({Kind.EVENT, Kind.TURN, Kind.SUMMARY})


def consolidable(record: MemoryRecord, now: datetime) -> bool:
    """A current statement of a fact, not yet part of a consolidated one."""
    return mergeable(record) and record.kind not in _MOMENTS and record.expires_at is None and record.is_valid(now)


@dataclass
class _Plan:
    """One cluster's outcome: a new semantic memory, or an existing one reinforced, and its sources."""

    members: list[MemoryRecord]
    semantic: MemoryRecord
    new: bool
    by: Literal["rules", "llm", "existing"]
    seed: MemoryRecord | None = None


class Consolidator:
    """Runs consolidation on a namespace (see the module docstring)."""

    def __init__(self, parts: EngineParts, merger: RepeatMerger) -> None:
        self._parts = parts
        self._merger = merger
        self._distiller = Distiller(parts.llm)

    def consolidate(self, handle: NamespaceStore, *, dry_run: bool = False) -> ConsolidationReport:
        """See ``MemoryEngine.consolidate``."""
        now = self._parts.clock.now()
        records = [r for r, _ in handle.iterate()]
        merged = self._merger.merge(handle, dry_run=dry_run, records=records)
        if dry_run:
            gone = {m.merged for m in merged}
            records = [r for r in records if r.id not in gone]
        elif merged:
            records = [r for r, _ in handle.iterate()]
        habit_plans = self._habit_plans(handle, records, now, dry_run=dry_run)
        pool = [r for r in records if consolidable(r, now)]
        seeds = [r for r in records if _is_consolidated(r, now) and not is_habit(r, now)]
        vectors = handle.vectors([r.id for r in pool + seeds])
        pool = [r for r in pool if r.id in vectors]
        seeds = [r for r in seeds if r.id in vectors]
        report = ConsolidationReport(namespace=handle.name, dry_run=dry_run, examined=len(pool), merged=merged)
        if not pool:
            return self._report(handle, report, habit_plans, now, dry_run=dry_run)
        unit = unit_rows([vectors[r.id] for r in pool])
        seed_unit = unit_rows([vectors[r.id] for r in seeds]) if seeds else None
        settings = self._parts.settings
        clusters = cluster(
            pool,
            unit,
            threshold=self._parts.cosines.consolidation,
            window=timedelta(days=settings.consolidation_window_days),
            joins=joins,
            seeds=seeds,
            seed_unit=seed_unit,
        )
        plans = [p for c in clusters if (p := self._plan(handle.name, c, pool, unit, seeds, now, dry_run))]
        report.standing = [f for c in clusters if (f := self._standing(c, pool))]
        judged = [c for c in clusters if c.seed is not None or self._said_enough([pool[n] for n in c.members])]
        plans += self._rephrased_plans(handle.name, judged, pool, unit, seeds, seed_unit, now, dry_run)
        facts = {m.id for p in plans for m in p.members}
        habit_plans = [p for p in habit_plans if not facts & {m.id for m in p.members}]  # a fact's first
        return self._report(handle, report, plans + habit_plans, now, dry_run=dry_run)

    def _report(
        self, handle: NamespaceStore, report: ConsolidationReport, plans: list[_Plan], now: datetime, *, dry_run: bool
    ) -> ConsolidationReport:
        """Apply ``plans`` (unless a dry run) and list what they created and reinforced."""
        if not dry_run:
            plans = self._apply(handle, plans, now)
        for plan in plans:
            fact = _fact(plan, dry_run=dry_run)
            (report.created if plan.new else report.reinforced).append(fact)
        return report

    def _habit_plans(
        self, handle: NamespaceStore, records: Sequence[MemoryRecord], now: datetime, *, dry_run: bool
    ) -> list[_Plan]:
        """Episodes of one activity done on enough days: a new habit, or more of one already made (``habits.py``)."""
        pool = [r for r in records if is_episode(r, now)]
        seeds = [r for r in records if is_habit(r, now)]
        vectors = handle.vectors([r.id for r in pool + seeds]) if pool else {}
        pool = [r for r in pool if r.id in vectors]
        seeds = [r for r in seeds if r.id in vectors]
        if not pool:
            return []
        unit = unit_rows([vectors[r.id] for r in pool])
        clusters = cluster(
            pool,
            unit,
            threshold=self._loose_threshold,
            window=timedelta(days=self._parts.settings.consolidation_window_days),
            joins=same_activity,
            seeds=seeds,
            seed_unit=unit_rows([vectors[r.id] for r in seeds]) if seeds else None,
        )
        plans = []
        for group in clusters:
            members = [pool[n] for n in group.members]
            if group.seed is not None:
                seed = seeds[group.seed]
                episodes = episodes_of(seed, members)
                retold = _reinforced(seed, members, now).model_copy(
                    update={
                        "content": habit_text(episodes),
                        "metadata": {**seed.metadata, HABIT_KEY: days_done(episodes)},
                    }
                )
                plans.append(_Plan(members, retold, new=False, by="existing", seed=seed))
            elif days_done(members) >= self._parts.settings.consolidation_min_members:
                distilled = self._distiller.distil(members, unit[group.members], use_llm=not dry_run)
                by: Literal["rules", "llm"] = "llm" if distilled is not None and distilled.by == "llm" else "rules"
                said = distilled.content if distilled is not None and by == "llm" else None
                habit = Distilled(habit_text(members, said), Kind.FACT, max(m.importance for m in members), by=by)
                semantic = self._semantic(handle.name, members, habit, now)
                semantic = semantic.model_copy(update={"metadata": {HABIT_KEY: days_done(members)}})
                plans.append(_Plan(members, semantic, new=True, by=by))
        return plans

    @property
    def _loose_threshold(self) -> float:
        return loose_threshold(self._parts.cosines.neighbours_rules, self._parts.cosines.consolidation)

    def _rephrased_plans(
        self,
        namespace: str,
        judged: Sequence[Cluster],
        pool: Sequence[MemoryRecord],
        unit: np.ndarray,
        seeds: Sequence[MemoryRecord],
        seed_unit: np.ndarray | None,
        now: datetime,
        dry_run: bool,
    ) -> list[_Plan]:
        """The facts said again in other words (``paraphrase.py``) among what the first clustering left alone.

        Left alone: any memory and seed but those of the ``judged`` clusters (consolidated, or
        found no one fact by the LLM, which is not asked twice).

        Two wordings on two occasions make the fact: a paraphrase is no burst of one chat. With
        an LLM (not in a dry run, where none is asked) new clusters are looser and the model's
        distillation decides whether they state one fact; when the call fails, only a cluster the
        rules would have made is distilled by them. A consolidated memory is only ever joined by
        the rules: reinforcing it asks no model.
        """
        taken = {n for c in judged for n in c.members}
        used = {c.seed for c in judged}
        left = [n for n in range(len(pool)) if n not in taken]
        free = [n for n in range(len(seeds)) if n not in used]
        if len(left) < (1 if free else 2):
            return []
        records, free_seeds = [pool[n] for n in left], [seeds[n] for n in free]
        loose = self._parts.llm is not None and not dry_run

        def joins(members: Sequence[MemoryRecord], record: MemoryRecord) -> bool:
            seeded = any(m.source.origin == CONSOLIDATION_ORIGIN for m in members)
            return (joins_related if loose and not seeded else joins_rephrased)(restated(members), record)

        clusters = cluster(
            records,
            unit[left],
            threshold=self._loose_threshold,
            window=timedelta(days=self._parts.settings.consolidation_window_days),
            joins=joins,
            seeds=free_seeds,
            seed_unit=seed_unit[free] if seed_unit is not None and free else None,
        )
        plans = [
            p
            for c in clusters
            if (c.seed is not None or _lasting([records[n] for n in c.members]))
            and (p := self._plan(namespace, c, records, unit[left], free_seeds, now, dry_run, minimum=2))
        ]
        return [p for p in plans if not (loose and p.by == "rules") or states_one_fact(p.members)]

    def _plan(
        self,
        namespace: str,
        group: Cluster,
        pool: Sequence[MemoryRecord],
        unit: np.ndarray,
        seeds: Sequence[MemoryRecord],
        now: datetime,
        dry_run: bool,
        *,
        minimum: int | None = None,
    ) -> _Plan | None:
        members = [pool[n] for n in group.members]
        if group.seed is not None:
            seed = seeds[group.seed]
            return _Plan(members, _reinforced(seed, members, now), new=False, by="existing", seed=seed)
        if not self._said_enough(members, minimum) or _standing_alone(members):
            return None
        distilled = self._distiller.distil(members, unit[group.members], use_llm=not dry_run)
        if distilled is None:
            return None
        return _Plan(members, self._semantic(namespace, members, distilled, now), new=True, by=distilled.by)

    def _said_enough(self, members: Sequence[MemoryRecord], minimum: int | None = None) -> bool:
        """Said ``minimum`` (``consolidation_min_members``) times, merged repeats counted, on two occasions at least."""
        said = sum(statements(m) for m in members)
        wanted = self._parts.settings.consolidation_min_members if minimum is None else minimum
        return said >= wanted and len(_occasions(members)) >= 2

    def _standing(self, group: Cluster, pool: Sequence[MemoryRecord]) -> ConsolidatedFact | None:
        """A fact said often enough that is one semantic memory already: reported, nothing written."""
        members = [pool[n] for n in group.members]
        if group.seed is not None or not _standing_alone(members) or not self._said_enough(members):
            return None
        record = members[0]
        return ConsolidatedFact(
            id=record.id,
            content=record.content,
            kind=record.kind,
            importance=record.importance,
            sources=[record.id],
            statements=statements(record),
            occasions=len(occasions(record)),
            distilled_by="existing",
        )

    def _semantic(
        self, namespace: str, members: Sequence[MemoryRecord], distilled: Distilled, now: datetime
    ) -> MemoryRecord:
        ordered = sorted(members, key=lambda m: m.occurred_at)
        agents = {m.agent_id for m in members}
        return self._parts.new_record(
            namespace,
            distilled.content,
            now=now,
            tier=Tier.SEMANTIC,
            kind=distilled.kind,
            role=Role.USER if any(m.role is Role.USER for m in members) else ordered[-1].role,
            importance=distilled.importance,
            occurred_at=ordered[-1].occurred_at,
            valid_from=ordered[0].occurred_at,
            agent_id=agents.pop() if len(agents) == 1 else None,
            entities=sorted({e for m in members for e in m.entities}),
            slot=detect_slot(distilled.content),
            source=Source(
                origin=CONSOLIDATION_ORIGIN,
                memory_ids=[m.id for m in ordered],
                message_ids=turn_ids(ordered),
                members=[member_entry(m) for m in ordered],
            ),
        )

    def _apply(self, handle: NamespaceStore, plans: list[_Plan], now: datetime) -> list[_Plan]:
        """Write the plans whose records are still as they were read; the rest wait for the next run."""
        if not plans:
            return []
        wanted = {m.id for p in plans for m in p.members} | {p.seed.id for p in plans if p.seed is not None}
        with handle.writing:
            current = {r.id: r for r, _ in handle.get(list(wanted))}
            done = [p for p in plans if _still_as_read(p, current)]
            fresh = [p.semantic for p in done if p.new]
            retold = [p.semantic for p in done if p.seed is not None and p.semantic.content != p.seed.content]
            changed = [p.semantic for p in done if not p.new and p.semantic not in retold]
            for plan in done:
                changed.extend(
                    m.model_copy(
                        update={
                            "importance": round(m.importance * SOURCE_IMPORTANCE_FACTOR, 4),
                            "consolidated_into": plan.semantic.id,
                            "updated_at": now,
                        }
                    )
                    for m in plan.members
                )
            if fresh:
                vectors, context_vectors = self._parts.embed_records(fresh)
                handle.add(fresh, vectors, context_vectors)
            if retold:  # a habit's text says how often: written again, so embedded again
                vectors, context_vectors = self._parts.embed_records(retold)
                handle.rewrite(retold, vectors, context_vectors)
            handle.rewrite(changed)
        return done


def _lasting(members: Sequence[MemoryRecord]) -> bool:
    """Two wordings or more, one of them a lasting statement (semantic: a preference, a stated fact).

    "Went for a run along the river this morning." and "Ran along the river." are two runs, not
    one fact said twice: episodes of an activity are a habit's (``habits.py``), made of three days.
    """
    return len(members) >= 2 and any(m.tier is Tier.SEMANTIC for m in members)


def _standing_alone(members: Sequence[MemoryRecord]) -> bool:
    """One semantic memory, its repeats merged into it when written: already the memory of its fact."""
    return len(members) == 1 and members[0].tier is Tier.SEMANTIC


def _is_consolidated(record: MemoryRecord, now: datetime) -> bool:
    return record.source.origin == CONSOLIDATION_ORIGIN and record.is_valid(now)


def _occasions(members: Iterable[MemoryRecord]) -> set[str]:
    return set().union(*(occasions(m) for m in members))


def _reinforced(seed: MemoryRecord, members: Sequence[MemoryRecord], now: datetime) -> MemoryRecord:
    """``seed`` said again by ``members``: importance, access count and provenance grow; its text stays."""
    source = seed.source
    return seed.model_copy(
        update={
            "importance": max(seed.importance, *(m.importance for m in members)),
            "access_count": seed.access_count + len(members),
            "last_accessed_at": now,
            "updated_at": now,
            "entities": sorted(set(seed.entities).union(*(m.entities for m in members))),
            "source": source.model_copy(
                update={
                    "memory_ids": [*source.memory_ids, *(m.id for m in members)],
                    "message_ids": list(dict.fromkeys([*source.message_ids, *turn_ids(members)])),
                    "members": [*source.members, *(member_entry(m) for m in members)],
                }
            ),
        }
    )


def _still_as_read(plan: _Plan, current: dict[str, MemoryRecord]) -> bool:
    def unchanged(record: MemoryRecord) -> bool:
        now = current.get(record.id)
        return now is not None and now.status is Status.ACTIVE and now.updated_at == record.updated_at

    members_free = all(unchanged(m) and current[m.id].consolidated_into is None for m in plan.members)
    return members_free and (plan.seed is None or unchanged(plan.seed))


def _fact(plan: _Plan, *, dry_run: bool) -> ConsolidatedFact:
    semantic = plan.semantic
    return ConsolidatedFact(
        id=None if dry_run and plan.new else semantic.id,
        content=semantic.content,
        kind=semantic.kind,
        importance=semantic.importance,
        sources=[m.id for m in plan.members],
        statements=sum(statements(m) for m in plan.members),
        occasions=len(_occasions(plan.members)),
        distilled_by=plan.by,
    )


__all__ = ["SOURCE_IMPORTANCE_FACTOR", "Consolidator", "consolidable"]
