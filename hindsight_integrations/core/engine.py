"""``MemoryEngine``: the framework-free facade over store, recall, working memory and upkeep.

Everything else (the MCP server, the CLI, the LangChain and LlamaIndex adapters) is a thin
translation onto these methods. One engine serves many namespaces (users); each namespace
is its own Chroma collection, so isolation does not depend on remembering a filter.

The engine itself only checks the namespace and hands the call to the module that does the
work (see docs/architecture.md): ``write.settle.Settler`` (new memories) and
``write.edit.Editor`` (changes to one), ``recall.pipeline.Recaller``,
``working.window.WorkingMemory`` and ``backup.Backup``, all sharing one ``parts.EngineParts``.
The upkeep methods (``maintain``, ``upkeep``, ``consolidate``, ...) are inherited from
``upkeep.facade.UpkeepFacade``. The public names are the API's words: ``update`` edits a
memory, ``maintain`` runs retention, ``upkeep`` runs every upkeep step (``upkeep/__init__.py``).
"""

from __future__ import annotations

import builtins
from datetime import datetime
from pathlib import Path
from typing import Any, overload

from .backup import Page, export_namespace
from .clock import Clock
from .config import AUTO_MODEL, Settings, engine_settings, validate_namespace
from .embedding.factory import routes_by_script
from .embedding.protocol import Embedder, warm_up
from .lanes import ModelLane, ModelLanes
from .language.when import warm as warm_time_reading
from .llm import LLMClient
from .model.arguments import whole_number
from .model.limits import MAX_CANDIDATES
from .model.records import Kind, MemoryRecord, Role
from .model.results import (
    CompressionResult,
    NamespaceStats,
    RecallResult,
    Relevance,
    StoreResult,
    TurnResult,
)
from .parts import EngineParts
from .progress import ProgressCallback
from .recall.filters import RecallFilters
from .recall.ranking import RecallWeights
from .redaction import set_content_in_logs
from .storage.namespace_store import NamespaceStore
from .storage.store import ChromaStore
from .upkeep.facade import UpkeepFacade
from .write.recovery import bring_up_to_date


class MemoryEngine(UpkeepFacade):
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
        settings = engine_settings(settings, store=store, chroma_url=chroma_url, namespace=namespace, **overrides)
        set_content_in_logs(settings.log_content)
        parts = EngineParts.assemble(
            settings,
            embedder=embedder,
            embedding_function=embedding_function,
            llm=llm,
            chroma_client=chroma_client,
            clock=clock,
        )
        self.settings = settings
        self.clock: Clock = parts.clock
        self.embedder = parts.embedder
        self.llm = parts.llm
        self.chroma: ChromaStore = parts.store
        self.tokens = parts.tokens
        self._parts = parts
        self.chroma.on_open = lambda handle: bring_up_to_date(self.chroma, handle, parts.clock)
        self._lanes = ModelLanes(
            parts, routes=embedder is None and embedding_function is None and routes_by_script(settings)
        )

    @overload
    def _namespace(self, namespace: str | None, *, text: str | None = None) -> NamespaceStore: ...
    @overload
    def _namespace(self, namespace: str | None, *, create: bool, text: str | None = None) -> NamespaceStore | None: ...

    def _namespace(
        self, namespace: str | None, *, create: bool = True, text: str | None = None
    ) -> NamespaceStore | None:
        """The handle of ``namespace`` (default: the configured one), checked first.

        ``create=False`` gives None for a namespace never written: reads do not create one.
        ``text`` is what is about to be written: under ``auto`` it picks a new namespace's model.
        """
        return self._lanes.open(self._parts.namespace_name(namespace), create=create, text=text)

    def _lane(self, handle: NamespaceStore) -> ModelLane:
        return self._lanes.of(handle)

    def embedding_model(self, namespace: str | None = None) -> str | None:
        """The embedding model of ``namespace`` (default: the configured one); None if it was never written.

        Under ``auto`` (the default) namespaces can differ: each gets its model at its first write.
        """
        name = self._parts.namespace_name(namespace)
        if not self._lanes.routes:
            return self.embedder.name
        handle = self.chroma.opened(name)
        if handle is not None and not handle.model_pending:
            return handle.embedding_model
        return self.chroma.stored_model(name)

    @property
    def configured_model(self) -> str:
        """``auto`` when each new namespace's first text picks its model, else the one model's name."""
        return AUTO_MODEL if self._lanes.routes else self.embedder.name

    def warm(self) -> None:
        """Load the embedding model (and its int8 copy) and the date parser now, so the first request is not slow."""
        warm_up(self.embedder)
        warm_time_reading()

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
        handle, lane, items = self._lanes.storing(namespace, memories, request_id)
        return lane.settler.store(
            handle,
            items,
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
        """One memory by id, whatever its status (archived into cold storage too); ``MemoryNotFoundError`` if none."""
        handle, lane = self._lanes.holding(namespace, memory_id)
        return lane.editor.find(handle, memory_id)

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

        ``metadata`` is merged into the existing metadata, a key given as None removed (as Chroma's
        ``update`` does), so filters stop matching it; ``ttl_seconds`` expires the memory
        that many seconds from now.
        """
        handle, lane = self._lanes.holding(namespace, memory_id, text=content if isinstance(content, str) else None)
        return lane.editor.edit(
            handle,
            memory_id,
            content=content,
            importance=importance,
            kind=kind,
            metadata=metadata,
            ttl_seconds=ttl_seconds,
        )

    def forget(self, memory_id: str, *, namespace: str | None = None) -> MemoryRecord:
        """Soft delete: the memory stops being recalled but stays in the store; its text leaves contexts and windows."""
        handle, lane = self._lanes.holding(namespace, memory_id)
        return lane.editor.forget(handle, memory_id)

    def unforget(self, memory_id: str, *, namespace: str | None = None) -> MemoryRecord:
        """Undo ``forget`` (or a rejected review): the memory is active and recalled again."""
        handle, lane = self._lanes.holding(namespace, memory_id)
        return lane.editor.unforget(handle, memory_id)

    def review(self, memory_id: str, *, accept: bool, namespace: str | None = None) -> builtins.list[MemoryRecord]:
        """Accept or reject a quarantined memory (a low-trust contradiction of an important one).

        Accepting makes it active and applies the supersede it held back (the older of the two
        becomes history); rejecting forgets it. Returns the records changed, the reviewed one first.
        """
        handle, lane = self._lanes.holding(namespace, memory_id)
        return lane.editor.review(handle, memory_id, accept=accept)

    def unmerge(self, memory_id: str, *, index: int = -1, namespace: str | None = None) -> MemoryRecord:
        """Undo a merge: input ``index`` of the memory's ``sources`` becomes a memory of its own again.

        A repeat merged by upkeep (``merge_repeats``) comes back as the record it was, same id; one
        merged when it was written gets a record of its own.
        """
        handle, lane = self._lanes.holding(namespace, memory_id)
        return lane.merger.unmerge(handle, memory_id, index) or lane.editor.unmerge(handle, memory_id, index)

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
        """Hybrid recall of the memories most relevant to ``query`` (see ``recall/pipeline.py``).

        ``top_k`` memories at most (default ``default_top_k``), none whose cosine similarity is
        below ``min_score``, narrowed by ``filters``, packed into ``token_budget`` tokens;
        ``weights`` tune the ranking; ``include_history`` also returns superseded memories;
        ``touch=False`` leaves the access counts alone (benchmarks, previews).
        """
        request = self._lanes.primary.recaller.request(
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
        return self._lane(handle).recaller.recall(handle, request, candidates=candidates, touch=touch)

    def relevance(self, query: str, *, namespace: str | None = None) -> Relevance:
        """How close ``namespace``'s best candidates for ``query`` are, beside the floors a recall compares them with.

        Says why a recall came back empty (or would), and is what ``hindsight bench floors``
        calibrates the floors on; it returns no memory and touches none.
        """
        request = self._lanes.primary.recaller.request(
            query, top_k=None, min_score=None, filters=None, token_budget=None, weights=None, include_history=False
        )
        _, handle, lane = self._lanes.reading(namespace)
        return lane.recaller.relevance(handle, request)

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
        page = Page.checked(filters, self._parts.limits, include_history, limit, offset)
        handle = self._namespace(namespace, create=False)
        return [] if handle is None else self._lane(handle).backup.page(handle, page)

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
        # Checked before the namespace is opened: a refused turn must not leave an empty namespace behind.
        turn = self._lanes.primary.working.checked_turn(
            content, session_id=session_id, role=role, occurred_at=occurred_at, metadata=metadata, speaker=speaker
        )
        handle = self._namespace(namespace, text=turn.said.content)
        return self._lane(handle).working.record_turn(handle, turn, extract=extract, compress=compress)

    def working_window(self, *, session_id: str, namespace: str | None = None) -> builtins.list[MemoryRecord]:
        """The session's live turns, oldest first (a read: it creates no namespace)."""
        _, handle, lane = self._lanes.reading(namespace)
        return lane.working.window(handle, session_id=session_id)

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
        _, handle, lane = self._lanes.reading(namespace)  # nothing to compress in a namespace never written
        return lane.working.compress(handle, session_id=session_id, threshold_tokens=threshold_tokens, force=force)

    def clear_working(self, *, session_id: str, namespace: str | None = None) -> int:
        """Forget the session's working window (soft); long-term memories stay, their contexts without its turns."""
        _, handle, lane = self._lanes.reading(namespace)  # nothing to clear in a namespace never written
        return lane.working.clear(handle, session_id=session_id)

    # -- inspection and backup --------------------------------------------------------------
    def stats(self, *, namespace: str | None = None) -> NamespaceStats:
        """Counts by tier, kind and status, active tokens and sessions (none for a namespace never written)."""
        name, handle, lane = self._lanes.reading(namespace)
        return lane.backup.stats(name, handle)

    def dump(self, *, namespace: str | None = None, include_history: bool = True) -> str:
        """A human-readable listing for debugging: tiers, status, dates, provenance (a read: it creates nothing)."""
        name, handle, lane = self._lanes.reading(namespace)
        return lane.backup.dump(name, handle, include_history=include_history)

    def export(
        self,
        *,
        namespace: str | None = None,
        include_embeddings: bool = True,
        progress: ProgressCallback | None = None,
    ) -> dict[str, Any]:
        """Everything in a namespace, every status and its cold storage included, as JSON-ready data.

        ``progress`` is called as records are read (thousands take seconds; see ``progress.py``). Never creates it.
        """
        name, handle, lane = self._lanes.reading(namespace)
        return lane.backup.export(name, handle, include_embeddings=include_embeddings, progress=progress)

    def import_data(
        self, data: dict[str, Any], *, namespace: str | None = None, progress: ProgressCallback | None = None
    ) -> int:
        """Load an export into ``namespace`` (default: the one it was exported from, else the configured one).

        Vectors are reused when the model matches, otherwise re-embedded. Every record is checked
        before anything is written or a new namespace made (``InvalidRecordsError`` lists every
        problem); ``progress`` is called as records are checked, embedded and written.
        """
        return self._lanes.import_data(export_namespace(data, namespace), data, progress)

    def drop_namespace(self, namespace: str) -> None:
        """Delete a namespace and everything in it, its cold storage too, for good."""
        self.chroma.drop_namespace(name := validate_namespace(namespace))
        self._lanes.primary.backup.cold.drop(name)

    # -- lifecycle --------------------------------------------------------------------------
    def close(self, timeout: float | None = 10.0) -> bool:
        """Finish queued background writes, stop this engine's threads, release Chroma and the lock database.

        Otherwise they last until the process exits, and an embedded store's directory stays open.
        False if context vectors were still unwritten after ``timeout`` (written at the namespace's
        next open). Calls afterwards raise ``StoreClosedError``; closing twice does nothing.
        """
        return self.chroma.close(timeout)

    def __enter__(self) -> MemoryEngine:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


__all__ = ["MemoryEngine"]
