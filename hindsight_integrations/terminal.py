"""What the `hindsight` command prints: its two consoles and the one-line error every command ends with.

Shared by the memory commands (``cli.py``) and the benchmark commands (``bench/commands.py``).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import NoReturn

import typer
from rich.console import Console

from .core.errors import HindsightError

console = Console()
err_console = Console(stderr=True)


def fail(exc: Exception) -> NoReturn:
    """Print ``exc`` as one red line on stderr and leave with exit code 2."""
    err_console.print(f"[red]error:[/red] {exc}")
    raise typer.Exit(2)


@contextmanager
def reported() -> Iterator[None]:
    """Turn an engine error into one clear line and exit code 2, never a traceback."""
    try:
        yield
    except HindsightError as exc:
        fail(exc)
