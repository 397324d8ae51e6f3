"""An in-memory copy of one collection's vectors, so recall can score candidates without a request.

Recall needs the cosine of every candidate, and the vector search only returns it for its
own hits: the BM25 hits (and window-search hits) it missed were fetched from Chroma on
every recall, one more request of ~5 ms at 100k memories embedded and more through a
server, running on the same two cores as the query embedding and slowing it down. With
this copy those cosines are computed from memory; Chroma is asked only for ids the copy
does not hold (written by another process since the last sync).

While a copy holds at most ``EXACT_SEARCH_ROWS`` vectors it keeps them as float32 and can
also be *searched*: an exact cosine search over a few thousand rows takes ~0.2 ms, where a
Chroma query costs ~2 ms embedded (most of it the call itself) and an HTTP round trip through
a server (``NamespaceStore.query``; the store decides when the copy may stand in for Chroma).
A larger copy turns to float16, 768 bytes a memory at 384 dimensions, half of float32; cosines
move by ~1e-5 (at most 5e-5 over 50 queries × 20k MiniLM vectors), far below the gaps ranking
depends on, and searching is Chroma's again. Exports and archives never read from here; they
take Chroma's float32 vectors.

Like the lexical and facts indexes it is derived data, filled when a namespace is opened,
updated on this process's writes and by the store's watermark sync.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

_FIRST_ROWS = 1024
EXACT_SEARCH_ROWS = 8192
"""Rows a copy holds as float32 and can search (12 MB at 384 dimensions); beyond, float16 and no search."""

Vector = Sequence[float] | np.ndarray
"""One vector: a list of floats, or a row of an embedder's float32 array."""


class VectorCopy:
    """Memory id → vector, for one collection; thread-safe."""

    def __init__(self) -> None:
        self._rows = np.empty((0, 0), dtype=np.float32)
        self._norms = np.empty(0, dtype=np.float32)  # each row's length, 0 for a free row (searchable copies)
        self._row_of: dict[str, int] = {}
        self._id_of: list[str] = []  # by row; a free row keeps its last id, its norm says it is free
        self._free: list[int] = []
        self._handed_out = 0
        self._version = 0  # moves with every change of a row, so a ``Cosines`` knows it is stale
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._row_of)

    def ids(self) -> list[str]:
        """The ids held."""
        with self._lock:
            return list(self._row_of)

    @property
    def searchable(self) -> bool:
        """Whether ``nearest`` can answer: the copy is small enough to be float32."""
        return self._rows.dtype == np.float32

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
                    self._version += 1
                    if self.searchable:
                        self._norms[row] = 0.0

    def nearest(self, query: Vector, n: int) -> list[tuple[str, float]] | None:
        """The ``n`` held vectors closest to ``query`` by cosine, best first; None when the copy is too large to search.

        Exact, where Chroma's HNSW graph is approximate: where the graph finds every neighbour, the
        same ids in the same order, with cosines that differ in the sixth decimal; now and then a
        neighbour the graph missed (one of 443 LoCoMo questions, README §1).
        """
        found = self.cosines(query)
        return None if found is None else found.nearest(n)

    def cosines(self, query: Vector) -> Cosines | None:
        """Every held vector's cosine with ``query``, in one product; None when the copy is too large to search.

        An exact search computes them all anyway, so recall reads the cosines of its BM25 hits
        from here too, instead of gathering their vectors and multiplying again.
        """
        q = np.asarray(query, dtype=np.float32).reshape(-1)
        length = float(np.linalg.norm(q)) or 1.0
        with self._lock:
            if not self.searchable or (self._row_of and self._rows.shape[1] != q.shape[0]):
                return None  # too large, or Chroma says what is wrong with the query
            return Cosines(self, q, length, self._product(q, length), self._version)

    def _product(self, q: np.ndarray, length: float) -> np.ndarray:
        """Each row's cosine with ``q`` (a free row's -inf); the caller holds the lock."""
        used = self._handed_out
        rows = self._rows[:used]
        if rows.shape[1] != q.shape[0]:  # nothing held yet, or vectors of another model since
            return np.full(used, -np.inf, dtype=np.float32)
        if self.searchable:
            norms = self._norms[:used]
        else:  # grown past searching since a ``Cosines`` was made: its rows are float16, without norms
            rows = rows.astype(np.float32)
            norms = np.linalg.norm(rows, axis=1)
            norms[[row for row in self._free if row < used]] = 0.0
        cosines = (rows @ q) / (np.where(norms > 0, norms, 1.0) * length)
        cosines[norms == 0] = -np.inf
        return np.asarray(cosines, dtype=np.float32)

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
        matrix = np.asarray(vectors, dtype=np.float32).reshape(len(ids), -1)
        with self._lock:
            if self._rows.shape[1] != matrix.shape[1]:
                if self._row_of:
                    raise ValueError(f"vectors of {matrix.shape[1]} dimensions in a copy of {self._rows.shape[1]}")
                self._rows = np.empty((0, matrix.shape[1]), dtype=np.float32)
                self._norms = np.empty(0, dtype=np.float32)
                self._id_of, self._free, self._handed_out = [], [], 0
            targets: list[int] = []
            sources: list[int] = []
            for n, memory_id in enumerate(ids):
                row = self._row_of.get(memory_id)
                if row is None:
                    row = self._row_of[memory_id] = self._new_row(memory_id)
                elif not replace:
                    continue
                targets.append(row)
                sources.append(n)
            if targets:
                self._version += 1
                self._rows[targets] = matrix[sources]
                if self.searchable:
                    self._norms[targets] = np.linalg.norm(matrix[sources], axis=1)

    def _new_row(self, memory_id: str) -> int:
        if self._free:
            row = self._free.pop()
            self._id_of[row] = memory_id
            return row
        if self._handed_out == len(self._rows):
            size = max(_FIRST_ROWS, 2 * len(self._rows))
            dtype = np.float32 if size <= EXACT_SEARCH_ROWS else np.float16
            grown = np.zeros((size, self._rows.shape[1]), dtype=dtype)  # rows handed out in this write are not set yet
            grown[: len(self._rows)] = self._rows
            self._rows = grown
            if dtype == np.float32:
                self._norms = np.concatenate([self._norms, np.zeros(size - len(self._norms), dtype=np.float32)])
        self._id_of.append(memory_id)
        self._handed_out += 1
        return self._handed_out - 1


class Cosines:
    """The cosines of every vector one copy held with one query, at the time they were computed."""

    def __init__(self, copy: VectorCopy, query: np.ndarray, length: float, cosines: np.ndarray, version: int) -> None:
        self._copy = copy
        self._query = query
        self._length = length
        self._cosines = cosines
        self._version = version

    def nearest(self, n: int) -> list[tuple[str, float]]:
        """The ``n`` closest, best first (``VectorCopy.nearest``)."""
        copy = self._copy
        with copy._lock:
            cosines = self._current()
            used, k = len(cosines), min(n, len(copy._row_of))
            if k <= 0:
                return []
            best = np.argpartition(-cosines, k - 1)[:k] if k < used else np.arange(used)
            best = best[np.argsort(-cosines[best], kind="stable")][:k]
            return [(copy._id_of[row], float(cosines[row])) for row in best]

    def of(self, ids: Iterable[str]) -> dict[str, float]:
        """The cosines of the ids the copy holds, by id; an id it does not hold is left out."""
        copy = self._copy
        with copy._lock:
            found = [(memory_id, row) for memory_id in ids if (row := copy._row_of.get(memory_id)) is not None]
            if not found:
                return {}
            values = self._current()[[row for _, row in found]].tolist()
        return {memory_id: value for (memory_id, _), value in zip(found, values)}

    def _current(self) -> np.ndarray:
        """The cosines, multiplied again if a row changed since (a write, a reused row); the copy's lock is held."""
        if self._copy._version != self._version:
            self._cosines = self._copy._product(self._query, self._length)
            self._version = self._copy._version
        return self._cosines


def upsert_found(copy: VectorCopy | None, got: dict[str, Any]) -> None:
    """Put what a Chroma read returned (``ids``, ``embeddings``) into ``copy``, if there is one."""
    if copy is not None and got["ids"]:
        copy.upsert(got["ids"], got["embeddings"])


__all__ = ["EXACT_SEARCH_ROWS", "Cosines", "VectorCopy", "upsert_found"]
