"""The records of a small namespace, in memory, so recall need not read its finalists back.

Recall ranks on in-memory facts, then reads its finalists from Chroma (~1 ms embedded and an
HTTP round trip through a server) so that what another process changed since is never returned
as it was. When the store has checked that nothing changed elsewhere since this process's last
sync (``NamespaceStore.copies_current``: no record newer than the watermark, none deleted), the
records held here are what that read would return, and recall takes them from here.

Only a namespace of at most ``EXACT_SEARCH_ROWS`` records is held (~2.8 KB a record on LoCoMo's
turns, ~23 MB at the limit), the size whose vectors are searched in memory too: past it the
copy empties and stays off, and recall reads from Chroma as before. Like the other derived
indexes it is filled when the namespace is opened, and updated on this process's writes and
recalls and by the watermark sync. The recall counts other processes write do not move
``updated_at``; they show here when the record next changes, as in the facts recall ranks on.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import Any

from ..model.records import MemoryRecord, to_epoch
from .vector_copy import EXACT_SEARCH_ROWS


class RecordCopy:
    """Memory id → its flat view (``unpack``), and the ``MemoryRecord`` built from it once; thread-safe."""

    def __init__(self, limit: int = EXACT_SEARCH_ROWS) -> None:
        self._flats: dict[str, dict[str, Any]] = {}
        self._records: dict[str, MemoryRecord] = {}
        self._limit = limit
        self._complete = True
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._flats)

    @property
    def complete(self) -> bool:
        """Whether every record of the namespace is held (false once it outgrew ``limit``)."""
        return self._complete

    def upsert(self, ids: Sequence[str], flats: Sequence[dict[str, Any]]) -> None:
        """Hold these records as written or read (a flat view with its content)."""
        with self._lock:
            if not self._complete:
                return
            for memory_id, flat in zip(ids, flats):
                held = self._flats.get(memory_id)
                if held is not None and int(held.get("access_count", 0)) > int(flat.get("access_count", 0)):
                    flat = {**flat, **{k: held.get(k) for k in ("access_count", "last_accessed_at")}}  # counts grow
                self._flats[memory_id] = flat  # held, never changed: ``count_access`` replaces it
                self._records.pop(memory_id, None)
            if len(self._flats) > self._limit:
                self._flats.clear()
                self._records.clear()
                self._complete = False

    def remove(self, ids: Iterable[str]) -> None:
        """Forget hard-deleted records."""
        with self._lock:
            for memory_id in ids:
                self._flats.pop(memory_id, None)
                self._records.pop(memory_id, None)

    def count_access(self, ids: Iterable[str], when: datetime) -> None:
        """A recall by this process, as the store writes it to Chroma in the background."""
        stamp = to_epoch(when) or 0.0
        with self._lock:
            for memory_id in ids:
                flat = self._flats.get(memory_id)
                if flat is not None:
                    self._flats[memory_id] = {
                        **flat,
                        "access_count": int(flat.get("access_count", 0)) + 1,
                        "last_accessed_at": max(stamp, flat.get("last_accessed_at") or 0.0),
                    }
                    self._records.pop(memory_id, None)

    def flats(self, ids: Sequence[str]) -> dict[str, dict[str, Any]] | None:
        """The flat views of ``ids``, or None unless every one is held (then ask Chroma)."""
        with self._lock:
            if not self._complete or any(i not in self._flats for i in ids):
                return None
            return {i: self._flats[i] for i in ids}

    def record(self, memory_id: str, flat: dict[str, Any]) -> MemoryRecord:
        """The record of a flat view ``flats`` returned, built once while it stays unchanged."""
        with self._lock:
            found = self._records.get(memory_id)
            if found is not None and self._flats.get(memory_id) is flat:
                return found
        built = MemoryRecord.from_flat(memory_id, flat)
        with self._lock:
            if self._flats.get(memory_id) is flat:
                self._records[memory_id] = built
        return built


__all__ = ["RecordCopy"]
