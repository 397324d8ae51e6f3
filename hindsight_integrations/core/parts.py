"""What the engine's modules share: settings, the embedder, the store, the token counter, the LLM.

``MemoryEngine`` builds one ``EngineParts`` and hands it to each of its modules (writes,
recall, working memory, backup, upkeep), so they need no reference to the engine or to each
other's internals. It also holds the two things every writer needs done the same way: building
a ``MemoryRecord`` and embedding records.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import numpy as np

from .config import Settings
from .embeddings import Embedder, _QueryCache, embed_matrix
from .indexing import body_text, framed_text
from .llm import LLMClient
from .records import Kind, MemoryRecord, Role, Tier
from .store import ChromaStore
from .tokens import TokenCounter


@dataclass
class EngineParts:
    """The collaborators of one engine; see the module docstring."""

    settings: Settings
    embedder: Embedder
    store: ChromaStore
    tokens: TokenCounter
    llm: LLMClient | None
    query_cache: _QueryCache = field(default_factory=_QueryCache)

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Vectors for a batch of texts as one float32 array (the form Chroma stores)."""
        return embed_matrix(self.embedder, texts)

    def embed_records(self, records: Sequence[MemoryRecord]) -> tuple[np.ndarray, dict[str, np.ndarray]]:
        """Embed records in one batch: each one's own text, plus a context vector where it has a context."""
        time_aware = self.settings.time_aware_text
        flats = [r.flat_fields() for r in records]
        texts = [body_text(f, time_aware=time_aware) for f in flats]
        framed = {r.id: t for r, f in zip(records, flats) if (t := framed_text(f, time_aware=time_aware))}
        vectors = self.embed(texts + list(framed.values()))
        return vectors[: len(texts)], dict(zip(framed, vectors[len(texts) :]))

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
