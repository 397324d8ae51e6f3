"""What upkeep made of a forgotten memory: the copies of its text that outlive it unless forgetting reaches them.

``forgetting.py`` takes a forgotten text out of the contexts stored after it. Upkeep keeps the
text elsewhere too, and each copy is found from the forgotten record itself, never by reading
the namespace:

* **the originals it absorbed**: the periodic merge (``upkeep/merging.py``) keeps the memory it
  merged away as history (superseded by the survivor, ``MERGED_INTO_KEY``), with its own words,
  listed in history and recalled with ``include_history``. Its ``sources`` entry names it
  (``memory_id``, nested when the original had absorbed another): it is forgotten with the
  survivor. Its words stay in the survivor's ``sources``, as the forgotten record keeps its own.
* **the consolidated memory it was a member of** (``consolidated_into``): its ``source.members``
  hold the member's words, and an extractive one says them as its own text. It is rebuilt from
  the members that stay when they still make it as consolidation would (a fact said
  ``consolidation_min_members`` times on two occasions; a habit done on that many days): by
  the rules, in a remaining member's words (``distillation.extractive``, ``habits.habit_text``),
  since a model's sentence may carry the forgotten words and a forget asks no model. Otherwise it
  is forgotten too, and the members that stay are memories of their own again: unlinked, at the
  importance they had before consolidation halved it, so the next run may consolidate them anew.
* **the members of a consolidated memory forgotten** itself: they say its fact in their own
  words, and it spoke for them in recall. Left active they were recalled as the fact forgotten;
  left linked at half importance they were never consolidated again; unlinked, the next run would
  distil the fact anew. So they are forgotten with it: the user forgot the fact, not one wording.
* **the episodic summary of compressed turns** (``working/compression.py``) that told a turn
  forgotten with the memory (``forgetting.py`` forgets the turns saying its text, compressed
  ones too): it is made again of its other turns as compression makes it without a model
  (``compression.told_turns``, ``extractive_text``: a model's summary may carry the forgotten
  words), and forgotten when they tell nothing worth a summary.

A copy forgotten (an original, a consolidated memory or a summary forgotten with the text, a
member forgotten with its consolidated memory) is deleted for good, not marked deleted: marked,
it kept the forgotten words in its own record, for ``get``, an export or the viewer to show.
None of them is needed to undo the forget: ``unforget`` brings back the memory the user forgot
alone, whose record keeps its words, its merged inputs' (``unmerge``) and its members'.

A member or a summary upkeep has archived since is changed in cold storage as in Chroma
(``forgotten_archive.py``): ``restore`` brings back what the archive holds.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import Any

import numpy as np

from ..language.slots import detect_slot
from ..model.records import Kind, MemoryRecord, Status, Tier, merged_inputs
from ..model.reserved import HABIT_KEY
from ..parts import EngineParts
from ..storage.namespace_store import NamespaceStore
from ..upkeep.clustering import unit_rows
from ..upkeep.consolidation import SOURCE_IMPORTANCE_FACTOR
from ..upkeep.distillation import dominant_kind, extractive, statements
from ..upkeep.habits import days_done, habit_text
from ..upkeep.provenance import occasions
from ..working.compression import extractive_text, remembered_turns, told_turns
from .forgotten_archive import ArchivedCopies


def absorbed_originals(handle: NamespaceStore, forgotten: Sequence[MemoryRecord], now: datetime) -> list[MemoryRecord]:
    """The history records upkeep merged into ``forgotten`` (or into one of them in turn), now forgotten too.

    Returned marked deleted; the caller deletes them for good (see the module docstring).

    Only a record still superseded by the memory that absorbed it: one split back off
    (``unmerge``) or superseded by something else since is a memory of its own.
    """
    named = {
        entry["memory_id"]
        for record in forgotten
        for entry in merged_inputs(record.sources)
        if isinstance(entry.get("memory_id"), str) and entry["memory_id"]
    }
    absorbers = {record.id for record in forgotten}
    found = {record.id: record for record, _ in handle.get(sorted(named - absorbers))}
    originals: list[MemoryRecord] = []
    while True:  # an original absorbed by an original is known once that one is
        fresh = [
            record
            for record in found.values()
            if record.status is Status.SUPERSEDED and record.superseded_by in absorbers and record.id not in absorbers
        ]
        if not fresh:
            return originals
        absorbers.update(record.id for record in fresh)
        originals.extend(record.model_copy(update={"status": Status.DELETED, "updated_at": now}) for record in fresh)


def summaries_without(
    stored: Sequence[MemoryRecord], removed: set[str], now: datetime, shortened: Sequence[MemoryRecord] = ()
) -> tuple[list[MemoryRecord], list[MemoryRecord]]:
    """The summaries among ``stored`` (a session's records) told again without ``removed`` turns; those forgotten.

    ``shortened``: turns that lost a forgotten text said inside them; a summary that told one tells
    what is left of it.

    Only a summary that told one of them: a turn a long-term memory was made from is left out of
    its summary (``compression.told_turns``), so forgetting that memory and its turn leaves the
    summary as it is.
    """
    remembered = remembered_turns(stored)
    told = (removed | {turn.id for turn in shortened}) - remembered
    turns = {
        r.id: r for r in stored if r.tier is Tier.WORKING and r.status is not Status.DELETED and r.id not in removed
    }
    turns.update((turn.id, turn) for turn in shortened)
    rebuilt: list[MemoryRecord] = []
    dropped: list[MemoryRecord] = []
    for summary in stored:
        if summary.kind is not Kind.SUMMARY or summary.status is Status.DELETED:
            continue
        if told.isdisjoint(summary.source.message_ids):
            continue
        group = [turns[turn_id] for turn_id in summary.source.message_ids if turn_id in turns]
        picked = told_turns(group, remembered) if group else None
        if picked is None:
            dropped.append(summary.model_copy(update={"status": Status.DELETED, "updated_at": now}))
            continue
        content = extractive_text(picked[0], fallback=picked[1])
        rebuilt.append(summary.model_copy(update={"content": content, "updated_at": now}))
    return rebuilt, dropped


class ConsolidatedMembers:
    """Rebuilds (or forgets) the consolidated memories forgotten records were members of; see the module docstring."""

    def __init__(self, parts: EngineParts, archive: ArchivedCopies) -> None:
        """``archive``: the members upkeep archived since consolidation are freed in cold storage too."""
        self._parts = parts
        self._archive = archive

    def forgotten_with(
        self, handle: NamespaceStore, forgotten: Sequence[MemoryRecord], now: datetime
    ) -> list[MemoryRecord]:
        """The members of the consolidated memories among ``forgotten``, forgotten with them; written, and returned.

        A consolidated memory speaks for its members (recall returns it in their place), and they
        say its fact in their own words: left, they were recalled as the fact forgotten, and left
        linked at half importance they were never consolidated again. Unlinked, the next run would
        distil the fact anew. So the user's forget reaches them, those archived since included.
        """
        semantic = {record.id for record in forgotten if record.source.members}
        ids = sorted(
            {
                str(entry["id"])
                for record in forgotten
                if record.id in semantic
                for entry in record.source.members
                if isinstance(entry, dict) and entry.get("id")
            }
        )
        if not ids:
            return []
        live = {record.id: record for record, _ in handle.get(ids)}
        archived = [r for r in self._archive.named(handle.name, [i for i in ids if i not in live]) if r.id in ids]
        members = [
            record.model_copy(update={"status": Status.DELETED, "updated_at": now})
            for record in [*live.values(), *archived]
            if record.consolidated_into in semantic and record.status is not Status.DELETED
        ]
        handle.delete([m.id for m in members if m.id in live])
        self._archive.forget(handle.name, [m for m in members if m.id not in live])
        return members

    def leave(self, handle: NamespaceStore, forgotten: Sequence[MemoryRecord], now: datetime) -> list[MemoryRecord]:
        """Write each consolidated memory without ``forgotten``; the records rewritten. The caller holds the lock."""
        gone = {record.id for record in forgotten}
        into = sorted({record.consolidated_into for record in forgotten if record.consolidated_into})
        changed: list[MemoryRecord] = []
        for semantic, _ in handle.get(into):
            left = [e for e in semantic.source.members if isinstance(e, dict) and e.get("id") not in gone]
            if semantic.status is Status.DELETED or len(left) == len(semantic.source.members):
                continue
            live = {record.id: record for record, _ in handle.get([str(e.get("id")) for e in left])}
            members = [(live.get(str(e.get("id"))) or _said(semantic, e), e) for e in left]
            if self._still_made(semantic, members):
                rebuilt = self._rebuilt(handle, semantic, members, now)
                handle.rewrite([rebuilt], *self._parts.embed_records([rebuilt]))
                changed.append(rebuilt)
                continue
            freed = _freed(live.values(), semantic.id, now)
            archived = _freed(
                self._archive.named(handle.name, [str(e.get("id")) for e in left if e.get("id") not in live]),
                semantic.id,
                now,
            )
            dropped = semantic.model_copy(update={"status": Status.DELETED, "updated_at": now})
            handle.rewrite(freed)
            handle.delete([dropped.id])
            self._archive.rewrite(handle.name, archived)
            changed.extend([dropped, *freed, *archived])
        return changed

    def _still_made(self, semantic: MemoryRecord, members: Sequence[tuple[MemoryRecord, dict[str, Any]]]) -> bool:
        """Whether the members that stay make ``semantic`` as consolidation would (``Consolidator._said_enough``)."""
        wanted = self._parts.settings.consolidation_min_members
        records = [record for record, _ in members]
        if HABIT_KEY in semantic.metadata:
            return days_done(records) >= wanted
        said = sum(_statements(record, entry) for record, entry in members)
        return said >= wanted and len(set().union(*(occasions(r) for r in records))) >= 2

    def _rebuilt(
        self,
        handle: NamespaceStore,
        semantic: MemoryRecord,
        members: Sequence[tuple[MemoryRecord, dict[str, Any]]],
        now: datetime,
    ) -> MemoryRecord:
        """``semantic`` made again of ``members`` alone: its text, kind, importance, dates, people and provenance."""
        records = sorted((record for record, _ in members), key=lambda m: m.occurred_at)
        changes: dict[str, Any] = {"importance": max(float(e.get("importance", 0.0)) for _, e in members)}
        if HABIT_KEY in semantic.metadata:
            changes["content"] = habit_text(records)
            changes["metadata"] = {**semantic.metadata, HABIT_KEY: days_done(records)}
        else:
            distilled = extractive(records, self._unit(handle, records))
            changes.update(content=distilled.content, kind=dominant_kind(records))
        entries = [entry for _, entry in sorted(members, key=lambda m: m[0].occurred_at)]
        turns = dict.fromkeys(str(t) for e in entries for t in e.get("message_ids") or [])
        return semantic.model_copy(
            update={
                **changes,
                "occurred_at": records[-1].occurred_at,
                "valid_from": records[0].occurred_at,
                "entities": sorted({entity for record in records for entity in record.entities}),
                "slot": detect_slot(changes["content"]),
                "updated_at": now,
                "source": semantic.source.model_copy(
                    update={
                        "memory_ids": [str(e.get("id")) for e in entries],
                        "message_ids": list(turns),
                        "members": entries,
                    }
                ),
            }
        )

    def _unit(self, handle: NamespaceStore, records: Sequence[MemoryRecord]) -> np.ndarray:
        """The members' unit vectors: as stored, or embedded for a member archived since (one per such member)."""
        stored = handle.vectors([record.id for record in records])
        missing = [record.content for record in records if record.id not in stored]
        embedded = iter(self._parts.embed(missing)) if missing else iter(())
        return unit_rows([stored[r.id] if r.id in stored else next(embedded) for r in records])


def _freed(members: Iterable[MemoryRecord], semantic_id: str, now: datetime) -> list[MemoryRecord]:
    """The members of ``semantic_id`` unlinked, at the importance they had before consolidation halved it."""
    return [
        member.model_copy(
            update={
                "consolidated_into": None,
                "importance": min(1.0, round(member.importance / SOURCE_IMPORTANCE_FACTOR, 4)),
                "updated_at": now,
            }
        )
        for member in members
        if member.consolidated_into == semantic_id
    ]


def _said(semantic: MemoryRecord, entry: dict[str, Any]) -> MemoryRecord:
    """A member no longer in the store (archived), as ``semantic``'s provenance keeps it."""
    fields = {key: entry[key] for key in ("id", "content", "kind", "importance", "session_id") if entry.get(key)}
    return MemoryRecord.model_validate({**fields, "namespace": semantic.namespace, "occurred_at": entry["occurred_at"]})


def _statements(record: MemoryRecord, entry: dict[str, Any]) -> int:
    """How many times a member was said: as stored now, or as its provenance counted it."""
    return statements(record) if record.sources else max(1, int(entry.get("statements") or 1))


__all__ = ["ConsolidatedMembers", "absorbed_originals", "summaries_without"]
