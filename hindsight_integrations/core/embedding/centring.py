"""Cosines with a model's language component taken out, for the relevance floor of models that need it.

multilingual-e5-small gives every text a large shared component, and a larger one between texts
of the same language: unrelated English sentences sit at cosine ~0.72, unrelated Chinese ones at
~0.85, and an answered question at 0.76-0.90 in either. A plain floor then either gates answered
questions or lets off-topic ones through (6 of 60 off-topic English questions recalled nothing at
the floor that kept every answered one). Subtracting the mean vector of the text's language, for
queries and for stored texts apart, and comparing what is left, separates them much better: on
LoCoMo and the Chinese dev conversations every answered question's best match scores at least
0.30, and the floor (0.25, ``calibration.py``) gates about half the off-topic questions (README,
"Chinese and other languages").

The means (``means/<model>.npz``, written by ``benchmarks/e5_means.py`` from product prose, not
from a benchmark) are one per language and side. A vector's language is the mean it is closest
to, so neither the query's nor a memory's text is needed; a language without a mean of its own
takes the closest one. Only models with a means file are centred (``Centring.for_model``).
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

import numpy as np

_MEANS = Path(__file__).with_name("means")


class Centring:
    """One model's per-language mean vectors, for queries and for stored texts."""

    def __init__(self, query_means: np.ndarray, passage_means: np.ndarray) -> None:
        self._query = query_means
        self._passage = passage_means

    @staticmethod
    @cache
    def for_model(model: str) -> Centring | None:
        """The centring of ``model``, or None when it has no means (its plain cosines are used)."""
        path = _MEANS / f"{model}.npz"
        if not path.is_file():
            return None
        with np.load(path) as data:
            languages = sorted(k.removeprefix("query_") for k in data.files if k.startswith("query_"))
            query = np.stack([data[f"query_{lang}"] for lang in languages]).astype(np.float32)
            passage = np.stack([data[f"passage_{lang}"] for lang in languages]).astype(np.float32)
        return Centring(query, passage)

    @staticmethod
    def _centre(vectors: np.ndarray, means: np.ndarray) -> np.ndarray:
        nearest = np.argmax(vectors @ means.T, axis=1)  # the language: the mean it lies closest to
        centred = vectors - means[nearest]
        norms = np.linalg.norm(centred, axis=1, keepdims=True)
        return centred / np.where(norms == 0, 1.0, norms)

    def similarities(self, query: np.ndarray, stored: np.ndarray) -> np.ndarray:
        """The centred cosine of one query vector with each stored vector (a row each)."""
        q = self._centre(np.asarray(query, dtype=np.float32).reshape(1, -1), self._query)[0]
        if len(stored) == 0:
            return np.empty(0, dtype=np.float32)
        return self._centre(np.asarray(stored, dtype=np.float32), self._passage) @ q


__all__ = ["Centring"]
