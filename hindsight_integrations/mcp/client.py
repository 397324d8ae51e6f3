"""``MemoryClient``: one memory API over the three ways to reach the memory server.

Every integration writes through this client, so the adapters never care whether memory
lives in a spawned stdio server, a shared HTTP server, or this process:

* ``MemoryClient.stdio()`` spawns ``python -m hindsight_integrations.mcp`` (or any command);
* ``MemoryClient.http(url, token)`` talks streamable HTTP to a shared server;
* ``MemoryClient.in_process(engine)`` runs the real MCP protocol over memory streams
  against a server bound to a local engine (no subprocess, same code path as the others).

Each method builds its tool's arguments model (``wire``) and reads the answer back as the
engine's own result type (``answers``), so an adapter sees the same objects in-process and
over the network. Connecting, retries and the sync twins of the async methods are
``client_calls.ToolCaller``'s: ``store`` always carries a ``request_id`` so it is retried
safely; ``record_turn`` is retried only if the failure happened before sending.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any, TextIO, cast

from ..core.config import Settings, load_settings
from ..core.errors import InvalidInputError
from ..core.model.inputs import MemoryItem
from ..core.model.records import MemoryRecord, Role
from ..core.model.results import (
    CompressionResult,
    ConsolidationReport,
    NamespaceStats,
    RecallResult,
    StoreResult,
    TurnResult,
)
from ..core.recall.filters import RecallFilters
from ..core.upkeep.runner import UpkeepReport
from . import transports
from .answers import (
    ClearedOut,
    CompressOut,
    DumpOut,
    ForgottenOut,
    ListOut,
    MemoryOut,
    RecallOut,
    ReviewOut,
    WorkingOut,
)
from .client_calls import ToolCaller, blocking_twin
from .wire import (
    ClearWorkingMemoryArgs,
    CompressMemoryArgs,
    ConsolidateMemoryArgs,
    DumpMemoryArgs,
    ForgetMemoryArgs,
    GetWorkingMemoryArgs,
    ListMemoriesArgs,
    MaintainMemoryArgs,
    MemoryStatsArgs,
    RecordTurnArgs,
    RetrieveMemoryArgs,
    ReviewMemoryArgs,
    StoreMemoryArgs,
    UpdateMemoryArgs,
    batch_item,
    filters_value,
)

if TYPE_CHECKING:
    from ..core.engine import MemoryEngine


class MemoryClient(ToolCaller):
    """Store and recall memories through the Hindsight MCP server, over any transport.

    Use one client per namespace (the server decides the namespace: the stdio/in-process
    server's own, or the HTTP token's). Close it when done, or use it as a context manager.
    ``namespace`` is the one the client was opened for: when the server announces another
    at connect, the connection is refused with ``MemoryNamespaceError``.
    """

    # -- construction ---------------------------------------------------------------------------
    @classmethod
    def stdio(
        cls,
        command: Sequence[str] | str | None = None,
        args: Sequence[str] | None = None,
        env: dict[str, str] | None = None,
        namespace: str | None = None,
        *,
        cwd: str | None = None,
        errlog: TextIO | None = None,
        **options: Any,
    ) -> MemoryClient:
        """Spawn a stdio server. Default command: ``[sys.executable, "-m", "hindsight_integrations.mcp"]``.

        The child inherits this process's environment (so ``HINDSIGHT_*`` settings carry
        over) plus ``env``; ``namespace`` sets its ``HINDSIGHT_NAMESPACE`` (the server's
        ``--namespace`` fallback, so any command honouring the environment serves it).
        """
        transport = transports.stdio(command, args, env, namespace, cwd=cwd, errlog=errlog)
        return cls(transport, namespace=namespace, **options)

    @classmethod
    def http(
        cls,
        url: str,
        token: str | None = None,
        *,
        headers: dict[str, str] | None = None,
        namespace: str | None = None,
        **options: Any,
    ) -> MemoryClient:
        """Connect to a streamable-HTTP server, e.g. ``http://127.0.0.1:8765/mcp``.

        The bearer token decides the namespace; nothing the client sends can change it.
        ``namespace`` is a check: a server that announces its session's namespace (this
        project's does) is refused at connect when it differs; an older server announces
        none, and then the token alone decides.
        """
        return cls(transports.http(url, token, headers=headers), namespace=namespace, **options)

    @classmethod
    def in_process(
        cls, engine: MemoryEngine | None = None, namespace: str | None = None, **options: Any
    ) -> MemoryClient:
        """A real MCP session over memory streams to a server bound to ``engine``.

        With ``engine`` None, one is built from the environment, and closing the client closes it.
        """
        return cls(transports.in_process(engine, namespace), **options)

    @classmethod
    def from_settings(
        cls,
        settings: Settings | None = None,
        *,
        namespace: str | None = None,
        environ: dict[str, str] | None = None,
        engine_factory: Callable[[], MemoryEngine] | None = None,
        **options: Any,
    ) -> MemoryClient:
        """Pick the transport from the environment, for ``namespace`` (default ``HINDSIGHT_NAMESPACE``).

        ``HINDSIGHT_MCP_URL`` (+ ``HINDSIGHT_MCP_TOKEN``) → HTTP, where the token decides the
        namespace and ``namespace`` is checked against what the server announces at connect;
        ``HINDSIGHT_MCP_COMMAND`` → stdio, the spawned server serving ``namespace``; otherwise
        in-process over an engine built from ``settings`` / the environment (``HINDSIGHT_STORE``,
        ``HINDSIGHT_CHROMA_URL``, ...), serving ``namespace``. ``engine_factory`` supplies that
        engine instead and is called only when the in-process transport is chosen, so a caller
        serving many namespaces can share one engine (and one embedding model) among them; an
        engine built here is the client's, closed when the client is.
        """
        env = os.environ if environ is None else environ
        if env.get("HINDSIGHT_MCP_URL"):
            return cls.http(
                env["HINDSIGHT_MCP_URL"], token=env.get("HINDSIGHT_MCP_TOKEN") or None, namespace=namespace, **options
            )
        if env.get("HINDSIGHT_MCP_COMMAND"):
            return cls.stdio(
                env["HINDSIGHT_MCP_COMMAND"], namespace=namespace or env.get("HINDSIGHT_NAMESPACE"), **options
            )
        if engine_factory is not None:
            return cls.in_process(engine_factory(), namespace=namespace, **options)
        from ..core.engine import MemoryEngine  # here, not at module level: it brings Chroma

        engine = MemoryEngine(settings or load_settings())
        return cls(transports.in_process(engine, namespace, owned=True), **options)

    from_env = from_settings

    # -- the memory API -------------------------------------------------------------------------
    async def astore(
        self,
        memories: Any,
        *,
        request_id: str | None = None,
        apply_filter: bool = True,
        dedup: bool = True,
        supersede: bool = True,
        **fields: Any,
    ) -> StoreResult:
        """Store one memory (a string, with ``fields`` such as kind/importance/metadata) or a batch.

        ``apply_filter=False`` keeps text the write filter would drop as small talk,
        ``dedup=False`` keeps a near-duplicate as its own memory and ``supersede=False``
        leaves older memories about the same thing current: for callers that store exact
        values (a key-value store), not for conversation text. A ``request_id`` is generated
        when none is given, so the store is retried safely.
        """
        options = StoreMemoryArgs.model_construct(
            request_id=request_id or str(uuid.uuid4()), apply_filter=apply_filter, dedup=dedup, supersede=supersede
        )
        if isinstance(memories, str):
            arguments = {"content": memories, **options.wire(), **fields}
        else:
            if fields:
                raise InvalidInputError(
                    "fields", "keyword fields apply to a single string memory; put them inside each batch item instead"
                )
            if not isinstance(memories, (dict, MemoryItem, Iterable)) or isinstance(memories, (bytes, bytearray)):
                raise InvalidInputError(
                    "memories", f"must be a text, a memory (dict) or a list of them, got {type(memories).__name__}"
                )
            items = [memories] if isinstance(memories, (dict, MemoryItem)) else list(memories)
            arguments = {"memories": [batch_item(item) for item in items], **options.wire()}
        return StoreResult.model_validate(await self.acall_tool(StoreMemoryArgs.tool, arguments, idempotent=True))

    async def arecall(
        self,
        query: str,
        *,
        top_k: int | None = None,
        min_score: float | None = None,
        filters: RecallFilters | dict[str, Any] | None = None,
        token_budget: int | None = None,
        include_history: bool = False,
        weights: dict[str, float | None] | None = None,
        touch: bool = True,
    ) -> RecallResult:
        """The memories most relevant to ``query``, best first, and a dated context block packed from them.

        ``weights`` (``RecallWeights`` fields by name) change the ranking for this call only;
        ``touch=False`` leaves the memories' access counts alone (a look that is not a use).
        """
        args = RetrieveMemoryArgs.model_construct(
            query=query,
            top_k=top_k,
            min_score=min_score,
            filters=filters_value(filters),
            token_budget=token_budget,
            include_history=include_history,
            weights=weights,
            touch=touch,
        )
        return (await self._ask(args, RecallOut)).engine_result()

    async def arecord_turn(
        self,
        content: str,
        *,
        session_id: str,
        role: str = "user",
        occurred_at: Any = None,
        metadata: dict[str, Any] | None = None,
        speaker: str | None = None,
    ) -> TurnResult:
        """Append a conversation turn to ``session_id``'s working memory (durable facts in it are remembered).

        ``speaker`` (who wrote it) becomes an entity of what is remembered; ``metadata`` (an
        application's message id, say) is kept on the turn and on what is remembered from it.
        Not idempotent: retried only when the failure happened before sending.
        """
        args = RecordTurnArgs.model_construct(
            content=content,
            session_id=session_id,
            role=cast(Role, role),  # sent as given: the server reads it case-insensitively, or names it as wrong
            occurred_at=occurred_at,
            metadata=metadata,
            speaker=speaker,
        )
        return await self._ask(args, TurnResult, idempotent=False)

    async def aworking_memory(self, session_id: str) -> list[MemoryRecord]:
        """The live (not yet summarised) turns of ``session_id``, oldest first."""
        return (await self._ask(GetWorkingMemoryArgs.model_construct(session_id=session_id), WorkingOut)).turns

    async def aclear_working(self, session_id: str) -> int:
        """Forget ``session_id``'s live turns (long-term memories stay); returns how many were cleared."""
        return (await self._ask(ClearWorkingMemoryArgs.model_construct(session_id=session_id), ClearedOut)).cleared

    async def acompress(
        self, session_id: str, *, threshold_tokens: int | None = None, force: bool = False
    ) -> CompressionResult | None:
        """Summarise the oldest turns of ``session_id``; None when the window was under the threshold."""
        args = CompressMemoryArgs.model_construct(session_id=session_id, threshold_tokens=threshold_tokens, force=force)
        return (await self._ask(args, CompressOut)).compression

    async def aconsolidate(self, *, dry_run: bool = False) -> ConsolidationReport:
        """Merge repeats and distil facts said again and again into semantic memories (upkeep; idempotent).

        ``dry_run`` reports what would be merged and consolidated and changes nothing.
        """
        return await self._ask(ConsolidateMemoryArgs.model_construct(dry_run=dry_run), ConsolidationReport)

    async def aupdate(self, memory_id: str, **changes: Any) -> MemoryRecord:
        """Change the given fields of a memory (content, importance, kind, metadata, ttl_seconds)."""
        arguments = {**UpdateMemoryArgs.model_construct(id=memory_id).wire(), **changes}
        return MemoryOut.model_validate(await self.acall_tool(UpdateMemoryArgs.tool, arguments)).memory

    async def aforget(self, memory_id: str) -> MemoryRecord:
        """Mark a memory deleted (it stops being recalled; it is kept for audit)."""
        return (await self._ask(ForgetMemoryArgs.model_construct(id=memory_id), ForgottenOut)).memory

    async def areview(self, memory_id: str, *, accept: bool) -> list[MemoryRecord]:
        """Accept or reject a quarantined memory; the records changed, the reviewed one first."""
        return (await self._ask(ReviewMemoryArgs.model_construct(id=memory_id, accept=accept), ReviewOut)).memories

    async def alist(
        self,
        *,
        filters: RecallFilters | dict[str, Any] | None = None,
        include_history: bool = False,
        limit: int = 20,
        offset: int = 0,
    ) -> list[MemoryRecord]:
        """One page of stored memories, newest first, optionally filtered."""
        args = ListMemoriesArgs.model_construct(
            filters=filters_value(filters), include_history=include_history, limit=limit, offset=offset
        )
        return (await self._ask(args, ListOut)).memories

    async def astats(self) -> NamespaceStats:
        """Counts of the namespace's memories by tier, kind and status."""
        return await self._ask(MemoryStatsArgs.model_construct(), NamespaceStats)

    async def amaintain(self, *, dry_run: bool = False) -> UpkeepReport:
        """Run upkeep on the namespace now: compress long sessions, decay, archive, tier caps.

        ``dry_run`` only reports what would happen.

        The report lists each step with what it did (counts and ids) and its error if it failed.
        Retried like a read: a second run finds nothing left to do.
        """
        return await self._ask(MaintainMemoryArgs.model_construct(dry_run=dry_run), UpkeepReport)

    async def adump(self, *, include_history: bool = True) -> str:
        """A human-readable listing of everything in the namespace, for debugging."""
        return (await self._ask(DumpMemoryArgs.model_construct(include_history=include_history), DumpOut)).dump

    # -- the sync API: generated from the async one (kept last: ``list`` shadows the builtin) ----
    store = blocking_twin(astore)
    recall = blocking_twin(arecall)
    record_turn = blocking_twin(arecord_turn)
    working_memory = blocking_twin(aworking_memory)
    clear_working = blocking_twin(aclear_working)
    compress = blocking_twin(acompress)
    consolidate = blocking_twin(aconsolidate)
    update = blocking_twin(aupdate)
    forget = blocking_twin(aforget)
    review = blocking_twin(areview)
    stats = blocking_twin(astats)
    maintain = blocking_twin(amaintain)
    dump = blocking_twin(adump)
    list = blocking_twin(alist)


__all__ = ["MemoryClient"]
