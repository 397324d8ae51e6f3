"""The `hindsight` command's global options, and what every command builds from them.

``--store`` / ``--chroma-url`` / ``--namespace`` (and ``--debug``) come before the command;
every command that works on a namespace also takes ``--namespace`` itself
(``NamespaceOption``), which wins over the global one. ``settings`` turns them and the
environment into validated settings whose errors name the option or variable to fix;
``engine`` is built only after a command's own checks passed (it imports Chroma).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from ..core.config import load_settings
from ..core.errors import InvalidInputError, never_written
from ..terminal import debug, spinner

if TYPE_CHECKING:
    from ..core.config import Settings
    from ..core.engine import MemoryEngine

# Where each global option's value came from, for error messages (see ``load_settings``).
SOURCES = {"store": "--store", "chroma_url": "--chroma-url", "namespace": "--namespace", "rate_limit": "--rate-limit"}

NamespaceOption = Annotated[
    str | None,
    typer.Option(
        "--namespace", "-n", help="Namespace / user (default: the global --namespace, else env HINDSIGHT_NAMESPACE)."
    ),
]


class GlobalOptions:
    """The global options of this run (set by ``global_options`` before the command runs)."""

    store: Path | None = None
    chroma_url: str | None = None
    namespace: str | None = None


given = GlobalOptions()


def global_options(
    store: Annotated[
        Path | None, typer.Option("--store", help="Embedded Chroma directory (env HINDSIGHT_STORE).")
    ] = None,
    chroma_url: Annotated[
        str | None, typer.Option("--chroma-url", help="Chroma server URL (env HINDSIGHT_CHROMA_URL).")
    ] = None,
    namespace: Annotated[
        str | None, typer.Option("--namespace", "-n", help="Namespace / user (env HINDSIGHT_NAMESPACE).")
    ] = None,
    show_tracebacks: Annotated[
        bool, typer.Option("--debug", help="Show the traceback of an error instead of one line (env HINDSIGHT_DEBUG).")
    ] = False,
) -> None:
    """Pick the store (``--store PATH`` or ``--chroma-url URL``) and namespace for every command."""
    given.store, given.chroma_url, given.namespace = store, chroma_url, namespace
    debug.tracebacks = show_tracebacks or os.environ.get("HINDSIGHT_DEBUG", "").lower() in ("1", "true", "yes")


def chosen_namespace(option: str | None) -> str | None:
    """The namespace a command was given: its own ``--namespace``, else the global one, else None (from the env)."""
    return option if option is not None else given.namespace


def settings(namespace: str | None = None, *, serving: bool = False, rate_limit: float | None = None) -> Settings:
    """The options and environment as validated settings; an error names the option or variable to fix.

    Only a command that serves (``serving``) has the server's own settings checked
    (``config.SERVER_SETTINGS``): a bad ``HINDSIGHT_LOG_LEVEL`` must not stop ``hindsight add``.
    ``rate_limit`` is ``hindsight serve --rate-limit``: given, it wins over ``HINDSIGHT_RATE_LIMIT``.
    """
    return load_settings(
        store=given.store,
        chroma_url=given.chroma_url,
        namespace=chosen_namespace(namespace),
        rate_limit=rate_limit,
        sources=SOURCES,
        serving=serving,
    )


def engine(settings: Settings) -> MemoryEngine:
    """The engine, built only once the command's arguments passed their checks (it imports Chroma).

    The first use of the local model on a machine exports it to ONNX (10-30 s): a spinner says so.
    """
    from ..core.embedding.factory import slow_model_start
    from ..core.engine import MemoryEngine

    with spinner(slow_model_start(settings)):
        return MemoryEngine(settings)


def written(engine: MemoryEngine) -> MemoryEngine:
    """``engine``, once its namespace is known to exist; else an error naming the namespaces that do.

    The engine reads a namespace never written as empty (an agent's first stats), but a person
    asking for the stats, dump or export of one has usually mistyped its name.
    """
    known = engine.namespaces()
    if engine.settings.namespace not in known:
        raise never_written(engine.settings.namespace, known)
    return engine


def as_option(exc: InvalidInputError, options: dict[str, str]) -> InvalidInputError:
    """``exc`` naming the option the user typed (``--ttl``) instead of the engine's field (``ttl_seconds``)."""
    return InvalidInputError(options.get(exc.field, exc.field), exc.message)


__all__ = [
    "SOURCES",
    "GlobalOptions",
    "NamespaceOption",
    "as_option",
    "chosen_namespace",
    "engine",
    "given",
    "settings",
    "written",
]
