"""The upkeep lease: which replica runs the current upkeep round, kept in the store itself.

Several HTTP replicas serve one store, and each runs the upkeep schedule; a round done twice
wastes a full read of every namespace, and two rounds at once would compress the same sessions
side by side. So a round is run by whoever holds its lease: one small record in a Chroma
collection of its own (``LEASE_COLLECTION``: never listed as a namespace) saying which round is
current, who holds it, until when, whether it finished and when the next one is due.

Chroma has no compare-and-set, so every read-check-write of that record runs under a lock, held
for the milliseconds of one read and one write: with ``HINDSIGHT_LOCK_URL``, the PostgreSQL
advisory lock every replica takes for it (``locks.py``); without one (one process on an
embedded store), a lock of this process.
The holder renews the lease as the round goes on (before each namespace); a replica that dies
mid-round stops renewing, and once the lease has expired another replica takes the same round
over and runs it to the end. A round is marked finished once, by its holder; a holder whose
lease was taken over finds out at its next renewal and stops (docs/reliability.md, "One upkeep
round at a time").
"""

from __future__ import annotations

import contextlib
import logging
import threading
from collections.abc import Iterator
from datetime import datetime, timedelta
from typing import Any

from pydantic import BaseModel, ValidationError

from ..errors import StoreUnavailableError
from ..redaction import describe_error
from ..storage.locks import CrossProcessLocks

LEASE_COLLECTION = "hindsightlease_upkeep"
"""The lease's collection: it does not start with ``store.COLLECTION_PREFIX``, so it is never a namespace."""
LOCK_NAME = "upkeep lease"
"""The cross-process lock's name: a space makes it no valid namespace, so no namespace shares its lock."""
_RECORD_ID = "upkeep"
log = logging.getLogger("hindsight.upkeep")

# Without a lock database: every lease of this process, whichever engine holds it, since two
# engines on one embedded store in one process must not interleave a read-check-write either.
_PROCESS_LOCK = threading.Lock()


class LeaseState(BaseModel):
    """The lease record: the current round, its holder and expiry, and when the next round is due."""

    round: int = 0
    done: bool = True
    holder: str | None = None
    expires_at: datetime | None = None
    started_at: datetime | None = None
    finished_at: datetime | None = None
    next_due: datetime | None = None  # None: due now


class TakenRound(BaseModel):
    """A round this replica now holds; ``taken_over_from`` names the holder whose lease expired mid-round."""

    round: int
    started_at: datetime
    taken_over_from: str | None = None


class UpkeepLease:
    """The lease of the upkeep round in ``client``'s store, held as ``holder`` for ``seconds`` at a time."""

    def __init__(
        self,
        client: Any,
        *,
        holder: str,
        seconds: float,
        shared_locks: CrossProcessLocks | None = None,
    ) -> None:
        self._client = client
        self.holder = holder
        self.duration = timedelta(seconds=seconds)
        self._shared_locks = shared_locks
        self._collection: Any = None

    def state(self) -> LeaseState:
        """The record as it is now (a fresh store has none: round 0, finished, due now)."""
        return self._read()

    def take(self, now: datetime) -> TakenRound | None:
        """Take the round that is due at ``now``, or None: not due yet, or another replica's lease is live.

        An unfinished round whose lease expired (its holder died) is taken over as the same round;
        a finished one is followed by the next round once ``next_due`` has come.
        """
        with self._locked():
            state = self._read()
            taken_over = None
            if not state.done:
                if state.holder != self.holder and state.expires_at is not None and state.expires_at > now:
                    return None
                number = state.round
                taken_over = state.holder if state.holder != self.holder else None
            elif state.next_due is not None and state.next_due > now:
                return None
            else:
                number = state.round + 1
            self._write(
                state.model_copy(
                    update={
                        "round": number,
                        "done": False,
                        "holder": self.holder,
                        "expires_at": now + self.duration,
                        "started_at": now,
                        "finished_at": None,
                    }
                )
            )
        return TakenRound(round=number, started_at=now, taken_over_from=taken_over)

    def renew(self, number: int, now: datetime) -> bool:
        """Extend the lease of round ``number`` from ``now``; False when this replica no longer holds it."""
        with self._locked():
            state = self._read()
            if not self._holds(state, number):
                return False
            self._write(state.model_copy(update={"expires_at": now + self.duration}))
            return True

    def finish(self, number: int, now: datetime, *, next_due: datetime) -> bool:
        """Mark round ``number`` done and the next due at ``next_due``; False when another replica took it over."""
        with self._locked():
            state = self._read()
            if not self._holds(state, number):
                return False
            self._write(
                state.model_copy(update={"done": True, "expires_at": now, "finished_at": now, "next_due": next_due})
            )
            return True

    def release(self, number: int, now: datetime) -> None:
        """Give up round ``number`` unfinished (the server is stopping): another replica may take it over at once."""
        with self._locked():
            state = self._read()
            if self._holds(state, number):
                self._write(state.model_copy(update={"expires_at": now}))

    def _holds(self, state: LeaseState, number: int) -> bool:
        return state.round == number and not state.done and state.holder == self.holder

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        """The lease's lock: the advisory lock when replicas share one (it also excludes this process's
        other threads: each acquire holds its own connection), else the process-wide one."""
        if self._shared_locks is None:
            with _PROCESS_LOCK:
                yield
            return
        release = self._shared_locks.acquire(LOCK_NAME)
        try:
            yield
        finally:
            release()

    def _lease_collection(self) -> Any:
        if self._collection is None:
            try:
                self._collection = self._client.get_or_create_collection(
                    LEASE_COLLECTION, embedding_function=None, metadata={"hindsight": "upkeep lease"}
                )
            except Exception as exc:
                raise StoreUnavailableError(f"could not open the upkeep lease ({LEASE_COLLECTION}): {exc}") from exc
        return self._collection

    def _read(self) -> LeaseState:
        try:
            got = self._lease_collection().get(ids=[_RECORD_ID], include=["documents"])
        except StoreUnavailableError:
            raise
        except Exception as exc:
            raise StoreUnavailableError(f"could not read the upkeep lease: {exc}") from exc
        documents = got.get("documents") or []
        if not documents or not documents[0]:
            return LeaseState()
        try:
            return LeaseState.model_validate_json(documents[0])
        except ValidationError as exc:
            # A damaged record must not stop upkeep for good: the next write replaces it.
            log.warning("the upkeep lease record is unreadable, starting afresh: %s", describe_error(exc))
            return LeaseState()

    def _write(self, state: LeaseState) -> None:
        try:
            # Chroma stores records with a vector; the lease's is a constant nobody searches.
            self._lease_collection().upsert(ids=[_RECORD_ID], embeddings=[[1.0]], documents=[state.model_dump_json()])
        except Exception as exc:
            raise StoreUnavailableError(f"could not write the upkeep lease: {exc}") from exc


__all__ = ["LEASE_COLLECTION", "LOCK_NAME", "LeaseState", "TakenRound", "UpkeepLease"]
