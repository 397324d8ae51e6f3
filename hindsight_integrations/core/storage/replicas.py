"""Who else writes to this Chroma server: the writer registry, and the check before every write.

Chroma has no conditional write, so processes writing one Chroma server lose data unless they
share a lock service (``HINDSIGHT_LOCK_URL``, ``locks.PostgresLocks``): measured without
one, a metadata update was lost in 15 of 15 races and a forgotten memory came back in 8 of 15.
Nothing in Chroma stops a second replica started without the lock URL, so each process that
writes through a Chroma server announces itself here, in a small collection of the store
(``WRITERS_COLLECTION``, never a namespace): its id, a fingerprint of its lock database (None
without one), when it started and until when its entry holds. A background heartbeat renews
the entry and re-reads everyone's; the check before a write reads only that cached view.

Writers *coordinate* when they name the same lock database (same fingerprint); a writer
without one coordinates with nobody. Among live writers one group is **primary** and may
write; a writer of any other group refuses its writes with ``ReplicaConflictError`` naming
``HINDSIGHT_LOCK_URL``, until the primary stops (its entry is removed) or dies (its entry
expires). The rule (``decide``), evaluated by each writer on its own view:

* a live primary of another group: refused (a primary that sees one gives up too, so two
  primaries resolve to at most one);
* else allowed (and claims primary) when it already is primary, a writer of its own group is,
  or it started before every writer of another group; else refused.

Start-up race: a writer writes its entry *before* it first reads the others', and claims primary
with a second write followed by a second read. Of two writers starting together the later
registrant always sees the earlier one; of two claims, the later claimer's read sees the earlier
claim and gives up. So at most one group ends up primary, at worst none for one heartbeat,
during which writes are refused, which loses nothing. Embedded stores do not register: a
``PersistentClient`` directory is one process's (docs/reliability.md).
"""

from __future__ import annotations

import atexit
import hashlib
import logging
import os
import socket
import threading
import time
import uuid
import weakref
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ValidationError

from ..errors import ReplicaConflictError, StoreUnavailableError

WRITERS_COLLECTION = "hindsightwriters"
"""The registry's collection: it does not start with ``store.COLLECTION_PREFIX``, so it is never a namespace."""
_HEARTBEAT_MOST_SECONDS = 5.0
log = logging.getLogger("hindsight.replicas")


class WriterEntry(BaseModel):
    """One writer's entry: who, with which lock database, since when, until when, whether it is primary."""

    writer: str
    lock: str | None = None
    started_at: float
    expires_at: float
    primary: bool = False
    host: str = ""
    pid: int = 0

    def coordinates_with(self, other: WriterEntry) -> bool:
        """Whether the two serialise their writes through one lock database."""
        return self.lock is not None and self.lock == other.lock

    def order(self) -> tuple[float, str]:
        """Who started first (the writer id breaks ties, so every writer agrees on the order)."""
        return (self.started_at, self.writer)


@dataclass(frozen=True)
class Decision:
    """Whether a writer may write now; when not, the live writer it must leave the store to."""

    allowed: bool
    blocker: WriterEntry | None = None


def decide(me: WriterEntry, entries: list[WriterEntry], now: float) -> Decision:
    """The rule of the module docstring, on one writer's view of the registry at ``now``."""
    live = [e for e in entries if e.writer != me.writer and e.expires_at > now]
    rivals = [e for e in live if not me.coordinates_with(e)]
    primaries = [e for e in rivals if e.primary]
    if primaries:
        return Decision(False, min(primaries, key=WriterEntry.order))
    if me.primary or any(e.primary for e in live if me.coordinates_with(e)):
        return Decision(True)
    earlier = [e for e in rivals if e.order() < me.order()]
    return Decision(True) if not earlier else Decision(False, min(earlier, key=WriterEntry.order))


def lock_fingerprint(identity: str | None) -> str | None:
    """A short hash of the lock database's identity: entries say which one, not where or as whom."""
    return hashlib.blake2b(identity.encode(), digest_size=8).hexdigest() if identity else None


class WriterRegistry:
    """This process's entry in the writer registry of one Chroma server, and the check its writes make.

    ``check`` is what a write calls: it registers on first use (so a process that only reads
    never does), then answers from the view the heartbeat refreshes every third of
    ``expiry_seconds`` (at most 5 s), raising ``ReplicaConflictError`` while writes are refused.
    A refusal is logged once as a warning, and the end of one once as info.
    """

    def __init__(
        self,
        client: Any,
        *,
        url: str,
        lock: str | None,
        expiry_seconds: float,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._client = client
        self.url = url
        self.expiry = float(expiry_seconds)
        self.interval = min(_HEARTBEAT_MOST_SECONDS, self.expiry / 3)
        self._clock = clock
        self._entry = WriterEntry(
            writer=f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}",
            lock=lock,
            started_at=0.0,
            expires_at=0.0,
            host=socket.gethostname(),
            pid=os.getpid(),
        )
        self._collection: Any = None
        self._lock = threading.Lock()
        self._registered = False
        self._decision: Decision | None = None
        self._viewed_at = 0.0  # time.monotonic() of the last refresh
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    @property
    def writer(self) -> str:
        """This process's writer id (host:pid:random)."""
        return self._entry.writer

    @property
    def closed(self) -> bool:
        """Whether ``close`` was called (the entry is gone; a new registry takes over)."""
        return self._stop.is_set()

    @property
    def registered(self) -> bool:
        """Whether this process has an entry in the registry (it has written, or checked at start-up)."""
        return self._registered

    def check(self) -> None:
        """Raise ``ReplicaConflictError`` if this process must not write now; register on first use."""
        with self._lock:
            if not self._registered:
                self._register()
            elif time.monotonic() - self._viewed_at >= self.interval:
                self._refresh()  # the heartbeat is late (a busy machine): do not answer from an old view
            decision = self._decision
        if decision is not None and not decision.allowed:
            raise ReplicaConflictError(self._refusal(decision.blocker))

    def refresh(self) -> None:
        """Renew this entry and re-read everyone's now (the heartbeat does so every ``interval``)."""
        with self._lock:
            if self._registered:
                self._refresh()
            else:
                self._register()

    def may_write(self) -> bool:
        """``check`` as a boolean (upkeep asks before taking its lease)."""
        try:
            self.check()
        except ReplicaConflictError:
            return False
        return True

    def close(self) -> None:
        """Stop the heartbeat and remove this process's entry, so a writer it blocked may write at once."""
        self._stop.set()
        atexit.unregister(self.close)
        thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout=self.interval + 5)
        with self._lock:
            if not self._registered:
                return
            self._registered = False
            try:
                self._writers().delete(ids=[self._entry.writer])
            except Exception as exc:  # noqa: BLE001 - the server may be gone: the entry then expires by itself
                log.info("could not remove this writer's registry entry (it expires by itself): %s", type(exc).__name__)

    # -- inside the lock ----------------------------------------------------------------------
    def _register(self) -> None:
        entries = self._read()
        now = self._clock()
        # Start after every entry already visible: a writer joining a registry whose primary just
        # died never jumps ahead of the writers that were waiting.
        latest = max((e.started_at for e in entries if e.expires_at > now), default=0.0)
        self._entry = self._entry.model_copy(
            update={"started_at": max(now, latest + 0.001), "expires_at": now + self.expiry, "primary": False}
        )
        self._write()
        self._registered = True
        self._refresh(renew=False)
        if self._thread is None:
            self._thread = threading.Thread(target=self._beat, name="hindsight-writer-registry", daemon=True)
            self._thread.start()
            atexit.register(self.close)

    def _refresh(self, *, renew: bool = True) -> None:
        """Renew this entry, read everyone's and decide; claiming primary is a write and a second read."""
        now = self._clock()
        if renew:
            self._entry = self._entry.model_copy(update={"expires_at": now + self.expiry})
            self._write()
        entries = self._read()
        decision = decide(self._entry, entries, now)
        if decision.allowed and not self._entry.primary:
            self._entry = self._entry.model_copy(update={"primary": True})
            self._write()
            decision = decide(self._entry, self._read(), now)
        if not decision.allowed and self._entry.primary:
            self._entry = self._entry.model_copy(update={"primary": False})
            self._write()
        self._report(decision)
        self._decision = decision
        self._viewed_at = time.monotonic()
        self._forget_long_dead(entries, now)

    def _report(self, decision: Decision) -> None:
        before = self._decision
        if not decision.allowed and (before is None or before.allowed):
            log.warning(
                "writes refused: another writer uses this Chroma server without a lock service shared with this one",
                extra={
                    "fields": {
                        "writer": self.writer,
                        "other_writer": decision.blocker.writer if decision.blocker else None,
                        "chroma_url": self.url,
                        "lock_service": self._entry.lock is not None,
                        "fix": "set HINDSIGHT_LOCK_URL to the same PostgreSQL database on every replica",
                    }
                },
            )
        elif decision.allowed and before is not None and not before.allowed:
            log.info(
                "writes allowed again: no other writer without the shared lock service is live",
                extra={"fields": {"writer": self.writer, "chroma_url": self.url}},
            )

    def _refusal(self, blocker: WriterEntry | None) -> str:
        other = f"writer {blocker.writer}" if blocker else "another writer"
        if self._entry.lock is None:
            why = "and this one has no lock service"
        elif blocker is not None and blocker.lock is not None:
            why = "with a different lock database than this one"
        else:
            why = "without a lock service"
        return (
            f"writes refused: another replica ({other}) is writing to the same Chroma server ({self.url}) {why}, "
            "and two writers without one shared lock lose updates. Set HINDSIGHT_LOCK_URL to the same "
            "PostgreSQL database on every replica (or stop the other writer); reads still work, and writes "
            f"resume by themselves once the other writer stops (or, if it died, {self.expiry:.0f} s after its "
            "last heartbeat)."
        )

    def _forget_long_dead(self, entries: list[WriterEntry], now: float) -> None:
        """Remove entries of writers dead for ten expiries (crashed processes leave theirs behind)."""
        dead = [e.writer for e in entries if e.expires_at < now - 10 * self.expiry and e.writer != self.writer]
        if dead and self._entry.primary:
            try:
                self._writers().delete(ids=dead)
            except Exception as exc:  # noqa: BLE001 - tidying only: the next refresh tries again
                log.debug("could not remove dead writers' entries: %s", type(exc).__name__)

    def _beat(self) -> None:
        failing = False
        while not self._stop.wait(self.interval):
            try:
                with self._lock:
                    if self._registered:
                        self._refresh()
            except Exception as exc:  # noqa: BLE001 - Chroma may be down a moment: the next beat retries
                if not failing:  # once per outage, not every few seconds
                    log.warning("writer registry heartbeat failed; retrying: %s", type(exc).__name__)
                failing = True
                continue
            if failing:
                log.info("writer registry heartbeat works again")
            failing = False

    def _writers(self) -> Any:
        if self._collection is None:
            try:
                self._collection = self._client.get_or_create_collection(
                    WRITERS_COLLECTION, embedding_function=None, metadata={"hindsight": "writer registry"}
                )
            except Exception as exc:
                raise StoreUnavailableError(
                    f"could not open the writer registry ({WRITERS_COLLECTION}): {exc}"
                ) from exc
        return self._collection

    def _read(self) -> list[WriterEntry]:
        try:
            got = self._writers().get(include=["documents"])
        except StoreUnavailableError:
            raise
        except Exception as exc:
            self._collection = None  # a restarted server has a new collection: open it again next time
            raise StoreUnavailableError(f"could not read the writer registry: {exc}") from exc
        entries = []
        for document in got.get("documents") or []:
            try:
                entries.append(WriterEntry.model_validate_json(document or ""))
            except ValidationError:
                continue  # a damaged entry: its writer rewrites it at its next heartbeat
        return entries

    def _write(self) -> None:
        try:
            # Chroma stores records with a vector; an entry's is a constant nobody searches.
            self._writers().upsert(
                ids=[self._entry.writer], embeddings=[[1.0]], documents=[self._entry.model_dump_json()]
            )
        except Exception as exc:
            self._collection = None
            raise StoreUnavailableError(f"could not write the writer registry: {exc}") from exc


_REGISTRIES: dict[tuple[str, str | None], WriterRegistry] = {}
_REGISTRIES_LOCK = threading.Lock()
_USERS: weakref.WeakKeyDictionary[WriterRegistry, int] = weakref.WeakKeyDictionary()  # engines given each one


def registry_for(client: Any, *, url: str, lock: str | None, expiry_seconds: float) -> WriterRegistry:
    """The process's registry entry for the Chroma server at ``url`` with lock database ``lock``.

    One per process, shared by every engine of the process on that server with that lock: the
    registry guards against other *processes* (replicas, CLI commands), and engines of one process
    writing one server are one writer to it.
    """
    with _REGISTRIES_LOCK:
        registry = _REGISTRIES.get((url, lock))
        if registry is None or registry.closed:
            registry = _REGISTRIES[(url, lock)] = WriterRegistry(
                client, url=url, lock=lock, expiry_seconds=expiry_seconds
            )
        _USERS[registry] = _USERS.get(registry, 0) + 1
        return registry


def release_registry(registry: WriterRegistry) -> None:
    """An engine ``registry_for`` gave ``registry`` to is closed: close it once the process's last such engine is."""
    with _REGISTRIES_LOCK:
        users = _USERS.pop(registry, 1) - 1
        if users > 0:
            _USERS[registry] = users
            return
    registry.close()


__all__ = [
    "WRITERS_COLLECTION",
    "Decision",
    "WriterEntry",
    "WriterRegistry",
    "decide",
    "lock_fingerprint",
    "registry_for",
    "release_registry",
]
