"""Embeddings from any OpenAI-compatible ``/embeddings`` endpoint (OpenAI, a local server, a gateway).

``openai`` is the installed package, not this module: imports are absolute.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..llm import retrying
from .protocol import ProbedDimension

DEFAULT_OPENAI_MODEL = "text-embedding-3-small"


class OpenAIEmbedder(ProbedDimension):
    """Any OpenAI-compatible ``/embeddings`` endpoint, batched and retried."""

    def __init__(
        self,
        model: str,
        *,
        api_key: str | None = None,
        base_url: str | None = None,
        batch_size: int = 128,
        timeout: float = 30.0,
        max_retries: int = 3,
    ) -> None:
        from openai import OpenAI

        self.name = model
        self._client = OpenAI(api_key=api_key or "not-needed", base_url=base_url, timeout=timeout, max_retries=0)
        self._batch_size = batch_size
        self._max_retries = max_retries

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """Vectors in request-sized batches, each retried on transient errors, so one 429 loses no write."""
        out: list[list[float]] = []
        for start in range(0, len(texts), self._batch_size):
            batch = list(texts[start : start + self._batch_size])
            response = retrying(self._max_retries)(self._client.embeddings.create)(model=self.name, input=batch)
            out.extend(item.embedding for item in sorted(response.data, key=lambda d: d.index))
        if out and self._dimension is None:
            self._dimension = len(out[0])
        return out


__all__ = ["DEFAULT_OPENAI_MODEL", "OpenAIEmbedder"]
