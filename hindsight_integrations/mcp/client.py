"""``MemoryClient``: one API over the three ways to reach the memory server.

Every integration writes through this client, so the adapters never care whether memory
lives in a spawned stdio server, a shared HTTP server, or this process:

* ``MemoryClient.stdio()`` spawns ``python -m hindsight_integrations.mcp`` (or any command);
* ``MemoryClient.http(url, token)`` talks streamable HTTP to a shared server;
* ``MemoryClient.in_process(engine)`` runs the real MCP protocol over memory streams
  against a server bound to a local engine (no subprocess, same code path as the others).

The MCP session lives on a dedicated event-loop thread. Sync methods submit coroutines to it
with ``asyncio.run_coroutine_threadsafe`` and wait, so they work from plain scripts *and*
from threads that are themselves running an event loop (LangChain calls sync tools that
way); async methods await the same futures. Reads are retried with exponential backoff;
writes are retried only when a retry cannot duplicate them (``store`` always carries a
``request_id``; ``record_turn`` is retried only if the failure happened before sending).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import json
import os
import shlex
import sys
import threading
import uuid
from collections.abc import Awaitable, Callable, Coroutine, Sequence
from contextlib import AsyncExitStack
from dataclasses import dataclass
from datetime import timedelta
from typing import Any, TextIO, TypeVar

import anyio
import httpx
from mcp import ClientSession, McpError
from mcp.types import CONNECTION_CLOSED, CallToolResult
from pydantic import BaseModel
from pydantic_core import to_jsonable_python
from tenacity import AsyncRetrying, retry_if_exception, stop_after_attempt, wait_exponential

from ..core.config import Settings, load_settings, validate_namespace
from ..core.engine import (
    CompressionResult,
    MemoryEngine,
    NamespaceStats,
    RecallResult,
    SkippedMemory,
    StoreResult,
    TurnResult,
)
from ..core.errors import InvalidInputError
from ..core.filters import RecallFilters
from ..core.inputs import MemoryInput
from ..core.records import MemoryRecord
from ..core.results import RecallHit
from .errors import (
    MemoryAuthError,
    MemoryNamespaceError,
    MemoryServerUnavailableError,
    MemoryTimeoutError,
    MemoryToolError,
    tool_error,
)
from .schemas import announced_namespace

T = TypeVar("T")

_TIMEOUT_CODE = 408  # the SDK reports a read timeout as McpError(code=httpx.codes.REQUEST_TIMEOUT)


@dataclass(frozen=True)
class _Transport:
    kind: str
    target: str
    open: Callable[[AsyncExitStack, float], Awaitable[ClientSession]]


class _LoopThread:
    """A private event loop on a daemon thread: the MCP session's home."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self._run, name="hindsight-mcp-client", daemon=True)
        self.thread.start()

    def _run(self) -> None:
        asyncio.set_event_loop(self.loop)
        self.loop.run_forever()

    def submit(self, coro: Coroutine[Any, Any, T]) -> concurrent.futures.Future[T]:
        if threading.current_thread() is self.thread:
            coro.close()
            raise RuntimeError("MemoryClient sync methods cannot be called from the client's own loop thread")
        return asyncio.run_coroutine_threadsafe(coro, self.loop)

    def stop(self) -> None:
        if self.loop.is_closed():
            return
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(timeout=10)
        if not self.thread.is_alive():
            self.loop.close()


def _unavailable(transport: _Transport, exc: BaseException, *, before_send: bool) -> MemoryServerUnavailableError:
    """Turn whatever the transport raised into one clear error naming transport and target."""
    leaves = _leaf_exceptions(exc)
    for leaf in leaves:
        if isinstance(leaf, MemoryServerUnavailableError):
            leaf.before_send = getattr(leaf, "before_send", before_send)  # type: ignore[attr-defined]
            return leaf
        if isinstance(leaf, httpx.HTTPStatusError) and leaf.response.status_code in (401, 403):
            err: MemoryServerUnavailableError = MemoryAuthError(
                transport.kind,
                transport.target,
                f"HTTP {leaf.response.status_code}: the server rejected the bearer token (set token= / HINDSIGHT_MCP_TOKEN)",
            )
            err.before_send = True  # type: ignore[attr-defined]
            return err
    leaf = leaves[0] if leaves else exc
    if isinstance(leaf, httpx.HTTPStatusError):
        reason = f"HTTP {leaf.response.status_code} from {leaf.request.url}"
    elif isinstance(leaf, (httpx.ConnectError, ConnectionError)):
        reason = f"cannot connect: {leaf}"
    elif isinstance(leaf, FileNotFoundError):
        reason = f"cannot start the server command: {leaf}"
    elif isinstance(leaf, McpError):
        reason = leaf.error.message
    else:
        reason = f"{type(leaf).__name__}: {leaf}" if str(leaf) else type(leaf).__name__
    err = MemoryServerUnavailableError(transport.kind, transport.target, reason)
    err.before_send = before_send  # type: ignore[attr-defined]
    return err


def _leaf_exceptions(exc: BaseException) -> list[BaseException]:
    if isinstance(exc, BaseExceptionGroup):
        out: list[BaseException] = []
        for inner in exc.exceptions:
            out.extend(_leaf_exceptions(inner))
        return out
    return [exc]


class MemoryClient:
    """Store and recall memories through the Hindsight MCP server, over any transport.

    Use one client per namespace (the server decides the namespace: the stdio/in-process
    server's own, or the HTTP token's). Close it when done, or use it as a context manager.
    ``namespace`` is the one the client was opened for: when the server announces another
    at connect, the connection is refused with ``MemoryNamespaceError``.
    """

    def __init__(
        self,
        transport: _Transport,
        *,
        namespace: str | None = None,
        timeout: float = 30.0,
        connect_timeout: float = 120.0,
        retries: int = 3,
        backoff: float = 0.2,
    ) -> None:
        self._transport = transport
        self._expected_namespace = validate_namespace(namespace) if namespace is not None else None
        self._announced_namespace: str | None = None
        self.timeout = timeout
        self.connect_timeout = connect_timeout
        self.retries = retries
        self.backoff = backoff
        self._loop = _LoopThread()
        self._session: ClientSession | None = None
        self._owner: asyncio.Task[None] | None = None
        self._stop: asyncio.Event | None = None
        self._lock: asyncio.Lock | None = None
        self._closed = False

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
        from mcp.client.stdio import StdioServerParameters, stdio_client

        if command is None:
            argv = [sys.executable, "-m", "hindsight_integrations.mcp"]
        elif isinstance(command, str):
            argv = shlex.split(command)
        else:
            argv = list(command)
        argv += list(args or [])
        child_env = {**os.environ, **(env or {})}
        if namespace is not None:
            child_env["HINDSIGHT_NAMESPACE"] = validate_namespace(namespace)
        params = StdioServerParameters(command=argv[0], args=argv[1:], env=child_env, cwd=cwd)

        async def open_stdio(stack: AsyncExitStack, read_timeout: float) -> ClientSession:
            read, write = await stack.enter_async_context(stdio_client(params, errlog=errlog or sys.stderr))
            session = await stack.enter_async_context(ClientSession(read, write))
            await session.initialize()
            return session

        return cls(_Transport("stdio", " ".join(argv), open_stdio), namespace=namespace, **options)

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
        from mcp.client.streamable_http import streamable_http_client
        from mcp.shared._httpx_utils import create_mcp_http_client

        if not url.startswith(("http://", "https://")):
            raise InvalidInputError("url", f"{url!r} is not an http(s) URL like http://127.0.0.1:8765/mcp")
        all_headers = dict(headers or {})
        if token:
            all_headers["Authorization"] = f"Bearer {token}"

        async def open_http(stack: AsyncExitStack, read_timeout: float) -> ClientSession:
            client = await stack.enter_async_context(
                create_mcp_http_client(
                    headers=all_headers, timeout=httpx.Timeout(30.0, read=max(read_timeout, 30.0) + 5)
                )
            )
            read, write, _ = await stack.enter_async_context(streamable_http_client(url, http_client=client))
            session = await stack.enter_async_context(ClientSession(read, write))
            await session.initialize()
            return session

        return cls(_Transport("http", url, open_http), namespace=namespace, **options)

    @classmethod
    def in_process(cls, engine: Any = None, namespace: str | None = None, **options: Any) -> MemoryClient:
        """A real MCP session over memory streams to a server bound to ``engine`` (built from env if None)."""
        from mcp.shared.memory import create_connected_server_and_client_session

        from .server import build_server

        engine = engine if engine is not None else MemoryEngine()
        server = build_server(engine, namespace=namespace)

        async def open_memory(stack: AsyncExitStack, read_timeout: float) -> ClientSession:
            return await stack.enter_async_context(create_connected_server_and_client_session(server))

        client = cls(
            _Transport("in-process", f"namespace {server.namespace}", open_memory),
            namespace=server.namespace,
            **options,
        )  # type: ignore[attr-defined]
        client.engine = engine  # type: ignore[attr-defined]
        client.server = server  # type: ignore[attr-defined]
        return client

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
        engine = engine_factory() if engine_factory is not None else MemoryEngine(settings or load_settings())
        return cls.in_process(engine, namespace=namespace, **options)

    from_env = from_settings

    @property
    def transport(self) -> str:
        return self._transport.kind

    @property
    def namespace(self) -> str | None:
        """The namespace this client serves, when known.

        What the server announced at connect, else what the client was opened for; None for
        an HTTP client opened without ``namespace`` before it connects (the token decides).
        """
        return self._announced_namespace or self._expected_namespace

    @property
    def target(self) -> str:
        return self._transport.target

    def __repr__(self) -> str:
        return f"MemoryClient({self._transport.kind} {self._transport.target})"

    # -- connection (runs on the client loop) ----------------------------------------------------
    async def _ensure_session(self) -> ClientSession:
        if self._closed:
            raise MemoryServerUnavailableError(self._transport.kind, self._transport.target, "the client is closed")
        if self._lock is None:
            self._lock = asyncio.Lock()
        async with self._lock:
            if self._session is not None and self._owner is not None and not self._owner.done():
                return self._session
            await self._drop()
            ready: asyncio.Future[ClientSession] = asyncio.get_running_loop().create_future()
            self._stop = asyncio.Event()
            self._owner = asyncio.create_task(self._own(ready, self._stop))
            try:
                self._session = await asyncio.wait_for(asyncio.shield(ready), self.connect_timeout)
            except TimeoutError:
                await self._drop()
                err = MemoryTimeoutError(
                    self._transport.kind,
                    self._transport.target,
                    f"no MCP handshake within {self.connect_timeout:.0f} s",
                )
                err.before_send = True  # type: ignore[attr-defined]
                raise err from None
            except BaseException as exc:
                await self._drop()
                if isinstance(exc, asyncio.CancelledError):
                    raise
                raise _unavailable(self._transport, exc, before_send=True) from exc
            return self._session

    async def _own(self, ready: asyncio.Future[ClientSession], stop: asyncio.Event) -> None:
        """Open the transport, hand the session over, hold it open until told to stop.

        The SDK's transports are anyio task groups that must be entered and exited by the
        same task; this task is that owner.
        """
        try:
            async with AsyncExitStack() as stack:
                session = await self._transport.open(stack, self.timeout)
                self._check_namespace(session)
                if not ready.done():
                    ready.set_result(session)
                await stop.wait()
        except BaseException as exc:
            if not ready.done():
                ready.set_exception(exc if isinstance(exc, Exception) else RuntimeError(repr(exc)))
            if isinstance(exc, (KeyboardInterrupt, SystemExit)):
                raise

    def _check_namespace(self, session: ClientSession) -> None:
        """Record the namespace the server announced; refuse the session if it is not ours."""
        capabilities = session.get_server_capabilities()
        announced = announced_namespace(capabilities.experimental if capabilities else None)
        expected = self._expected_namespace
        if announced is not None and expected is not None and announced != expected:
            err = MemoryNamespaceError(
                self._transport.kind,
                self._transport.target,
                f"the server serves namespace {announced!r} but this client was opened for {expected!r}"
                + (" (the bearer token belongs to another namespace)" if self._transport.kind == "http" else ""),
            )
            err.before_send = True  # type: ignore[attr-defined]
            raise err
        self._announced_namespace = announced

    async def _drop(self) -> None:
        """Close the current connection (if any) so the next call opens a fresh one."""
        owner, stop = self._owner, self._stop
        self._session = None
        self._owner = None
        if owner is None:
            return
        if stop is not None:
            stop.set()
        try:
            await asyncio.wait_for(owner, 15)
        except BaseException:  # noqa: BLE001 - a dead transport may fail to close cleanly; it is gone either way
            owner.cancel()

    async def _shutdown(self) -> None:
        self._closed = True
        await self._drop()

    # -- calling tools ---------------------------------------------------------------------------
    async def _call_on_loop(self, tool: str, arguments: dict[str, Any], idempotent: bool) -> dict[str, Any]:
        def retryable(exc: BaseException) -> bool:
            if not isinstance(exc, MemoryServerUnavailableError) or isinstance(exc, MemoryAuthError):
                return False
            return idempotent or bool(getattr(exc, "before_send", False))

        retrying = AsyncRetrying(
            stop=stop_after_attempt(self.retries + 1),
            wait=wait_exponential(multiplier=self.backoff, max=5),
            retry=retry_if_exception(retryable),
            reraise=True,
        )
        async for attempt in retrying:
            with attempt:
                session = await self._ensure_session()
                result = await self._send(session, tool, arguments)
        return _parse_result(tool, result)

    async def _send(self, session: ClientSession, tool: str, arguments: dict[str, Any]) -> CallToolResult:
        try:
            return await session.call_tool(tool, arguments, read_timeout_seconds=timedelta(seconds=self.timeout))
        except McpError as exc:
            if exc.error.code == _TIMEOUT_CODE:
                raise MemoryTimeoutError(
                    self._transport.kind, self._transport.target, f"{tool} did not answer within {self.timeout:.0f} s"
                ) from None
            if exc.error.code == CONNECTION_CLOSED:
                await self._drop()
                raise MemoryServerUnavailableError(
                    self._transport.kind, self._transport.target, f"connection closed during {tool}"
                ) from None
            raise MemoryToolError(tool, exc.error.message, error_type="protocol_error") from None
        except (
            anyio.ClosedResourceError,
            anyio.BrokenResourceError,
            anyio.EndOfStream,
            OSError,
            httpx.HTTPError,
        ) as exc:
            await self._drop()
            raise _unavailable(self._transport, exc, before_send=False) from exc

    def _submit(self, coro: Coroutine[Any, Any, T]) -> concurrent.futures.Future[T]:
        if self._closed:
            coro.close()
            raise MemoryServerUnavailableError(self._transport.kind, self._transport.target, "the client is closed")
        return self._loop.submit(coro)

    def _sync_deadline(self) -> float:
        return self.connect_timeout + (self.timeout + 6) * (self.retries + 1) + 30

    async def acall_tool(
        self, tool: str, arguments: dict[str, Any] | None = None, *, idempotent: bool = True
    ) -> dict[str, Any]:
        """Call any tool; returns its structured result or raises ``MemoryToolError``."""
        args = _prepare(arguments)
        return await asyncio.wrap_future(self._submit(self._call_on_loop(tool, args, idempotent)))

    def call_tool(
        self, tool: str, arguments: dict[str, Any] | None = None, *, idempotent: bool = True
    ) -> dict[str, Any]:
        args = _prepare(arguments)
        future = self._submit(self._call_on_loop(tool, args, idempotent))
        try:
            return future.result(timeout=self._sync_deadline())
        except concurrent.futures.TimeoutError:
            future.cancel()
            raise MemoryTimeoutError(self._transport.kind, self._transport.target, f"{tool} did not complete") from None

    async def _tool_names(self) -> list[str]:
        session = await self._ensure_session()
        return [t.name for t in (await session.list_tools()).tools]

    async def alist_tools(self) -> list[str]:
        """Names of the tools the server offers."""
        return await asyncio.wrap_future(self._submit(self._tool_names()))

    def list_tools(self) -> list[str]:
        return self._submit(self._tool_names()).result(timeout=self._sync_deadline())

    # -- the memory API (async) -----------------------------------------------------------------
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
        values (a key-value store), not for conversation text.
        """
        args = _store_arguments(
            memories, request_id, fields, apply_filter=apply_filter, dedup=dedup, supersede=supersede
        )
        return _store_result(await self.acall_tool("store_memory", args, idempotent=True))

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
        data = await self.acall_tool(
            "retrieve_memory", _recall_arguments(query, top_k, min_score, filters, token_budget, include_history)
        )
        return _recall_result(data)

    async def arecord_turn(
        self,
        content: str,
        *,
        session_id: str,
        role: str = "user",
        occurred_at: Any = None,
        metadata: dict[str, Any] | None = None,
    ) -> TurnResult:
        data = await self.acall_tool(
            "record_turn",
            {
                "content": content,
                "session_id": session_id,
                "role": _enum(role),
                "occurred_at": occurred_at,
                "metadata": metadata,
            },
            idempotent=False,
        )
        return _turn_result(data)

    async def aworking_memory(self, session_id: str) -> list[MemoryRecord]:
        data = await self.acall_tool("get_working_memory", {"session_id": session_id})
        return [MemoryRecord.model_validate(r) for r in data["turns"]]

    async def aclear_working(self, session_id: str) -> int:
        return int((await self.acall_tool("clear_working_memory", {"session_id": session_id}))["cleared"])

    async def acompress(
        self, session_id: str, *, threshold_tokens: int | None = None, force: bool = False
    ) -> CompressionResult | None:
        data = await self.acall_tool(
            "compress_memory", {"session_id": session_id, "threshold_tokens": threshold_tokens, "force": force or None}
        )
        return _compression(data["compression"])

    async def aupdate(self, memory_id: str, **changes: Any) -> MemoryRecord:
        data = await self.acall_tool("update_memory", {"id": memory_id, **{k: _enum(v) for k, v in changes.items()}})
        return MemoryRecord.model_validate(data["memory"])

    async def aforget(self, memory_id: str) -> MemoryRecord:
        return MemoryRecord.model_validate((await self.acall_tool("forget_memory", {"id": memory_id}))["memory"])

    async def alist(
        self,
        *,
        filters: RecallFilters | dict[str, Any] | None = None,
        include_history: bool = False,
        limit: int = 20,
        offset: int = 0,
    ) -> list[MemoryRecord]:
        data = await self.acall_tool(
            "list_memories",
            {
                "filters": _filters(filters),
                "include_history": include_history or None,
                "limit": limit,
                "offset": offset,
            },
        )
        return [MemoryRecord.model_validate(r) for r in data["memories"]]

    async def astats(self) -> NamespaceStats:
        return NamespaceStats.model_validate(await self.acall_tool("memory_stats", {}))

    async def adump(self, *, include_history: bool = True) -> str:
        return str((await self.acall_tool("dump_memory", {"include_history": include_history}))["dump"])

    # -- the memory API (sync) ------------------------------------------------------------------
    def store(
        self,
        memories: Any,
        *,
        request_id: str | None = None,
        apply_filter: bool = True,
        dedup: bool = True,
        supersede: bool = True,
        **fields: Any,
    ) -> StoreResult:
        args = _store_arguments(
            memories, request_id, fields, apply_filter=apply_filter, dedup=dedup, supersede=supersede
        )
        return _store_result(self.call_tool("store_memory", args, idempotent=True))

    def recall(
        self,
        query: str,
        *,
        top_k: int | None = None,
        min_score: float | None = None,
        filters: RecallFilters | dict[str, Any] | None = None,
        token_budget: int | None = None,
        include_history: bool = False,
    ) -> RecallResult:
        return _recall_result(
            self.call_tool(
                "retrieve_memory", _recall_arguments(query, top_k, min_score, filters, token_budget, include_history)
            )
        )

    def record_turn(
        self,
        content: str,
        *,
        session_id: str,
        role: str = "user",
        occurred_at: Any = None,
        metadata: dict[str, Any] | None = None,
    ) -> TurnResult:
        return _turn_result(
            self.call_tool(
                "record_turn",
                {
                    "content": content,
                    "session_id": session_id,
                    "role": _enum(role),
                    "occurred_at": occurred_at,
                    "metadata": metadata,
                },
                idempotent=False,
            )
        )

    def working_memory(self, session_id: str) -> list[MemoryRecord]:
        return [
            MemoryRecord.model_validate(r)
            for r in self.call_tool("get_working_memory", {"session_id": session_id})["turns"]
        ]

    def clear_working(self, session_id: str) -> int:
        return int(self.call_tool("clear_working_memory", {"session_id": session_id})["cleared"])

    def compress(
        self, session_id: str, *, threshold_tokens: int | None = None, force: bool = False
    ) -> CompressionResult | None:
        data = self.call_tool(
            "compress_memory", {"session_id": session_id, "threshold_tokens": threshold_tokens, "force": force or None}
        )
        return _compression(data["compression"])

    def update(self, memory_id: str, **changes: Any) -> MemoryRecord:
        return MemoryRecord.model_validate(
            self.call_tool("update_memory", {"id": memory_id, **{k: _enum(v) for k, v in changes.items()}})["memory"]
        )

    def forget(self, memory_id: str) -> MemoryRecord:
        return MemoryRecord.model_validate(self.call_tool("forget_memory", {"id": memory_id})["memory"])

    def list(
        self,
        *,
        filters: RecallFilters | dict[str, Any] | None = None,
        include_history: bool = False,
        limit: int = 20,
        offset: int = 0,
    ) -> list[MemoryRecord]:
        data = self.call_tool(
            "list_memories",
            {
                "filters": _filters(filters),
                "include_history": include_history or None,
                "limit": limit,
                "offset": offset,
            },
        )
        return [MemoryRecord.model_validate(r) for r in data["memories"]]

    def stats(self) -> NamespaceStats:
        return NamespaceStats.model_validate(self.call_tool("memory_stats", {}))

    def dump(self, *, include_history: bool = True) -> str:
        return str(self.call_tool("dump_memory", {"include_history": include_history})["dump"])

    # -- lifecycle --------------------------------------------------------------------------------
    def connect(self) -> MemoryClient:
        """Open the connection now (otherwise the first call does), so start-up errors surface early."""
        self._submit(self._ensure_session()).result(timeout=self.connect_timeout + 10)
        return self

    async def aconnect(self) -> MemoryClient:
        await asyncio.wrap_future(self._submit(self._ensure_session()))
        return self

    def close(self) -> None:
        if self._closed:
            return
        try:
            self._loop.submit(self._shutdown()).result(timeout=30)
        except (concurrent.futures.TimeoutError, RuntimeError):
            pass
        finally:
            self._closed = True
            self._loop.stop()

    async def aclose(self) -> None:
        if self._closed:
            return
        try:
            await asyncio.wrap_future(self._loop.submit(self._shutdown()))
        finally:
            self._closed = True
            await asyncio.to_thread(self._loop.stop)

    def __enter__(self) -> MemoryClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    async def __aenter__(self) -> MemoryClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()


# -- argument building and result parsing ------------------------------------------------------------


def _prepare(arguments: dict[str, Any] | None) -> dict[str, Any]:
    """JSON-ready arguments, None dropped; text that cannot be UTF-8 encoded is refused here.

    A lone surrogate cannot be serialised as UTF-8: sent as is, it breaks the transport's
    writer (on stdio, the whole connection), so it is an input error, caught before sending.
    """
    args = to_jsonable_python({k: v for k, v in (arguments or {}).items() if v is not None})
    _check_utf8(args, "")
    return args


def _check_utf8(value: Any, path: str) -> None:
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            raise InvalidInputError(
                path or "arguments", "is not valid UTF-8 text (it contains unpaired surrogates)"
            ) from None
    elif isinstance(value, dict):
        for key, item in value.items():
            _check_utf8(key, path)
            _check_utf8(item, f"{path}.{key}" if path else str(key))
    elif isinstance(value, list):
        for n, item in enumerate(value):
            _check_utf8(item, f"{path}[{n}]")


def _enum(value: Any) -> Any:
    return getattr(value, "value", value)


def _filters(filters: RecallFilters | dict[str, Any] | None) -> Any:
    if isinstance(filters, RecallFilters):
        return filters.model_dump(mode="json", exclude_none=True)
    return filters


def _memory_dict(item: Any) -> Any:
    if isinstance(item, MemoryInput):
        data = item.model_dump(mode="json", exclude_none=True, exclude_defaults=True)
        data.setdefault("content", item.content)
        if "source" in data:
            raise InvalidInputError("source", "provenance (`source`) is set by the server and cannot be sent over MCP")
        return data
    if isinstance(item, BaseModel):
        return item.model_dump(mode="json", exclude_none=True)
    return item


def _store_arguments(memories: Any, request_id: str | None, fields: dict[str, Any], **switches: bool) -> dict[str, Any]:
    """``store_memory`` arguments; the ``switches`` (apply_filter, dedup, supersede) are sent only
    when off (None is dropped by ``_prepare``), so ordinary writes still work against servers
    that predate them."""
    request_id = request_id or str(uuid.uuid4())
    sent: dict[str, Any] = {name: None if on else False for name, on in switches.items()}
    if isinstance(memories, str):
        return {"content": memories, "request_id": request_id, **sent, **{k: _enum(v) for k, v in fields.items()}}
    if fields:
        raise InvalidInputError(
            "fields", "keyword fields apply to a single string memory; put them inside each batch item instead"
        )
    items = [memories] if isinstance(memories, (dict, MemoryInput)) else list(memories)
    return {"memories": [_memory_dict(i) for i in items], "request_id": request_id, **sent}


def _recall_arguments(
    query: str, top_k: Any, min_score: Any, filters: Any, token_budget: Any, include_history: bool
) -> dict[str, Any]:
    return {
        "query": query,
        "top_k": top_k,
        "min_score": min_score,
        "filters": _filters(filters),
        "token_budget": token_budget,
        "include_history": include_history or None,
    }


def _parse_result(tool: str, result: CallToolResult) -> dict[str, Any]:
    text = "\n".join(getattr(c, "text", "") for c in result.content if getattr(c, "type", None) == "text")
    data = result.structuredContent
    if result.isError:
        payload = data.get("error") if isinstance(data, dict) else None
        raise tool_error(tool, payload, text.removeprefix("Error: "))
    if data is None:
        try:
            data = json.loads(text)
        except json.JSONDecodeError:
            raise MemoryToolError(
                tool, f"the server returned no structured result: {text[:200]}", error_type="protocol_error"
            ) from None
    return data


def _store_result(data: dict[str, Any]) -> StoreResult:
    return StoreResult(
        stored=[MemoryRecord.model_validate(r) for r in data["stored"]],
        skipped=[SkippedMemory.model_validate(s) for s in data["skipped"]],
        superseded=data.get("superseded", []),
        merged=data.get("merged", []),
        replayed=data.get("replayed", False),
    )


def _recall_result(data: dict[str, Any]) -> RecallResult:
    score_fields = [name for name in RecallHit.model_fields if name != "record"]
    hits = [
        RecallHit.model_validate(
            {"record": MemoryRecord.model_validate(m), **{k: m[k] for k in score_fields if k in m}}
        )
        for m in data["memories"]
    ]
    return RecallResult(query=data["query"], hits=hits, context=data["context"], tokens=data["tokens"])


def _compression(data: dict[str, Any] | None) -> CompressionResult | None:
    if data is None:
        return None
    return CompressionResult(
        summaries=[MemoryRecord.model_validate(r) for r in data["summaries"]],
        archived_ids=data["archived_ids"],
        tokens_before=data["tokens_before"],
        tokens_after=data["tokens_after"],
    )


def _turn_result(data: dict[str, Any]) -> TurnResult:
    return TurnResult(
        turn=MemoryRecord.model_validate(data["turn"]),
        stored=_store_result(data["stored"]),
        compression=_compression(data["compression"]),
    )


__all__ = ["MemoryClient"]
