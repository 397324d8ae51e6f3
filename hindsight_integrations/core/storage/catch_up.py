"""Where one process stands in catching up with the other processes writing a namespace.

Several processes (MCP replicas, a CLI beside a server) write one Chroma store; each keeps
derived indexes of its own (``namespace_store.py``). What this process has read from Chroma is
an ``updated_at`` watermark: only records a sync (or the first load) read move it. This
process's own writes are indexed as they are made and noted apart: were they to move the
watermark, another process's record written just before them and not synced yet would fall
below it and never reach this process's indexes. When this process last looked is a monotonic
time checked on every recall, so reading it takes no lock that is held across I/O. A context
vector is written by its writer's background writer after its record, so a sync can see a
record before that vector: such ids are asked for again at the next few syncs.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

OWN_WRITES_CHECKED = 64
"""Records newer than the watermark that ``only_own_since`` reads at most; more is a burst of writes."""

LAGGING_SYNCS = 10
"""How many syncs ask again for a context vector Chroma did not hold; after that ranking reads it
from Chroma at recall, as it does for any vector the copy lacks."""


class CatchUp:
    """The watermark, this process's writes since, the last sync's time, its flag and the lagging ids."""

    def __init__(self, sync_seconds: float) -> None:
        self.watermark = 0.0
        self._sync_seconds = sync_seconds
        self._synced_at = 0.0
        self._syncing = False
        self._flag = threading.Lock()  # never held across I/O
        self._lagging: dict[str, int] = {}  # id -> syncs that asked for its context vector
        self._own: dict[str, float] = {}  # id -> updated_at, for this process's writes above the watermark

    def advance(self, flats: Sequence[Mapping[str, Any]]) -> None:
        """Move the watermark past these records, read from Chroma by a sync or the first load."""
        self.watermark = max([self.watermark, *(f.get("updated_at") or 0.0 for f in flats)])
        self._own = {i: t for i, t in self._own.items() if t > self.watermark}

    def wrote(self, ids: Sequence[str], flats: Sequence[Mapping[str, Any]]) -> None:
        """Note this process's writes, indexed already: a sync reading them back skips them."""
        self._own.update((i, f.get("updated_at") or 0.0) for i, f in zip(ids, flats))

    def is_own(self, memory_id: str, flat: Mapping[str, Any]) -> bool:
        """Whether Chroma's record is this process's write, unchanged since (nothing to index again)."""
        return self._own.get(memory_id) == (flat.get("updated_at") or 0.0)

    def newer_than_watermark(self, collection: Any, *, limit: int | None = None) -> dict[str, Any]:
        """Chroma's records newer than the watermark, metadata only (at most ``limit``)."""
        return dict(collection.get(where={"updated_at": {"$gt": self.watermark}}, limit=limit, include=["metadatas"]))

    def only_own_since(self, collection: Any) -> bool | None:
        """Whether every record newer than the watermark is this process's own write, unchanged since.

        None when there are ``OWN_WRITES_CHECKED`` or more: too many to tell in one small read.
        """
        changed = self.newer_than_watermark(collection, limit=OWN_WRITES_CHECKED)
        if len(changed["ids"]) >= OWN_WRITES_CHECKED:
            return None
        return all(self.is_own(i, m) for i, m in zip(changed["ids"], changed["metadatas"]))

    def synced(self) -> None:
        """Note that this process has just read every change up to the watermark."""
        self._synced_at = time.monotonic()

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


__all__ = ["LAGGING_SYNCS", "CatchUp"]
