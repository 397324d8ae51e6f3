"""Any Chroma ``EmbeddingFunction`` the caller passes in (e.g. a multilingual model they prefer), as an embedder."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .protocol import ProbedDimension


class ChromaFunctionEmbedder(ProbedDimension):
    """Wraps any Chroma ``EmbeddingFunction``; its ``name`` comes from the function's own name and model."""

    def __init__(self, function: Any, name: str | None = None) -> None:
        self._function = function
        self.name = name or _chroma_function_name(function)

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """The function's vectors as plain floats (Chroma functions may return numpy arrays)."""
        vectors = self._function(list(texts))
        return [[float(x) for x in v] for v in vectors]


def _chroma_function_name(function: Any) -> str:
    model = getattr(function, "model_name", None) or getattr(function, "_model_name", None)
    try:
        base = function.name()
    except Exception:  # noqa: BLE001 - a user's function; any failure to name itself means "use the class name"
        base = type(function).__name__
    return f"{base}:{model}" if model else str(base)


__all__ = ["ChromaFunctionEmbedder"]
