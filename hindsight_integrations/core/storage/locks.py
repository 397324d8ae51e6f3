"""Who may write a namespace right now: the lock every read-decide-write sequence holds.

Dedup, supersede, request-id replays, updates and forgets all read records, decide, and write
them back. Chroma offers no conditional write (compare-and-set), so two writers interleaving
those steps lose data: one update overwrites the other's fields, an update resurrects a memory
forgotten a moment before, a request id sent to two replicas at once is stored twice. Each
namespace therefore has one writer at a time:

* within a process, a ``threading.Lock`` per namespace of a store (always), shared by every
  engine of the process on that store and re-entered by the thread holding it;
* across processes that share one Chroma server (HTTP replicas), a PostgreSQL advisory lock
  per namespace as well, when ``HINDSIGHT_LOCK_URL`` names a database (``PostgresLocks``).
  Postgres is only a lock service here: nothing is stored in it, and any database works.

Reads take no lock. Design and figures: docs/reliability.md.
"""

from __future__ import annotations

import hashlib
import queue
import threading
from collections.abc import Callable
from pathlib import Path
from types import TracebackType
from typing import Any, Protocol

from ..errors import ConfigurationError, StoreUnavailableError


class CrossProcessLocks(Protocol):
    """A lock per namespace shared by every process that writes the same store."""

    def acquire(self, namespace: str) -> Callable[[], None]:
        """Block until ``namespace`` is this caller's; return the function that releases it."""
        ...


class _Holder:
    """One namespace's lock in this process, and which thread holds it how deeply.

    Re-entered by the thread holding it: a namespace reopened under its own write lock (its
    model settled, ``ChromaStore.settle_model``) finishes interrupted writes as it opens, under
    the same lock, now that every handle of the namespace shares it.
    """

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.owner: int | None = None
        self.depth = 0
        self.release_shared: Callable[[], None] | None = None


_HOLDERS: dict[tuple[str, str], _Holder] = {}
_HOLDERS_GUARD = threading.Lock()


def store_identity(client: object) -> str:
    """Which store ``client`` writes, as engines of one process must agree on it to share their locks.

    An embedded directory (by its resolved path), a server (by host and port), or Chroma's one
    in-memory store of the process; a client that cannot say is a store of its own.
    """
    get_settings = getattr(client, "get_settings", None)
    if get_settings is None:
        return f"client:{id(client)}"
    settings = get_settings()
    if getattr(settings, "chroma_server_host", None):
        return f"server:{settings.chroma_server_host}:{settings.chroma_server_http_port}"
    if getattr(settings, "is_persistent", False) and getattr(settings, "persist_directory", None):
        return f"path:{Path(settings.persist_directory).resolve()}"
    return "in-memory"


def _holder(store: str | None, namespace: str) -> _Holder:
    """This process's one lock for ``namespace`` of ``store``, whichever engine writes it (a lock of its own if None).

    Two engines of one process on one store (two in-process clients, an adapter's beside the
    application's) are one writer to the replica registry, so nothing else keeps their
    read-decide-write sequences apart.
    """
    if store is None:
        return _Holder()
    with _HOLDERS_GUARD:
        return _HOLDERS.setdefault((store, namespace), _Holder())


class NamespaceLock:
    """``with handle.writing:`` — this process's lock for the namespace, then the cross-process one."""

    def __init__(
        self,
        namespace: str,
        shared: CrossProcessLocks | None,
        *,
        may_write: Callable[[], None] | None = None,
        store: str | None = None,
    ) -> None:
        """``may_write`` raises when this process must not write at all (``replicas.WriterRegistry.check``):
        a refused write then fails before anything is read or locked. ``store`` (``store_identity``)
        makes the lock the one every engine of this process on that store takes."""
        self._namespace = namespace
        self._holder = _holder(store, namespace)
        self._shared = shared
        self._may_write = may_write

    def __enter__(self) -> NamespaceLock:
        if self._may_write is not None:
            self._may_write()
        holder, me = self._holder, threading.get_ident()
        if holder.owner == me:
            holder.depth += 1
            return self
        holder.lock.acquire()
        if self._shared is not None:
            try:
                holder.release_shared = self._shared.acquire(self._namespace)
            except BaseException:
                holder.lock.release()
                raise
        holder.owner, holder.depth = me, 1
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, trace: TracebackType | None
    ) -> None:
        holder = self._holder
        holder.depth -= 1
        if holder.depth:
            return
        holder.owner = None
        try:
            if holder.release_shared is not None:
                release, holder.release_shared = holder.release_shared, None
                release()
        finally:
            holder.lock.release()

    def locked(self) -> bool:
        """Whether some thread of this process holds the namespace."""
        return self._holder.lock.locked()

    def in_process(self) -> threading.Lock:
        """This process's part alone: for a write that must not land inside this process's
        read-decide-write sequences, and that no other process's could lose (the recall counts,
        added to what Chroma holds). Not re-entrant: never taken by a thread holding the whole lock."""
        return self._holder.lock


class PostgresLocks:
    """PostgreSQL session advisory locks, one key per namespace, over a small connection pool.

    A lock lives as long as the connection that took it: a replica that dies mid-write frees
    its namespaces at once (Postgres ends the session), with no lease to expire.
    """

    def __init__(self, url: str, *, connect_timeout: float = 5.0) -> None:
        try:
            import psycopg
        except ImportError as exc:
            raise ConfigurationError(
                "HINDSIGHT_LOCK_URL needs the 'replicas' extra: pip install 'hindsight-integrations[replicas]'"
            ) from exc
        self._psycopg = psycopg
        self._url = url
        self._connect_timeout = connect_timeout
        self._idle: queue.LifoQueue[Any] = queue.LifoQueue()

    def check(self) -> None:
        """Connect once now, so a wrong URL fails at start-up rather than at the first write."""
        self._give_back(self._connection())

    def identity(self) -> str:
        """Which database the locks live in (cluster id and database name, however the URL spells the host).

        Advisory locks are per database, so replicas coordinate exactly when this is the same;
        the writer registry (``replicas.py``) compares it across replicas.
        """
        connection = self._connection()
        try:
            try:
                row = connection.execute(
                    "SELECT system_identifier::text, current_database() FROM pg_control_system()"
                ).fetchone()
            except self._psycopg.Error:  # a role not allowed to read it: the server's address instead
                row = connection.execute(
                    "SELECT coalesce(host(inet_server_addr()), 'socket') || ':' || current_setting('port'), "
                    "current_database()"
                ).fetchone()
        except self._psycopg.Error as exc:
            connection.close()
            raise _unavailable(exc) from exc
        self._give_back(connection)
        return f"{row[0]}/{row[1]}"

    def acquire(self, namespace: str) -> Callable[[], None]:
        """Take the namespace's advisory lock on a pooled connection; the returned function releases it."""
        key = _lock_key(namespace)
        connection = self._connection()
        try:
            connection.execute("SELECT pg_advisory_lock(%s)", (key,))
        except self._psycopg.Error as exc:
            connection.close()
            raise _unavailable(exc) from exc

        def release() -> None:
            try:
                connection.execute("SELECT pg_advisory_unlock(%s)", (key,))
            except self._psycopg.Error:
                connection.close()  # the session ends, and with it the lock
                return
            self._give_back(connection)

        return release

    def close(self) -> None:
        """Close the idle pooled connections (the engine is closed); a lock still held keeps its own."""
        while True:
            try:
                self._idle.get_nowait().close()
            except queue.Empty:
                return

    def _connection(self) -> Any:
        while True:
            try:
                connection = self._idle.get_nowait()
            except queue.Empty:
                break
            if not connection.closed:
                return connection
        try:
            return self._psycopg.connect(
                self._url, autocommit=True, connect_timeout=max(1, round(self._connect_timeout))
            )
        except self._psycopg.Error as exc:
            raise _unavailable(exc) from exc

    def _give_back(self, connection: Any) -> None:
        if not connection.closed:
            self._idle.put(connection)


def _lock_key(namespace: str) -> int:
    """A stable signed 64-bit key per namespace (advisory locks are keyed by bigint)."""
    return int.from_bytes(hashlib.blake2b(namespace.encode(), digest_size=8).digest(), "big", signed=True)


def _unavailable(exc: Exception) -> StoreUnavailableError:
    return StoreUnavailableError(f"the lock database (HINDSIGHT_LOCK_URL) did not answer: {exc}")


def cross_process_locks(url: str | None) -> CrossProcessLocks | None:
    """The cross-process locks ``url`` names (``postgresql://...``), checked now; None without one."""
    if not url:
        return None
    if not url.startswith(("postgresql://", "postgres://")):
        raise ConfigurationError(
            f"HINDSIGHT_LOCK_URL must be a postgresql:// URL (the database serialising replicas' writes), got {url!r}"
        )
    locks = PostgresLocks(url)
    locks.check()
    return locks


__all__ = [
    "CrossProcessLocks",
    "NamespaceLock",
    "PostgresLocks",
    "cross_process_locks",
    "store_identity",
]
