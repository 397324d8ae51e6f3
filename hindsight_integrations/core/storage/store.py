"""The Chroma store: one pair of collections per namespace, opened as ``NamespaceStore`` handles.

Embedded (``PersistentClient`` at a path) and server (``HttpClient`` at a URL) modes share
every code path below ``open_client``. Each collection records the embedding model's name
and dimension in its metadata; opening it with another model raises
``EmbeddingModelMismatchError`` instead of mixing vector spaces.
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Literal, overload

import numpy as np

from ..clock import Clock
from ..errors import EmbeddingModelMismatchError, EngineForkedError, StoreClosedError, StoreUnavailableError
from ..language.slots import slot_rules
from ..model.records import LAYOUT, to_epoch
from ..redaction import describe_error
from .access import AccessRecorder
from .chroma_reads import RetryingReads, read_retrying
from .context_vectors import BackgroundContextVectors, wait_for_all
from .locks import CrossProcessLocks, store_identity
from .namespace_store import NamespaceStore, StoreOptions
from .opening import open_client
from .quiet_files import store_files
from .replicas import WriterRegistry, release_registry

COLLECTION_PREFIX = "hindsight_"
# Adds Chroma has not yet written into its HNSW files. Each add costs time in proportion to
# that backlog (measured here: a one-record add took 5 ms after a sync and 26 ms 800 adds
# later with Chroma's default of 1000), so a conversation written a turn at a time pays for
# a long backlog on every turn; at 100 a one-record add stays at 5-7 ms and a 500-record
# batch costs the same as before.
_SYNC_THRESHOLD = 100
# How deep HNSW searches (``ef_search``; Chroma searches max(ef_search, n) deep, and lets a
# collection made before be raised). Small talk said again and again ("Thanks!", "Noted.") puts
# hundreds of near-identical vectors in a namespace, and a graph searched 100 deep then misses
# what lies behind them: on 3,600 records of a chat whose assistant repeated six phrases, 0.95
# of the exact 10 nearest were found at 100 and 0.98 at 200, in the same query time (1.3 ms).
# At 100k a recall costs ~1 ms more (README §5). Building the graph at 200 too
# (``ef_construction``) found all ten, but slowed Chroma's adds by a quarter at 100k, and in one
# run each the recalls timed after a 100k import were 5 ms slower, for a reason not found (README
# §5, §7); so the build keeps Chroma's 100 until a fuller comparison says otherwise.
_HNSW_SEARCH = 200
# The context vectors' collection. The name predates "context vector" and stays, so stores
# written by earlier versions open as they are; it never matches COLLECTION_PREFIX, so it is
# never listed as a namespace.
CONTEXT_PREFIX = "hindsightwin_"
log = logging.getLogger(__name__)


# Collection metadata: the namespace was created before anything was written, and its first write chooses
# the model (``ChromaStore.settle_model``); "embedding_model" meanwhile is a placeholder.
_PENDING = "embedding_model_pending"
# Collection metadata: the model was chosen by a text too short to tell its script, and the first
# text that tells may move the namespace to the other model (``lanes.ModelLanes``).
_PROVISIONAL = "embedding_model_provisional"
# Collection metadata: the rules the namespace's slots were read by (``slots.slot_rules``, ``write/reslot.py``).
SLOT_RULES_KEY = "slot_rules"


@dataclass(frozen=True)
class RecordedModel:
    """What a namespace's collection says of its embedding model (``ChromaStore.recorded_model``)."""

    model: str | None  # None: a collection older than the record
    pending: bool  # nothing written yet, and the first write chooses (``auto``)
    provisional: bool = False  # chosen by a text too short to tell (``auto``); the first that tells decides


class ChromaStore:
    """Every namespace of one Chroma, each opened once per process as a ``NamespaceStore``."""

    def __init__(
        self,
        client: Any,
        *,
        embedding_model: str,
        embedding_dim: int | None,
        lexical_sync_seconds: float = 1.0,
        access_flush_seconds: float = 10.0,
        time_aware: bool = True,
        copy_vectors: bool = True,
        embed_context: Callable[[Sequence[str]], np.ndarray] | None = None,
        shared_locks: CrossProcessLocks | None = None,
        writers: WriterRegistry | None = None,
        clock: Clock | None = None,
        owns_client: bool = False,
    ) -> None:
        """``embed_context`` embeds context vectors left to the background (``context_vectors.py``);
        without it every writer must pass its records' context vectors. ``shared_locks`` serialise
        each namespace's writes across processes (``locks.py``); ``writers`` is this process's
        entry in a Chroma server's writer registry, which every write checks first (``replicas.py``);
        ``clock`` is the one records are stamped by (the wall clock unless given); ``owns_client``:
        ``close`` closes ``client`` too (this store opened it)."""
        self.client = client
        self.embedding_model = embedding_model
        self.embedding_dim = embedding_dim
        self.options = StoreOptions(
            time_aware=time_aware,
            sync_seconds=lexical_sync_seconds,
            copy_vectors=copy_vectors,
            max_batch=_max_batch(client),
            stamp_now=(lambda: to_epoch(clock.now()) or 0.0) if clock is not None else None,
            files=store_files(client),
            identity=store_identity(client),
        )
        self._namespaces: dict[str, NamespaceStore] = {}
        self._lock = threading.Lock()
        self._access = AccessRecorder(access_flush_seconds)
        self._syncer = ThreadPoolExecutor(max_workers=1, thread_name_prefix="hindsight-sync")  # threads start on use
        self.context_vectors = BackgroundContextVectors(embed_context) if embed_context is not None else None
        # Every model this store opens namespaces of, with its dimension and context-vector worker:
        # the configured one, and under ``auto`` the multilingual one (``add_model``).
        self._models: dict[str, tuple[int | None, BackgroundContextVectors | None]] = {
            embedding_model: (embedding_dim, self.context_vectors)
        }
        self._shared_locks = shared_locks
        self.writers = writers
        self.on_open: Callable[[NamespaceStore], object] | None = None
        """Called once with each namespace this process opens (the engine finishes interrupted writes)."""
        self._owns_client = owns_client
        self._closed = False
        self._pid = os.getpid()

    @property
    def owns_client(self) -> bool:
        """Whether this store opened its Chroma client from the settings (their path or URL is where it is).

        False for a client the caller supplied (``MemoryEngine(chroma_client=...)``): the settings
        then do not say where the memories are.
        """
        return self._owns_client

    @property
    def closed(self) -> bool:
        """Whether ``close`` has been called (every call but ``close`` now raises ``StoreClosedError``)."""
        return self._closed

    @property
    def shared_locks(self) -> CrossProcessLocks | None:
        """The cross-process locks this store's writers share (None: one process writes it)."""
        return self._shared_locks

    def check_writes(self) -> None:
        """Raise ``ReplicaConflictError`` if this process must not write now (another replica owns the server)."""
        if self.writers is not None:
            self.writers.check()

    def add_model(
        self, model: str, dimension: int | None, embed_context: Callable[[Sequence[str]], np.ndarray] | None
    ) -> None:
        """Let ``namespace(..., model=model)`` open and create namespaces of a second model (``routing.py``)."""
        with self._lock:
            if model not in self._models:
                worker = BackgroundContextVectors(embed_context) if embed_context is not None else None
                self._models[model] = (dimension, worker)

    def opened(self, name: str) -> NamespaceStore | None:
        """The handle of ``name`` if this process has opened it already (no Chroma call), else None."""
        self._check_open()  # before the lock: a fork may have copied it held
        with self._lock:
            return self._namespaces.get(name)

    def recorded_model(self, name: str) -> RecordedModel | None:
        """What namespace ``name``'s collection records of its model (read from Chroma); None if it does not exist."""
        self._check_open()
        try:
            collection = self.client.get_collection(COLLECTION_PREFIX + name, embedding_function=None)
        except Exception as exc:
            if _is_missing(exc):
                return None
            raise StoreUnavailableError(f"could not open namespace {name!r}: {exc}") from exc
        meta = collection.metadata or {}
        model = meta.get("embedding_model")
        return RecordedModel(
            str(model) if model else None, pending=bool(meta.get(_PENDING)), provisional=bool(meta.get(_PROVISIONAL))
        )

    def stored_model(self, name: str) -> str | None:
        """The model namespace ``name`` was written with; None: no such namespace, no model yet, or too old to say."""
        recorded = self.recorded_model(name)
        return recorded.model if recorded is not None and not recorded.pending else None

    def settle_model(self, name: str, model: str, *, provisional: bool = False) -> NamespaceStore:
        """Record ``model`` as the model of ``name``, a namespace whose model was pending or provisional.

        The caller holds the namespace's write lock and has read that it still is; a provisional
        namespace's vectors are ``model``'s already. ``provisional`` keeps the choice open.
        """
        with self._lock:
            dimension, _ = self._models[model]
            meta = _collection_metadata(name, model, dimension, provisional=provisional)
            for prefix in (COLLECTION_PREFIX, CONTEXT_PREFIX):
                self.client.get_collection(prefix + name, embedding_function=None).modify(metadata=meta)
            self._namespaces.pop(name, None)
        return self.namespace(name, model=model)

    def marks(self, name: str) -> dict[str, Any]:
        """Namespace ``name``'s collection metadata as Chroma holds it now (another process may have changed it)."""
        return dict(self.client.get_collection(COLLECTION_PREFIX + name, embedding_function=None).metadata or {})

    def set_mark(self, name: str, key: str, value: str) -> None:
        """Set ``key`` of namespace ``name``'s collection metadata, its other keys as Chroma holds them now.

        Chroma's ``modify`` replaces the whole metadata: the caller holds the namespace's write lock, as
        ``settle_model``'s does, so no other change of it lands in between.
        """
        collection = self.client.get_collection(COLLECTION_PREFIX + name, embedding_function=None)
        collection.modify(metadata={**(collection.metadata or {}), key: value})

    def reopen(self, name: str, model: str) -> NamespaceStore:
        """Open ``name`` again, with ``model`` (another process settled its model since this one opened it)."""
        with self._lock:
            self._namespaces.pop(name, None)
        return self.namespace(name, model=model)

    @overload
    def namespace(
        self, name: str, *, model: str | None = None, pending: bool = False, provisional: bool = False
    ) -> NamespaceStore: ...
    @overload
    def namespace(
        self,
        name: str,
        *,
        create: Literal[True],
        model: str | None = None,
        pending: bool = False,
        provisional: bool = False,
    ) -> NamespaceStore: ...
    @overload
    def namespace(
        self, name: str, *, create: bool, model: str | None = None, pending: bool = False, provisional: bool = False
    ) -> NamespaceStore | None: ...

    def namespace(
        self,
        name: str,
        *,
        create: bool = True,
        model: str | None = None,
        pending: bool = False,
        provisional: bool = False,
    ) -> NamespaceStore | None:
        """The handle of namespace ``name``, opened (and its indexes loaded) on first use.

        With ``create=False`` a namespace that does not exist yet is None instead of created.
        ``model`` (one ``add_model`` made known; default: the store's own) is the model a new
        namespace is created with and the one an existing namespace must have been written with.
        ``pending`` creates it with its model still to be chosen (``settle_model``): under ``auto``,
        a namespace a read opens before anything is written; such a namespace opens with any model.
        ``provisional`` creates it with ``model`` chosen by a text too short to tell its script.
        """
        with self._lock:
            self._check_open()
            handle = self._namespaces.get(name)
            if handle is not None:
                return handle
            model = model or self.embedding_model
            dimension, worker = self._models[model]
            try:
                if not create:
                    self.client.get_collection(COLLECTION_PREFIX + name, embedding_function=None)
                meta = _collection_metadata(name, model, dimension, pending=pending, provisional=provisional)
                collection = self._open(COLLECTION_PREFIX + name, meta)
                context_collection = self._open(CONTEXT_PREFIX + name, meta)
            except Exception as exc:
                if not create and _is_missing(exc):
                    return None
                raise StoreUnavailableError(f"could not open namespace {name!r}: {exc}") from exc
            meta = collection.metadata or {}
            if not meta.get(_PENDING):
                _check_model(name, meta, model, dimension)
            handle = NamespaceStore(
                name,
                collection,
                context_collection,
                options=self.options,
                access=self._access,
                run_in_background=self._run_in_background,
                context_vectors=worker,
                shared_locks=self._shared_locks,
                may_write=self.check_writes if self.writers is not None else None,
                embedding_model=model,
                model_pending=bool(meta.get(_PENDING)),
                model_provisional=bool(meta.get(_PROVISIONAL)),
            )
            self._namespaces[name] = handle
            if self.on_open is not None:
                try:
                    self.on_open(handle)
                except Exception as exc:  # noqa: BLE001 - the namespace must open; the next open retries
                    log.warning("namespace %r: finishing interrupted writes failed: %s", name, describe_error(exc))
            return handle

    def _run_in_background(self, job: Callable[[], None]) -> None:
        with contextlib.suppress(RuntimeError):  # closed meanwhile: a closed store keeps nothing in step
            self._syncer.submit(job)

    def _open(self, collection_name: str, metadata: dict[str, Any]) -> Any:
        collection = self.client.get_or_create_collection(
            collection_name,
            embedding_function=None,
            metadata=metadata,
            configuration={
                "hnsw": {
                    "space": "cosine",
                    "ef_search": _HNSW_SEARCH,
                    "sync_threshold": _SYNC_THRESHOLD,
                }
            },
        )
        hnsw = (collection.configuration or {}).get("hnsw") or {}
        older: dict[str, int] = {}  # made by an older version: what Chroma lets us change afterwards
        if hnsw.get("sync_threshold", _SYNC_THRESHOLD) > _SYNC_THRESHOLD:
            older["sync_threshold"] = _SYNC_THRESHOLD
        if hnsw.get("ef_search", _HNSW_SEARCH) < _HNSW_SEARCH:
            older["ef_search"] = _HNSW_SEARCH
        if older:  # idempotent: retried while SQLite is busy
            read_retrying(collection.modify, configuration={"hnsw": older}, doing="update the collection's settings")
        return RetryingReads(collection)  # a server's reads can fail a moment while first records land

    def list_namespaces(self) -> list[str]:
        """Names of every namespace in this Chroma (also a cheap readiness probe)."""
        self._check_open()
        names = []
        for item in self.client.list_collections():
            name = item if isinstance(item, str) else item.name
            if name.startswith(COLLECTION_PREFIX):
                names.append(name[len(COLLECTION_PREFIX) :])
        return sorted(names)

    def drop_namespace(self, name: str) -> None:
        """Delete a namespace's collections for good (used by `demo` and tests, not by forget)."""
        self.check_writes()
        with self._lock:
            self._check_open()
            handle = self._namespaces.pop(name, None)
            for _, worker in self._models.values():  # whichever model's namespace it was
                if handle is not None and worker is not None:
                    worker.discard(handle)  # its context vectors still queued have nowhere to go
            for prefix in (COLLECTION_PREFIX, CONTEXT_PREFIX):
                with contextlib.suppress(Exception):  # already gone
                    self.client.delete_collection(prefix + name)

    def flush(self, timeout: float | None = 10.0) -> bool:
        """Write this process's queued context vectors (False if ``timeout``, in all, ran out), then recall counts."""
        workers = {id(w): w for _, w in list(self._models.values()) if w is not None}  # list(): one atomic copy
        written = wait_for_all(list(workers.values()), timeout)
        self._access.flush()
        return written

    def close(self, timeout: float | None = 10.0) -> bool:
        """Write what is queued, stop this store's threads, and release Chroma, the locks and the registry entry.

        Returns False if queued context vectors were still unwritten after ``timeout`` (they are
        queued again when the namespace is next opened). A second call does nothing; any other
        call afterwards raises ``StoreClosedError``.
        """
        with self._lock:
            if self._closed:
                return True
            self._closed = True
            workers = {id(w): w for _, w in self._models.values() if w is not None}
            self._namespaces.clear()
        closed = [w.close(timeout) for w in workers.values()]  # every worker, even after one timed out
        self._access.close()
        self._syncer.shutdown(wait=True)
        if self.writers is not None:
            release_registry(self.writers)
        close_locks = getattr(self._shared_locks, "close", None)
        if callable(close_locks):
            close_locks()
        if self._owns_client:
            with contextlib.suppress(Exception):  # a server already gone: nothing left to release
                self.client.close()
        return all(closed)

    def _check_open(self) -> None:
        if self._closed:
            raise StoreClosedError("this memory engine is closed (MemoryEngine.close()); create a new MemoryEngine")
        if os.getpid() != self._pid:
            raise EngineForkedError(
                f"this memory engine was made in process {self._pid}, before a fork; its threads and Chroma client "
                f"do not carry over: create a new MemoryEngine in this process (e.g. in a worker pool's initializer)"
            )


def _is_missing(exc: Exception) -> bool:
    """Whether Chroma raised ``exc`` because the collection does not exist (embedded and server say it differently)."""
    return "does not exist" in str(exc).lower() or type(exc).__name__ == "NotFoundError"


def _collection_metadata(
    name: str, model: str, dimension: int | None, *, pending: bool = False, provisional: bool = False
) -> dict[str, Any]:
    # "schema" is the record layout new collections start with; older collections may hold
    # both layouts, which ``records.unpack`` tells apart per record.
    meta: dict[str, Any] = {"hindsight_namespace": name, "embedding_model": model, "schema": LAYOUT}
    meta[SLOT_RULES_KEY] = slot_rules()  # a new namespace's slots are read by these rules (write/reslot.py)
    if dimension:
        meta["embedding_dim"] = dimension
    if pending:
        meta[_PENDING] = True
    if provisional:
        meta[_PROVISIONAL] = True
    return meta


def _check_model(name: str, meta: dict[str, Any], model: str, dimension: int | None) -> None:
    stored = meta.get("embedding_model")
    if stored and stored != model:
        raise EmbeddingModelMismatchError(name, stored, model)
    stored_dim = meta.get("embedding_dim")
    if stored_dim and dimension and int(stored_dim) != int(dimension):
        wanted = f"{model} ({dimension} dimensions)"
        raise EmbeddingModelMismatchError(name, f"{stored} ({stored_dim} dimensions)", wanted)


def _max_batch(client: Any) -> int:
    try:
        return max(1, min(int(client.get_max_batch_size()), 5000))
    except Exception:  # noqa: BLE001 - a client without the call: Chroma's own default
        return 1000


__all__ = ["COLLECTION_PREFIX", "CONTEXT_PREFIX", "SLOT_RULES_KEY", "ChromaStore", "open_client"]
