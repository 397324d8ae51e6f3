"""How a table of tool functions becomes the server's MCP tools.

A ``Tool`` is one row: its name, description and hints (from its arguments model in ``wire``),
its parameters, generated from that model (``parameters``), and the function that serves it.
FastMCP builds a tool's argument validation and JSON schema from a function's signature, so
each tool is registered as a ``GeneratedTool`` whose ``__signature__`` holds the generated
parameters: the server, the client and the JSON schema a model reads come from one declaration.
FastMCP validates the arguments against it (coercing what models get wrong: ``"3"`` for a
number, ``"false"`` for a boolean, a JSON string for an object), except that text stays text
(``TextArgumentsKept``); the tool function then gets its arguments model and a ``ToolCall``.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated, Any, TypeVar, get_args

from mcp.server.fastmcp import FastMCP
from mcp.server.fastmcp.utilities.func_metadata import FuncMetadata
from mcp.types import CallToolResult, TextContent, ToolAnnotations
from pydantic import BaseModel, Field

from .serving import ServerHost, call_namespace
from .wire import ToolArgs

if TYPE_CHECKING:
    from ..core.engine import MemoryEngine

A = TypeVar("A", bound=ToolArgs)


@dataclass(frozen=True)
class ToolCall:
    """What a tool function gets besides its arguments: the server it runs in and the caller's namespace."""

    host: ServerHost
    namespace: str

    @property
    def engine(self) -> MemoryEngine:
        """The engine the tool translates onto."""
        return self.host.engine


ToolFunction = Callable[[ToolCall, A], Awaitable[CallToolResult]]
"""A tool: its arguments in, one engine call, its answer (``tool_result``) out."""


@dataclass(frozen=True)
class Tool:
    """One row of the tool table: what the server lists for the tool and what runs it."""

    name: str
    description: str
    hints: ToolAnnotations
    parameters: list[inspect.Parameter]
    run: Callable[[ToolCall, dict[str, Any]], Awaitable[CallToolResult]]
    """Serves one call, given the arguments FastMCP validated against ``parameters``."""

    @classmethod
    def of(cls, model: type[A], function: ToolFunction[A]) -> Tool:
        """The tool declared by ``model``, served by ``function`` with the arguments as ``model``."""

        async def run(call: ToolCall, arguments: dict[str, Any]) -> CallToolResult:
            return await function(call, model.model_validate(arguments))

        return cls(model.tool, model.description, model.hints, parameters(model), run)


def tool_result(data: BaseModel, text: str) -> CallToolResult:
    """A tool's answer: ``data`` as structured content and ``text`` for hosts that show only text."""
    return CallToolResult(content=[TextContent(type="text", text=text)], structuredContent=data.model_dump(mode="json"))


def parameters(
    model: type[BaseModel], *, optional: bool = False, descriptions: Mapping[str, str] | None = None
) -> list[inspect.Parameter]:
    """Keyword parameters with ``model``'s fields: types, validators, constraints and descriptions.

    ``optional`` makes every field without a plain default optional (None), as for the
    single-memory parameters of ``store_memory``, where ``memories`` may be given instead;
    ``descriptions`` replaces the descriptions that read differently there.
    """
    out = []
    for name, field in model.model_fields.items():
        annotation: Any = field.annotation
        default: Any = field.default
        if optional and (field.is_required() or field.default_factory is not None):
            annotation, default = annotation | None, None
        elif field.is_required():
            default = inspect.Parameter.empty
        elif field.default_factory is not None:
            raise ValueError(f"{model.__name__}.{name}: a tool parameter needs a plain default, not a factory")
        description = (descriptions or {}).get(name, field.description)
        annotated = Annotated[(annotation, *field.metadata, Field(description=description))]
        out.append(inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, annotation=annotated, default=default))
    return out


class GeneratedTool:
    """A tool function whose signature is generated from models rather than written out.

    FastMCP builds a tool's argument validation and JSON schema from its function's
    signature, and ``inspect.signature`` honours ``__signature__``; ``call`` receives the
    validated arguments by name.
    """

    def __init__(
        self, name: str, params: list[inspect.Parameter], call: Callable[[dict[str, Any]], Awaitable[CallToolResult]]
    ) -> None:
        self.__name__ = name
        self.__signature__ = inspect.Signature(params, return_annotation=CallToolResult)
        self._call = call

    async def __call__(self, **arguments: Any) -> CallToolResult:
        """Run the tool on arguments FastMCP has validated against the signature."""
        return await self._call(arguments)


class TextArgumentsKept(FuncMetadata):
    """FastMCP's argument handling, except that the argument of a text parameter is never read as JSON.

    FastMCP reads every string argument of a parameter not typed exactly ``str`` as JSON first
    (for clients that send lists and objects as strings). For an optional text such as
    ``store_memory``'s ``content: str | None`` that turned the text "[1, 2]" into a list and
    "null" into no content, and 32,000 digits into an int conversion past Python's digit limit:
    an internal error (security issue #24, finding 4). Lists and objects are still read; one
    that does not read (a number past that limit in ``top_k``, or inside a ``memories`` list sent
    as a string) is left as it came, for validation to refuse as invalid input.
    """

    def pre_parse_json(self, data: dict[str, Any]) -> dict[str, Any]:
        """``data`` with JSON strings of non-text parameters parsed; text arguments as they came."""
        text = {name for name, field in self.arg_model.model_fields.items() if str in get_args(field.annotation)}
        return {name: value if name in text else self._parsed(name, value) for name, value in data.items()}

    def _parsed(self, name: str, value: Any) -> Any:
        try:
            return super().pre_parse_json({name: value})[name]
        except ValueError:  # json.loads past Python's int digit limit (not a JSONDecodeError)
            return value


def add_tool(
    app: FastMCP,
    name: str,
    params: list[inspect.Parameter],
    call: Callable[[dict[str, Any]], Awaitable[CallToolResult]],
    *,
    description: str,
    annotations: ToolAnnotations,
) -> None:
    """Register ``call`` as tool ``name`` of ``app`` with the generated signature ``params``."""
    tool = GeneratedTool(name, params, call)
    app.add_tool(tool, name=name, description=description, annotations=annotations, structured_output=False)
    registered = app._tool_manager.get_tool(name)
    if registered is not None:
        registered.fn_metadata = TextArgumentsKept.model_construct(**dict(registered.fn_metadata))


def register_tools(app: FastMCP, host: ServerHost, tools: Iterable[Tool]) -> None:
    """Add each tool of the table to ``app``, each call served for the namespace the dispatch bound to it."""
    for tool in tools:

        async def call(arguments: dict[str, Any], tool: Tool = tool) -> CallToolResult:
            return await tool.run(ToolCall(host, call_namespace()), arguments)

        add_tool(app, tool.name, tool.parameters, call, description=tool.description, annotations=tool.hints)


__all__ = [
    "GeneratedTool",
    "TextArgumentsKept",
    "Tool",
    "ToolCall",
    "ToolFunction",
    "add_tool",
    "parameters",
    "register_tools",
    "tool_result",
]
