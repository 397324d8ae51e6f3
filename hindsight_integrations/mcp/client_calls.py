"""``ToolCaller``: what every client of the memory server does, whatever it calls.

It holds the connection (``session.Connection``: a loop thread, the MCP session, reconnects),
calls any tool with the client's retry policy, refuses a call the server would refuse for its
size before sending it, and closes. ``MemoryClient`` adds the memory API on top.

The API is written once, as async methods; each sync method is generated from its async twin
(``blocking_twin``) and runs that coroutine on the client's own loop thread, so sync calls
work from plain scripts *and* from threads that are themselves running an event loop
(LangChain calls sync tools that way). Reads are retried with exponential backoff; writes only
when a retry cannot duplicate them (``acall_tool``'s ``idempotent``).
"""

from __future__ import annotations

import concurrent.futures
import functools
import json
from collections.abc import Callable, Coroutine
from typing import TYPE_CHECKING, Any, Concatenate, ParamSpec, Self, TypeVar

from pydantic import BaseModel
from tenacity import AsyncRetrying, retry_if_exception, stop_after_attempt, wait_exponential

from ..core.config import validate_namespace
from ..core.errors import InvalidInputError
from .body_guard import MAX_BODY_BYTES
from .errors import MemoryStoreUnavailableError, MemoryTimeoutError, MemoryToolInputError
from .protocol import parse_result, prepare_arguments
from .session import Connection
from .transports import Transport
from .wire import ToolArgs

if TYPE_CHECKING:
    from ..core.engine import MemoryEngine
    from .app import HindsightMCP

_ENVELOPE_BYTES = 4096  # the JSON-RPC request around the arguments
P = ParamSpec("P")
R = TypeVar("R")
M = TypeVar("M", bound=BaseModel)
C = TypeVar("C", bound="ToolCaller")


def blocking_twin(method: Callable[Concatenate[C, P], Coroutine[Any, Any, R]]) -> Callable[Concatenate[C, P], R]:
    """The blocking twin of an async client method: same parameters, same result, same errors.

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
    blocking.__qualname__ = f"{method.__qualname__.rpartition('.')[0]}.{name}"
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


class ToolCaller:
    """A connection to a memory server that calls its tools: the base of ``MemoryClient``.

    ``namespace`` is the one the client was opened for: when the server announces another at
    connect, the connection is refused with ``MemoryNamespaceError``.
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

    def expect_namespace(self, namespace: str) -> None:
        """Serve ``namespace`` only: a server that announces another one is refused at connect.

        For a client that cannot tell its namespace before its first call (an HTTP client opened
        without ``namespace``, whose token decides; another stdio command): an adapter handed it
        for one user claims it for that user, so a client of another user's token is refused
        before anything is sent, not used.
        """
        if self.namespace is None:
            self._connection.expected_namespace = validate_namespace(namespace)

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
        return f"{type(self).__name__}({self._transport.kind} {self._transport.target})"

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

    async def _ask(self, args: ToolArgs, answer: type[M], *, idempotent: bool = True) -> M:
        """Call ``args.tool`` with ``args`` and read its structured result as ``answer``."""
        try:
            arguments = args.wire()
        except InvalidInputError as exc:
            if isinstance(exc, MemoryToolInputError):
                raise
            raise MemoryToolInputError(args.tool, str(exc), error_type="invalid_input", field=exc.field) from None
        return answer.model_validate(await self.acall_tool(args.tool, arguments, idempotent=idempotent))

    async def amax_top_k(self) -> int | None:
        """The most memories one recall may return from this server (its ``max_top_k``), connecting if need be.

        Servers set it (``HINDSIGHT_MAX_TOP_K``), and a recall asking for more is refused, so a
        caller that asks for many reads it here. None: an older server, which announces none.
        """
        await self._connection.run(self._connection.ensure())
        return self._connection.announced_max_top_k

    # -- lifecycle ------------------------------------------------------------------------------
    async def aconnect(self) -> Self:
        """Open the connection now (otherwise the first call does), so start-up errors surface early."""
        await self._connection.run(self._connection.ensure())
        return self

    async def aclose(self) -> None:
        """Close the session and stop the loop thread; later calls raise ``MemoryServerUnavailableError``."""
        await self._connection.aclose()

    def close(self) -> None:
        """Blocking form of ``aclose`` (written out: the loop thread cannot join itself)."""
        self._connection.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    call_tool = blocking_twin(acall_tool)
    list_tools = blocking_twin(alist_tools)
    connect = blocking_twin(aconnect)
    max_top_k = blocking_twin(amax_top_k)


__all__ = ["ToolCaller", "blocking_twin"]
