"""The `hindsight` command: demo, add, recall, forget, dump, export, import, stats, compress, maintain, consolidate,
review, restore, serve, token, ui, bench.

Global options pick the store (``--store PATH`` or ``--chroma-url URL``) and namespace;
they default to ``HINDSIGHT_*`` environment variables, then ``./.hindsight`` and
``default``. Every command that works on a namespace also takes ``--namespace`` itself
(``hindsight stats -n alice``), which wins over the global one (``options``).

Errors are one line on stderr naming what to fix and where the bad value came from (an
option or an environment variable), with exit code 2, also when a command had nothing to
act on (an unknown id); never a traceback, unless ``--debug``. Results go to stdout;
progress bars and spinners go to stderr, and only when it is a terminal (``terminal.py``).

Start-up is kept short (see ``hindsight bench startup``): the command modules import only
typer, rich and the settings; the engine (Chroma), the MCP server and the benchmarks are
imported inside the commands that use them, and every command checks its settings and
arguments before it builds the engine, so a typo costs milliseconds, not a model load.

One module per group of commands: ``memories`` (add, recall, forget, dump, stats, review, restore),
``backup`` (export, import), ``upkeep`` (compress, maintain, consolidate), ``serving`` (serve,
token, ui), ``demo``; ``COMMANDS`` lists them in the order ``--help`` shows them.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

import typer

from ..bench.commands import bench_app
from ..core.errors import HindsightError
from ..terminal import EXIT_ERROR, debug, error_line
from . import backup, demo, memories, serving, upkeep
from .options import global_options

app = typer.Typer(
    help="Hindsight: long-term memory for LLM agents.", no_args_is_help=True, pretty_exceptions_enable=False
)
app.add_typer(bench_app, name="bench")
app.callback()(global_options)

COMMANDS: list[tuple[str, Callable[..., Any]]] = [
    ("demo", demo.demo),
    ("add", memories.add),
    ("recall", memories.recall),
    ("forget", memories.forget),
    ("dump", memories.dump),
    ("export", backup.export),
    ("import", backup.import_),
    ("reembed", backup.reembed),
    ("stats", memories.stats),
    ("compress", upkeep.compress),
    ("maintain", upkeep.maintain),
    ("consolidate", upkeep.consolidate),
    ("review", memories.review),
    ("restore", memories.restore),
    ("serve", serving.serve),
    ("token", serving.token),
    ("ui", serving.ui),
]
"""Every command, by name, in the order ``hindsight --help`` lists them."""

for name, command in COMMANDS:
    app.command(name)(command)


def main() -> None:
    """The console script: run the app; a configuration error raised before any command runs is one line, exit 2.

    Click itself turns Ctrl-C into "Aborted!" and a reader that stops early
    (``hindsight export | head``) into a quiet exit; ``reported`` lets both through to it.
    """
    try:
        app()
    except HindsightError as exc:
        if debug.tracebacks:
            raise
        error_line(exc)
        sys.exit(EXIT_ERROR)


__all__ = ["COMMANDS", "app", "main"]
