"""Reading a namespace's collections: paged, nearest neighbours as cosines, and retried while a
Chroma server fails them for a moment as the first records of a collection are landing.

A ``chroma run`` server (chromadb 1.5) answers a query, or a get that includes embeddings, on a
collection whose first add is still being applied with ``InternalError: Error executing plan:
Internal error: Error creating hnsw segment reader: Nothing found on disk`` (the vector segment
exists but is not loaded yet), or ``... Error finding id`` (a record's metadata is written, its
vector not yet). The same read succeeds a moment later: in a test adding one record to a fresh
collection while three threads queried it, 18 of 40 collections gave the error, and none once
the add had returned. Two replicas' first calls on a new namespace race exactly like that (the
load benchmark's sporadic ``retrieve_memory failed: internal error``), and a busy machine
widens the window.

So every read of a namespace's collections (``get``, ``query``, ``count``) is retried on these
errors, with a short exponential backoff (about 3 s in all); if it still fails, it is the
retryable ``StoreUnavailableError``, never an internal error. Writes are not retried here: they
are not affected, and retrying one is the request id's job. The one exception is the settings an
older collection is given when it is opened (``ChromaStore._open``): setting them again is
harmless, and on a busy machine an embedded Chroma once refused the second of two such changes
in a row with ``database is locked`` (SQLite's busy error), which failed the namespace's open.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import Any, TypeVar

import numpy as np
from tenacity import RetryError, Retrying, retry_if_exception, stop_after_attempt, wait_exponential

from ..errors import StoreUnavailableError
from ..model.records import MemoryRecord, unpack
from ..recall.filters import bounded_where
from .chroma_wire import ChromaWire

T = TypeVar("T")
_TRANSIENT = ("Nothing found on disk", "Error finding id", "database is locked")
_ATTEMPTS = 8
_PAGE = 2000


def is_transient_read_error(exc: BaseException) -> bool:
    """Whether ``exc`` is Chroma's passing failure: a collection whose first records are landing, or SQLite busy."""
    return type(exc).__module__.startswith("chromadb") and any(marker in str(exc) for marker in _TRANSIENT)


def read_retrying(read: Callable[..., T], *args: Any, doing: str = "read the collection", **kwargs: Any) -> T:
    """``read(*args, **kwargs)``, retried while Chroma gives a transient read error (see the module docstring).

    ``doing`` says what failed, in the error raised once the attempts run out.
    """
    retrying = Retrying(
        retry=retry_if_exception(is_transient_read_error),
        stop=stop_after_attempt(_ATTEMPTS),
        wait=wait_exponential(multiplier=0.02, max=1.0),
        reraise=False,
    )
    try:
        return retrying(read, *args, **kwargs)
    except RetryError as exc:
        cause = exc.last_attempt.exception()
        raise StoreUnavailableError(
            f"Chroma could not {doing} after {_ATTEMPTS} attempts ({cause}); retry shortly"
        ) from cause


class RetryingReads:
    """A Chroma collection whose reads are ``read_retrying``; everything else is the collection's own.

    Through a plain-HTTP server the reads whose answer is plain JSON go over ``ChromaWire``
    first (a third of the client's CPU per request); what it does not answer, chromadb's client does.
    """

    def __init__(self, collection: Any) -> None:
        self._collection = collection
        self._wire = ChromaWire.of(collection)

    @property
    def wrapped(self) -> Any:
        """The Chroma collection itself."""
        return self._collection

    def __getattr__(self, name: str) -> Any:
        return getattr(self._collection, name)

    def get(self, **kwargs: Any) -> Any:
        """``Collection.get``, retried on a transient read error."""
        return read_retrying(self._get, **kwargs)

    def query(self, **kwargs: Any) -> Any:
        """``Collection.query``, retried on a transient read error."""
        return read_retrying(self._query, **kwargs)

    def count(self) -> int:
        """``Collection.count``, retried on a transient read error."""
        return int(read_retrying(self._count))

    def _get(self, **kwargs: Any) -> Any:
        found = self._wire.get(self._collection, **kwargs) if self._wire is not None else None
        return found if found is not None else self._collection.get(**kwargs)

    def _query(self, **kwargs: Any) -> Any:
        found = self._wire.query(self._collection, **kwargs) if self._wire is not None else None
        return found if found is not None else self._collection.query(**kwargs)

    def _count(self) -> int:
        found = self._wire.count(self._collection) if self._wire is not None else None
        return found if found is not None else self._collection.count()


def pages(collection: Any, *, include: list[str]) -> Iterator[dict[str, Any]]:
    """Every record of ``collection``, ``_PAGE`` at a time, as Chroma's ``get`` results."""
    offset = 0
    while True:
        got = collection.get(limit=_PAGE, offset=offset, include=include)
        if not got["ids"]:
            return
        yield got
        offset += len(got["ids"])


def record_fields(with_vectors: bool) -> list[str]:
    """What a read of whole records includes: their own vectors only when asked for."""
    return ["documents", "metadatas"] + (["embeddings"] if with_vectors else [])


def records_of(got: dict[str, Any], with_vectors: bool) -> Iterator[tuple[MemoryRecord, list[float] | None]]:
    """The records of a ``get`` read with ``record_fields(with_vectors)``, each with its own vector if asked."""
    embeddings = got["embeddings"] if with_vectors else None
    for n, memory_id in enumerate(got["ids"]):
        vector = list(map(float, embeddings[n])) if embeddings is not None else None
        yield MemoryRecord.from_chroma(memory_id, got["documents"][n], got["metadatas"][n]), vector


def flats_of(got: dict[str, Any]) -> list[dict[str, Any]]:
    """The flat views of a ``get`` read with documents and metadatas (``records.unpack``)."""
    return [unpack(d, m) for d, m in zip(got["documents"], got["metadatas"])]


def float32_matrix(vectors: Sequence[Any] | np.ndarray) -> np.ndarray:
    """One float32 array: Chroma converts each row of a list of lists on its own, which is slower."""
    return np.asarray(vectors, dtype=np.float32)


def nearest(collection: Any, embedding: Any, *, n: int, where: dict[str, Any] | None) -> list[tuple[str, float]]:
    """The ``n`` records nearest ``embedding``, as (id, cosine similarity)."""
    return nearest_each(collection, [embedding], n=n, where=where)[0]


def nearest_each(
    collection: Any, embeddings: Sequence[Any] | np.ndarray, *, n: int, where: dict[str, Any] | None
) -> list[list[tuple[str, float]]]:
    """``nearest`` for several vectors in one call."""
    where = bounded_where(where) if where else where
    got = collection.query(query_embeddings=float32_matrix(embeddings), n_results=n, where=where, include=["distances"])
    return [[(i, 1.0 - float(d)) for i, d in zip(ids, dists)] for ids, dists in zip(got["ids"], got["distances"])]


__all__ = [
    "RetryingReads",
    "flats_of",
    "float32_matrix",
    "is_transient_read_error",
    "nearest",
    "nearest_each",
    "pages",
    "read_retrying",
    "record_fields",
    "records_of",
]
