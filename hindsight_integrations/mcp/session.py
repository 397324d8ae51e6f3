"""The client's connection: a private event-loop thread, the MCP session living on it, and retries.

The MCP SDK's transports are anyio task groups that must be entered and exited by one task,
so one owner task (``Connection._own``) opens the session and holds it until told to stop;
every call runs on that loop. A failed transport is dropped and the next call reopens it. A call
waits for its answer or for the owner to end, whichever comes first: when the transport fails
under it (an HTTP server gone, a token refused) or the client is closed, the SDK leaves a
waiting request unanswered until its timeout, so the call ends with the transport's failure now.

Retries (``retryable``): a transport failure is retried with exponential backoff when a retry
cannot run a write twice, that is when the call is idempotent (reads, and writes carrying a
``request_id``) or when the failure happened before anything was sent (``before_send``): before
the session opened, or a failure to connect (a server restarting) that can only be this call's.
Tool errors and auth errors are never retried: they would fail the same way again.

A ``--stateful`` HTTP server ends a session left idle and forgets every session when it
restarts; a call in such a session is answered 404 before the server runs it. The SDK reports
that as a "Session terminated" error and keeps the dead session, so every later call failed
the same way until the client was rebuilt. Such a call is now sent again, once and at once,
on a new session (``_in_live_session``), writes included: none of it was run.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
from collections.abc import Awaitable, Callable, Coroutine
from contextlib import AsyncExitStack
from datetime import timedelta
from typing import Any, Protocol, TypeVar

import anyio
import httpx
from mcp import ClientSession, McpError
from mcp.types import CONNECTION_CLOSED, CallToolResult
from tenacity import AsyncRetrying, retry_if_exception, stop_after_attempt, wait_exponential

from .errors import (
    MemoryAuthError,
    MemoryNamespaceError,
    MemoryServerUnavailableError,
    MemorySessionEndedError,
    MemoryTimeoutError,
    MemoryToolError,
)
from .protocol import announced_max_top_k, announced_namespace
from .transport_failures import never_connected, session_ended, unavailable
from .transports import Transport

T = TypeVar("T")

_TIMEOUT_CODE = 408  # the SDK reports a read timeout as McpError(code=httpx.codes.REQUEST_TIMEOUT)
_CALLS_ENDING_SECONDS = 10.0  # how long closing waits for the calls it cut short to end (a retry backs off 5 s at most)


class LoopThread:
    """A private event loop on a daemon thread: the MCP session's home, whichever thread calls."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self._run, name="hindsight-mcp-client", daemon=True)
        self.thread.start()

    def _run(self) -> None:
        asyncio.set_event_loop(self.loop)
        self.loop.run_forever()

    def is_current(self) -> bool:
        """Whether the caller runs on this loop's thread (where blocking on the loop would deadlock)."""
        return threading.current_thread() is self.thread

    def submit(self, coro: Coroutine[Any, Any, T]) -> concurrent.futures.Future[T]:
        """Schedule ``coro`` on the loop from another thread."""
        if self.is_current():
            coro.close()
            raise RuntimeError("MemoryClient sync methods cannot be called from the client's own loop thread")
        return asyncio.run_coroutine_threadsafe(coro, self.loop)

    def stop(self) -> None:
        """Stop the loop and close it once its thread has ended."""
        if self.loop.is_closed():
            return
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(timeout=10)
        if not self.thread.is_alive():
            self.loop.close()


def retryable(exc: BaseException, *, idempotent: bool) -> bool:
    """Whether a call that failed with ``exc`` may be sent again (see the module docstring)."""
    if not isinstance(exc, MemoryServerUnavailableError) or isinstance(exc, MemoryAuthError):
        return False
    return idempotent or exc.before_send


def _retrieved(task: asyncio.Future[Any]) -> None:
    """Take a cut-short call's outcome, so asyncio does not log it as never retrieved."""
    if not task.cancelled():
        task.exception()


class Policy(Protocol):
    """The timeouts and retry counts a ``Connection`` follows (``MemoryClient`` is one)."""

    timeout: float
    connect_timeout: float
    retries: int
    backoff: float


class Connection:
    """One transport's session, opened on first use, reopened after a failure, closed once.

    Everything but ``submit``/``close`` runs on ``loop``. ``expected_namespace`` is what the
    client was opened for: a server announcing another one is refused at connect, before any
    call is sent. ``policy`` is read at each call, so its values may change on a live client.
    """

    def __init__(self, transport: Transport, *, expected_namespace: str | None, policy: Policy) -> None:
        self.transport = transport
        self.expected_namespace = expected_namespace
        self.announced_namespace: str | None = None
        self.announced_max_top_k: int | None = None
        self.policy = policy
        self.loop = LoopThread()
        self.closed = False
        self._released = False
        self._session: ClientSession | None = None
        self._owner: asyncio.Task[BaseException | None] | None = None
        self._stop: asyncio.Event | None = None
        self._lock: asyncio.Lock | None = None
        self._calls: set[asyncio.Task[Any]] = set()  # calls in flight, ended before the loop stops
        self._answers: set[asyncio.Future[Any]] = set()  # their awaited answers, cut short by a close
        self._unanswered_when_ended = 0  # how many calls the last session left waiting when it failed

    def error(self, reason: str, *, before_send: bool = False) -> MemoryServerUnavailableError:
        """A ``MemoryServerUnavailableError`` naming this transport."""
        return MemoryServerUnavailableError(self.transport.kind, self.transport.target, reason, before_send=before_send)

    # -- opening and holding the session ---------------------------------------------------------
    async def ensure(self) -> ClientSession:
        """The open session, opening one (within ``connect_timeout``) if there is none or it died."""
        if self.closed:
            raise self.error("the client is closed")
        if self._lock is None:
            self._lock = asyncio.Lock()
        async with self._lock:
            if self._session is not None and self._owner is not None and not self._owner.done():
                return self._session
            await self.drop()
            ready: asyncio.Future[ClientSession] = asyncio.get_running_loop().create_future()
            self._stop = asyncio.Event()
            self._owner = asyncio.create_task(self._own(ready, self._stop))
            try:
                self._session = await asyncio.wait_for(asyncio.shield(ready), self.policy.connect_timeout)
            except TimeoutError:
                await self.drop()
                raise MemoryTimeoutError(
                    self.transport.kind,
                    self.transport.target,
                    f"no MCP handshake within {self.policy.connect_timeout:g} s",
                    before_send=True,
                ) from None
            except BaseException as exc:
                await self.drop()
                if isinstance(exc, asyncio.CancelledError):
                    raise
                raise unavailable(self.transport, exc, before_send=True) from exc
            return self._session

    async def _own(self, ready: asyncio.Future[ClientSession], stop: asyncio.Event) -> BaseException | None:
        """Open the transport, hand the session over, hold it open until told to stop.

        Returns why the transport ended once the session was handed over (None: told to stop),
        for the calls it leaves unanswered (``_send``).
        """
        try:
            async with AsyncExitStack() as stack:
                session = await self.transport.open(stack, self.policy.timeout)
                self._check_namespace(session)
                if not ready.done():
                    ready.set_result(session)
                await stop.wait()
        except BaseException as exc:
            self._unanswered_when_ended = sum(not answer.done() for answer in self._answers)
            if not ready.done():
                ready.set_exception(exc if isinstance(exc, Exception) else RuntimeError(repr(exc)))
            if isinstance(exc, (KeyboardInterrupt, SystemExit)):
                raise
            return exc
        return None

    def _check_namespace(self, session: ClientSession) -> None:
        """Record the namespace and limit the server announced; refuse the session if the namespace is not ours."""
        capabilities = session.get_server_capabilities()
        experimental = capabilities.experimental if capabilities else None
        announced = announced_namespace(experimental)
        expected = self.expected_namespace
        if announced is not None and expected is not None and announced != expected:
            raise MemoryNamespaceError(
                self.transport.kind,
                self.transport.target,
                f"the server serves namespace {announced!r} but this client was opened for {expected!r}"
                + (" (the bearer token belongs to another namespace)" if self.transport.kind == "http" else ""),
                before_send=True,
            )
        self.announced_namespace = announced
        self.announced_max_top_k = announced_max_top_k(experimental)

    async def drop(self, session: ClientSession | None = None) -> None:
        """Close the current session (if any, or if it is still ``session``) so the next call opens a fresh one."""
        if session is not None and session is not self._session:
            return  # another call has replaced it already
        owner, stop = self._owner, self._stop
        self._session = None
        self._owner = None
        if owner is None or owner.done():
            return
        if stop is not None:
            stop.set()
        try:
            await asyncio.wait_for(owner, 15)
        except BaseException:  # noqa: BLE001 - a dead transport may fail to close cleanly; it is gone either way
            owner.cancel()

    async def shutdown(self) -> None:
        """Refuse further calls, end the calls in flight with an error, and close the session."""
        self.closed = True
        for answer in self._answers:
            answer.cancel()
        cut_short = self._calls - {asyncio.current_task()}
        if cut_short:
            await asyncio.wait(cut_short, timeout=_CALLS_ENDING_SECONDS)
        await self.drop()

    # -- calls ----------------------------------------------------------------------------------
    async def call(self, tool: str, arguments: dict[str, Any], *, idempotent: bool) -> CallToolResult:
        """Call ``tool``, retrying transport failures as ``retryable`` allows."""
        retrying = AsyncRetrying(
            stop=stop_after_attempt(self.policy.retries + 1),
            wait=wait_exponential(multiplier=self.policy.backoff, max=5),
            retry=retry_if_exception(lambda exc: not self.closed and retryable(exc, idempotent=idempotent)),
            reraise=True,
        )
        timeout = timedelta(seconds=self.policy.timeout)

        def calling(session: ClientSession) -> Awaitable[CallToolResult]:
            return session.call_tool(tool, arguments, read_timeout_seconds=timeout)

        task = asyncio.current_task()
        if task is not None:
            self._calls.add(task)
        try:
            async for attempt in retrying:
                with attempt:
                    result = await self._in_live_session(tool, calling)
            return result
        finally:
            if task is not None:
                self._calls.discard(task)

    async def _in_live_session(self, tool: str, request: Callable[[ClientSession], Awaitable[T]]) -> T:
        """``request``'s answer in the open session, or in a new one if the server no longer knows it (once).

        A second 404 right after opening a session means the server does not keep them: most
        likely a load balancer sends each request of a ``--stateful`` server to another replica.
        """
        session = await self.ensure()
        try:
            return await self._send(session, tool, request)
        except MemorySessionEndedError:
            await self.drop(session)
        session = await self.ensure()
        try:
            return await self._send(session, tool, request)
        except MemorySessionEndedError:
            await self.drop(session)
            raise MemorySessionEndedError(
                self.transport.kind,
                self.transport.target,
                f"the server did not know the MCP session it had just opened, so {tool} was not run; a server "
                "behind a load balancer needs sticky sessions to serve --stateful, or run it without --stateful",
                before_send=True,
            ) from None

    async def _send(self, session: ClientSession, tool: str, request: Callable[[ClientSession], Awaitable[T]]) -> T:
        """``request``'s answer, or the failure of the transport (or the close) that ended the session first."""
        owner = self._owner
        answer = asyncio.ensure_future(request(session))
        self._answers.add(answer)
        try:
            if owner is not None:
                await asyncio.wait({answer, owner}, return_when=asyncio.FIRST_COMPLETED)
            if not answer.done() or answer.cancelled():
                raise await self._ended_during(tool, owner)
            return answer.result()
        except McpError as exc:
            if exc.error.code == _TIMEOUT_CODE:
                raise MemoryTimeoutError(
                    self.transport.kind,
                    self.transport.target,
                    f"{tool} did not answer within {self.policy.timeout:g} s",
                ) from None
            if session_ended(exc):
                raise MemorySessionEndedError(
                    self.transport.kind,
                    self.transport.target,
                    f"the server no longer knows this MCP session (it ended it as idle, or restarted); {tool} was "
                    "not run",
                    before_send=True,
                ) from None
            if exc.error.code == CONNECTION_CLOSED:
                await self.drop()
                raise self.error(f"connection closed during {tool}") from None
            raise MemoryToolError(tool, exc.error.message, error_type="protocol_error") from None
        except (anyio.ClosedResourceError, anyio.BrokenResourceError) as exc:
            # Raised by the session's write stream, in this process: the request was never sent
            # (a spawned server that died leaves it closed), so even a non-idempotent call is retried.
            await self.drop()
            raise unavailable(self.transport, exc, before_send=True) from exc
        except (anyio.EndOfStream, OSError, httpx.HTTPError) as exc:
            await self.drop()
            raise unavailable(self.transport, exc, before_send=never_connected(exc)) from exc
        finally:
            self._answers.discard(answer)
            if not answer.done():
                answer.cancel()
                answer.add_done_callback(_retrieved)

    async def _ended_during(self, tool: str, owner: asyncio.Task[BaseException | None] | None) -> Exception:
        """The error of a call whose session ended (or was closed) before it was answered; it may have been sent.

        The session's failure is every waiting call's: a failure to connect proves this call was not
        sent only when no other call was waiting, whose own request may be the one that failed.
        """
        if self.closed:  # shutdown closes the session
            return self.error(f"the client was closed during {tool}")
        failure = owner.result() if owner is not None and owner.done() and not owner.cancelled() else None
        await self.drop()
        if failure is None:
            return self.error(f"connection closed during {tool}")
        alone = self._unanswered_when_ended <= 1
        return unavailable(self.transport, failure, before_send=alone and never_connected(failure))

    async def tool_names(self) -> list[str]:
        """Names of the tools the server offers."""
        listing = await self._in_live_session("tools/list", lambda session: session.list_tools())
        return [t.name for t in listing.tools]

    # -- running on the loop from any thread ---------------------------------------------------
    def submit(self, coro: Coroutine[Any, Any, T]) -> concurrent.futures.Future[T]:
        """Schedule ``coro`` on the connection's loop (refused once the client is closed)."""
        if self.closed:
            coro.close()
            raise self.error("the client is closed")
        return self.loop.submit(coro)

    async def run(self, coro: Coroutine[Any, Any, T]) -> T:
        """Await ``coro`` on the connection's loop, from that loop or from any other."""
        if self.loop.is_current():
            return await coro
        return await asyncio.wrap_future(self.submit(coro))

    def sync_deadline(self) -> float:
        """How long a blocking call waits at most: connect, every attempt with its backoff, and slack."""
        return self.policy.connect_timeout + (self.policy.timeout + 6) * (self.policy.retries + 1) + 30

    def close(self) -> None:
        """Close the session and stop the loop thread (blocking; safe to call twice)."""
        if self.closed:
            return
        try:
            self.loop.submit(self.shutdown()).result(timeout=30)
        except (concurrent.futures.TimeoutError, RuntimeError):
            pass
        finally:
            self.closed = True
            self.loop.stop()
            self._release()

    async def aclose(self) -> None:
        """``close`` for async callers: the loop thread is joined off the caller's loop."""
        if self.closed:
            return
        try:
            await asyncio.wrap_future(self.loop.submit(self.shutdown()))
        finally:
            self.closed = True
            await asyncio.to_thread(self.loop.stop)
            await asyncio.to_thread(self._release)

    def _release(self) -> None:
        if self.transport.release is not None and not self._released:
            self._released = True
            self.transport.release()


__all__ = ["Connection", "LoopThread", "Policy", "retryable", "unavailable"]
