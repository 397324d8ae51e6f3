"""One namespace's memories in Chroma, and the indexes this process derives from them.

A namespace is two Chroma collections: its records (one vector per memory: the memory's own text) and its *context
vectors* (one per memory that has a context, e.g. the turns around a conversation turn: the memory framed by that
context, see ``indexing.framed_text``). The indexes are derived data, kept per namespace in this process: the lexical
(BM25) index, the facts recall filters and ranks on (``field_index.py``), each session's live window
(``session_windows.py``) and, unless turned off, copies of both kinds of vector (``vector_copy.py``) and of a small
namespace's records (``record_copy.py``). All are filled from Chroma when the namespace is first opened in this
process, updated on this process's writes, and caught up with other writers' changes by an ``updated_at`` watermark
query (``catch_up.py``) once they are older than ``sync_seconds``. Recall starts that query in the background rather
than waiting for it: what it brings is only other processes' newest writes, which recall still finds by vector search
meanwhile: it searches the copies only while nothing changed elsewhere since the sync (``copies_current``), and
Chroma otherwise. A sync lists again what was stamped just before the last one (``catch_up.py``: a record is stamped
before it is written). A hard delete (the cold archive), or a batch slower than that, shows in the count (through a
server within ``quiet_files.COUNT_SECONDS``): a sync finding the copy holding more than Chroma, or less, lists
Chroma's ids and follows them. A burst of this process's own writes (an import) is synced as written (``CatchUp``)."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import numpy as np

from ..model.records import MemoryRecord, pack, unpack
from ..recall.filters import bounded_where
from ..redaction import describe_error
from .access import AccessRecorder, added_counts
from .catch_up import CatchUp
from .chroma_reads import flats_of, float32_matrix, nearest, nearest_each, pages, record_fields, records_of
from .chroma_writes import rewrite_records
from .context_vectors import CONTEXT_WAIT_SECONDS, BackgroundContextVectors, wait_before_reading
from .field_index import FactsIndex
from .indexing import body_text, context_text, framed_text, has_frame
from .lexical import LexicalIndex
from .locks import CrossProcessLocks, NamespaceLock
from .quiet_files import CurrencyMemo, StoreFiles
from .record_copy import RecordCopy
from .session_windows import SessionWindows
from .vector_copy import Vector, VectorCopy, upsert_found

log = logging.getLogger(__name__)
_NOTHING: dict[str, list[Any]] = {"ids": [], "documents": [], "metadatas": [], "embeddings": []}


@dataclass(frozen=True)
class StoreOptions:
    """What every namespace of one store shares: set once by ``ChromaStore``."""

    time_aware: bool = True
    sync_seconds: float = 1.0
    copy_vectors: bool = True
    max_batch: int = 1000
    stamp_now: Callable[[], float] | None = None  # the clock records are stamped by, epoch seconds (the engine's)
    files: StoreFiles | None = None  # an embedded store's files, whose stamps spare recall its currency checks
    identity: str | None = None  # which store (``locks.store_identity``): engines of a process on it share locks


class NamespaceStore:
    """Records, vectors and derived indexes of one namespace; get one from ``ChromaStore.namespace``.

    Every write goes through ``add``/``rewrite``/``delete`` so the derived indexes stay in step
    with Chroma: ``add`` writes new records, ``rewrite`` writes back records something changed
    (a supersede, an edit, a decay: this layer does not care which), ``delete`` removes them.
    ``writing`` is the lock the engine holds across a read-decide-write sequence (dedup,
    supersede, compression, edits) so two writers never interleave one: those of this
    process, and with ``HINDSIGHT_LOCK_URL`` those of every replica (``locks.py``).
    """

    def __init__(
        self,
        name: str,
        collection: Any,
        context_collection: Any,
        *,
        options: StoreOptions,
        access: AccessRecorder,
        run_in_background: Callable[[Callable[[], None]], None],
        context_vectors: BackgroundContextVectors | None = None,
        shared_locks: CrossProcessLocks | None = None,
        may_write: Callable[[], None] | None = None,
        embedding_model: str | None = None,
        model_pending: bool = False,
        model_provisional: bool = False,
    ) -> None:
        self.name = name
        self.embedding_model = embedding_model  # what its vectors were made with (the collection's metadata)
        self.model_pending = model_pending  # nothing written yet and the first write chooses the model (auto)
        self.model_provisional = model_provisional  # chosen by a text too short to tell; may move (auto)
        self.collection = collection
        self.context_collection = context_collection
        self.options = options
        self.lexical = LexicalIndex()
        self.facts = FactsIndex()
        self.windows = SessionWindows()
        self.vector_copy: VectorCopy | None = VectorCopy() if options.copy_vectors else None
        self.context_copy: VectorCopy | None = VectorCopy() if options.copy_vectors else None
        self.record_copy: RecordCopy | None = RecordCopy() if options.copy_vectors else None
        self.writing = NamespaceLock(name, shared_locks, may_write=may_write, store=options.identity)
        self._may_write = may_write  # raises while this process must not write (replicas.py)
        self._lock = threading.RLock()  # Chroma write + index update, as one step
        self.access = access  # recall counts queued for Chroma (``access.py``); upkeep flushes them first
        self._run_in_background = run_in_background
        self._catch_up = CatchUp(options.sync_seconds, options.stamp_now)
        self._currency = CurrencyMemo(options.files)
        self._context_vectors = context_vectors
        self._load_indexes()

    # -- derived indexes ------------------------------------------------------------------
    def _load_indexes(self) -> None:
        for got in pages(self.collection, include=self._index_fields()):
            flats = flats_of(got)
            self._index(got["ids"], flats)
            self._catch_up.advance(got["ids"], flats)
            upsert_found(self.vector_copy, got)
        if self.context_copy is not None:
            for got in pages(self.context_collection, include=["embeddings"]):
                upsert_found(self.context_copy, got)
        self.lexical.rebuild()
        self._catch_up.synced()
        self._queue_missing_context()

    def _queue_missing_context(self) -> None:
        """Queue the context vectors of records written just before a crash (see ``context_vectors.py``)."""
        if self._context_vectors is None:
            return
        framed = self.facts.ids_with_context()
        if len(framed) <= self.context_collection.count():
            return
        have = {i for got in pages(self.context_collection, include=[]) for i in got["ids"]}
        missing = [i for i in framed if i not in have]
        if missing:
            log.info("namespace %r: %d records lack their context vector; embedding them", self.name, len(missing))
            self._queue_context(self._read_flat(missing, with_content=True))

    def _index_fields(self) -> list[str]:
        return ["documents", "metadatas"] + (["embeddings"] if self.vector_copy is not None else [])

    def sync_indexes(self, *, force: bool = False) -> None:
        """Catch up with writes made by other processes since our watermark, now."""
        if not force and not self._catch_up.stale():
            return
        # What changed is listed without the write lock (after an import, every own write: long);
        # the records are read and indexed under it, so no own write lands between the two.
        changed = self._catch_up.changed_since_sync(self.collection)
        with self._lock:
            fresh = [i for i, m in zip(changed["ids"], changed["metadatas"]) if not self._catch_up.is_known(i, m)]
            self._take_in(self.collection.get(ids=fresh, include=self._index_fields()) if fresh else _NOTHING)
            self._catch_up.advance(changed["ids"], changed["metadatas"])
            self._catch_up.synced()
        if self.vector_copy is not None:  # a recall may have copied a vector of a record not indexed yet
            count = self.collection.count()
            if len(self.vector_copy) > count or (len(self.facts) < count and not fresh):
                self._reconcile_ids()

    def _take_in(self, got: dict[str, Any]) -> None:
        """Index records read from Chroma, copy their vectors, and their context vectors."""
        flats = flats_of(got)
        self._index(got["ids"], flats)
        upsert_found(self.vector_copy, got)
        self._copy_context([i for i, f in zip(got["ids"], flats) if has_frame(f)])

    def _copy_context(self, framed: list[str]) -> None:
        """Copy the context vectors of synced records, and of those that lacked one at an earlier sync."""
        if self.context_copy is None:
            return
        asked = self._catch_up.context_to_ask(framed)
        if asked:
            found = self.context_collection.get(ids=asked, include=["embeddings"])
            upsert_found(self.context_copy, found)
            lacking = set(asked) - set(found["ids"])
            self._catch_up.still_lagging(asked, self.facts.lookup([i for i in asked if i in lacking]))

    def _reconcile_ids(self) -> None:
        """Bring the indexes' ids to Chroma's where no watermark shows the difference (module docstring): listed
        without the write lock (long at 100k), what differs is asked about again under it (this process may write)."""
        assert self.vector_copy is not None
        present = {i for got in pages(self.collection, include=[]) for i in got["ids"]}
        with self._lock:
            held = set(self.vector_copy.ids())
            missing = [i for i in held if i not in present]
            if missing:
                still = set(self.collection.get(ids=missing, include=[])["ids"])
                self._forget([i for i in missing if i not in still])
            known = self.facts.lookup(list(present))
            added = [i for i in present if i not in known]
            if added:
                log.info("namespace %r: %d records written below the sync's watermark", self.name, len(added))
                self._take_in(self.collection.get(ids=added, include=self._index_fields()))

    def refresh_indexes(self, *, due: bool = False) -> None:
        """Start ``sync_indexes`` in the background if the indexes are stale (or it is ``due``); never waits."""
        if self._catch_up.start_background(due=due):
            self._run_in_background(self._background_sync)

    def _background_sync(self) -> None:
        try:
            self.sync_indexes(force=True)
        except Exception as exc:  # noqa: BLE001 - a dropped namespace or a server hiccup: the next recall retries
            log.warning("background index sync failed: %s", describe_error(exc))
        finally:
            self._catch_up.done()

    def _index(self, ids: Sequence[str], flats: Sequence[dict[str, Any]]) -> None:
        if not ids:
            return
        time_aware = self.options.time_aware
        self.lexical.upsert((i, body_text(f, time_aware=time_aware), context_text(f)) for i, f in zip(ids, flats))
        self.facts.upsert(zip(ids, flats))
        self.windows.upsert(zip(ids, flats))
        if self.record_copy is not None:
            self.record_copy.upsert(ids, flats)

    # -- writes ---------------------------------------------------------------------------
    def add(
        self,
        records: Sequence[MemoryRecord],
        embeddings: Sequence[Vector] | np.ndarray,
        context_embeddings: Mapping[str, Vector] | None = None,
    ) -> None:
        """Write new records with their vectors (and context vectors, for records that have a context)."""
        if not records:
            return
        self._check_may_write()
        with self._lock:
            self._write_context(context_embeddings)
            ids, flats = [r.id for r in records], [r.flat_fields() for r in records]
            metas = [pack(f) for f in flats]
            step = self.options.max_batch
            for start in range(0, len(records), step):
                self.collection.add(
                    ids=ids[start : start + step],
                    metadatas=metas[start : start + step],
                    embeddings=float32_matrix(embeddings[start : start + step]),
                )
            self._index(ids, flats)
            self._catch_up.wrote(ids, flats)
            if self._catch_up.owes_a_sync:  # a burst: synced now, not by the next recall
                self.refresh_indexes(due=True)
            if self.vector_copy is not None:
                self.vector_copy.upsert(ids, embeddings)
        given = context_embeddings or {}
        self._queue_context({i: f for i, f in zip(ids, flats) if i not in given})

    def _queue_context(self, flats: Mapping[str, dict[str, Any]]) -> None:
        """Have the context vectors of these records (those with a context) embedded in the background."""
        if self._context_vectors is None:
            return
        framed = {i: t for i, f in flats.items() if (t := framed_text(f))}
        self._context_vectors.submit(self, framed)

    def write_context(self, vectors: Mapping[str, Vector]) -> None:
        """Store context vectors made in the background, for the records that still exist and were not edited since."""
        with self._lock:
            live, worker = self.facts.lookup(list(vectors)), self._context_vectors
            stale = worker.stale(self, list(vectors)) if worker is not None else set()
            self._write_context({i: v for i, v in vectors.items() if i in live and i not in stale}, queued=True)

    def wait_for_context(self, timeout: float = CONTEXT_WAIT_SECONDS) -> bool:
        """Block until this namespace's context vectors queued so far are written; False if ``timeout`` ran out."""
        return self._context_vectors.wait(timeout, target=self) if self._context_vectors is not None else True

    def rewrite(
        self,
        records: Sequence[MemoryRecord],
        embeddings: Sequence[Vector] | np.ndarray | None = None,
        context_embeddings: Mapping[str, Vector] | None = None,
    ) -> None:
        """Write back changed records; changed content needs new ``embeddings``."""
        if not records:
            return
        self._check_may_write()
        with self._lock:
            self._write_context(context_embeddings)
            ids, flats = [r.id for r in records], [r.flat_fields() for r in records]
            rewrite_records(self.collection, ids, flats, embeddings)
            self._index(ids, flats)
            self._catch_up.wrote(ids, flats)
            if self._catch_up.owes_a_sync:  # a burst: synced now, not by the next recall
                self.refresh_indexes(due=True)
            if embeddings is not None and self.vector_copy is not None:
                self.vector_copy.upsert(ids, embeddings)

    def _check_may_write(self) -> None:
        """Refuse a record write while another replica owns the store (derived writes merge in and go on)."""
        if self._may_write is not None:
            self._may_write()

    def _write_context(self, vectors: Mapping[str, Vector] | None, *, queued: bool = False) -> None:
        """Context vectors, a write's own or (``queued``) the worker's; a write's own make older queued ones stale."""
        if vectors and not queued and self._context_vectors is not None:
            self._context_vectors.supersede(self, list(vectors))
        if vectors:
            matrix = float32_matrix(list(vectors.values()))
            self.context_collection.upsert(ids=list(vectors), embeddings=matrix)
            if self.context_copy is not None:
                self.context_copy.upsert(list(vectors), matrix)

    def delete(self, ids: Sequence[str]) -> None:
        """Hard delete: the cold archive, a purge, the copies a forget takes (the memory forgotten is soft)."""
        if not ids:
            return
        self._check_may_write()
        with self._lock:
            self.collection.delete(ids=list(ids))
            self.context_collection.delete(ids=list(ids))
            self._forget(ids)

    def _forget(self, ids: Sequence[str]) -> None:
        """Take deleted records out of the derived indexes."""
        self.lexical.remove(ids)
        self.facts.remove(ids)
        self.windows.remove(ids)
        for copy in (self.vector_copy, self.context_copy, self.record_copy):
            if copy is not None:
                copy.remove(ids)

    def record_access(self, ids: Sequence[str], when: datetime) -> None:
        """Count a recall of ``ids``. Written in the background: a Chroma write costs more than a recall."""
        self.facts.count_access(dict.fromkeys(ids, 1))
        if self.record_copy is not None:
            self.record_copy.count_access(ids, when)
        self.access.record(self, ids, when)

    def apply_access_counts(self, counts: dict[str, tuple[int, float]]) -> None:
        """Add queued recall counts to Chroma's (``added_counts``); never between an edit's read and its write."""
        with self.writing.in_process(), self._lock:
            got = self.collection.get(ids=list(counts), include=["metadatas"])
            if got["ids"]:
                self.collection.update(ids=got["ids"], metadatas=added_counts(got["ids"], got["metadatas"], counts))

    # -- reads ----------------------------------------------------------------------------
    def get(
        self, ids: Sequence[str], *, include_embeddings: bool = False
    ) -> list[tuple[MemoryRecord, list[float] | None]]:
        """Records by id (missing ids are left out), with their own vectors if asked."""
        if not ids:
            return []
        got = self.collection.get(ids=list(ids), include=record_fields(include_embeddings))
        return list(records_of(got, include_embeddings))

    def find(self, where: dict[str, Any] | None, *, limit: int | None = None, offset: int = 0) -> list[MemoryRecord]:
        """Records matching a Chroma ``where`` (no ranking): lists, slots, working windows."""
        where = bounded_where(where) if where else where
        got = self.collection.get(where=where, limit=limit, offset=offset or None, include=record_fields(False))
        return [record for record, _ in records_of(got, False)]

    def iterate(self, *, include_embeddings: bool = False) -> Iterator[tuple[MemoryRecord, list[float] | None]]:
        """Every record, page by page (stats, dumps, exports, upkeep)."""
        for got in pages(self.collection, include=record_fields(include_embeddings)):
            yield from records_of(got, include_embeddings)

    def flat_views(self, ids: Sequence[str], *, from_copy: bool = False) -> dict[str, dict[str, Any]]:
        """Flat views by id with content; ``from_copy`` after ``copies_current``: those held in memory, if all are."""
        held = self.record_copy.flats(ids) if from_copy and self.record_copy is not None else None
        return held if held is not None else self._read_flat(ids, with_content=True)

    def record_of(self, memory_id: str, flat: dict[str, Any]) -> MemoryRecord:
        """The record of a flat view ``flat_views`` returned (built once, for one held in memory)."""
        if self.record_copy is not None:
            return self.record_copy.record(memory_id, flat)
        return MemoryRecord.from_flat(memory_id, flat)

    def metadata(self, ids: Sequence[str]) -> dict[str, dict[str, Any]]:
        """Flat views by id without content (cheaper): for filtering candidates."""
        return self._read_flat(ids, with_content=False)

    def _read_flat(self, ids: Sequence[str], *, with_content: bool) -> dict[str, dict[str, Any]]:
        if not ids:
            return {}
        got = self.collection.get(ids=list(ids), include=["documents", "metadatas"] if with_content else ["metadatas"])
        documents = got["documents"] if with_content else [None] * len(got["ids"])
        return {i: unpack(document, meta) for i, document, meta in zip(got["ids"], documents, got["metadatas"])}

    def vectors(self, ids: Sequence[str], *, context: bool = False) -> dict[str, Vector]:
        """Own (or context) vectors by id, for scoring candidates: from the copy, else from Chroma."""
        if not ids:
            return {}
        copy = self.context_copy if context else self.vector_copy
        found: dict[str, Vector] = dict(copy.lookup(ids)) if copy is not None else {}
        missing = [i for i in ids if i not in found]
        if missing:
            got = (self.context_collection if context else self.collection).get(ids=missing, include=["embeddings"])
            if copy is not None and got["ids"]:
                copy.fill(got["ids"], got["embeddings"])
            found.update(zip(got["ids"], got["embeddings"]))
        return found

    def context_vectors(self, ids: Sequence[str]) -> dict[str, list[float]]:
        """Context vectors as plain lists, exactly as Chroma holds them: for exports and the cold archive."""
        if not ids:
            return {}
        wait_before_reading(self._context_vectors, self)  # bounded: a stalled embedder must not hang an export
        got = self.context_collection.get(ids=list(ids), include=["embeddings"])
        return {i: list(map(float, v)) for i, v in zip(got["ids"], got["embeddings"])}

    def copies_current(self) -> bool:
        """Whether recall may search the copies and take its finalists from memory, not Chroma: the copies must be
        searchable (``VectorCopy.searchable``), and Chroma must hold as many records as the copy and none newer than
        the watermark but this process's own writes: two small reads (``currency_checks``), unless its files show no
        write since."""
        checks = self.currency_checks()
        return checks is not None and all(check() for check in checks)

    def currency_checks(self) -> list[Callable[[], bool]] | None:
        """The checks ``copies_current`` makes, to run side by side; None when the copies cannot be searched."""
        own, context = self.vector_copy, self.context_copy
        if own is None or context is None or not (own.searchable and context.searchable):
            return None
        count = lambda: self.collection.count() == len(own)  # noqa: E731
        return self._currency.checks([self._nothing_changed_elsewhere], (len(own), len(context)), count=count)

    def facts_current(self) -> bool:
        """Whether ``facts`` holds Chroma's records as they are: as many, and none changed elsewhere since the sync."""
        return self.collection.count() == len(self.facts) and self._catch_up.only_own_since(self.collection) is True

    def _nothing_changed_elsewhere(self) -> bool:
        only_own = self._catch_up.only_own_since(self.collection)
        if only_own is None:  # a burst of writes (an import): sync now, not in a second
            self.refresh_indexes(due=True)
        return bool(only_own)

    def query(
        self, embedding: Vector, *, n: int, where: dict[str, Any] | None, from_copy: bool = False
    ) -> list[tuple[str, float]]:
        """Nearest records by their own vector, as (id, cosine similarity); ``from_copy`` after ``copies_current``."""
        found = self.vector_copy.nearest(embedding, n) if from_copy and where is None and self.vector_copy else None
        return found if found is not None else nearest(self.collection, embedding, n=n, where=where)

    def query_many(
        self, embeddings: Sequence[Vector] | np.ndarray, *, n: int, where: dict[str, Any] | None = None
    ) -> list[list[tuple[str, float]]]:
        """``query`` for several vectors in one Chroma call (a batch of writes looking for neighbours)."""
        return nearest_each(self.collection, embeddings, n=n, where=where) if len(embeddings) else []

    def query_context(self, embedding: Vector, *, n: int, from_copy: bool = False) -> list[tuple[str, float]]:
        """Nearest context vectors as (id, cosine similarity); unfiltered: callers filter on the records."""
        found = self.context_copy.nearest(embedding, n) if from_copy and self.context_copy else None
        return found if found is not None else nearest(self.context_collection, embedding, n=n, where=None)

    def count(self) -> int:
        """How many records the namespace holds, every status included."""
        return int(self.collection.count())


__all__ = ["NamespaceStore", "StoreOptions", "Vector"]
