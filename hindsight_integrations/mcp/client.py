"""``MemoryClient``: one API over the three ways to reach the memory server.

Every integration writes through this client, so the adapters never care whether memory
lives in a spawned stdio server, a shared HTTP server, or this process:

* ``MemoryClient.stdio()`` spawns ``python -m hindsight_integrations.mcp`` (or any command);
* ``MemoryClient.http(url, token)`` talks streamable HTTP to a shared server;
* ``MemoryClient.in_process(engine)`` runs the real MCP protocol over memory streams
  against a server bound to a local engine (no subprocess, same code path as the others).

The memory API is written once, as async methods; each sync method is generated from its
async twin (``_sync``) and runs that coroutine on the client's own loop thread
(``session.Connection``), so sync calls work from plain scripts *and* from threads that are
themselves running an event loop (LangChain calls sync tools that way). Reads are retried
with exponential backoff; writes only when a retry cannot duplicate them (``store`` always
carries a ``request_id``; ``record_turn`` is retried only if the failure happened before
sending). Arguments and results travel as the models of ``wire``.
"""

from __future__ import annotations

import concurrent.futures
import functools
import json
import os
import uuid
from collections.abc import Callable, Coroutine, Sequence
from typing import TYPE_CHECKING, Any, Concatenate, ParamSpec, TextIO, TypeVar, cast

from pydantic import BaseModel
from tenacity import AsyncRetrying, retry_if_exception, stop_after_attempt, wait_exponential

from ..core.config import Settings, load_settings, validate_namespace
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
from .body_guard import MAX_BODY_BYTES
from .errors import MemoryStoreUnavailableError, MemoryTimeoutError, MemoryToolInputError
from .protocol import parse_result, prepare_arguments
from .session import Connection
from .transports import Transport
from .wire import (
    ClearedOut,
    ClearWorkingMemoryArgs,
    CompressMemoryArgs,
    CompressOut,
    ConsolidateMemoryArgs,
    ConsolidateOut,
    DumpMemoryArgs,
    DumpOut,
    ForgetMemoryArgs,
    ForgottenOut,
    GetWorkingMemoryArgs,
    ListMemoriesArgs,
    ListOut,
    MaintainMemoryArgs,
    MemoryOut,
    MemoryStatsArgs,
    RecallOut,
    RecordTurnArgs,
    RetrieveMemoryArgs,
    ReviewMemoryArgs,
    ReviewOut,
    StoreMemoryArgs,
    StoreOut,
    ToolArgs,
    TurnOut,
    UpdateMemoryArgs,
    WorkingOut,
    batch_item,
    filters_value,
)

if TYPE_CHECKING:
    from ..core.engine import MemoryEngine
    from .server import HindsightMCP

_ENVELOPE_BYTES = 4096  # the JSON-RPC request around the arguments
P = ParamSpec("P")
R = TypeVar("R")
M = TypeVar("M", bound=BaseModel)
C = TypeVar("C", bound="MemoryClient")


def _sync(method: Callable[Concatenate[C, P], Coroutine[Any, Any, R]]) -> Callable[Concatenate[C, P], R]:
    """The blocking twin of an async ``MemoryClient`` method: same parameters, same result, same errors.

    The whole coroutine runs on the client's loop thread and the caller's thread waits for
    it, at most ``Connection.sync_deadline()`` (then ``MemoryTimeoutError``).
    """
    name = method.__name__.removeprefix("a")

    @functools.wraps(method)
    def blocking(self: C, /, *args: P.args, **kwargs: P.kwargs) -> R:
        connection = self._connection
        future = connection.submit(method(self, *args, **kwargs))
        try:
            return future.result(timeout=connection.sync_deadline())
        except concurrent.futures.TimeoutError:
            future.cancel()
            transport = connection.transport
            raise MemoryTimeoutError(transport.kind, transport.target, f"{name} did not complete") from None

    blocking.__name__ = name
    blocking.__qualname__ = f"MemoryClient.{name}"
    blocking.__doc__ = f"Blocking form of ``{method.__name__}``.\n\n{method.__doc__ or ''}"
    return blocking


def _check_size(tool: str, arguments: dict[str, Any]) -> None:
    """Refuse a call the server would refuse for its size (HTTP 413), before sending it."""
    size = len(json.dumps(arguments, ensure_ascii=False, default=str).encode("utf-8", "replace"))
    if size > MAX_BODY_BYTES - _ENVELOPE_BYTES:
        raise MemoryToolInputError(
            tool,
            f"the arguments are {size} bytes as JSON; a call may carry at most about {MAX_BODY_BYTES} "
            "(send fewer memories per call)",
            error_type="invalid_input",
            field="arguments",
        )


class MemoryClient:
    """Store and recall memories through the Hindsight MCP server, over any transport.

    Use one client per namespace (the server decides the namespace: the stdio/in-process
    server's own, or the HTTP token's). Close it when done, or use it as a context manager.
    ``namespace`` is the one the client was opened for: when the server announces another
    at connect, the connection is refused with ``MemoryNamespaceError``.
    """

    def __init__(
        self,
        transport: Transport,
        *,
        namespace: str | None = None,
        timeout: float = 30.0,
        connect_timeout: float = 120.0,
        retries: int = 3,
        backoff: float = 0.2,
    ) -> None:
        self._transport = transport
        self.timeout = timeout
        """Seconds one tool call may take before ``MemoryTimeoutError`` (the server may still finish it)."""
        self.connect_timeout = connect_timeout
        """Seconds opening a session may take (a spawned stdio server loads its embedding model first)."""
        self.retries = retries
        """How many times a retryable transport failure is retried (0: never); read at each call."""
        self.backoff = backoff
        """First retry delay in seconds; it doubles each retry, up to 5 s."""
        expected = validate_namespace(namespace) if namespace is not None else transport.namespace
        self._connection = Connection(transport, expected_namespace=expected, policy=self)

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
        """A real MCP session over memory streams to a server bound to ``engine`` (built from env if None)."""
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
        serving many namespaces can share one engine (and one embedding model) among them.
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
            engine = engine_factory()
        else:
            from ..core.engine import MemoryEngine  # here, not at module level: it brings Chroma

            engine = MemoryEngine(settings or load_settings())
        return cls.in_process(engine, namespace=namespace, **options)

    from_env = from_settings

    # -- properties -----------------------------------------------------------------------------
    @property
    def transport(self) -> str:
        """``"stdio"``, ``"http"`` or ``"in-process"``."""
        return self._transport.kind

    @property
    def target(self) -> str:
        """The command, URL or in-process namespace this client talks to (named in every error)."""
        return self._transport.target

    @property
    def namespace(self) -> str | None:
        """The namespace this client serves, known from construction wherever it can be.

        What the server announced at connect, else what the client was opened for: the
        ``namespace`` given, the in-process server's, or the one a spawned
        ``python -m hindsight_integrations.mcp`` will serve (its ``--namespace``,
        ``HINDSIGHT_NAMESPACE`` or the default). None only until the first call for an HTTP
        client opened without ``namespace`` (its token decides) or another stdio command.
        """
        return self._connection.announced_namespace or self._connection.expected_namespace

    @property
    def server(self) -> HindsightMCP | None:
        """The in-process server (None over stdio and HTTP)."""
        return self._transport.server

    @property
    def engine(self) -> MemoryEngine | None:
        """The engine behind an in-process client (None over stdio and HTTP)."""
        server = self._transport.server
        return server.engine if server is not None else None

    def __repr__(self) -> str:
        return f"MemoryClient({self._transport.kind} {self._transport.target})"

    # -- tools ----------------------------------------------------------------------------------
    async def acall_tool(
        self, tool: str, arguments: dict[str, Any] | None = None, *, idempotent: bool = True
    ) -> dict[str, Any]:
        """Call any tool; returns its structured result or raises ``MemoryToolError``.

        ``idempotent=False`` marks a call that must not be resent once it may have reached
        the server (it is retried only when it failed before sending).
        """
        try:
            args = prepare_arguments(arguments)
        except InvalidInputError as exc:  # refused before sending, as the server would refuse it
            raise MemoryToolInputError(tool, str(exc), error_type="invalid_input", field=exc.field) from None
        _check_size(tool, args)
        connection = self._connection
        # The server answered but its store did not: retried like a transport failure, only for
        # calls a second attempt cannot duplicate.
        retrying = AsyncRetrying(
            stop=stop_after_attempt(self.retries + 1),
            wait=wait_exponential(multiplier=self.backoff, max=5),
            retry=retry_if_exception(lambda exc: idempotent and isinstance(exc, MemoryStoreUnavailableError)),
            reraise=True,
        )
        async for attempt in retrying:
            with attempt:
                return parse_result(tool, await connection.run(connection.call(tool, args, idempotent=idempotent)))
        raise AssertionError("unreachable: tenacity re-raises the last failure")

    async def alist_tools(self) -> list[str]:
        """Names of the tools the server offers."""
        return await self._connection.run(self._connection.tool_names())

    async def _ask(self, args: ToolArgs, out: type[M], *, idempotent: bool = True) -> M:
        try:
            arguments = args.wire()
        except InvalidInputError as exc:
            if isinstance(exc, MemoryToolInputError):
                raise
            raise MemoryToolInputError(args.tool, str(exc), error_type="invalid_input", field=exc.field) from None
        return out.model_validate(await self.acall_tool(args.tool, arguments, idempotent=idempotent))

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
            items = [memories] if isinstance(memories, (dict, MemoryItem)) else list(memories)
            arguments = {"memories": [batch_item(item) for item in items], **options.wire()}
        data = await self.acall_tool(StoreMemoryArgs.tool, arguments, idempotent=True)
        return StoreOut.model_validate(data).to_result()

    async def arecall(
        self,
        query: str,
        *,
        top_k: int | None = None,
        min_score: float | None = None,
        filters: RecallFilters | dict[str, Any] | None = None,
        token_budget: int | None = None,
        include_history: bool = False,
    ) -> RecallResult:
        """The memories most relevant to ``query``, best first, and a dated context block packed from them."""
        args = RetrieveMemoryArgs.model_construct(
            query=query,
            top_k=top_k,
            min_score=min_score,
            filters=filters_value(filters),
            token_budget=token_budget,
            include_history=include_history,
        )
        return (await self._ask(args, RecallOut)).to_result()

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
        return (await self._ask(args, TurnOut, idempotent=False)).to_result()

    async def aworking_memory(self, session_id: str) -> list[MemoryRecord]:
        """The live (not yet summarised) turns of ``session_id``, oldest first."""
        return (await self._ask(GetWorkingMemoryArgs.model_construct(session_id=session_id), WorkingOut)).to_result()

    async def aclear_working(self, session_id: str) -> int:
        """Forget ``session_id``'s live turns (long-term memories stay); returns how many were cleared."""
        return (await self._ask(ClearWorkingMemoryArgs.model_construct(session_id=session_id), ClearedOut)).to_result()

    async def acompress(
        self, session_id: str, *, threshold_tokens: int | None = None, force: bool = False
    ) -> CompressionResult | None:
        """Summarise the oldest turns of ``session_id``; None when the window was under the threshold."""
        args = CompressMemoryArgs.model_construct(session_id=session_id, threshold_tokens=threshold_tokens, force=force)
        return (await self._ask(args, CompressOut)).to_result()

    async def aconsolidate(self, *, dry_run: bool = False) -> ConsolidationReport:
        """Merge repeats and distil facts said again and again into semantic memories (upkeep; idempotent).

        ``dry_run`` reports what would be merged and consolidated and changes nothing.
        """
        return await self._ask(ConsolidateMemoryArgs.model_construct(dry_run=dry_run), ConsolidateOut)

    async def aupdate(self, memory_id: str, **changes: Any) -> MemoryRecord:
        """Change the given fields of a memory (content, importance, kind, metadata, ttl_seconds)."""
        arguments = {**UpdateMemoryArgs.model_construct(id=memory_id).wire(), **changes}
        return MemoryOut.model_validate(await self.acall_tool(UpdateMemoryArgs.tool, arguments)).to_result()

    async def aforget(self, memory_id: str) -> MemoryRecord:
        """Mark a memory deleted (it stops being recalled; it is kept for audit)."""
        return (await self._ask(ForgetMemoryArgs.model_construct(id=memory_id), ForgottenOut)).to_result()

    async def areview(self, memory_id: str, *, accept: bool) -> list[MemoryRecord]:
        """Accept or reject a quarantined memory; the records changed, the reviewed one first."""
        return (await self._ask(ReviewMemoryArgs.model_construct(id=memory_id, accept=accept), ReviewOut)).to_result()

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
        return (await self._ask(args, ListOut)).to_result()

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
        return (await self._ask(DumpMemoryArgs.model_construct(include_history=include_history), DumpOut)).to_result()

    # -- lifecycle ------------------------------------------------------------------------------
    async def aconnect(self) -> MemoryClient:
        """Open the connection now (otherwise the first call does), so start-up errors surface early."""
        await self._connection.run(self._connection.ensure())
        return self

    async def aclose(self) -> None:
        """Close the session and stop the loop thread; later calls raise ``MemoryServerUnavailableError``."""
        await self._connection.aclose()

    def close(self) -> None:
        """Blocking form of ``aclose`` (written out: the loop thread cannot join itself)."""
        self._connection.close()

    def __enter__(self) -> MemoryClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    async def __aenter__(self) -> MemoryClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    # -- the sync API: generated from the async one (kept last: ``list`` shadows the builtin) ----
    call_tool = _sync(acall_tool)
    list_tools = _sync(alist_tools)
    store = _sync(astore)
    recall = _sync(arecall)
    record_turn = _sync(arecord_turn)
    working_memory = _sync(aworking_memory)
    clear_working = _sync(aclear_working)
    compress = _sync(acompress)
    consolidate = _sync(aconsolidate)
    update = _sync(aupdate)
    forget = _sync(aforget)
    review = _sync(areview)
    stats = _sync(astats)
    maintain = _sync(amaintain)
    dump = _sync(adump)
    connect = _sync(aconnect)
    list = _sync(alist)


__all__ = ["MemoryClient"]
