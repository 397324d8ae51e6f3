"""What the engine's modules share: settings, the embedder, the store, the token counter, the LLM.

``MemoryEngine`` builds one ``EngineParts`` and hands it to each of its modules (writes,
recall, working memory, backup, upkeep), so they need no reference to the engine or to each
other's internals. It also holds the two things every writer needs done the same way: building
a ``MemoryRecord`` and embedding records.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import numpy as np

from .clock import Clock, SystemClock
from .config import Settings
from .embedding.models import Embedder, _QueryCache, embed_index_matrix
from .language.tokens import TokenCounter
from .llm import LLMClient
from .model.limits import InputLimits
from .model.records import Kind, MemoryRecord, Role, Tier
from .storage.indexing import framed_text, vector_text
from .storage.store import ChromaStore


@dataclass
class EngineParts:
    """The collaborators of one engine; see the module docstring."""

    settings: Settings
    embedder: Embedder
    store: ChromaStore
    tokens: TokenCounter
    llm: LLMClient | None
    clock: Clock = field(default_factory=SystemClock)
    query_cache: _QueryCache = field(default_factory=_QueryCache)
    _known: threading.local = field(default_factory=threading.local, repr=False)

    @property
    def limits(self) -> InputLimits:
        """The configured bounds on ids, metadata, entities and filters (``limits.py``)."""
        return InputLimits.from_settings(self.settings)

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Vectors to store a batch of texts under, as one float32 array (``embed_index_matrix``).

        Texts whose vectors this thread already has (see ``known_vectors``) are not embedded again.
        """
        known: Mapping[str, np.ndarray] = getattr(self._known, "vectors", None) or {}
        missing = list(dict.fromkeys(t for t in texts if t not in known))
        if len(missing) == len(texts):
            return embed_index_matrix(self.embedder, texts)
        fresh = dict(zip(missing, embed_index_matrix(self.embedder, missing))) if missing else {}
        return np.asarray([known[t] if t in known else fresh[t] for t in texts], dtype=np.float32).reshape(
            len(texts), -1
        )

    @contextmanager
    def known_vectors(self, vectors: Mapping[str, np.ndarray]) -> Iterator[None]:
        """Within the block, ``embed`` reuses these text → vector pairs in this thread instead of embedding again.

        A conversation turn and the long-term memory made from it have the same indexed text, so
        the turn's vector serves both (docs/architecture.md, "Working memory").
        """
        previous = getattr(self._known, "vectors", None)
        self._known.vectors = {**(previous or {}), **vectors}
        try:
            yield
        finally:
            self._known.vectors = previous

    def embed_records(
        self, records: Sequence[MemoryRecord], *, with_context: bool = True
    ) -> tuple[np.ndarray, dict[str, np.ndarray]]:
        """Embed records in one batch: each one's own text, plus a context vector where it has a context.

        ``with_context=False`` leaves the context vectors to the store, which embeds them in the
        background (``context_vectors.py``): what a statement written on its own does.
        """
        time_aware = self.settings.time_aware_text
        flats = [r.flat_fields() for r in records]
        texts = [vector_text(f, time_aware=time_aware) for f in flats]
        if not with_context:
            return self.embed(texts), {}
        framed = {r.id: t for r, f in zip(records, flats) if (t := framed_text(f))}
        if not framed:
            return self.embed(texts), {}
        return self.embed(texts), dict(zip(framed, embed_index_matrix(self.embedder, list(framed.values()))))

    def new_record(
        self,
        namespace: str,
        content: str,
        *,
        now: datetime,
        tier: Tier,
        kind: Kind,
        role: Role,
        importance: float,
        occurred_at: datetime | None = None,
        valid_from: datetime | None = None,
        **fields: Any,
    ) -> MemoryRecord:
        """The one place a new ``MemoryRecord`` is made: times, token count and embedding model filled in.

        ``occurred_at`` defaults to ``now`` and ``valid_from`` to ``occurred_at``; ``fields`` are
        the remaining record fields (session, source, metadata, expiry, ...).
        """
        occurred = occurred_at or now
        return MemoryRecord(
            namespace=namespace,
            content=content,
            tier=tier,
            kind=kind,
            role=role,
            importance=importance,
            token_count=self.tokens.count(content),
            occurred_at=occurred,
            created_at=now,
            updated_at=now,
            valid_from=valid_from or occurred,
            embedding_model=self.embedder.name,
            embedding_dim=self.store.embedding_dim,
            **fields,
        )


__all__ = ["EngineParts"]
