"""Where one process stands in catching up with the other processes writing a namespace.

Several processes (MCP replicas, a CLI beside a server) write one Chroma store; each keeps
derived indexes of its own (``namespace_store.py``). What this process has seen is an
``updated_at`` watermark; when it last looked, a monotonic time checked on every recall, so
reading it takes no lock that is held across I/O. A context vector is written by its writer's
background writer after its record, so a sync can see a record before that vector: such ids
are asked for again at the next few syncs.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterable, Sequence
from typing import Any

LAGGING_SYNCS = 10
"""How many syncs ask again for a context vector Chroma did not hold; after that ranking reads it
from Chroma at recall, as it does for any vector the copy lacks."""


class CatchUp:
    """The watermark, the time of the last sync, the background sync's flag and the lagging ids."""

    def __init__(self, sync_seconds: float) -> None:
        self.watermark = 0.0
        self._sync_seconds = sync_seconds
        self._synced_at = 0.0
        self._syncing = False
        self._flag = threading.Lock()  # never held across I/O
        self._lagging: dict[str, int] = {}  # id -> syncs that asked for its context vector

    def advance(self, flats: Sequence[dict[str, Any]]) -> None:
        """Move the watermark past these records (written here or read from Chroma)."""
        self.watermark = max(self.watermark, *(f.get("updated_at", 0.0) for f in flats))

    def synced(self) -> None:
        """Note that this process has just read every change up to the watermark."""
        self._synced_at = time.monotonic()

    def stale(self) -> bool:
        """Whether the last sync is older than ``sync_seconds``: what another process wrote since is unseen."""
        return time.monotonic() - self._synced_at >= self._sync_seconds

    def start_background(self) -> bool:
        """Claim the background sync if one is due and none runs; the caller then runs it and calls ``done``."""
        with self._flag:
            if self._syncing or not self.stale():
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
