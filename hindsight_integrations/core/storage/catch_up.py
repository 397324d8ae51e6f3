"""Where one process stands in catching up with the other processes writing a namespace.

Several processes (MCP replicas, a CLI beside a server) write one Chroma store; each keeps
derived indexes of its own (``namespace_store.py``). What this process has read from Chroma is
an ``updated_at`` watermark: only records a sync (or the first load) read move it. This
process's own writes are indexed as they are made and noted apart: were they to move the
watermark, another process's record written just before them and not synced yet would fall
below it and never reach this process's indexes. A record is stamped before it is written (an
edit's text is embedded in between), so one stamped before a sync's listing can land after it,
below the watermark that listing set: each sync lists again what was stamped up to
``LOOKBACK_SECONDS`` before the last one began, and reads only what it has not read at that
stamp. When this process last looked is a monotonic time checked on every recall, so reading
it takes no lock that is held across I/O. A context vector is written by its writer's
background writer after its record, so a sync can see a record before that vector: such ids
are asked for again at the next few syncs.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

OWN_WRITES_CHECKED = 64
"""Records newer than the watermark that ``only_own_since`` reads at most; more is a burst of writes."""

LOOKBACK_SECONDS = 2.0
"""How long a record may take from its stamp to its write, plus how far apart the clocks of the
processes may be, for another process's edit still to reach this one; an add that takes longer
is found by the count (``NamespaceStore._reconcile_ids``)."""

LAGGING_SYNCS = 10
"""How many syncs ask again for a context vector Chroma did not hold; after that ranking reads it
from Chroma at recall, as it does for any vector the copy lacks."""


class CatchUp:
    """The watermark, this process's writes since, the last sync's time, its flag and the lagging ids."""

    def __init__(self, sync_seconds: float, now: Callable[[], float] | None = None) -> None:
        """``now`` is the clock records are stamped by, in epoch seconds (the wall clock unless given)."""
        self._now = now or time.time
        self.watermark = 0.0
        self._sync_seconds = sync_seconds
        self._synced_at = 0.0
        self._syncing = False
        self._flag = threading.Lock()  # never held across I/O
        self._lagging: dict[str, int] = {}  # id -> syncs that asked for its context vector
        self._own: dict[str, float] = {}  # id -> updated_at, for this process's writes above the watermark
        self._listing = self._now()  # when the listing being read began (the first load's: now)
        self._listed = 0.0  # when the last sync's (or the load's) listing began
        self._seen: dict[str, float] = {}  # id -> updated_at, of records listed within the lookback

    def advance(self, ids: Sequence[str], flats: Sequence[Mapping[str, Any]]) -> None:
        """Move the watermark past these records, read from Chroma by a sync or the first load."""
        self.watermark = max([self.watermark, *(f.get("updated_at") or 0.0 for f in flats)])
        self._own = {i: t for i, t in self._own.items() if t > self.watermark}
        recent = self._listing - LOOKBACK_SECONDS
        self._seen.update((i, t) for i, f in zip(ids, flats) if (t := f.get("updated_at") or 0.0) > recent)

    def wrote(self, ids: Sequence[str], flats: Sequence[Mapping[str, Any]]) -> None:
        """Note this process's writes, indexed already: a sync reading them back skips them."""
        self._own.update((i, f.get("updated_at") or 0.0) for i, f in zip(ids, flats))

    @property
    def owes_a_sync(self) -> bool:
        """Whether ``OWN_WRITES_CHECKED`` or more of this process's writes lie above the watermark.

        ``only_own_since`` cannot tell them from another process's then, and the first recall
        after an import would search Chroma and start the sync itself; synced as they are
        written, the copies serve that recall.
        """
        return self.own_writes() >= OWN_WRITES_CHECKED

    def own_writes(self) -> int:
        """How many of this process's writes lie above the watermark (no sync has read them back yet)."""
        return len(self._own)

    def is_known(self, memory_id: str, flat: Mapping[str, Any]) -> bool:
        """Whether Chroma's record is this process's write or one a sync read, unchanged since (nothing to index)."""
        stamp = flat.get("updated_at") or 0.0
        return self._own.get(memory_id) == stamp or self._seen.get(memory_id) == stamp

    def newer_than_watermark(self, collection: Any, *, limit: int | None = None) -> dict[str, Any]:
        """Chroma's records newer than the watermark, metadata only (at most ``limit``)."""
        return self._stamped_after(collection, self.watermark, limit)

    def changed_since_sync(self, collection: Any) -> dict[str, Any]:
        """What a sync lists: newer than the watermark, and stamped within the lookback before the last sync."""
        self._listing = self._now()
        return self._stamped_after(collection, min(self.watermark, self._listed - LOOKBACK_SECONDS), None)

    @staticmethod
    def _stamped_after(collection: Any, stamp: float, limit: int | None) -> dict[str, Any]:
        return dict(collection.get(where={"updated_at": {"$gt": stamp}}, limit=limit, include=["metadatas"]))

    def only_own_since(self, collection: Any) -> bool | None:
        """Whether every record newer than the watermark is this process's own write (or read), unchanged since.

        None when there are ``OWN_WRITES_CHECKED`` or more: too many to tell in one small read.
        """
        changed = self.newer_than_watermark(collection, limit=OWN_WRITES_CHECKED)
        if len(changed["ids"]) >= OWN_WRITES_CHECKED:
            return None
        return all(self.is_known(i, m) for i, m in zip(changed["ids"], changed["metadatas"]))

    def synced(self) -> None:
        """Note that this process has just read every change up to the watermark."""
        self._synced_at = time.monotonic()
        self._listed = self._listing
        relisted = min(self.watermark, self._listed - LOOKBACK_SECONDS)
        self._seen = {i: t for i, t in self._seen.items() if t > relisted}

    def stale(self) -> bool:
        """Whether the last sync is older than ``sync_seconds``: what another process wrote since is unseen."""
        return time.monotonic() - self._synced_at >= self._sync_seconds

    def start_background(self, *, due: bool = False) -> bool:
        """Claim the background sync if one is ``due`` or stale and none runs; the caller runs it, then ``done``."""
        with self._flag:
            if self._syncing or not (due or self.stale()):
                return False
            self._syncing = True
            return True

    def done(self) -> None:
        """Release the background sync claimed by ``start_background``, whether it worked or failed."""
        self._syncing = False

    def context_to_ask(self, framed: Iterable[str]) -> list[str]:
        """The synced records with a context, then those still lagging, each id once."""
        return list(dict.fromkeys([*framed, *self._lagging]))

    def still_lagging(self, asked: Sequence[str], lacking: Iterable[str]) -> None:
        """Keep the ids whose context vector Chroma still lacks, until ``LAGGING_SYNCS`` syncs asked."""
        seen = {i: self._lagging.get(i, 0) + 1 for i in asked}
        self._lagging = {i: seen[i] for i in lacking if seen.get(i, LAGGING_SYNCS) < LAGGING_SYNCS}


__all__ = ["LAGGING_SYNCS", "LOOKBACK_SECONDS", "CatchUp"]
