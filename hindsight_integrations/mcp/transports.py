"""The three ways ``MemoryClient`` reaches a memory server, each a function returning a ``Transport``.

A ``Transport`` only knows how to open one MCP session (``open``); holding it open, retrying
and closing belong to ``session.Connection``. Nothing here imports the server or the engine at
module level: ``in_process`` imports them when called, so a client of a remote server never
loads Chroma or an embedding model.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shlex
import sys
from collections.abc import Awaitable, Callable, Sequence
from contextlib import AsyncExitStack
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal, TextIO

import httpx
from mcp import ClientSession

from ..core.config import Settings, validate_namespace
from ..core.errors import InvalidInputError
from .server_stderr import StderrTail

if TYPE_CHECKING:
    from ..core.engine import MemoryEngine
    from .app import HindsightMCP

_REFUSAL_BYTES = 64 * 1024
_QUOTED_CHARS = 500  # of a refusal's message, in an error

TransportKind = Literal["stdio", "http", "in-process"]

Opener = Callable[[AsyncExitStack, float], Awaitable[ClientSession]]
"""Open an initialised session whose resources ``stack`` owns; the float is the call timeout in seconds."""


@dataclass(frozen=True)
class Transport:
    """How to open a session to one server: ``kind`` and ``target`` name it in errors and logs.

    ``server`` is the in-process server (None otherwise); holding it here keeps it, and the
    engine it serves, alive as long as the client. ``namespace`` is the namespace the server
    will serve when that is known before connecting (in-process, or a stdio server told
    which one, or our own command with its defaults); None when only the server can say (an
    HTTP token, another command). ``last_words`` (stdio) returns what a spawned server wrote to
    stderr about why it stopped once it has exited ("" if nothing), else None (``server_stderr``).
    """

    kind: TransportKind
    target: str
    open: Opener
    server: HindsightMCP | None = None
    namespace: str | None = None
    last_words: Callable[[], str | None] | None = None
    release: Callable[[], object] | None = None


def stdio(
    command: Sequence[str] | str | None = None,
    args: Sequence[str] | None = None,
    env: dict[str, str] | None = None,
    namespace: str | None = None,
    *,
    cwd: str | None = None,
    errlog: TextIO | None = None,
) -> Transport:
    """Spawn a stdio server. Default command: ``[sys.executable, "-m", "hindsight_integrations.mcp"]``.

    The child inherits this process's environment (so ``HINDSIGHT_*`` settings carry over)
    plus ``env``; ``namespace`` sets its ``HINDSIGHT_NAMESPACE`` (the server's ``--namespace``
    fallback, so any command honouring the environment serves it).
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
    elif child_env.get("HINDSIGHT_NAMESPACE"):  # the server would refuse it and exit: say so here, and why
        validate_namespace(child_env["HINDSIGHT_NAMESPACE"], "HINDSIGHT_NAMESPACE")
    served = namespace if namespace is not None or command is not None else _default_server_namespace(args, child_env)
    params = StdioServerParameters(command=argv[0], args=argv[1:], env=child_env, cwd=cwd)
    tails: list[StderrTail] = []

    async def open_stdio(stack: AsyncExitStack, read_timeout: float) -> ClientSession:
        tail = StderrTail(errlog or sys.stderr)
        tails[:] = [tail]
        try:
            read, write = await stack.enter_async_context(stdio_client(params, errlog=tail.child_end))
        finally:
            tail.child_end.close()
        session = await stack.enter_async_context(ClientSession(read, write))
        await session.initialize()
        return session

    def last_words() -> str | None:
        return tails[0].last_words() if tails else None

    return Transport("stdio", " ".join(argv), open_stdio, namespace=served, last_words=last_words)


def _default_server_namespace(args: Sequence[str] | None, child_env: dict[str, str]) -> str | None:
    """The namespace ``python -m hindsight_integrations.mcp [args]`` will serve with ``child_env``.

    The server's own order (``__main__`` → ``Settings``): ``--namespace``, then
    ``HINDSIGHT_NAMESPACE``, then the settings' default. None when that value is not a valid
    namespace: the server refuses to start then, and says why.
    """
    option = argparse.ArgumentParser(add_help=False)
    option.add_argument("--namespace")
    given = option.parse_known_args(list(args or []))[0].namespace
    value = given or child_env.get("HINDSIGHT_NAMESPACE") or Settings.model_fields["namespace"].default
    try:
        return validate_namespace(value)
    except InvalidInputError:
        return None


def http(url: str, token: str | None = None, *, headers: dict[str, str] | None = None) -> Transport:
    """Streamable HTTP to ``url`` (e.g. ``http://127.0.0.1:8765/mcp``), with ``token`` as the bearer token."""
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared._httpx_utils import create_mcp_http_client

    if not url.startswith(("http://", "https://")):
        raise InvalidInputError("url", f"{url!r} is not an http(s) URL like http://127.0.0.1:8765/mcp")
    all_headers = dict(headers or {})
    if token:
        all_headers["Authorization"] = f"Bearer {token}"

    async def open_http(stack: AsyncExitStack, read_timeout: float) -> ClientSession:
        client = await stack.enter_async_context(
            create_mcp_http_client(headers=all_headers, timeout=httpx.Timeout(30.0, read=max(read_timeout, 30.0) + 5))
        )
        client.event_hooks["response"].append(read_refusal)
        read, write, session_id = await stack.enter_async_context(
            streamable_http_client(url, http_client=client, terminate_on_close=False)
        )
        stack.push_async_callback(_end_session, client, url, session_id)
        session = await stack.enter_async_context(ClientSession(read, write))
        await session.initialize()
        return session

    return Transport("http", url, open_http)


async def read_refusal(response: httpx.Response) -> None:
    """Read a small refusal's body, which the SDK leaves unread, so the client's error can quote what it says to do.

    The server's 429s and 503s (too many sessions, the rate limit) say what to do in it.
    """
    length = response.headers.get("content-length", "")
    if response.status_code >= 400 and length.isdigit() and int(length) <= _REFUSAL_BYTES:
        await response.aread()


def server_says(response: httpx.Response) -> str:
    """What a refusal's body explains (our 429s and 503s say what to do), as ``": <message>"``; "" if nothing.

    Its body was read only when small (``read_refusal``); a longer one is not quoted.
    """
    try:
        body = json.loads(response.content)
    except (httpx.ResponseNotRead, ValueError):
        return ""
    if not isinstance(body, dict):
        return ""
    error = body.get("error")
    message = body.get("message") or (error.get("message") if isinstance(error, dict) else None)
    return f": {message[:_QUOTED_CHARS]}" if isinstance(message, str) and message else ""


async def _end_session(client: httpx.AsyncClient, url: str, session_id: Callable[[], str | None]) -> None:
    """Tell a ``--stateful`` server the session is over (``DELETE``), so its place is free now, not when idle.

    Done here, not by the SDK, which logs a warning when the session is already gone: after
    the server ended it or restarted (404), or when it is down, there is nothing left to end.
    """
    if (ended := session_id()) is None:
        return
    with contextlib.suppress(httpx.HTTPError):
        await client.delete(url, headers={"mcp-session-id": ended}, timeout=5)


def in_process(engine: MemoryEngine | None = None, namespace: str | None = None, *, owned: bool = False) -> Transport:
    """A real MCP session over memory streams to a server bound to ``engine`` (built from the environment if None).

    An engine built here, or given with ``owned``, is the client's: closing the client closes it.
    The server and the engine are imported here, not at module level: they bring Chroma.
    """
    from mcp.shared.memory import create_connected_server_and_client_session

    from .app import build_server

    if engine is None:
        from ..core.engine import MemoryEngine

        engine, owned = MemoryEngine(), True
    server = build_server(engine, namespace=namespace)

    async def open_memory(stack: AsyncExitStack, read_timeout: float) -> ClientSession:
        return await stack.enter_async_context(create_connected_server_and_client_session(server))

    return Transport(
        "in-process",
        f"namespace {server.namespace}",
        open_memory,
        server=server,
        namespace=server.namespace,
        release=engine.close if owned else None,
    )


__all__ = ["Opener", "Transport", "TransportKind", "http", "in_process", "server_says", "stdio"]
