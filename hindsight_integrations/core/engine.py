"""``MemoryEngine``: the framework-free facade over store, recall, working memory and upkeep.

Everything else (the MCP server, the CLI, the LangChain and LlamaIndex adapters) is a thin
translation onto these methods. One engine serves many namespaces (users); each namespace
is its own Chroma collection, so isolation does not depend on remembering a filter.

The engine itself only checks the namespace and hands the call to the module that does the
work (see docs/architecture.md): ``writes.Writer``, ``recall.Recaller``,
``working.WorkingMemory`` (with ``compression.Compressor``), ``backup.Backup`` and
``lifecycle.Maintenance``, all sharing one ``parts.EngineParts``.
"""

from __future__ import annotations

import builtins
from collections.abc import Sequence
from datetime import datetime
from pathlib import Path
from typing import Any, overload

from .backup import EXPORT_FORMAT, Backup
from .clock import Clock, SystemClock
from .config import Settings, check_setting_names, load_settings, validate_namespace
from .embedding.models import Embedder, build_embedder, embed_index_matrix
from .errors import InvalidInputError
from .language.tokens import counter_for
from .llm import LLMClient
from .model.arguments import whole_number
from .model.limits import MAX_CANDIDATES, MAX_OFFSET, MAX_PAGE
from .model.records import Kind, MemoryRecord, Role, Status, Tier
from .model.results import (
    CompressionResult,
    ConsolidationReport,
    MergedRepeat,
    NamespaceStats,
    RecallResult,
    StoreResult,
    TurnResult,
)
from .parts import EngineParts
from .progress import ProgressCallback
from .recall.filters import RecallFilters, bounded_filters
from .recall.pipeline import Recaller
from .recall.ranking import RecallWeights
from .redaction import set_content_in_logs
from .storage.locks import CrossProcessLocks, cross_process_locks
from .storage.namespace_store import NamespaceStore
from .storage.replicas import WriterRegistry, lock_fingerprint, registry_for
from .storage.store import ChromaStore, open_client
from .upkeep.consolidation import Consolidator
from .upkeep.merging import RepeatMerger
from .upkeep.retention import Maintenance, MaintenanceReport
from .upkeep.runner import (
    ConsolidationStepReport,
    SessionCompressionReport,
    UpkeepReport,
    UpkeepStep,
    compress_due_sessions,
    run_upkeep,
)
from .working.compression import Compressor
from .working.window import WorkingMemory
from .write.writer import Writer


class MemoryEngine:
    """Store, recall, compress and maintain memories in Chroma.

    Typical use::

        engine = MemoryEngine()                      # ./.hindsight, local embeddings
        engine.store("I prefer concise answers", namespace="u1")
        engine.recall("how should answers look?", namespace="u1").context

    ``settings`` (or keyword overrides of its fields, e.g. ``store=``, ``chroma_url=``,
    ``namespace=``) say where memories live; ``embedder``/``embedding_function`` replace the
    configured embedding model, ``llm`` the configured LLM (``False`` for none), and
    ``chroma_client`` an already-open Chroma client, and ``clock`` the time every time-dependent
    path reads (``clock.ManualClock`` moves it by hand, for tests and replayed histories).
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
        clock: Clock | None = None,
        **overrides: Any,
    ) -> None:
        if settings is None:
            settings = load_settings(store=store, chroma_url=chroma_url, namespace=namespace, **overrides)
        elif store or chroma_url or namespace or overrides:
            check_setting_names(overrides)
            changes = {"store": Path(store) if store else None, "chroma_url": chroma_url, "namespace": namespace}
            settings = settings.model_copy(update={k: v for k, v in {**changes, **overrides}.items() if v is not None})
        self.settings = settings
        set_content_in_logs(settings.log_content)
        self.clock: Clock = clock or SystemClock()
        self.embedder = embedder or build_embedder(settings, embedding_function)
        self.llm = LLMClient.from_settings(settings) if llm is True or llm is None else (llm or None)
        client = chroma_client or open_client(
            path=settings.store if not settings.chroma_url else None,
            url=settings.chroma_url,
            attempts=settings.chroma_connect_attempts,
            timeout=settings.chroma_connect_timeout,
        )
        shared_locks = cross_process_locks(settings.lock_url)
        self.chroma = ChromaStore(
            client,
            embedding_model=self.embedder.name,
            embedding_dim=self.embedder.dimension,
            lexical_sync_seconds=settings.lexical_sync_seconds,
            access_flush_seconds=settings.access_flush_seconds,
            time_aware=settings.time_aware_text,
            copy_vectors=settings.copy_vectors,
            embed_context=lambda texts: embed_index_matrix(self.embedder, texts, background=True),
            shared_locks=shared_locks,
            writers=_writer_registry(client, settings, shared_locks),
        )
        self.tokens = counter_for(settings.tokenizer)
        parts = EngineParts(
            settings=settings,
            embedder=self.embedder,
            store=self.chroma,
            tokens=self.tokens,
            llm=self.llm,
            clock=self.clock,
        )
        self._parts = parts
        self._writer = Writer(parts)
        self.chroma.on_open = self._writer.finish_supersedes
        self._recaller = Recaller(parts)
        self._working = WorkingMemory(parts, self._writer)
        self._backup = Backup(parts)
        self._maintenance = Maintenance(
            settings.resolved_cold_store, self._backup.import_data, self.clock, semantic_decay=settings.semantic_decay
        )
        self._merger = RepeatMerger(parts)
        self._consolidator = Consolidator(parts, self._merger)

    @overload
    def _namespace(self, namespace: str | None) -> NamespaceStore: ...
    @overload
    def _namespace(self, namespace: str | None, *, create: bool) -> NamespaceStore | None: ...

    def _namespace(self, namespace: str | None, *, create: bool = True) -> NamespaceStore | None:
        """The handle of ``namespace`` (default: the configured one), checked first.

        ``create=False`` gives None for a namespace never written: reads do not create one.
        """
        return self.chroma.namespace(
            validate_namespace(namespace if namespace is not None else self.settings.namespace), create=create
        )

    def warm(self) -> None:
        """Load the embedding model (and its int8 copy for stored vectors) now, so the first request is not slow."""
        warm = getattr(self.embedder, "warm", None)
        if callable(warm):
            warm()
        else:
            self.embedder.embed(["warm up"])

    def namespaces(self) -> list[str]:
        """Every namespace in the store."""
        return self.chroma.list_namespaces()

    # -- writing ----------------------------------------------------------------------------
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

        ``memories`` is a string, a ``MemoryInput``/dict, or a list of them. ``apply_filter``
        runs the write filter (chit-chat is skipped, with a reason); ``dedup`` merges
        near-duplicates (similarity ≥ ``dedup_threshold``) into the existing memory;
        ``supersede`` lets a detected subject/attribute conflict supersede the old value (off
        for callers such as a key-value store, whose items under different keys must all stay
        current). A repeated ``request_id`` returns the first call's result without writing
        again. ``origin`` is recorded in each memory's provenance.
        """
        handle = self._namespace(namespace)
        return self._writer.store(
            handle,
            memories,
            apply_filter=apply_filter,
            dedup=dedup,
            supersede=supersede,
            request_id=request_id,
            origin=origin,
        )

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
        """Store one memory given as keyword fields of ``MemoryInput`` (kind, importance, metadata, ...)."""
        return self.store_memories(
            [{"content": content, **fields}],
            namespace=namespace,
            apply_filter=apply_filter,
            dedup=dedup,
            request_id=request_id,
        )

    def get(self, memory_id: str, *, namespace: str | None = None) -> MemoryRecord:
        """One memory by id, whatever its status; ``MemoryNotFoundError`` if the namespace has none."""
        return self._writer.get(self._namespace(namespace), memory_id)

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
        """Change a memory in place; only the given fields change, new content is re-embedded.

        ``metadata`` is merged into the existing metadata; ``ttl_seconds`` expires the memory
        that many seconds from now.
        """
        return self._writer.update(
            self._namespace(namespace),
            memory_id,
            content=content,
            importance=importance,
            kind=kind,
            metadata=metadata,
            ttl_seconds=ttl_seconds,
        )

    def forget(self, memory_id: str, *, namespace: str | None = None) -> MemoryRecord:
        """Soft delete: the memory stops being recalled but stays in the store and exports."""
        return self._writer.forget(self._namespace(namespace), memory_id)

    def unforget(self, memory_id: str, *, namespace: str | None = None) -> MemoryRecord:
        """Undo ``forget`` (or a rejected review): the memory is active and recalled again."""
        return self._writer.unforget(self._namespace(namespace), memory_id)

    def review(self, memory_id: str, *, accept: bool, namespace: str | None = None) -> builtins.list[MemoryRecord]:
        """Accept or reject a quarantined memory (a low-trust contradiction of an important one).

        Accepting makes it active and applies the update it held back (the older of the two
        becomes history); rejecting forgets it. Returns the records changed, the reviewed one first.
        """
        return self._writer.review(self._namespace(namespace), memory_id, accept=accept)

    def unmerge(self, memory_id: str, *, index: int = -1, namespace: str | None = None) -> MemoryRecord:
        """Undo a merge: input ``index`` of the memory's ``sources`` becomes a memory of its own again.

        A repeat merged by upkeep (``merge_repeats``) comes back as the record it was, same id; one
        merged when it was written gets a record of its own.
        """
        handle = self._namespace(namespace)
        return self._merger.unmerge(handle, memory_id, index) or self._writer.unmerge(handle, memory_id, index)

    # -- recall -----------------------------------------------------------------------------
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
        """Hybrid recall of the memories most relevant to ``query`` (see ``recall.py``).

        ``top_k`` memories at most (default ``default_top_k``), none whose cosine similarity is
        below ``min_score``, narrowed by ``filters``, packed into ``token_budget`` tokens;
        ``weights`` tune the ranking; ``include_history`` also returns superseded memories;
        ``touch=False`` leaves the access counts alone (benchmarks, previews).
        """
        request = self._recaller.request(
            query,
            top_k=top_k,
            min_score=min_score,
            filters=filters,
            token_budget=token_budget,
            weights=weights,
            include_history=include_history,
        )
        if candidates is not None:
            whole_number(candidates, "candidates", low=1, high=MAX_CANDIDATES)
        handle = self._namespace(namespace, create=False)
        if handle is None:  # nothing was ever written there: a read does not create it
            return RecallResult(query=request.query, hits=[], context="", tokens=0)
        return self._recaller.recall(handle, request, candidates=candidates, touch=touch)

    def list(
        self,
        *,
        namespace: str | None = None,
        filters: RecallFilters | dict[str, Any] | None = None,
        include_history: bool = False,
        limit: int = 100,
        offset: int = 0,
    ) -> builtins.list[MemoryRecord]:
        """Memories matching ``filters``, newest first (paged), without ranking."""
        whole_number(limit, "limit", low=1, high=MAX_PAGE)
        whole_number(offset, "offset", low=0, high=MAX_OFFSET)
        chosen = bounded_filters(filters, self._parts.limits)
        handle = self._namespace(namespace, create=False)
        if handle is None:
            return []
        if include_history and not chosen.statuses:  # quarantined memories wait for review: list them too
            chosen = chosen.model_copy(update={"statuses": [Status.ACTIVE, Status.SUPERSEDED, Status.QUARANTINED]})
        where = chosen.where(include_history=include_history, now=self.clock.now())
        records = handle.find(where)
        records.sort(key=lambda r: r.occurred_at, reverse=True)
        return records[offset : offset + limit]

    # -- working memory ---------------------------------------------------------------------
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
        speaker: str | None = None,
    ) -> TurnResult:
        """Add a turn to the session's working memory, remember what matters, compress if due.

        ``speaker`` (a name, e.g. a chat message's ``name``) becomes an entity of the turn and
        of what is remembered from it; the memory also gets the session's preceding turns as
        its context and ``metadata`` merged into its own. ``extract=False`` keeps the turn in
        the window only; ``compress=False`` leaves the window as it is even past the threshold.
        """
        return self._working.record_turn(
            self._namespace(namespace),
            content,
            session_id=session_id,
            role=role,
            occurred_at=occurred_at,
            metadata=metadata,
            extract=extract,
            compress=compress,
            speaker=speaker,
        )

    def working_window(self, *, session_id: str, namespace: str | None = None) -> builtins.list[MemoryRecord]:
        """The session's live turns, oldest first."""
        return self._working.window(self._namespace(namespace), session_id=session_id)

    def compress(
        self,
        *,
        session_id: str,
        namespace: str | None = None,
        threshold_tokens: int | None = None,
        force: bool = False,
    ) -> CompressionResult | None:
        """Fold the oldest turn groups into episodic summaries until the window fits.

        Returns None when nothing needed compressing (``force`` compresses one group anyway).
        Raw turns are archived, not deleted, and each summary's ``source.message_ids`` lists
        the turns it replaced.
        """
        handle = self._namespace(namespace)
        return self._working.compress(handle, session_id=session_id, threshold_tokens=threshold_tokens, force=force)

    def clear_working(self, *, session_id: str, namespace: str | None = None) -> int:
        """Forget the session's working window (soft); long-term memories are untouched."""
        return self._working.clear(self._namespace(namespace), session_id=session_id)

    # -- inspection and backup --------------------------------------------------------------
    def stats(self, *, namespace: str | None = None) -> NamespaceStats:
        """Counts by tier, kind and status, active tokens and sessions."""
        return self._backup.stats(self._namespace(namespace))

    def dump(self, *, namespace: str | None = None, include_history: bool = True) -> str:
        """A human-readable listing for debugging: tiers, status, dates, provenance."""
        return self._backup.dump(self._namespace(namespace), include_history=include_history)

    def export(
        self,
        *,
        namespace: str | None = None,
        include_embeddings: bool = True,
        progress: ProgressCallback | None = None,
    ) -> dict[str, Any]:
        """Everything in a namespace, every status included, as JSON-ready data.

        ``progress`` is called as records are read (thousands take seconds; see ``progress.py``).
        """
        return self._backup.export(self._namespace(namespace), include_embeddings=include_embeddings, progress=progress)

    def import_data(
        self, data: dict[str, Any], *, namespace: str | None = None, progress: ProgressCallback | None = None
    ) -> int:
        """Load an export into ``namespace`` (default: the one it was exported from, else the configured one).

        Vectors are reused when the model matches, otherwise re-embedded. Every record is checked
        before anything is written (``InvalidRecordsError`` lists every problem); ``progress`` is
        called as records are checked, embedded and written.
        """
        if not isinstance(data, dict) or data.get("format") != EXPORT_FORMAT:
            found = f'its "format" is {data.get("format")!r}' if isinstance(data, dict) else type(data).__name__
            raise InvalidInputError(
                "data", f"is not a {EXPORT_FORMAT} document ({found}); `hindsight export` writes one"
            )
        if namespace is None and data.get("namespace") is not None:
            namespace = validate_namespace(data["namespace"], 'the export\'s "namespace"')
        return self._backup.import_data(self._namespace(namespace), data, progress=progress)

    # -- upkeep -----------------------------------------------------------------------------
    def maintain(
        self,
        *,
        namespace: str | None = None,
        now: datetime | None = None,
        caps: dict[Tier, int] | None = None,
        dry_run: bool = False,
    ) -> MaintenanceReport:
        """Decay idle memories, archive stale unimportant ones and enforce tier caps (``lifecycle.py``).

        Semantic memories decay slowly, and preferences and corrections are never archived or
        evicted. Idleness is measured at ``now``, by default the engine's clock. ``dry_run``
        reports what would happen and changes nothing.
        """
        return self._maintenance.maintain(self._namespace(namespace), now=now, caps=caps, dry_run=dry_run)

    def upkeep(self, namespace: str | None = None, *, dry_run: bool = False) -> UpkeepReport:
        """Run every upkeep step on ``namespace`` (default: the configured one), in order (``upkeep.py``).

        Compresses the sessions whose working window is past its threshold, consolidates (merges
        repeats, distils facts said in several sessions), then ``maintain``s.
        Each step is reported with what it did (counts and ids), its time and its error: one that
        fails does not stop the next. ``dry_run`` reports what would happen and changes nothing.
        A namespace never written has nothing to keep: the report has no steps, and it is not created.
        """
        name = validate_namespace(namespace if namespace is not None else self.settings.namespace)
        if not isinstance(dry_run, bool):
            raise InvalidInputError("dry_run", f"must be true or false, got {type(dry_run).__name__}")
        if self.chroma.namespace(name, create=False) is None:
            return UpkeepReport(namespace=name, dry_run=dry_run, started_at=self.clock.now())
        return run_upkeep(name, self.upkeep_steps(), dry_run=dry_run, clock=self.clock)

    def upkeep_steps(self) -> builtins.list[UpkeepStep]:
        """The steps of ``upkeep``, in the order they run; each is ``run(namespace, dry_run) -> its report``."""
        return [
            UpkeepStep("compress", self._compress_due_sessions),
            UpkeepStep(
                "consolidate",
                lambda ns, dry_run: ConsolidationStepReport.of(self.consolidate(namespace=ns, dry_run=dry_run)),
            ),
            UpkeepStep(
                "maintain", lambda ns, dry_run: self.maintain(namespace=ns, now=self.clock.now(), dry_run=dry_run)
            ),
        ]

    def _compress_due_sessions(self, namespace: str, dry_run: bool) -> SessionCompressionReport:
        handle = self._namespace(namespace)
        return compress_due_sessions(
            handle,
            threshold=self.settings.compress_threshold_tokens,
            window=lambda session_id: self._working.window(handle, session_id=session_id),
            compress=lambda session_id: self._working.compress(
                handle, session_id=session_id, threshold_tokens=None, force=False
            ),
            compressor=Compressor(self._parts),
            dry_run=dry_run,
        )

    def consolidate(self, namespace: str | None = None, *, dry_run: bool = False) -> ConsolidationReport:
        """Distil what the namespace's memories say again and again into semantic memories (``consolidation.py``).

        First merges repeats that slipped past the write path (``merge_repeats``); then clusters
        related memories (vectors, values, people, time) and turns each cluster said at least
        ``consolidation_min_members`` times, in two sessions or days or more, into one semantic
        memory whose ``source`` names every source and their turns. The sources are kept at half
        their importance, linked by ``consolidated_into``; running it again adds nothing.
        ``dry_run`` reports what would happen, changes nothing and calls no LLM.
        """
        return self._consolidator.consolidate(self._existing(namespace), dry_run=dry_run)

    def merge_repeats(self, namespace: str | None = None, *, dry_run: bool = False) -> builtins.list[MergedRepeat]:
        """Merge active memories with cosine ≥ ``merge_threshold`` and the same values into one (``merging.py``).

        The survivor is reinforced, the other becomes history pointing at it; ``unmerge`` splits
        them again. ``dry_run`` lists the pairs and changes nothing.
        """
        return self._merger.merge(self._existing(namespace), dry_run=dry_run)

    def _existing(self, namespace: str | None) -> NamespaceStore:
        """The handle of a namespace that holds memories; upkeep of one never written is a mistake worth naming."""
        handle = self._namespace(namespace, create=False)
        if handle is None:
            name = namespace if namespace is not None else self.settings.namespace
            known = sorted(self.namespaces())
            listing = f"the namespaces are: {', '.join(known)}" if known else "the store holds no namespace yet"
            raise InvalidInputError("namespace", f"nothing was ever stored in namespace {name!r} ({listing})")
        return handle

    def restore(self, *, namespace: str | None = None, ids: Sequence[str] | None = None) -> int:
        """Bring archived memories back from cold storage (all, or the given ids) as active.

        A restored memory counts as used at the clock's now, so the next upkeep does not archive
        it again. Returns how many came back; ids not in cold storage are skipped (see ``archived_ids``).
        """
        return self._maintenance.restore(self._namespace(namespace), ids, now=self.clock.now())

    def archived_ids(self, *, namespace: str | None = None) -> builtins.list[str]:
        """The ids in the namespace's cold storage: what ``restore`` can bring back, oldest archive first."""
        return self._maintenance.archived_ids(self._namespace(namespace))

    def drop_namespace(self, namespace: str) -> None:
        """Delete a namespace and everything in it, for good."""
        self.chroma.drop_namespace(validate_namespace(namespace))


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


__all__ = ["MemoryEngine"]
