"""How a transport's failure becomes the client's error, and whether it proves the call was never sent.

``before_send`` decides whether a write that is not idempotent may be sent again (``session.retryable``).
A failure to connect (``never_connected``) proves nothing left the client: a server restarting
refuses connections for a moment, and a ``record_turn`` sent then was given up at once although a
retry could not have run it twice. A read or a closed connection proves nothing: the server may
have run the call before it went away.
"""

from __future__ import annotations

import httpx
from mcp import McpError
from mcp.types import INVALID_REQUEST

from .errors import MemoryAuthError, MemoryServerUnavailableError
from .transports import Transport, server_says

_CONNECT_FAILURES = (httpx.ConnectError, httpx.ConnectTimeout)  # raised before a byte of the request was written


def session_ended(exc: McpError) -> bool:
    """Whether the server answered 404 for the session: it ended it (idle, deleted) or lost it (a restart).

    The SDK reports that 404 as this error, with INVALID_REQUEST's code without its minus sign.
    """
    return abs(exc.error.code) == abs(INVALID_REQUEST) and exc.error.message == "Session terminated"


def unavailable(transport: Transport, exc: BaseException, *, before_send: bool) -> MemoryServerUnavailableError:
    """Turn whatever the transport raised into one clear error naming transport and target."""
    leaves = _leaf_exceptions(exc)
    for leaf in leaves:
        if isinstance(leaf, MemoryServerUnavailableError):
            return leaf  # ours already (e.g. the namespace check), with its own before_send
        if isinstance(leaf, httpx.HTTPStatusError) and leaf.response.status_code in (401, 403):
            return MemoryAuthError(
                transport.kind,
                transport.target,
                f"HTTP {leaf.response.status_code}: the server rejected the bearer token "
                "(set token= / HINDSIGHT_MCP_TOKEN)",
                before_send=True,
            )
    leaf = leaves[0] if leaves else exc
    if isinstance(leaf, httpx.HTTPStatusError):
        reason = f"HTTP {leaf.response.status_code} from {leaf.request.url}" + server_says(leaf.response)
    elif isinstance(leaf, (httpx.ConnectError, ConnectionError)):
        reason = f"cannot connect: {leaf}"
    elif isinstance(leaf, FileNotFoundError):
        reason = f"cannot start the server command: {leaf}"
    elif isinstance(leaf, McpError) and session_ended(leaf) and transport.kind == "http":
        reason = (
            "HTTP 404 to the MCP handshake: is the URL right? (`hindsight serve` answers MCP at http://HOST:PORT/mcp)"
        )
    elif isinstance(leaf, McpError):
        reason = leaf.error.message
    else:
        reason = f"{type(leaf).__name__}: {leaf}" if str(leaf) else type(leaf).__name__
    if transport.last_words is not None and (words := transport.last_words()) is not None:
        reason += f"; the server exited saying: {words}" if words else "; the server exited without a word on stderr"
    return MemoryServerUnavailableError(transport.kind, transport.target, reason, before_send=before_send)


def _leaf_exceptions(exc: BaseException) -> list[BaseException]:
    if isinstance(exc, BaseExceptionGroup):
        out: list[BaseException] = []
        for inner in exc.exceptions:
            out.extend(_leaf_exceptions(inner))
        return out
    return [exc]


def never_connected(exc: BaseException) -> bool:
    """Whether ``exc`` is (or only holds) failures to connect, so the request it ended was never sent."""
    leaves = _leaf_exceptions(exc)
    return bool(leaves) and all(isinstance(leaf, _CONNECT_FAILURES) for leaf in leaves)


__all__ = ["never_connected", "session_ended", "unavailable"]
