"""How a failed tool call becomes a result a model can read, never a crash.

A call refused before its tool runs (no authenticated namespace, an unknown tool or argument,
the rate limit) is a ``Refusal``; a tool that raised is described by what caused it
(``describe_failure``): bad input naming the field, an unknown memory, a store that did not
answer (retryable), an engine error, or a bug. Either way the answer is an error result
(``error_result``) whose structured content the client turns back into the most specific
``MemoryToolError`` (``protocol.parse_result``). A resource read refused the same way is a
JSON-RPC error carrying the same payload (``Refusal.as_mcp_error``).
"""

from __future__ import annotations

from typing import Any

import httpx
from mcp.server.fastmcp.exceptions import ToolError
from mcp.shared.exceptions import McpError
from mcp.types import CallToolResult, ErrorData, TextContent
from pydantic import ValidationError

from ..core.errors import HindsightError, InvalidInputError, MemoryNotFoundError, StoreUnavailableError
from ..core.redaction import describe_error
from .observability import log, quote_briefly
from .protocol import validation_message

REFUSED = -32029
"""JSON-RPC error code of a request refused before it ran (in the range JSON-RPC leaves to servers; 429 as in HTTP)."""


class Refusal(Exception):
    """A call refused before the tool ran (unknown tool/argument, auth, rate limit)."""

    def __init__(self, kind: str, message: str, **details: Any) -> None:
        super().__init__(message)
        self.kind = kind
        self.message = message
        self.details = details

    def payload(self) -> dict[str, Any]:
        """The error as the client reads it: type, message and the details (field, retry_after...)."""
        return {"type": self.kind, "message": self.message, **self.details}

    def as_mcp_error(self) -> McpError:
        """The refusal as the JSON-RPC error of a request that is not a tool call (a resource read)."""
        return McpError(ErrorData(code=REFUSED, message=self.message, data=self.payload()))


def rate_limited(namespace: str, wait: float) -> Refusal:
    """The refusal of a request past ``namespace``'s rate limit, saying when to retry."""
    return Refusal(
        "rate_limited",
        f"rate limit for namespace {namespace!r} exceeded; retry in {wait:.1f} s",
        retry_after=round(wait, 2),
    )


def describe_failure(tool: str, exc: ToolError) -> tuple[str, dict[str, Any]]:
    """(outcome, error payload) of a tool that raised: the client rebuilds its exception from the payload."""
    cause = exc.__cause__
    if isinstance(cause, ValidationError):
        field, message = validation_message(cause)
        return "invalid_input", {"type": "invalid_input", "field": field, "message": f"{field}: {message}"}
    if isinstance(cause, InvalidInputError):
        return "invalid_input", {"type": "invalid_input", "field": cause.field, "message": str(cause)}
    if isinstance(cause, MemoryNotFoundError):
        return "not_found", {
            "type": "not_found",
            "message": str(cause),
            "memory_id": cause.memory_id,
            "namespace": cause.namespace,
        }
    if cause is not None and store_outage(cause):
        log.warning(
            "the memory store did not answer",
            extra={"fields": {"tool": tool, "error": quote_briefly(describe_error(cause), 300)}},
        )
        return "store_unavailable", {
            "type": "store_unavailable",
            "message": f"the memory store did not answer ({type(cause).__name__}); retry shortly",
            "retryable": True,
        }
    if isinstance(cause, HindsightError):
        return "error", {"type": type(cause).__name__, "message": str(cause)}
    if cause is None:
        return "error", {"type": "error", "message": str(exc)}
    log.error("tool raised an unexpected error", exc_info=cause, extra={"fields": {"tool": tool}})
    return "internal_error", {
        "type": "internal_error",
        "message": f"internal error in {tool}: {type(cause).__name__}: {cause}",
    }


def store_outage(exc: BaseException | None) -> bool:
    """Whether ``exc`` (or what caused it) means Chroma could not be reached, rather than a bug."""
    seen = 0
    while exc is not None and seen < 10:
        if isinstance(exc, (StoreUnavailableError, ConnectionError, httpx.TransportError)):
            return True
        text = str(exc).lower()
        if type(exc).__module__.startswith("chromadb") and ("connect" in text or "unavailable" in text):
            return True
        exc, seen = exc.__cause__ or exc.__context__, seen + 1
    return False


def error_result(error: dict[str, Any]) -> CallToolResult:
    """The tool result of a failed call: its message as text, the payload as ``{"error": ...}``."""
    return CallToolResult(
        content=[TextContent(type="text", text=f"Error: {error['message']}")],
        structuredContent={"error": error},
        isError=True,
    )


__all__ = ["REFUSED", "Refusal", "describe_failure", "error_result", "rate_limited", "store_outage"]
