"""Errors raised by the MCP client.

Two families, because callers must react differently: a *transport* failure
(``MemoryServerUnavailableError``: the server could not be reached, did not answer in time,
or refused the token) may be retried; a *tool* failure (``MemoryToolError``: the server ran
the tool and said no) will fail the same way again until the input changes. Tool errors
that mirror an engine error also subclass that engine error, so an adapter catching
``InvalidInputError`` or ``MemoryNotFoundError`` behaves the same in-process and over MCP.
"""

from __future__ import annotations

from typing import Any

from ..core.errors import HindsightError, InvalidInputError, MemoryNotFoundError, StoreUnavailableError


class MemoryServerUnavailableError(HindsightError):
    """The memory server could not be reached or stopped answering.

    ``transport`` is "stdio", "http" or "in-process"; ``target`` is the command or URL.
    ``before_send`` is True when the failure happened before the call could have reached the
    server (no connection, refused handshake): retrying then cannot run a write twice, so even
    a non-idempotent call is retried. False means "possibly sent", the safe assumption.
    """

    headline = "memory server unavailable"
    """How the message starts: what happened, in words a person reads first."""

    def __init__(self, transport: str, target: str, reason: str, *, before_send: bool = False) -> None:
        self.transport = transport
        self.target = target
        self.reason = reason
        self.before_send = before_send
        super().__init__(f"{self.headline} ({transport} {target}): {reason}")


class MemoryTimeoutError(MemoryServerUnavailableError):
    """A call did not complete within the client's timeout (the server may still finish it)."""


class MemorySessionEndedError(MemoryServerUnavailableError):
    """A ``--stateful`` HTTP server answered 404 "Session not found" for the client's MCP session.

    It ended the session (idle past ``HINDSIGHT_SESSION_IDLE_SECONDS``, or deleted) or lost it
    in a restart. The server refused the call before running it, so any call may be sent again
    on a new session: the client does that once by itself, and raises this only when the new
    session was not known either.
    """


class MemoryAuthError(MemoryServerUnavailableError):
    """The HTTP server rejected the bearer token (401/403). Retrying will not help.

    A subclass of ``MemoryServerUnavailableError`` so callers that catch "cannot use the
    server" catch it too, but its message says the server answered and refused, not that it
    is down: the fix is the token, not the server.
    """

    headline = "memory server refused the connection"


class MemoryNamespaceError(MemoryAuthError):
    """The server announced another namespace than the client was opened for. Retrying will not help.

    Over HTTP this means the bearer token belongs to another user; over stdio, that the
    spawned command ignored the namespace it was given. Either way no call is sent, because
    it would read or write someone else's memories.
    """

    headline = "memory server refused the namespace"


class MemoryToolError(HindsightError):
    """The server ran a tool and reported an error; ``message`` is the server's explanation."""

    field: str | None

    def __init__(
        self,
        tool: str,
        message: str,
        *,
        error_type: str | None = None,
        field: str | None = None,
        details: dict[str, Any] | None = None,
    ) -> None:
        self.tool = tool
        self.message = message
        self.error_type = error_type
        self.field = field
        self.details = details or {}
        HindsightError.__init__(self, f"{tool} failed: {message}")

    def __str__(self) -> str:
        return f"{self.tool} failed: {self.message}"


class MemoryToolInputError(MemoryToolError, InvalidInputError):
    """The server rejected the arguments (validation); ``field`` names the bad argument.

    As for every ``InvalidInputError``, ``field`` is a string: ``"arguments"`` when the server
    named no field (an unknown tool).
    """

    field: str

    def __init__(
        self,
        tool: str,
        message: str,
        *,
        error_type: str | None = None,
        field: str | None = None,
        details: dict[str, Any] | None = None,
    ) -> None:
        MemoryToolError.__init__(self, tool, message, error_type=error_type, field=field, details=details)
        self.field = field or "arguments"


class MemoryToolNotFoundError(MemoryToolError, MemoryNotFoundError):
    """The memory id named in the call does not exist in the caller's namespace."""

    def __init__(
        self,
        tool: str,
        message: str,
        *,
        error_type: str | None = None,
        field: str | None = None,
        details: dict[str, Any] | None = None,
    ) -> None:
        MemoryToolError.__init__(self, tool, message, error_type=error_type, field=field, details=details)
        self.memory_id = (details or {}).get("memory_id", "")
        self.namespace = (details or {}).get("namespace", "")

    def __str__(self) -> str:
        return MemoryToolError.__str__(self)


class MemoryStoreUnavailableError(MemoryToolError, StoreUnavailableError):
    """The server is up but its memory store (Chroma) did not answer: worth retrying a little later.

    ``MemoryClient`` retries it itself for reads and for writes a retry cannot duplicate.
    """


def tool_error(tool: str, payload: dict[str, Any] | None, text: str) -> MemoryToolError:
    """Build the most specific client exception from a tool's structured error payload."""
    payload = payload or {}
    error_type = payload.get("type")
    message = payload.get("message") or text or "unknown error"
    field = payload.get("field")
    details = {k: v for k, v in payload.items() if k not in ("type", "message", "field")}
    cls: type[MemoryToolError] = MemoryToolError
    if error_type in ("invalid_input", "unknown_argument", "unknown_tool"):
        cls = MemoryToolInputError
    elif error_type == "not_found":
        cls = MemoryToolNotFoundError
    elif error_type == "store_unavailable":
        cls = MemoryStoreUnavailableError
    return cls(tool, message, error_type=error_type, field=field, details=details)


__all__ = [
    "MemoryAuthError",
    "MemoryNamespaceError",
    "MemoryServerUnavailableError",
    "MemorySessionEndedError",
    "MemoryStoreUnavailableError",
    "MemoryTimeoutError",
    "MemoryToolError",
    "MemoryToolInputError",
    "MemoryToolNotFoundError",
    "tool_error",
]
