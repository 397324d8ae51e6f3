"""The conventions both ends of the MCP connection follow besides the argument and result models.

The namespace capability (how a server says whose memories a session serves), how arguments
are made JSON-ready (refusing text the transport cannot encode), how a tool error travels
(``{"error": {"type", "message", "field", ...}}`` in the structured content, rebuilt by the
client as the most specific ``MemoryToolError``) and how a validation error is phrased.
"""

from __future__ import annotations

import json
import math
from typing import Any

from mcp.types import CallToolResult
from pydantic import ValidationError
from pydantic_core import to_jsonable_python

from ..core.errors import InvalidInputError
from ..core.model.limits import invalid_text_at
from .errors import MemoryToolError, tool_error

CAPABILITY = "hindsight"
"""Key of the server's experimental capability that reports the namespace a session serves, and its limits.

The MCP initialize result is the one answer every transport gets before any tool call, and
over HTTP it is computed for the request's bearer token, so it is where a client learns
(and checks) whose memories it is about to read and write, and how many one recall may return
(``max_top_k``, which the server's settings choose), before it asks for more.
"""


def capability(namespace: str | None, *, max_top_k: int | None = None) -> dict[str, dict[str, Any]]:
    """The experimental capabilities a server announces for a session serving ``namespace``."""
    announced = {key: value for key, value in (("namespace", namespace), ("max_top_k", max_top_k)) if value}
    return {CAPABILITY: announced} if announced else {}


def announced_namespace(experimental: dict[str, dict[str, Any]] | None) -> str | None:
    """The namespace a server announced in its initialize result (None: an older server, or none)."""
    value = (experimental or {}).get(CAPABILITY, {}).get("namespace")
    return value if isinstance(value, str) else None


def announced_max_top_k(experimental: dict[str, dict[str, Any]] | None) -> int | None:
    """The most memories one recall may return, as the server announced it (None: an older server)."""
    value = (experimental or {}).get(CAPABILITY, {}).get("max_top_k")
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None


def validation_message(exc: ValidationError) -> tuple[str, str]:
    """(field, message) of the first pydantic error, phrased for a model to act on.

    Locations read like the arguments the model wrote: ``memories[3].importance``.
    """
    err = exc.errors()[0]
    loc = ""
    for part in err["loc"]:
        if isinstance(part, int):
            loc += f"[{part}]"
        elif part not in ("function-after", "function-before", "str", "int", "float", "dict", "list"):
            loc += f".{part}" if loc else str(part)
    message = str(err["msg"]).removeprefix("Value error, ")
    if err["type"] not in ("missing", "invalid_input") and "input" in err:
        shown = repr(err["input"])
        if len(shown) > 80:
            shown = shown[:77] + "..."
        message = f"{message} (got {shown})"
    return loc or "arguments", message


def prepare_arguments(arguments: dict[str, Any] | None) -> dict[str, Any]:
    """JSON-ready arguments, None dropped; text that cannot be UTF-8 encoded is refused here.

    A lone surrogate cannot be serialised as UTF-8: sent as is, it breaks the transport's
    writer (on stdio, the whole connection), so it is an input error naming where it is
    (values and keys, nested, inside models too), caught before sending.
    """
    given = {k: v for k, v in (arguments or {}).items() if v is not None}
    check_text(given, "arguments")
    try:
        args = to_jsonable_python(given)
    except UnicodeEncodeError:  # text in something the walk does not open (e.g. a dataclass)
        raise InvalidInputError("arguments", "hold text that is not valid UTF-8 (unpaired surrogates)") from None
    check_text(args, "arguments")
    check_finite(args)
    return args


def check_finite(arguments: dict[str, Any]) -> None:
    """InvalidInputError naming the argument holding NaN or an infinity, at any depth.

    JSON has neither: sent, it would arrive as null, which a tool reads as "not given", so
    ``update(importance=nan)`` reported success and changed nothing.
    """
    stack: list[tuple[Any, str]] = [(value, name) for name, value in arguments.items()]
    while stack:
        value, path = stack.pop()
        if isinstance(value, float) and not math.isfinite(value):
            argument, place = _argument_at(path, "arguments")
            raise InvalidInputError(argument, f"must be a finite number, got {value}{place}")
        if isinstance(value, dict):
            stack.extend((child, f"{path}.{key}") for key, child in value.items())
        elif isinstance(value, list):
            stack.extend((child, f"{path}[{n}]") for n, child in enumerate(value))


def check_text(value: dict[str, Any], field: str) -> None:
    """InvalidInputError naming the argument (``session_id``, ``filters.metadata``...) whose text is not UTF-8."""
    where = invalid_text_at(value)
    if where is not None:
        argument, place = _argument_at(where, field)
        raise InvalidInputError(argument, f"is not valid UTF-8 text: it contains unpaired surrogates{place}")


def _argument_at(path: str, default: str) -> tuple[str, str]:
    """The argument a path (``memories[2].metadata.x``) starts with, and `` (at …)`` for the rest of it."""
    argument = path.split(".")[0].split("[")[0]
    inner = path.removeprefix(argument).lstrip(".")
    return argument or default, f" (at {inner})" if inner else ""


def parse_result(tool: str, result: CallToolResult) -> dict[str, Any]:
    """The structured content of a tool result; a tool error becomes the most specific ``MemoryToolError``."""
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
