"""A namespace as data: JSON export and import (backups, moving users, re-embedding), stats, dump.

An export holds every record, every status included, with its vectors unless asked not to:
importing it into a store with the same embedding model reuses them; with another model the
records are re-embedded (the store refuses to mix models, so this is how a namespace changes
model). It also holds the namespace's cold storage (``cold_records``: what upkeep archived out
of Chroma), which an import puts back into the cold storage of the namespace it goes into, so
``restore`` works there; an export written before had none, and imports as it is.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np
from pydantic import ValidationError

from .config import validate_namespace
from .errors import InvalidInputError, InvalidRecordsError
from .model.arguments import validation_problems, whole_number
from .model.imported import aware, cleaned, record_problems
from .model.limits import MAX_OFFSET, MAX_PAGE, InputLimits
from .model.records import MemoryRecord, Status, Tier
from .model.results import NamespaceStats
from .parts import EngineParts
from .progress import ProgressCallback, report
from .recall.context import memory_line
from .recall.filters import RecallFilters, bounded_filters
from .storage.cold import COLD_VECTOR_KEYS, ColdRow, ColdStorage, archived_row
from .storage.listing import newest_first
from .storage.namespace_store import NamespaceStore, Vector
from .write.reslot import slot_now

EXPORT_FORMAT = "hindsight-export"
COLD_RECORDS = "cold_records"  # the export's key of the namespace's cold storage (optional: absent in older exports)
# Progress stages (see ``progress.ProgressCallback``) and how often each is reported.
_READING, _CHECKING = "reading memories", "checking memories"
_EMBEDDING, _WRITING = "embedding memories", "writing memories"
_REPORT_EVERY = 500
_EMBED_CHUNK = 256  # records embedded between two reports (a few model batches)
_WRITE_CHUNK = 500  # records written to Chroma between two reports

CheckedExport = tuple[list[MemoryRecord], list[MemoryRecord]]
"""An export's records and cold records, checked and made this lane's records (``Backup.checked``)."""


def export_namespace(data: Any, namespace: str | None) -> str | None:
    """The namespace ``data`` goes into: ``namespace``, else the one it was exported from (None: the configured one).

    Checks first that ``data`` is an export at all, so a wrong file is refused before a namespace is opened.
    """
    if not isinstance(data, dict) or data.get("format") != EXPORT_FORMAT:
        found = f'its "format" is {data.get("format")!r}' if isinstance(data, dict) else type(data).__name__
        raise InvalidInputError("data", f"is not a {EXPORT_FORMAT} document ({found}); `hindsight export` writes one")
    if namespace is None and data.get("namespace") is not None:
        return validate_namespace(data["namespace"], 'the export\'s "namespace"')
    return namespace


@dataclass(frozen=True)
class Page:
    """One ``MemoryEngine.list`` call's filters and page, checked before a namespace is opened."""

    filters: RecallFilters
    include_history: bool
    limit: int
    offset: int

    @classmethod
    def checked(
        cls, filters: RecallFilters | dict[str, Any] | None, limits: InputLimits, history: bool, limit: int, offset: int
    ) -> Page:
        """The page asked for, or ``InvalidInputError`` naming the argument out of bounds."""
        whole_number(limit, "limit", low=1, high=MAX_PAGE)
        whole_number(offset, "offset", low=0, high=MAX_OFFSET)
        chosen = bounded_filters(filters, limits)
        if history and not chosen.statuses:  # quarantined memories wait for review: list them too
            chosen = chosen.model_copy(update={"statuses": [Status.ACTIVE, Status.SUPERSEDED, Status.QUARANTINED]})
        return cls(chosen, history, limit, offset)


def _listed(data: dict[str, Any], key: str) -> list[Any]:
    """The list an export holds under ``key`` (none: empty), or ``InvalidInputError`` naming the key."""
    items = data.get(key, [])
    if not isinstance(items, list):
        raise InvalidInputError(key, f"must be a list of records, got {type(items).__name__}")
    return items


def _as_exported(record: MemoryRecord, item: dict[str, Any]) -> bool:
    """Whether ``record``'s texts are its export's as written: else the import cleaned them and embeds them again."""
    return record.content == item.get("content") and record.context == item.get("context")


def _fits(vector: Any, dimension: int | None) -> bool:
    """Whether an exported vector can be stored as it is: a list of ``dimension`` finite numbers."""
    if not isinstance(vector, list) or not vector or (dimension and len(vector) != dimension):
        return False
    try:
        return bool(np.isfinite(np.asarray(vector, dtype=np.float32)).all())
    except (TypeError, ValueError):
        return False


class Backup:
    """Export, import, stats and the debugging dump of a namespace."""

    def __init__(self, parts: EngineParts) -> None:
        self._parts = parts
        self.cold = ColdStorage(parts.settings.resolved_cold_store)

    def export(
        self,
        name: str,
        handle: NamespaceStore | None,
        *,
        include_embeddings: bool,
        progress: ProgressCallback | None = None,
    ) -> dict[str, Any]:
        """See ``MemoryEngine.export``; ``progress`` is told of the records read (stage ``"reading memories"``).

        ``handle`` is None for a namespace never written: its export has no records (and any
        cold records a dropped namespace of that name left behind).
        """
        total = handle.count() if handle is not None else 0
        report(progress, _READING, 0, total)
        records = []
        for record, vector in _iterate(handle, include_embeddings=include_embeddings):
            item = record.public_dict()
            if vector is not None:
                item["embedding"] = vector
            records.append(item)
            if len(records) % _REPORT_EVERY == 0:
                report(progress, _READING, min(len(records), total), max(total, len(records)))
        report(progress, _READING, len(records), len(records))
        if include_embeddings and handle is not None:
            context_vectors = handle.context_vectors([r["id"] for r in records])
            for item in records:
                if item["id"] in context_vectors:
                    item["window_embedding"] = context_vectors[item["id"]]  # the key predates "context vector"
        cold = self.cold.rows(name)
        if not include_embeddings:
            cold = [{k: v for k, v in row.items() if k not in COLD_VECTOR_KEYS} for row in cold]
        return {
            "format": EXPORT_FORMAT,
            "version": 1,
            "namespace": name,
            "embedding_model": self._parts.embedder.name,
            "embedding_dim": self._parts.embedding_dim,
            "exported_at": self._parts.clock.now().isoformat(),
            "records": records,
            COLD_RECORDS: cold,
        }

    def checked(self, namespace: str, data: dict[str, Any], progress: ProgressCallback | None = None) -> CheckedExport:
        """The records and cold records of ``data``, an export going into ``namespace``, as this lane writes them.

        ``InvalidInputError`` or ``InvalidRecordsError`` (every problem at once) if they cannot be
        imported. Reads nothing of the store, so an import into a namespace that does not exist yet
        is checked before the namespace is made, and a refused one leaves none behind.
        """
        items, cold_items = _listed(data, "records"), _listed(data, COLD_RECORDS)
        return self._checked_records(namespace, items, cold_items, progress)

    def import_data(
        self,
        handle: NamespaceStore,
        data: dict[str, Any],
        *,
        progress: ProgressCallback | None = None,
        checked: CheckedExport | None = None,
    ) -> int:
        """See ``MemoryEngine.import_data``; ``data`` was checked to be an export. Returns how many memories came in.

        Every record is checked before anything is written, and every problem is reported at
        once (``InvalidRecordsError``); ``checked`` is what this lane's ``checked`` already made
        of ``data``, if the caller checked it before opening the namespace. A record's vectors
        are reused only when the export was made with this store's model and they have its
        dimension; otherwise (another model, no vectors, a damaged vector, text the import
        cleaned as ``store`` cleans it) the record is embedded again, since vectors are derived
        from the content. ``progress`` is told of the records checked, embedded and written.
        The export's cold records go to the namespace's cold storage, each replacing its id's
        row there, with their vectors when ``restore`` can reuse them (else it embeds them
        again); the records imported leave it.
        """
        items, cold_items = _listed(data, "records"), _listed(data, COLD_RECORDS)
        records, cold = checked if checked is not None else self.checked(handle.name, data, progress)
        same_model = data.get("embedding_model") == self._parts.embedder.name
        dimension = self._parts.embedding_dim
        vectors: list[Vector] = []
        context_vectors: dict[str, Vector] = {}
        reembed: list[MemoryRecord] = []
        for record, item in zip(records, items):
            own, framed = item.get("embedding"), item.get("window_embedding")
            if (
                same_model
                and _as_exported(record, item)
                and _fits(own, dimension)
                and (_fits(framed, dimension) or not record.context)
            ):
                vectors.append(own)
                if _fits(framed, dimension):  # else the store embeds it (an export older than undated frames)
                    context_vectors[record.id] = framed
            else:
                vectors.append([])
                reembed.append(record)
        if reembed:
            fresh: dict[str, Vector] = {}
            report(progress, _EMBEDDING, 0, len(reembed))
            for start in range(0, len(reembed), _EMBED_CHUNK):
                chunk = reembed[start : start + _EMBED_CHUNK]
                fresh_vectors, fresh_context = self._parts.embed_records(chunk)
                fresh.update(zip((r.id for r in chunk), fresh_vectors))
                context_vectors.update(fresh_context)
                report(progress, _EMBEDDING, start + len(chunk), len(reembed))
            vectors = [fresh.get(r.id, v) for r, v in zip(records, vectors)]
        report(progress, _WRITING, 0, len(records))
        with handle.writing:
            existing = {r.id for r, _ in handle.get([r.id for r in records])}
            every = list(zip(records, vectors))
            for start in range(0, len(every), _WRITE_CHUNK):
                pairs = every[start : start + _WRITE_CHUNK]
                new = [(r, v) for r, v in pairs if r.id not in existing]
                old = [(r, v) for r, v in pairs if r.id in existing]
                for group, write in ((new, handle.add), (old, handle.rewrite)):
                    if group:
                        framed = {r.id: context_vectors[r.id] for r, _ in group if r.id in context_vectors}
                        write([r for r, _ in group], [v for _, v in group], framed)
                report(progress, _WRITING, start + len(pairs), len(records))
            # A memory the import brings into the store is no longer archived: an older copy of it
            # left in cold storage would otherwise come back over it at the next ``restore``.
            archived = [self._cold_row(r, item, data) for r, item in zip(cold, cold_items)]
            self.cold.put(handle.name, archived, leaving={r.id for r in records})
        return len(records) + len(cold)

    def _cold_row(self, record: MemoryRecord, item: dict[str, Any], data: dict[str, Any]) -> ColdRow:
        """The cold-storage row of an exported cold record: its vectors kept when they are this store's model's."""
        model = item.get("embedding_model") or data.get("embedding_model")
        own, framed = item.get("embedding"), item.get("window_embedding")
        dimension = self._parts.embedding_dim
        if (
            model == self._parts.embedder.name
            and _as_exported(record, item)
            and _fits(own, dimension)
            and (_fits(framed, dimension) or framed is None)
        ):
            return archived_row(record, own, framed)
        return archived_row(record.model_copy(update={"embedding_model": None, "embedding_dim": None}), None, None)

    def _checked_records(
        self, namespace: str, items: list[Any], cold_items: list[Any], progress: ProgressCallback | None
    ) -> tuple[list[MemoryRecord], list[MemoryRecord]]:
        """The records and cold records of an export, or ``InvalidRecordsError`` naming every problem found."""
        checked: dict[str, list[MemoryRecord]] = {"records": [], COLD_RECORDS: []}
        problems: list[str] = []
        bad = 0
        total = len(items) + len(cold_items)
        listed = [("records", n, item) for n, item in enumerate(items)]
        listed += [(COLD_RECORDS, n, item) for n, item in enumerate(cold_items)]
        first_seen: dict[tuple[str, str], int] = {}
        report(progress, _CHECKING, 0, total)
        for done, (key, n, item) in enumerate(listed, start=1):
            found = self._record_problems(namespace, f"{key}[{n}]", item)
            if isinstance(found, MemoryRecord):
                if (earlier := first_seen.setdefault((key, found.id), n)) != n:
                    found = [f"{key}[{n}].id: {found.id!r} is also the id of {key}[{earlier}]; ids must be unique"]
                else:
                    checked[key].append(found)
            if isinstance(found, list):
                problems.extend(found)
                bad += 1
            if done % _REPORT_EVERY == 0:
                report(progress, _CHECKING, done, total)
        report(progress, _CHECKING, total, total)
        if problems:
            raise InvalidRecordsError(problems, bad=bad, total=total)
        return checked["records"], checked[COLD_RECORDS]

    def _record_problems(self, namespace: str, where: str, item: Any) -> MemoryRecord | list[str]:
        """``item`` (at ``where``, e.g. ``records[3]``) as a record of ``namespace``, or what is wrong with it.

        The item's own ``namespace`` is replaced, not checked: a record is imported into the
        namespace the import was given, so a hand-written record may leave it out. The rest is
        held to the write path's bounds (``model/imported.py``), hindsight's own metadata keys
        to the shapes the engine writes them in.
        """
        if not isinstance(item, dict):
            return [f"{where}: must be an object (one record of `hindsight export`), got {type(item).__name__}"]
        fields = {k: v for k, v in item.items() if k not in COLD_VECTOR_KEYS}
        fields.update(namespace=namespace, embedding_model=self._parts.embedder.name)
        fields["embedding_dim"] = self._parts.embedding_dim
        try:
            record = MemoryRecord.model_validate(fields)
        except ValidationError as exc:
            return validation_problems(exc, where)
        if not record.content.strip():
            return [f"{where}.content: is empty; every memory needs its text"]
        record = aware(record)
        problems = record_problems(record, where, self._parts.limits)
        if problems:
            return problems
        record = cleaned(record, self._parts.limits)
        return record.model_copy(update={"slot": slot_now(record)})  # an older version's export: its rules' slot

    def page(self, handle: NamespaceStore, page: Page) -> list[MemoryRecord]:
        """See ``MemoryEngine.list``."""
        now = self._parts.clock.now()
        return newest_first(
            handle, page.filters, include_history=page.include_history, now=now, limit=page.limit, offset=page.offset
        )

    def stats(self, name: str, handle: NamespaceStore | None) -> NamespaceStats:
        """See ``MemoryEngine.stats``; ``handle`` is None for a namespace never written (all counts 0)."""
        by_tier: dict[str, int] = {}
        by_kind: dict[str, int] = {}
        by_status: dict[str, int] = {}
        sessions: set[str] = set()
        tokens = total = 0
        for record, _ in _iterate(handle):
            total += 1
            by_tier[record.tier.value] = by_tier.get(record.tier.value, 0) + 1
            by_kind[record.kind.value] = by_kind.get(record.kind.value, 0) + 1
            by_status[record.status.value] = by_status.get(record.status.value, 0) + 1
            if record.session_id:
                sessions.add(record.session_id)
            if record.status is Status.ACTIVE:
                tokens += record.token_count
        return NamespaceStats(
            namespace=name,
            total=total,
            by_tier=by_tier,
            by_kind=by_kind,
            by_status=by_status,
            tokens=tokens,
            embedding_model=self._parts.embedder.name,
            sessions=len(sessions),
        )

    def dump(self, name: str, handle: NamespaceStore | None, *, include_history: bool) -> str:
        """See ``MemoryEngine.dump``; ``handle`` is None for a namespace never written."""
        records = [r for r, _ in _iterate(handle)]
        if not include_history:
            records = [r for r in records if r.status is Status.ACTIVE]
        lines = [f"# namespace {name}: {len(records)} memories (embedding model {self._parts.embedder.name})"]
        for tier in Tier:
            group = sorted((r for r in records if r.tier is tier), key=lambda r: r.occurred_at)
            if not group:
                continue
            lines.append(f"\n## {tier.value} ({len(group)})")
            lines.extend(f"{memory_line(r)}\n    [{r.id[:8]}] {' '.join(_flags(r))}" for r in group)
        return "\n".join(lines)


def _iterate(
    handle: NamespaceStore | None, *, include_embeddings: bool = False
) -> Iterator[tuple[MemoryRecord, list[float] | None]]:
    """Every record of ``handle`` (none when the namespace was never written), with its vector if asked."""
    if handle is not None:
        yield from handle.iterate(include_embeddings=include_embeddings)


def _flags(r: MemoryRecord) -> list[str]:
    flags = [r.kind.value, r.status.value, f"imp={r.importance:.2f}", f"hits={r.access_count}"]
    if r.session_id:
        flags.append(f"session={r.session_id}")
    if r.expires_at:
        flags.append(f"expires={r.expires_at.isoformat(timespec='minutes')}")
    if r.superseded_by:
        flags.append(f"superseded_by={r.superseded_by[:8]}")
    if r.source.message_ids:
        flags.append(f"from={','.join(m[:8] for m in r.source.message_ids)}")
    return flags


__all__ = ["COLD_RECORDS", "EXPORT_FORMAT", "Backup", "CheckedExport", "Page", "export_namespace"]
