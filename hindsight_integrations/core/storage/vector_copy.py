"""An in-memory copy of one collection's vectors, so recall can score candidates without a request.

Recall needs the cosine of every candidate, and the vector search only returns it for its
own hits: the BM25 hits (and window-search hits) it missed were fetched from Chroma on
every recall, one more request of ~5 ms at 100k memories embedded and more through a
server, running on the same two cores as the query embedding and slowing it down. With
this copy those cosines are computed from memory; Chroma is asked only for ids the copy
does not hold (written by another process since the last sync).

Rows are float16: 768 bytes a memory at 384 dimensions, half of float32, and cosines move
by ~1e-5 (at most 5e-5 over 50 queries × 20k MiniLM vectors), far below the gaps ranking
depends on. Exports and archives never read from
here; they take Chroma's float32 vectors.

Like the lexical and facts indexes it is derived data, filled when a namespace is opened,
updated on this process's writes and by the store's watermark sync.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

_FIRST_ROWS = 1024

Vector = Sequence[float] | np.ndarray
"""One vector: a list of floats, or a row of an embedder's float32 array."""


class VectorCopy:
    """Memory id → vector, for one collection; thread-safe."""

    def __init__(self) -> None:
        self._rows = np.empty((0, 0), dtype=np.float16)
        self._row_of: dict[str, int] = {}
        self._free: list[int] = []
        self._handed_out = 0
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._row_of)

    @property
    def nbytes(self) -> int:
        """Memory the rows take (for benchmarks and sizing)."""
        return int(self._rows.nbytes)

    def upsert(self, ids: Sequence[str], vectors: Sequence[Any] | np.ndarray) -> None:
        """Store these vectors, replacing any held for the same ids."""
        self._write(ids, vectors, replace=True)

    def fill(self, ids: Sequence[str], vectors: Sequence[Any] | np.ndarray) -> None:
        """Store vectors read from Chroma for ids not held yet.

        A vector read before a concurrent ``upsert`` of the same id may be the older one, so
        it never replaces what is held.
        """
        self._write(ids, vectors, replace=False)

    def remove(self, ids: Iterable[str]) -> None:
        """Forget the vectors of hard-deleted memories; their rows are reused."""
        with self._lock:
            for memory_id in ids:
                row = self._row_of.pop(memory_id, None)
                if row is not None:
                    self._free.append(row)

    def lookup(self, ids: Iterable[str]) -> dict[str, np.ndarray]:
        """float32 vectors for the ids held here; the others must be read from Chroma."""
        with self._lock:
            found = [(memory_id, row) for memory_id in ids if (row := self._row_of.get(memory_id)) is not None]
            if not found:
                return {}
            block = self._rows[[row for _, row in found]].astype(np.float32)
        return {memory_id: block[n] for n, (memory_id, _) in enumerate(found)}

    def _write(self, ids: Sequence[str], vectors: Sequence[Any] | np.ndarray, *, replace: bool) -> None:
        if len(ids) == 0:
            return
        matrix = np.asarray(vectors, dtype=np.float16).reshape(len(ids), -1)
        with self._lock:
            if self._rows.shape[1] != matrix.shape[1]:
                if self._row_of:
                    raise ValueError(f"vectors of {matrix.shape[1]} dimensions in a copy of {self._rows.shape[1]}")
                self._rows = np.empty((0, matrix.shape[1]), dtype=np.float16)
                self._free, self._handed_out = [], 0
            targets: list[int] = []
            sources: list[int] = []
            for n, memory_id in enumerate(ids):
                row = self._row_of.get(memory_id)
                if row is None:
                    row = self._row_of[memory_id] = self._new_row()
                elif not replace:
                    continue
                targets.append(row)
                sources.append(n)
            if targets:
                self._rows[targets] = matrix[sources]

    def _new_row(self) -> int:
        if self._free:
            return self._free.pop()
        if self._handed_out == len(self._rows):
            grown = np.empty((max(_FIRST_ROWS, 2 * len(self._rows)), self._rows.shape[1]), dtype=np.float16)
            grown[: len(self._rows)] = self._rows
            self._rows = grown
        self._handed_out += 1
        return self._handed_out - 1


__all__ = ["VectorCopy"]
