"""The package's shape: no import circle, no over-long module, an engine that knows no framework.

Read from the source with ``ast`` (nothing is imported), over every ``*.py`` of
``hindsight_integrations/``:

* **No circle.** A module's imports are those that run when it is imported: its top level,
  also inside ``if``/``try``/``class``, but not under ``if TYPE_CHECKING:`` (never run) nor
  inside functions (run later). Any strongly connected group of modules fails the test, named.
  Imports inside functions that would close a circle are reported too: they are how a circle
  is hidden rather than removed.
* **No module over 450 lines** (#25). Data is not a module: the lifecycle history is a TOML
  file, and only ``*.py`` files are counted.
* **``core/`` imports no framework**: no MCP, no web server, no agent framework, no CLI
  library, and nothing of the package outside ``core/``; here every import counts, wherever
  it is written, since a lazy import is still a dependency.

The allow-lists below name what other branches of #25 are fixing now; each entry must still be
needed (a stale one fails, so the list only shrinks), and the lead removes an entry when the
branch that fixes it merges.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Iterator
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "hindsight_integrations"
ROOT = PACKAGE.name
MAX_LINES = 450

# Modules allowed over MAX_LINES (none: data such as the lifecycle history lives in data files).
OVER_LONG_ALLOWED: set[str] = set()

# Circles allowed where an import inside a function closes them (none).
DEFERRED_CIRCLES_ALLOWED: list[list[str]] = []

# What core/ must never import: MCP, web servers, agent frameworks, CLI libraries (top-level names).
FRAMEWORKS = {
    "mcp",
    "starlette",
    "uvicorn",
    "fastapi",
    "sse_starlette",
    "httpx_sse",
    "langchain",
    "langchain_core",
    "langchain_chroma",
    "langgraph",
    "llama_index",
    "typer",
    "click",
    "rich",
}


def module_name(path: Path) -> str:
    """``hindsight_integrations/mcp/tools.py`` → ``hindsight_integrations.mcp.tools`` (a package: its folder)."""
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def import_time_imports(body: list[ast.stmt]) -> list[ast.Import | ast.ImportFrom]:
    """The imports that run when a module body runs: also inside ``if``/``try``/classes, not functions.

    The body of ``if TYPE_CHECKING:`` never runs (its ``else`` does).
    """
    found: list[ast.Import | ast.ImportFrom] = []
    for node in body:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            found.append(node)
        elif isinstance(node, ast.If):
            found += ([] if _is_type_checking(node.test) else import_time_imports(node.body)) + import_time_imports(
                node.orelse
            )
        elif isinstance(node, ast.Try):
            found += import_time_imports(node.body + node.orelse + node.finalbody)
            for handler in node.handlers:
                found += import_time_imports(handler.body)
        elif isinstance(node, ast.ClassDef):
            found += import_time_imports(node.body)
    return found


def every_import(body: list[ast.stmt]) -> list[ast.Import | ast.ImportFrom]:
    """Every import written in a module, functions and ``TYPE_CHECKING`` blocks included."""
    return [node for stmt in body for node in ast.walk(stmt) if isinstance(node, (ast.Import, ast.ImportFrom))]


def _tree(name: str) -> ast.Module:
    return ast.parse(MODULES[name].read_text(encoding="utf-8"))


def imported_names(name: str, imports: Iterable[ast.Import | ast.ImportFrom]) -> Iterator[str]:
    """The absolute dotted names ``imports`` (of module ``name``) bring in; ``from X import Y`` gives ``X.Y``."""
    package = name if MODULES[name].name == "__init__.py" else name.rpartition(".")[0]
    for node in imports:
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
            continue
        if node.level:
            base = package.split(".")
            base = base[: len(base) - node.level + 1]
            module = ".".join([*base, node.module] if node.module else base)
        else:
            module = node.module or ""
        yield module
        yield from (f"{module}.{alias.name}" for alias in node.names)


def _package_module(name: str) -> str | None:
    """``name``, or the package module it lives in; None outside the package."""
    while name and name not in MODULES:
        name = name.rpartition(".")[0]
    return name or None


def package_imports(name: str, imports: Iterable[ast.Import | ast.ImportFrom]) -> set[str]:
    """The package modules ``imports`` (of module ``name``) depend on.

    ``from X import Y`` depends on ``X.Y`` when that is a module, else on ``X``. Importing a
    submodule also runs its package's ``__init__``; that edge is not counted, since an
    ``__init__`` that re-exports its submodules (the package's front door) would otherwise be
    in a circle with every one of them.
    """
    found = set()
    for node in imports:
        if isinstance(node, ast.ImportFrom):
            names = list(imported_names(name, [node]))
            module, members = names[0], names[1:]
            targets = [member if member in MODULES else module for member in members]
        else:
            targets = [alias.name for alias in node.names]
        found |= {known for target in targets if (known := _package_module(target)) not in (None, name)}
    return found


def import_graph(*, deferred: bool = False) -> dict[str, set[str]]:
    """Module → the package modules it imports when imported (with ``deferred``: inside functions too)."""
    graph = {}
    for name in MODULES:
        body = _tree(name).body
        imports = import_time_imports(body)
        if deferred:
            imports += [
                node for node in every_import(body) if node not in imports and not _under_type_checking(body, node)
            ]
        graph[name] = package_imports(name, imports)
    return graph


def _under_type_checking(body: list[ast.stmt], target: ast.AST) -> bool:
    return any(
        isinstance(stmt, ast.If)
        and _is_type_checking(stmt.test)
        and any(n is target for s in stmt.body for n in ast.walk(s))
        for stmt in body
    )


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for other in sorted(graph.get(node, ())):
            if other not in index:
                visit(other)
                low[node] = min(low[node], low[other])
            elif other in on_stack:
                low[node] = min(low[node], index[other])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return sorted(found)


def _described(circles: list[list[str]]) -> str:
    return "\n".join(" ↔ ".join(m.removeprefix(f"{ROOT}.") for m in circle) for circle in circles)


# -- the checker itself -----------------------------------------------------------------------------------------


def test_the_checker_finds_a_circle() -> None:
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": {"a"}, "c": {"d"}, "d": {"c"}}) == [["a", "b"], ["c", "d"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_the_checker_counts_what_runs_at_import_and_leaves_out_type_checking_and_functions() -> None:
    source = """
import os
from typing import TYPE_CHECKING
if TYPE_CHECKING:
    from .hidden import Hidden
else:
    from .shown import Shown
try:
    from .tried import Tried
except ImportError:
    from .fallback import Fallback
class Holder:
    from .in_class import InClass
def later():
    from .in_function import InFunction
"""
    body = ast.parse(source).body
    modules = {node.module for node in import_time_imports(body) if isinstance(node, ast.ImportFrom)}
    assert modules == {"typing", "shown", "tried", "fallback", "in_class"}
    everything = {node.module for node in every_import(body) if isinstance(node, ast.ImportFrom)}
    assert {"hidden", "in_function"} <= everything


def test_the_checker_reads_relative_imports_of_the_real_package() -> None:
    """``mcp/tools.py``'s ``from .wire import ...`` and ``from ..core.model.inputs import ...`` are read right."""
    graph = import_graph()
    tools = graph[f"{ROOT}.mcp.tools"]
    assert {f"{ROOT}.mcp.wire", f"{ROOT}.mcp.tool_table", f"{ROOT}.core.model.inputs"} <= tools
    assert sum(map(len, graph.values())) > len(MODULES)  # the graph was read, not empty


# -- the package ------------------------------------------------------------------------------------------------


def test_no_module_of_the_package_imports_itself_back() -> None:
    found = cycles(import_graph())
    assert not found, f"import circles (module-level imports, TYPE_CHECKING excluded):\n{_described(found)}"


def test_no_import_inside_a_function_closes_a_circle() -> None:
    """An import moved into a function to dodge a circle hides it; only the allow-listed ones remain."""
    found = cycles(import_graph(deferred=True))
    unexpected = [circle for circle in found if circle not in DEFERRED_CIRCLES_ALLOWED]
    stale = [circle for circle in DEFERRED_CIRCLES_ALLOWED if circle not in found]
    assert not unexpected, f"circles closed by imports inside functions:\n{_described(unexpected)}"
    assert not stale, f"allow-listed circles that are gone (remove them from the list):\n{_described(stale)}"


def test_no_module_is_over_450_lines() -> None:
    lines = {name: len(path.read_text(encoding="utf-8").splitlines()) for name, path in MODULES.items()}
    over = {name: n for name, n in lines.items() if n > MAX_LINES}
    unexpected = {name: n for name, n in over.items() if name not in OVER_LONG_ALLOWED}
    stale = sorted(OVER_LONG_ALLOWED - set(over))
    assert not unexpected, "modules over {} lines (split them by job): {}".format(
        MAX_LINES, ", ".join(f"{name} ({n})" for name, n in sorted(unexpected.items()))
    )
    assert not stale, f"allow-listed modules now within {MAX_LINES} lines (remove them from the list): {stale}"


@pytest.mark.parametrize("name", [m for m in MODULES if m.startswith(f"{ROOT}.core")])
def test_core_imports_no_framework_and_nothing_outside_core(name: str) -> None:
    names = set(imported_names(name, every_import(_tree(name).body)))
    frameworks = sorted({n for n in names if n.split(".")[0] in FRAMEWORKS})
    outside = sorted(
        m for n in names if (m := _package_module(n)) is not None and m != ROOT and not m.startswith(f"{ROOT}.core")
    )
    assert not frameworks, f"{name} imports {frameworks}: core/ must not know MCP, web servers or frameworks"
    assert not outside, f"{name} imports {outside}: core/ must not depend on the layers built on it"


@pytest.mark.parametrize(
    "name",
    [m for m in MODULES if m.startswith((f"{ROOT}.mcp.tool", f"{ROOT}.mcp.viewer"))]
    + [f"{ROOT}.mcp.resources", f"{ROOT}.mcp.routes"],
)
def test_what_serves_requests_needs_the_host_protocol_not_the_server(name: str) -> None:
    """Tools, resources, routes and viewer pages see the server as ``serving.ServerHost`` only."""
    server_side = {f"{ROOT}.mcp.{m}" for m in ("server", "app", "startup")}
    assert not package_imports(name, every_import(_tree(name).body)) & server_side
