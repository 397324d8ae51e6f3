"""What the engine's modules share: settings, the embedder, the store, the token counter, the LLM.

``MemoryEngine`` builds one ``EngineParts`` (``EngineParts.assemble``, from the settings and
whatever the caller supplied) and hands it to each of its modules (writes, recall, working
memory, backup, upkeep), so they need no reference to the engine or to each other's
internals. It also holds the two things every writer needs done the same way: building a
``MemoryRecord`` and embedding records.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any

import numpy as np

from .clock import Clock, SystemClock
from .config import Settings, validate_namespace
from .embedding.calibration import Thresholds, thresholds_for
from .embedding.factory import build_embedder
from .embedding.protocol import Embedder, embed_index_matrix
from .embedding.query_cache import QueryCache
from .language.tokens import TokenCounter, counter_for
from .llm import LLMClient
from .model.limits import InputLimits
from .model.records import Kind, MemoryRecord, Role, Tier
from .recall.rerank import Reranker, reranker_for
from .storage.indexing import body_text, framed_text
from .storage.locks import CrossProcessLocks, cross_process_locks
from .storage.replicas import WriterRegistry, lock_fingerprint, registry_for
from .storage.store import ChromaStore, open_client


@dataclass
class EngineParts:
    """The collaborators of one engine; see the module docstring."""

    settings: Settings
    embedder: Embedder
    store: ChromaStore
    tokens: TokenCounter
    llm: LLMClient | None
    clock: Clock = field(default_factory=SystemClock)
    query_cache: QueryCache = field(default_factory=QueryCache)
    thresholds: Thresholds | None = None  # None: the embedder's, with the settings' overrides
    reranker: Reranker | None = None  # recall's second stage, when configured (``recall/rerank.py``)
    _known: threading.local = field(default_factory=threading.local, repr=False)

    @classmethod
    def assemble(
        cls,
        settings: Settings,
        *,
        embedder: Embedder | None = None,
        embedding_function: Any = None,
        llm: LLMClient | bool | None = None,
        chroma_client: Any = None,
        clock: Clock | None = None,
    ) -> EngineParts:
        """The parts of an engine with ``settings``; those given (see ``MemoryEngine``) replace the configured ones.

        ``llm`` is an ``LLMClient``, ``True``/``None`` for the configured one, or ``False`` for none.
        """
        clock = clock or SystemClock()
        embedder = embedder or build_embedder(settings, embedding_function)
        chosen_llm = LLMClient.from_settings(settings) if llm is True or llm is None else (llm or None)
        client = chroma_client or open_client(
            path=settings.store if not settings.chroma_url else None,
            url=settings.chroma_url,
            attempts=settings.chroma_connect_attempts,
            timeout=settings.chroma_connect_timeout,
        )
        shared_locks = cross_process_locks(settings.lock_url)
        store = ChromaStore(
            client,
            embedding_model=embedder.name,
            embedding_dim=embedder.dimension,
            lexical_sync_seconds=settings.lexical_sync_seconds,
            access_flush_seconds=settings.access_flush_seconds,
            time_aware=settings.time_aware_text,
            copy_vectors=settings.copy_vectors,
            embed_context=lambda texts: embed_index_matrix(embedder, texts, background=True),
            shared_locks=shared_locks,
            writers=_writer_registry(client, settings, shared_locks),
            clock=clock,
            owns_client=chroma_client is None,
        )
        return cls(
            settings=settings,
            embedder=embedder,
            store=store,
            tokens=counter_for(settings.tokenizer),
            llm=chosen_llm,
            clock=clock,
            thresholds=thresholds_for(embedder.name, settings),
            reranker=reranker_for(settings.rerank, settings.rerank_depth),
        )

    def __post_init__(self) -> None:
        if self.thresholds is None:
            self.thresholds = thresholds_for(self.embedder.name, self.settings)

    def with_embedder(self, embedder: Embedder) -> EngineParts:
        """These parts with another model's embedder and thresholds, over the same store (``auto``, see ``routing.py``).

        The store learns the model, so it opens that model's namespaces and embeds their
        context vectors with it.
        """
        self.store.add_model(
            embedder.name,
            embedder.dimension,
            lambda texts: embed_index_matrix(embedder, texts, background=True),
        )
        return replace(
            self,
            embedder=embedder,
            query_cache=QueryCache(),
            thresholds=thresholds_for(embedder.name, self.settings),
            _known=threading.local(),
        )

    @property
    def embedding_dim(self) -> int:
        """The dimension of this embedder's vectors (the store's is its configured model's)."""
        return self.embedder.dimension

    @property
    def cosines(self) -> Thresholds:
        """The cosine thresholds this engine compares with (``embedding/calibration.py``)."""
        assert self.thresholds is not None  # set in __post_init__
        return self.thresholds

    def namespace_name(self, namespace: str | None) -> str:
        """``namespace``, or the configured one when None, checked: it becomes a Chroma collection's name."""
        return validate_namespace(namespace if namespace is not None else self.settings.namespace)

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
        vectors = self.embed([body_text(f, time_aware=time_aware) for f in flats])
        return vectors, self._context_vectors(records, flats) if with_context else {}

    def embed_context(self, records: Sequence[MemoryRecord]) -> dict[str, np.ndarray]:
        """The context vectors alone, for records whose context changed and whose own text did not."""
        return self._context_vectors(records, [r.flat_fields() for r in records])

    def _context_vectors(
        self, records: Sequence[MemoryRecord], flats: Sequence[dict[str, Any]]
    ) -> dict[str, np.ndarray]:
        """Memory id → context vector, each record framed by its context (``framed_text``; none for a bare turn)."""
        framed = {r.id: t for r, f in zip(records, flats) if (t := framed_text(f))}
        return dict(zip(framed, self.embed_framed(list(framed.values())))) if framed else {}

    def embed_framed(self, texts: Sequence[str]) -> np.ndarray:
        """Context vectors' framed texts as one float32 array: a step of its own, so the store's cost can be split."""
        return embed_index_matrix(self.embedder, texts)

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
            embedding_dim=self.embedding_dim,
            **fields,
        )


def _writer_registry(client: Any, settings: Settings, locks: CrossProcessLocks | None) -> WriterRegistry | None:
    """This process's entry in the writer registry of the Chroma server, or None on an embedded store.

    Only a Chroma *server* can have several writing processes; an embedded directory is one
    process's. The entry is made at the first write (or at a server's start-up), not here, so
    a process that only reads never counts as a writer.
    """
    if not settings.chroma_url:
        return None
    identity = getattr(locks, "identity", None)
    return registry_for(
        client,
        url=settings.chroma_url,
        lock=lock_fingerprint(identity()) if callable(identity) else None,
        expiry_seconds=settings.replica_expiry_seconds,
    )


__all__ = ["EngineParts"]
