"""``MemoryEngine``: the framework-free facade over store, recall, working memory and upkeep.

Everything else (the MCP server, the CLI, the LangChain and LlamaIndex adapters) is a thin
translation onto these methods. One engine serves many namespaces (users); each namespace
is its own Chroma collection, so isolation does not depend on remembering a filter.
"""

from __future__ import annotations

import hashlib
import json
import logging
import threading
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np
from pydantic import BaseModel

from .compression import extractive_summary, transcript
from .config import Settings, check_setting_names, load_settings, validate_namespace
from .conflicts import detect_slot
from .context import format_context, memory_line, pack_within_budget
from .embeddings import Embedder, _QueryCache, build_embedder, embed_matrix, embed_query
from .errors import HindsightError, InvalidInputError, LLMError, MemoryNotFoundError
from .facts import MemoryFacts
from .filters import RecallFilters
from .indexing import body_text, window_text
from .inputs import MemoryInput, parse_inputs, validate_content
from .lifecycle import MaintenanceReport, plan, read_cold, write_cold
from .llm import LLMClient
from .ranking import Candidate, Ranked, RecallWeights, rank
from .records import Kind, MemoryRecord, Role, Source, Status, Tier, utcnow
from .results import CompressionResult, NamespaceStats, RecallResult, SkippedMemory, StoreResult, TurnResult
from .store import ChromaStore, Vector, open_client
from .tokens import counter_for
from .write_filter import WriteDecision, assess

log = logging.getLogger("hindsight.engine")

EXPORT_FORMAT = "hindsight-export"


_RECALL_WORKERS = ThreadPoolExecutor(max_workers=4, thread_name_prefix="hindsight-recall")


class MemoryEngine:
    """Store, recall, compress and maintain memories in Chroma.

    Typical use::

        engine = MemoryEngine()                      # ./.hindsight, local embeddings
        engine.store("I prefer concise answers", namespace="u1")
        engine.recall("how should answers look?", namespace="u1").context
    """

    def __init__(
        self,
        settings: Settings | None = None,
        *,
        store: str | Path | None = None,
        chroma_url: str | None = None,
        namespace: str | None = None,
        embedder: Embedder | None = None,
        embedding_function: Any = None,
        llm: LLMClient | bool | None = None,
        chroma_client: Any = None,
        **overrides: Any,
    ) -> None:
        if settings is None:
            settings = load_settings(store=store, chroma_url=chroma_url, namespace=namespace, **overrides)
        elif store or chroma_url or namespace or overrides:
            check_setting_names(overrides)
            settings = settings.model_copy(
                update={
                    k: v
                    for k, v in {
                        "store": Path(store) if store else None,
                        "chroma_url": chroma_url,
                        "namespace": namespace,
                        **overrides,
                    }.items()
                    if v is not None
                }
            )
        self.settings = settings
        self.embedder = embedder or build_embedder(settings, embedding_function)
        if llm is True or llm is None:
            self.llm = LLMClient.from_settings(settings)
        else:
            self.llm = llm or None
        client = chroma_client or open_client(
            path=settings.store if not settings.chroma_url else None,
            url=settings.chroma_url,
            attempts=settings.chroma_connect_attempts,
            timeout=settings.chroma_connect_timeout,
        )
        self.chroma = ChromaStore(
            client,
            embedding_model=self.embedder.name,
            embedding_dim=self.embedder.dimension,
            lexical_sync_seconds=settings.lexical_sync_seconds,
            access_flush_seconds=settings.access_flush_seconds,
            time_aware=settings.time_aware_text,
            copy_vectors=settings.copy_vectors,
        )
        self.tokens = counter_for(settings.tokenizer)
        self._query_cache = _QueryCache()
        self._write_locks: dict[str, threading.Lock] = {}
        self._locks_guard = threading.Lock()

    # -- helpers ------------------------------------------------------------------------------
    def _ns(self, namespace: str | None) -> str:
        return validate_namespace(namespace if namespace is not None else self.settings.namespace)

    def _state(self, namespace: str) -> Any:
        return self.chroma.namespace(namespace)

    def _write_lock(self, namespace: str) -> threading.Lock:
        with self._locks_guard:
            return self._write_locks.setdefault(namespace, threading.Lock())

    def _embed(self, texts: Sequence[str]) -> np.ndarray:
        return embed_matrix(self.embedder, texts)

    def _vectors(self, records: Sequence[MemoryRecord]) -> tuple[np.ndarray, dict[str, np.ndarray]]:
        """Embed records in one batch: each one's own text, plus a window vector where it has context."""
        time_aware = self.settings.time_aware_text
        flats = [r.flat_fields() for r in records]
        texts = [body_text(f, time_aware=time_aware) for f in flats]
        windows = {r.id: w for r, f in zip(records, flats) if (w := window_text(f, time_aware=time_aware))}
        vectors = self._embed(texts + list(windows.values()))
        return vectors[: len(texts)], dict(zip(windows, vectors[len(texts) :]))

    def warm(self) -> None:
        """Load the embedding model now so the first request is not slow."""
        self.embedder.embed(["warm up"])

    def namespaces(self) -> list[str]:
        return self.chroma.list_namespaces()

    # -- writing ------------------------------------------------------------------------------
    def store_memories(
        self,
        memories: Any,
        *,
        namespace: str | None = None,
        apply_filter: bool = True,
        dedup: bool = True,
        supersede: bool = True,
        request_id: str | None = None,
        origin: str = "api",
    ) -> StoreResult:
        """Store one memory or a batch atomically: all items are validated before any is written.

        ``apply_filter`` runs the write filter (chit-chat is skipped, with a reason);
        ``dedup`` merges near-duplicates (similarity ≥ ``dedup_threshold``) into the existing
        memory; ``supersede`` lets a detected subject/attribute conflict supersede the old
        value (off for callers such as a key-value store, whose items under different keys
        must all stay current). A repeated ``request_id`` returns the first call's result
        without writing again.
        """
        ns = self._ns(namespace)
        items = parse_inputs(memories, max_bytes=self.settings.max_content_bytes)
        if request_id is not None and (
            not isinstance(request_id, str) or not request_id.strip() or len(request_id) > 200
        ):
            raise InvalidInputError("request_id", "must be a non-empty string of at most 200 characters")
        state = self._state(ns)
        now = utcnow()
        with self._write_lock(ns):
            request_hash = _request_hash(items) if request_id else None
            if request_id:
                previous = self.chroma.find(state, {"request_id": request_id})
                if previous:
                    if any(r.metadata.get("_request_hash") not in (None, request_hash) for r in previous):
                        raise InvalidInputError(
                            "request_id", f"{request_id!r} was already used for different content; use a new request_id"
                        )
                    return StoreResult(stored=previous, replayed=True)
            result = StoreResult()
            records: list[MemoryRecord] = []
            for n, item in enumerate(items):
                decision = assess(item.content, item.role) if _needs_assessment(item, apply_filter) else None
                if decision is not None and apply_filter and not decision.remember:
                    result.skipped.append(SkippedMemory(index=n, content=item.content[:200], reason=decision.reason))
                    continue
                records.append(self._new_record(ns, item, decision, now, request_id, request_hash, origin))
            if not records:
                return result
            vectors, windows = self._vectors(records)
            fresh: list[tuple[MemoryRecord, np.ndarray]] = []
            for record, vector in zip(records, vectors):
                existing = self._near_duplicate(state, record, vector) if dedup else None
                if existing is not None:
                    merged = self._merge_into(existing, record, now)
                    window = {merged.id: windows[record.id]} if record.id in windows else None
                    self.chroma.update(state, [merged], [vector], window)
                    result.merged.append(merged.id)
                    result.stored.append(merged)
                else:
                    fresh.append((record, vector))
            self.chroma.add(
                state,
                [r for r, _ in fresh],
                [v for _, v in fresh],
                {r.id: windows[r.id] for r, _ in fresh if r.id in windows},
            )
            result.stored.extend(r for r, _ in fresh)
            result.superseded = self._supersede(state, [r for r, _ in fresh], now) if supersede else []
        return result

    def store(
        self,
        content: str,
        *,
        namespace: str | None = None,
        apply_filter: bool = True,
        dedup: bool = True,
        request_id: str | None = None,
        **fields: Any,
    ) -> StoreResult:
        """Store one memory given as keyword fields of ``MemoryInput``."""
        return self.store_memories(
            [{"content": content, **fields}],
            namespace=namespace,
            apply_filter=apply_filter,
            dedup=dedup,
            request_id=request_id,
        )

    def _new_record(
        self,
        ns: str,
        item: MemoryInput,
        decision: WriteDecision | None,
        now: datetime,
        request_id: str | None,
        request_hash: str | None,
        origin: str,
    ) -> MemoryRecord:
        """``decision`` is None when the item needed no assessment (see ``_needs_assessment``)."""
        if decision is None:
            assert item.kind is not None and item.importance is not None
            kind, importance, ttl = item.kind, item.importance, item.ttl_seconds
        else:
            kind = item.kind or decision.kind
            if kind is Kind.TURN and decision.remember:
                kind = decision.kind
            importance = item.importance if item.importance is not None else decision.importance
            ttl = item.ttl_seconds or (decision.ttl_seconds if item.kind is None else None)
        tier = item.tier or (
            Tier.SEMANTIC
            if kind in (Kind.PREFERENCE, Kind.CORRECTION) or (kind is Kind.FACT and importance >= 0.8)
            else Tier.EPISODIC
        )
        occurred = item.occurred_at or now
        metadata = dict(item.metadata)
        if request_hash:
            metadata["_request_hash"] = request_hash
        source = item.source or Source(session_id=item.session_id, origin=origin)
        return MemoryRecord(
            namespace=ns,
            agent_id=item.agent_id,
            session_id=item.session_id,
            tier=tier,
            kind=kind,
            role=item.role,
            content=item.content,
            context=item.context,
            entities=item.entities,
            slot=detect_slot(item.content) if kind is not Kind.TURN else None,
            importance=importance,
            token_count=self.tokens.count(item.content),
            occurred_at=occurred,
            created_at=now,
            updated_at=now,
            valid_from=occurred,
            expires_at=(occurred + timedelta(seconds=ttl)) if ttl else None,
            source=source,
            request_id=request_id,
            metadata=metadata,
            embedding_model=self.embedder.name,
            embedding_dim=self.chroma.embedding_dim,
        )

    def _near_duplicate(self, state: Any, record: MemoryRecord, vector: np.ndarray) -> MemoryRecord | None:
        if record.kind in (Kind.TURN, Kind.SUMMARY) or record.tier is Tier.WORKING:
            return None
        where = {"$and": [{"status": "active"}, {"tier": {"$in": ["episodic", "semantic"]}}]}
        hits = self.chroma.query(state, vector, n=1, where=where)
        if not hits or hits[0][1] < self.settings.dedup_threshold:
            return None
        ((existing, _),) = self.chroma.get(state, [hits[0][0]])
        if existing.slot and record.slot and existing.slot != record.slot:
            return None
        return existing

    @staticmethod
    def _merge_into(existing: MemoryRecord, record: MemoryRecord, now: datetime) -> MemoryRecord:
        return existing.model_copy(
            update={
                "content": record.content,
                "importance": max(existing.importance, record.importance),
                "token_count": record.token_count,
                "updated_at": now,
                "occurred_at": max(existing.occurred_at, record.occurred_at),
                "metadata": {**existing.metadata, **record.metadata},
                "entities": sorted(set(existing.entities) | set(record.entities)),
                "expires_at": record.expires_at or existing.expires_at,
                "slot": record.slot or existing.slot,
            }
        )

    def _supersede(self, state: Any, records: Sequence[MemoryRecord], now: datetime) -> list[str]:
        superseded: list[str] = []
        for record in records:
            if not record.slot:
                continue
            where = {"$and": [{"slot": record.slot}, {"status": "active"}]}
            old = [
                r for r in self.chroma.find(state, where) if r.id != record.id and r.occurred_at <= record.occurred_at
            ]
            changed = [
                r.model_copy(
                    update={
                        "status": Status.SUPERSEDED,
                        "valid_until": now,
                        "superseded_by": record.id,
                        "updated_at": now,
                    }
                )
                for r in old
            ]
            self.chroma.update(state, changed)
            superseded.extend(r.id for r in changed)
        return superseded

    # -- recall -------------------------------------------------------------------------------
    def recall(
        self,
        query: str,
        *,
        namespace: str | None = None,
        top_k: int | None = None,
        min_score: float | None = None,
        filters: RecallFilters | dict[str, Any] | None = None,
        token_budget: int | None = None,
        weights: RecallWeights | dict[str, Any] | None = None,
        include_history: bool = False,
        candidates: int | None = None,
        touch: bool = True,
    ) -> RecallResult:
        """Hybrid recall of the memories most relevant to ``query`` (SPEC §6)."""
        ns = self._ns(namespace)
        query = validate_content(query, max_bytes=self.settings.max_content_bytes, field="query")
        top_k = self._check_top_k(top_k)
        if min_score is not None and not (isinstance(min_score, (int, float)) and 0 <= min_score <= 1):
            raise InvalidInputError("min_score", "must be a number between 0 and 1")
        if token_budget is not None and (not isinstance(token_budget, int) or token_budget <= 0):
            raise InvalidInputError("token_budget", "must be a positive whole number of tokens")
        filters = _coerce(RecallFilters, filters, "filters")
        weights = _coerce(RecallWeights, weights, "weights")
        state = self._state(ns)
        now = utcnow()
        self.chroma.refresh_indexes(state)
        pool = candidates or max(50, top_k * 4)
        # The lexical side needs no query vector: it runs while the query is embedded.
        search_windows = weights.window > 0 and state.facts.any_context
        lexical_side = _RECALL_WORKERS.submit(self._lexical_candidates, state, query, pool, search_windows)
        vector = embed_query(self.embedder, query, self._query_cache)
        where = filters.where(include_history=include_history, now=now)
        prefilter = filters.narrows() or include_history
        dense = dict(
            self.chroma.query(state, vector, n=pool if prefilter else 2 * pool, where=where if prefilter else None)
        )
        windows = dict(self.chroma.query_windows(state, vector, n=pool)) if search_windows else {}
        lexical, lexical_vectors, lexical_windows = lexical_side.result()

        def admit(ids: list[str], trusted: set[str]) -> list[Candidate]:
            kept = self._admissible(state, ids, trusted, filters, include_history=include_history, now=now)
            vectors = {i: lexical_vectors[i] for i in kept if i not in dense and i in lexical_vectors}
            vectors |= self.chroma.vectors(state, [i for i in kept if i not in dense and i not in vectors])
            unscored = [i for i, f in kept.items() if f.has_context and i not in windows] if search_windows else []
            window_vectors = {i: lexical_windows[i] for i in unscored if i in lexical_windows}
            window_vectors |= self.chroma.vectors(state, [i for i in unscored if i not in window_vectors], windows=True)
            return [
                Candidate(
                    id=i,
                    facts=f,
                    lexical_raw=lexical.get(i, 0.0),
                    similarity=dense.get(i),
                    vector=vectors.get(i),
                    window_similarity=windows.get(i),
                    window_vector=window_vectors.get(i),
                )
                for i, f in kept.items()
                if i in dense or i in vectors
            ]

        pool_candidates = admit(list(dict.fromkeys([*dense, *windows, *lexical])), set(dense) if prefilter else set())
        if not prefilter and len(dense) == 2 * pool:
            admitted = {c.id for c in pool_candidates}
            if sum(i in admitted for i in dense) < pool // 2:
                # Mostly working turns or history nearby: ask Chroma to filter after all.
                extra = dict(self.chroma.query(state, vector, n=pool, where=where))
                dense.update(extra)
                pool_candidates += admit([i for i in extra if i not in admitted], set(extra))
        ranked = rank(pool_candidates, query=query, query_vector=vector, weights=weights, now=now)
        if min_score is not None:
            ranked = [r for r in ranked if r.similarity >= min_score]
        hits = self._fetch_hits(state, ranked, top_k, filters, include_history=include_history, now=now)
        packed = pack_within_budget([h.record for h in hits], token_budget, query=query, counter=self.tokens)
        hits = hits[: len(packed)]
        if touch and hits:
            self.chroma.record_access(state, [h.record.id for h in hits], now)
            hits = [
                h.model_copy(
                    update={
                        "record": h.record.model_copy(
                            update={"access_count": h.record.access_count + 1, "last_accessed_at": now}
                        )
                    }
                )
                for h in hits
            ]
        context = format_context([(h.record, text) for h, (_, text) in zip(hits, packed)])
        return RecallResult(query=query, hits=hits, context=context, tokens=self.tokens.count(context))

    def _lexical_candidates(
        self, state: Any, query: str, pool: int, with_windows: bool
    ) -> tuple[dict[str, float], dict[str, Sequence[float]], dict[str, Sequence[float]]]:
        """BM25 hits, with their own and window vectors for the cosines the vector searches miss."""
        lexical = dict(state.lexical.search(query, pool))
        facts = state.facts.lookup(list(lexical)) if with_windows else {}
        windows = self.chroma.vectors(state, [i for i, f in facts.items() if f.has_context], windows=True)
        return lexical, self.chroma.vectors(state, list(lexical)), windows

    def _admissible(
        self,
        state: Any,
        ids: list[str],
        trusted: set[str],
        filters: RecallFilters,
        *,
        include_history: bool,
        now: datetime,
    ) -> dict[str, MemoryFacts]:
        """The candidates that pass ``filters``, with their facts, in the order given.

        ``trusted`` ids were already filtered by Chroma. The rest are checked on the
        in-memory facts; Chroma's metadata is read only for ids not known here yet (written
        by another process since the last sync) or when the filter is on user metadata,
        which the facts do not keep.
        """
        matches = filters.matcher(include_history=include_history, now=now)
        known = state.facts.lookup(ids)
        unknown = [i for i in ids if i not in known]
        by_metadata = filters.metadata is not None
        fetched = self.chroma.metadata(
            state, unknown + ([i for i in ids if i in known and i not in trusted] if by_metadata else [])
        )
        out: dict[str, MemoryFacts] = {}
        for memory_id in ids:
            meta = fetched.get(memory_id)
            facts = known.get(memory_id) or (MemoryFacts.from_fields(meta) if meta is not None else None)
            if facts is None:
                continue  # deleted since it was indexed
            check = meta if meta is not None else facts
            if memory_id in trusted or matches(check):
                out[memory_id] = facts
        return out

    def _fetch_hits(
        self,
        state: Any,
        ranked: list[Ranked],
        top_k: int,
        filters: RecallFilters,
        *,
        include_history: bool,
        now: datetime,
    ) -> list[RecallHit]:
        """Fetch the best ``top_k`` records, re-checking each against Chroma's current metadata.

        Ranking ran on cached facts; a finalist forgotten, expired or deleted by another
        process since then is dropped here and the next one takes its place.
        """
        matches = filters.matcher(include_history=include_history, now=now)
        hits: list[RecallHit] = []
        position = 0
        while len(hits) < top_k and position < len(ranked):
            batch = ranked[position : position + top_k - len(hits) + 2]
            position += len(batch)
            current = self.chroma.flat_views(state, [b.id for b in batch])
            for entry in batch:
                flat = current.get(entry.id)
                if flat is not None and matches(flat):
                    hits.append(entry.hit(MemoryRecord.from_flat(entry.id, flat)))
        return hits[:top_k]

    def _check_top_k(self, top_k: Any) -> int:
        if top_k is None:
            return self.settings.default_top_k
        if isinstance(top_k, bool) or not isinstance(top_k, int):
            raise InvalidInputError("top_k", f"must be a whole number, got {type(top_k).__name__}")
        if top_k <= 0 or top_k > self.settings.max_top_k:
            raise InvalidInputError("top_k", f"must be between 1 and {self.settings.max_top_k}, got {top_k}")
        return top_k

    # -- working memory -----------------------------------------------------------------------
    def record_turn(
        self,
        content: str,
        *,
        session_id: str,
        role: Role | str = Role.USER,
        namespace: str | None = None,
        occurred_at: datetime | None = None,
        metadata: dict[str, Any] | None = None,
        extract: bool = True,
        compress: bool = True,
    ) -> TurnResult:
        """Add a turn to the session's working memory, remember what matters, compress if due."""
        ns = self._ns(namespace)
        if not isinstance(session_id, str) or not session_id.strip():
            raise InvalidInputError("session_id", "is required to record a turn")
        role = _coerce_enum(Role, role, "role")
        turn_input = parse_inputs(
            [
                {
                    "content": content,
                    "role": role,
                    "session_id": session_id,
                    "occurred_at": occurred_at,
                    "metadata": metadata or {},
                }
            ],
            max_bytes=self.settings.max_content_bytes,
        )[0]
        state = self._state(ns)
        now = utcnow()
        turn = MemoryRecord(
            namespace=ns,
            session_id=session_id,
            tier=Tier.WORKING,
            kind=Kind.TURN,
            role=role,
            content=turn_input.content,
            importance=assess(turn_input.content, role).importance,
            token_count=self.tokens.count(turn_input.content),
            occurred_at=turn_input.occurred_at or now,
            created_at=now,
            updated_at=now,
            valid_from=turn_input.occurred_at or now,
            source=Source(session_id=session_id, origin="turn"),
            metadata=turn_input.metadata,
            embedding_model=self.embedder.name,
            embedding_dim=self.chroma.embedding_dim,
        )
        with self._write_lock(ns):
            self.chroma.add(state, [turn], self._vectors([turn])[0])
        stored = StoreResult()
        if extract:
            stored = self._remember_turn(ns, turn)
        compression = None
        if compress:
            compression = self.compress(session_id=session_id, namespace=ns)
        return TurnResult(turn=turn, stored=stored, compression=compression)

    def _remember_turn(self, ns: str, turn: MemoryRecord) -> StoreResult:
        source = Source(session_id=turn.session_id, message_ids=[turn.id], origin="turn")
        if self.llm is not None and turn.role is Role.USER:
            try:
                window = self.working_window(session_id=turn.session_id or "", namespace=ns)[-2:]
                extracted = self.llm.extract_memories(transcript(window or [turn]))
                items = [
                    {
                        "content": m.content,
                        "kind": _coerce_enum(Kind, m.memory_type, "memory_type", default=Kind.FACT),
                        "importance": m.importance,
                        "entities": m.entities,
                        "session_id": turn.session_id,
                        "occurred_at": turn.occurred_at,
                        "source": source,
                    }
                    for m in extracted
                ]
                return (
                    self.store_memories(items, namespace=ns, apply_filter=False, origin="extraction")
                    if items
                    else StoreResult()
                )
            except (LLMError, InvalidInputError) as exc:
                log.warning("LLM extraction failed, falling back to rules: %s", exc)
        return self.store_memories(
            [
                {
                    "content": turn.content,
                    "role": turn.role,
                    "session_id": turn.session_id,
                    "occurred_at": turn.occurred_at,
                    "source": source,
                }
            ],
            namespace=ns,
            origin="turn",
        )

    def working_window(self, *, session_id: str, namespace: str | None = None) -> list[MemoryRecord]:
        """The session's live turns, oldest first."""
        ns = self._ns(namespace)
        state = self._state(ns)
        where = {"$and": [{"tier": "working"}, {"session_id": session_id}, {"status": "active"}]}
        return sorted(self.chroma.find(state, where), key=lambda r: (r.occurred_at, r.created_at))

    def compress(
        self,
        *,
        session_id: str,
        namespace: str | None = None,
        threshold_tokens: int | None = None,
        force: bool = False,
    ) -> CompressionResult | None:
        """Fold the oldest turn groups into episodic summaries until the window fits.

        Returns None when nothing needed compressing. Raw turns are archived, not deleted,
        and each summary's ``source.message_ids`` lists the turns it replaced.
        """
        ns = self._ns(namespace)
        if threshold_tokens is not None and (not isinstance(threshold_tokens, int) or threshold_tokens <= 0):
            raise InvalidInputError("threshold_tokens", "must be a positive whole number")
        threshold = threshold_tokens or self.settings.compress_threshold_tokens
        window = self.working_window(session_id=session_id, namespace=ns)
        before = sum(t.token_count for t in window)
        if not window or (before <= threshold and not force):
            return None
        state = self._state(ns)
        group_size = self.settings.compress_group_turns
        summaries: list[MemoryRecord] = []
        archived: list[str] = []
        total = before
        with self._write_lock(ns):
            while window and (total > threshold or (force and not summaries)):
                keep_live = 2 if len(window) > 2 else 0
                group = window[: max(1, min(group_size, len(window) - keep_live))]
                window = window[len(group) :]
                summary = self._summarize(group)
                now = utcnow()
                record = MemoryRecord(
                    namespace=ns,
                    session_id=session_id,
                    tier=Tier.EPISODIC,
                    kind=Kind.SUMMARY,
                    role=Role.SYSTEM,
                    content=summary,
                    importance=max(0.5, max(t.importance for t in group)),
                    token_count=self.tokens.count(summary),
                    occurred_at=group[-1].occurred_at,
                    created_at=now,
                    updated_at=now,
                    valid_from=group[0].occurred_at,
                    source=Source(session_id=session_id, message_ids=[t.id for t in group], origin="compression"),
                    embedding_model=self.embedder.name,
                    embedding_dim=self.chroma.embedding_dim,
                )
                self.chroma.add(state, [record], self._vectors([record])[0])
                moved = [
                    t.model_copy(
                        update={
                            "status": Status.ARCHIVED,
                            "updated_at": now,
                            "metadata": {**t.metadata, "summary_id": record.id},
                        }
                    )
                    for t in group
                ]
                self.chroma.update(state, moved)
                summaries.append(record)
                archived.extend(t.id for t in group)
                total -= sum(t.token_count for t in group)
                if keep_live == 0:
                    break
        return CompressionResult(summaries=summaries, archived_ids=archived, tokens_before=before, tokens_after=total)

    def _summarize(self, turns: Sequence[MemoryRecord]) -> str:
        if self.llm is not None:
            try:
                return self.llm.summarize(transcript(turns))
            except LLMError as exc:
                log.warning("LLM summary failed, using the extractive one: %s", exc)
        return extractive_summary(turns) or transcript(turns)[:400]

    def clear_working(self, *, session_id: str, namespace: str | None = None) -> int:
        """Forget the session's working window (soft); long-term memories are untouched."""
        ns = self._ns(namespace)
        state = self._state(ns)
        now = utcnow()
        turns = self.working_window(session_id=session_id, namespace=ns)
        self.chroma.update(state, [t.model_copy(update={"status": Status.DELETED, "updated_at": now}) for t in turns])
        return len(turns)

    # -- single records -----------------------------------------------------------------------
    def get(self, memory_id: str, *, namespace: str | None = None) -> MemoryRecord:
        ns = self._ns(namespace)
        if not isinstance(memory_id, str) or not memory_id:
            raise InvalidInputError("id", "must be a memory id string")
        found = self.chroma.get(self._state(ns), [memory_id])
        if not found:
            raise MemoryNotFoundError(memory_id, ns)
        return found[0][0]

    def update(
        self,
        memory_id: str,
        *,
        namespace: str | None = None,
        content: str | None = None,
        importance: float | None = None,
        kind: Kind | str | None = None,
        metadata: dict[str, Any] | None = None,
        ttl_seconds: int | None = None,
    ) -> MemoryRecord:
        """Change a memory in place; new content is re-embedded and re-indexed."""
        ns = self._ns(namespace)
        record = self.get(memory_id, namespace=ns)
        changes: dict[str, Any] = {"updated_at": utcnow()}
        if content is not None:
            changes["content"] = validate_content(content, max_bytes=self.settings.max_content_bytes)
            changes["token_count"] = self.tokens.count(changes["content"])
            changes["slot"] = detect_slot(changes["content"])
        if importance is not None:
            if isinstance(importance, bool) or not isinstance(importance, (int, float)) or not 0 <= importance <= 1:
                raise InvalidInputError("importance", "must be a number between 0 and 1")
            changes["importance"] = float(importance)
        if kind is not None:
            changes["kind"] = _coerce_enum(Kind, kind, "kind")
        if metadata is not None:
            if not isinstance(metadata, dict):
                raise InvalidInputError("metadata", "must be an object")
            changes["metadata"] = {**record.metadata, **metadata}
        if ttl_seconds is not None:
            if isinstance(ttl_seconds, bool) or not isinstance(ttl_seconds, int) or ttl_seconds <= 0:
                raise InvalidInputError("ttl_seconds", "must be a positive whole number of seconds")
            changes["expires_at"] = changes["updated_at"] + timedelta(seconds=ttl_seconds)
        updated = record.model_copy(update=changes)
        state = self._state(ns)
        with self._write_lock(ns):
            vectors, windows = self._vectors([updated]) if content is not None else (None, None)
            self.chroma.update(state, [updated], vectors, windows)
        return updated

    def forget(self, memory_id: str, *, namespace: str | None = None) -> MemoryRecord:
        """Soft delete: the memory stops being recalled but stays in the store and exports."""
        ns = self._ns(namespace)
        record = self.get(memory_id, namespace=ns)
        updated = record.model_copy(update={"status": Status.DELETED, "updated_at": utcnow()})
        self.chroma.update(self._state(ns), [updated])
        return updated

    def list(
        self,
        *,
        namespace: str | None = None,
        filters: RecallFilters | dict[str, Any] | None = None,
        include_history: bool = False,
        limit: int = 100,
        offset: int = 0,
    ) -> list[MemoryRecord]:
        """Memories matching ``filters``, newest first (paged)."""
        ns = self._ns(namespace)
        if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= 10_000:
            raise InvalidInputError("limit", "must be between 1 and 10000")
        if isinstance(offset, bool) or not isinstance(offset, int) or offset < 0:
            raise InvalidInputError("offset", "must be zero or more")
        filters = _coerce(RecallFilters, filters, "filters")
        where = filters.where(include_history=include_history, now=utcnow())
        records = self.chroma.find(self._state(ns), where)
        records.sort(key=lambda r: r.occurred_at, reverse=True)
        return records[offset : offset + limit]

    # -- inspection ---------------------------------------------------------------------------
    def stats(self, *, namespace: str | None = None) -> NamespaceStats:
        ns = self._ns(namespace)
        state = self._state(ns)
        by_tier: dict[str, int] = {}
        by_kind: dict[str, int] = {}
        by_status: dict[str, int] = {}
        sessions: set[str] = set()
        tokens = total = 0
        for record, _ in self.chroma.iterate(state):
            total += 1
            by_tier[record.tier.value] = by_tier.get(record.tier.value, 0) + 1
            by_kind[record.kind.value] = by_kind.get(record.kind.value, 0) + 1
            by_status[record.status.value] = by_status.get(record.status.value, 0) + 1
            if record.session_id:
                sessions.add(record.session_id)
            if record.status is Status.ACTIVE:
                tokens += record.token_count
        return NamespaceStats(
            namespace=ns,
            total=total,
            by_tier=by_tier,
            by_kind=by_kind,
            by_status=by_status,
            tokens=tokens,
            embedding_model=self.embedder.name,
            sessions=len(sessions),
        )

    def dump(self, *, namespace: str | None = None, include_history: bool = True) -> str:
        """A human-readable listing for debugging (SPEC §8): tiers, status, dates, provenance."""
        ns = self._ns(namespace)
        records = [r for r, _ in self.chroma.iterate(self._state(ns))]
        if not include_history:
            records = [r for r in records if r.status is Status.ACTIVE]
        lines = [f"# namespace {ns}: {len(records)} memories (embedding model {self.embedder.name})"]
        for tier in Tier:
            group = sorted((r for r in records if r.tier is tier), key=lambda r: r.occurred_at)
            if not group:
                continue
            lines.append(f"\n## {tier.value} ({len(group)})")
            for r in group:
                flags = [r.kind.value, r.status.value, f"imp={r.importance:.2f}", f"hits={r.access_count}"]
                if r.session_id:
                    flags.append(f"session={r.session_id}")
                if r.expires_at:
                    flags.append(f"expires={r.expires_at.isoformat(timespec='minutes')}")
                if r.superseded_by:
                    flags.append(f"superseded_by={r.superseded_by[:8]}")
                if r.source.message_ids:
                    flags.append(f"from={','.join(m[:8] for m in r.source.message_ids)}")
                lines.append(f"{memory_line(r)}\n    [{r.id[:8]}] {' '.join(flags)}")
        return "\n".join(lines)

    # -- backup -------------------------------------------------------------------------------
    def export(self, *, namespace: str | None = None, include_embeddings: bool = True) -> dict[str, Any]:
        """Everything in a namespace, every status included, as JSON-ready data."""
        ns = self._ns(namespace)
        state = self._state(ns)
        records = []
        for record, vector in self.chroma.iterate(state, include_embeddings=include_embeddings):
            item = record.public_dict()
            if vector is not None:
                item["embedding"] = vector
            records.append(item)
        if include_embeddings:
            windows = self.chroma.window_vectors(state, [r["id"] for r in records if r.get("context")])
            for item in records:
                if item["id"] in windows:
                    item["window_embedding"] = windows[item["id"]]
        return {
            "format": EXPORT_FORMAT,
            "version": 1,
            "namespace": ns,
            "embedding_model": self.embedder.name,
            "embedding_dim": self.chroma.embedding_dim,
            "exported_at": utcnow().isoformat(),
            "records": records,
        }

    def import_data(self, data: dict[str, Any], *, namespace: str | None = None) -> int:
        """Load an export. Vectors are reused when the model matches, otherwise re-embedded."""
        if not isinstance(data, dict) or data.get("format") != EXPORT_FORMAT:
            raise InvalidInputError("data", f"is not a {EXPORT_FORMAT} document")
        ns = self._ns(namespace or data.get("namespace"))
        same_model = data.get("embedding_model") == self.embedder.name
        records: list[MemoryRecord] = []
        vectors: list[Vector] = []
        windows: dict[str, Vector] = {}
        reembed: list[MemoryRecord] = []
        for n, item in enumerate(data.get("records", [])):
            try:
                record = MemoryRecord.model_validate(
                    {k: v for k, v in item.items() if k not in ("embedding", "window_embedding")}
                )
            except Exception as exc:
                raise InvalidInputError(f"records[{n}]", str(exc)) from None
            record = record.model_copy(
                update={
                    "namespace": ns,
                    "embedding_model": self.embedder.name,
                    "embedding_dim": self.chroma.embedding_dim,
                }
            )
            records.append(record)
            if same_model and item.get("embedding") and (item.get("window_embedding") or not record.context):
                vectors.append(item["embedding"])
                if item.get("window_embedding"):
                    windows[record.id] = item["window_embedding"]
            else:
                vectors.append([])
                reembed.append(record)
        fresh_vectors, fresh_windows = self._vectors(reembed) if reembed else ([], {})
        by_id = dict(zip((r.id for r in reembed), fresh_vectors))
        vectors = [v or by_id[r.id] for r, v in zip(records, vectors)]
        windows.update(fresh_windows)
        state = self._state(ns)
        with self._write_lock(ns):
            existing = {r.id for r, _ in self.chroma.get(state, [r.id for r in records])}
            new = [(r, v) for r, v in zip(records, vectors) if r.id not in existing]
            old = [(r, v) for r, v in zip(records, vectors) if r.id in existing]
            self.chroma.add(state, [r for r, _ in new], [v for _, v in new], windows)
            if old:
                self.chroma.update(state, [r for r, _ in old], [v for _, v in old], None)
        return len(records)

    # -- upkeep -------------------------------------------------------------------------------
    def _cold_path(self, namespace: str) -> Path:
        return self.settings.resolved_cold_store / f"{namespace}.jsonl"

    def maintain(
        self, *, namespace: str | None = None, now: datetime | None = None, caps: dict[Tier, int] | None = None
    ) -> MaintenanceReport:
        """Decay idle memories, archive stale unimportant ones and enforce tier caps (SPEC §7)."""
        ns = self._ns(namespace)
        state = self._state(ns)
        now = now or utcnow()
        path = self._cold_path(ns)
        with self._write_lock(ns):
            decayed, archive, evict = plan([r for r, _ in self.chroma.iterate(state)], now, caps)
            self.chroma.update(state, decayed)
            moving = [r.id for r in archive + evict]
            if moving:
                windows = self.chroma.window_vectors(state, moving)
                write_cold(
                    path,
                    [(r, v, windows.get(r.id)) for r, v in self.chroma.get(state, moving, include_embeddings=True)],
                )
                self.chroma.delete(state, moving)
        return MaintenanceReport(
            namespace=ns,
            decayed=[r.id for r in decayed],
            archived=[r.id for r in archive],
            evicted=[r.id for r in evict],
            cold_store=str(path),
        )

    def restore(self, *, namespace: str | None = None, ids: Sequence[str] | None = None) -> int:
        """Bring archived memories back from cold storage (all, or the given ids) as active."""
        ns = self._ns(namespace)
        path = self._cold_path(ns)
        rows = read_cold(path)
        wanted = set(ids) if ids is not None else {r["id"] for r in rows}
        back = [{**r, "status": Status.ACTIVE.value} for r in rows if r["id"] in wanted]
        if not back:
            return 0
        models = {r.get("embedding_model") for r in back}
        self.import_data(
            {"format": EXPORT_FORMAT, "embedding_model": models.pop() if len(models) == 1 else None, "records": back},
            namespace=ns,
        )
        keep = [r for r in rows if r["id"] not in wanted]
        path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in keep), encoding="utf-8")
        return len(back)

    def drop_namespace(self, namespace: str) -> None:
        """Delete a namespace and everything in it, for good."""
        self.chroma.drop_namespace(self._ns(namespace))


def _needs_assessment(item: MemoryInput, apply_filter: bool) -> bool:
    """The write filter's verdict is needed to skip chit-chat or to fill in what the caller left out.

    Bulk imports that give every item's kind and importance, unfiltered, skip it (~20 µs a memory).
    """
    return apply_filter or item.kind in (None, Kind.TURN) or item.importance is None


def _request_hash(items: Sequence[MemoryInput]) -> str:
    payload = json.dumps([i.model_dump(mode="json") for i in items], sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(payload.encode()).hexdigest()[:32]


def _coerce(model: type[BaseModel], value: Any, field: str) -> Any:
    if value is None:
        return model()
    if isinstance(value, model):
        return value
    if not isinstance(value, dict):
        raise InvalidInputError(field, f"must be an object, got {type(value).__name__}")
    try:
        return model.model_validate(value)
    except Exception as exc:
        errors = getattr(exc, "errors", None)
        if errors:
            err = errors()[0]
            raise InvalidInputError(f"{field}.{'.'.join(str(p) for p in err['loc'])}", err["msg"]) from None
        raise InvalidInputError(field, str(exc)) from None


def _coerce_enum(enum: Any, value: Any, field: str, default: Any = None) -> Any:
    if isinstance(value, enum):
        return value
    try:
        return enum(str(value).lower())
    except ValueError:
        if default is not None:
            return default
        allowed = ", ".join(e.value for e in enum)
        raise InvalidInputError(field, f"{value!r} is not one of: {allowed}") from None


__all__ = [
    "CompressionResult",
    "HindsightError",
    "MemoryEngine",
    "NamespaceStats",
    "RecallResult",
    "SkippedMemory",
    "StoreResult",
    "TurnResult",
]
