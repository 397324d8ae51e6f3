"""What every embedder offers, and the three ways the engine asks one for vectors.

An embedder turns texts into vectors and has a ``name`` that is written into each collection,
so a namespace is never searched with another model's vectors. The engine asks for vectors in
three shapes: one query (``embed_query``, through a ``query_cache.QueryCache``), a batch as one
float32 array (``embed_matrix``), and the vectors memories are stored under
(``embed_index_matrix``), which an embedder may compute with a faster close approximation.
The providers are one module each: ``local`` (sentence-transformers, run through ONNX or
torch), ``openai`` (any OpenAI-compatible endpoint) and ``chroma_function`` (a Chroma
embedding function); ``factory.build_embedder`` picks one from the settings.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

import numpy as np

from .query_cache import QueryCache


@runtime_checkable
class Embedder(Protocol):
    """Turns texts into vectors. ``dimension`` may load the model to find out.

    An embedder may also offer ``embed_array(texts) -> numpy float32 array``; batch writes
    then skip the round trip through Python lists (see ``embed_matrix``). It may offer
    ``embed_index_array(texts, *, background=False)`` too, a faster close approximation for
    the vectors memories are stored under (``embed_index_matrix``); queries always go
    through ``embed``.
    """

    name: str

    @property
    def dimension(self) -> int:
        """The vector size, which a collection records so that another model's vectors are refused."""
        ...

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """One vector per text, in order; writes and queries go through the same model."""
        ...


class ProbedDimension:
    """For remote or user-supplied models: the dimension is learnt from the first vector."""

    _dimension: int | None = None

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """One vector per text: what the provider's subclass does."""
        raise NotImplementedError

    @property
    def dimension(self) -> int:
        """The length of the first vector, asked for with one probe text if none was embedded yet."""
        if self._dimension is None:
            self._dimension = len(self.embed(["dimension probe"])[0])
        return self._dimension


def embed_query(embedder: Embedder, text: str, cache: QueryCache | None = None) -> list[float]:
    """The vector of one query, from ``cache`` when the same text was asked before (agents repeat themselves)."""
    if cache is not None and (hit := cache.get(text)) is not None:
        return hit
    vector = embedder.embed([text])[0]
    if cache is not None:
        cache.put(text, vector)
    return vector


def embed_documents(embedder: Embedder, texts: Sequence[str]) -> list[list[float]]:
    """Vectors of texts that will be searched, for a caller that stores them itself (a peer system in a benchmark).

    A model trained with a document prefix (e5's ``passage: ``) offers ``embed_passages`` and
    its documents get it; any other model embeds documents and queries alike.
    """
    passages = getattr(embedder, "embed_passages", None)
    if callable(passages):
        return np.asarray(passages(texts), dtype=np.float32).tolist() if texts else []
    return embedder.embed(texts)


def embed_matrix(embedder: Embedder, texts: Sequence[str]) -> np.ndarray:
    """Vectors for a batch as one float32 array, the form Chroma stores.

    An embedder may offer ``embed_array`` (``LocalEmbedder`` does) to hand over its array
    directly; for the rest, ``embed``'s lists are converted once here.
    """
    if not texts:
        return np.empty((0, 0), dtype=np.float32)
    as_array = getattr(embedder, "embed_array", None)
    vectors = as_array(list(texts)) if as_array is not None else embedder.embed(list(texts))
    return np.asarray(vectors, dtype=np.float32).reshape(len(texts), -1)


def embed_index_matrix(embedder: Embedder, texts: Sequence[str], *, background: bool = False) -> np.ndarray:
    """The vectors memories are stored under (their own and their context vectors) as one float32 array.

    ``LocalEmbedder`` on ONNX embeds them with an int8 copy of its model (``onnx/quantize.py``:
    ~2x less CPU, cosine 0.993 with the float32 vectors, the same evidence recall on LoCoMo):
    a conversation writes two of them per turn, while queries, one per recall, stay on the
    float32 model. Other embedders use their one model. ``background`` work (context vectors
    embedded behind the writes) should leave the other cores to the foreground: the local
    embedder then runs its texts one by one on one thread.
    """
    if not texts:
        return np.empty((0, 0), dtype=np.float32)
    for_index = getattr(embedder, "embed_index_array", None)
    if for_index is None:
        return embed_matrix(embedder, texts)
    return np.asarray(for_index(list(texts), background=background), dtype=np.float32).reshape(len(texts), -1)


def warm_up(embedder: Embedder) -> None:
    """Load the model (and whatever else it needs for its first request) now, so the first request is not slow."""
    warm = getattr(embedder, "warm", None)
    if callable(warm):
        warm()
    else:
        embedder.embed(["warm up"])


__all__ = ["Embedder", "ProbedDimension", "embed_index_matrix", "embed_matrix", "embed_query", "warm_up"]
