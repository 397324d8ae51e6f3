"""What the `hindsight` command prints: its two consoles, its errors, its progress bars and spinners.

Shared by the memory commands (``cli.py``) and the benchmark commands (``bench/commands.py``).
Results go to stdout; everything else (errors, progress, notes) goes to stderr, so that
``hindsight export > file`` and ``--json`` output stay clean whatever else happens. Progress
is drawn only when stderr is a terminal: piped or captured, a command prints what it
printed before, nothing more.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn

import typer
from rich.console import Console
from rich.text import Text

from .core.errors import HindsightError, InvalidInputError

if TYPE_CHECKING:
    from .core.progress import ProgressCallback

console = Console()
err_console = Console(stderr=True)

EXIT_ERROR = 2
"""The exit code of every error the command explains (bad input, unreachable store, nothing done)."""
EXIT_BUG = 1
"""The exit code of an error nobody foresaw: a bug, reported in one line unless ``--debug``."""


class _Debug:
    """Whether ``--debug`` was given: then errors raise with their traceback instead of one line."""

    tracebacks = False


debug = _Debug()


def error_line(message: object) -> None:
    """Print "error: message" on stderr as one line: never wrapped by rich, never read as markup."""
    err_console.print(Text.assemble(("error:", "red"), f" {message}"), highlight=False, soft_wrap=True)


def fail(exc: Exception | str, *details: str) -> NoReturn:
    """Print ``exc`` as one error line on stderr (``details`` indented below it) and leave with exit code 2."""
    error_line(exc)
    for line in details:
        err_console.print(Text(f"  {line}"), highlight=False, soft_wrap=True)
    raise typer.Exit(EXIT_ERROR)


@contextmanager
def reported() -> Iterator[None]:
    """Turn any error into one clear line on stderr and a non-zero exit, never a traceback.

    An engine error (``HindsightError``) already says what to fix: exit code 2. A file the
    system refused (``OSError``) is named with the system's reason: exit code 2. Anything
    else is a bug: one line saying so, exit code 1. ``--debug`` lets every error raise with
    its traceback instead. A closed stdout (``hindsight export | head``) and Ctrl-C are left
    to ``cli.main``.
    """
    try:
        yield
    except (typer.Exit, typer.Abort, KeyboardInterrupt, BrokenPipeError):
        raise
    except HindsightError as exc:
        if debug.tracebacks:
            raise
        fail(exc)
    except OSError as exc:
        if debug.tracebacks:
            raise
        fail(describe_os_error(exc))
    except Exception as exc:
        if debug.tracebacks:
            raise
        error_line(
            f"unexpected {type(exc).__name__}: {exc}. This is a bug in hindsight; run the command "
            "again with --debug (before the command name) to see where it happened."
        )
        raise typer.Exit(EXIT_BUG) from None


def check_output_file(path: Path, option: str, *, make_parents: bool = False) -> None:
    """Refuse, before any work is done, an output file that cannot be written.

    A benchmark or an export that runs for minutes and then fails to save is the worst way to
    learn of a typo. With ``make_parents`` a missing directory is fine if it can be created.
    """
    if path.is_dir():
        raise InvalidInputError(option, f"{path} is a directory; give a file name")
    parent = path.parent
    while make_parents and not parent.exists() and parent != parent.parent:
        parent = parent.parent
    if not parent.exists():
        raise InvalidInputError(option, f"cannot write {path}: the directory {parent} does not exist; create it first")
    if not parent.is_dir():
        raise InvalidInputError(option, f"cannot write {path}: {parent} is not a directory")
    if not os.access(path if path.exists() else parent, os.W_OK):
        raise InvalidInputError(option, f"cannot write {path}: permission denied; choose another file")


def describe_os_error(exc: OSError) -> str:
    """``exc`` as "cannot use PATH: reason", the way a person reads it (no errno, no repr)."""
    reason = exc.strerror or str(exc)
    if exc.filename is not None:
        return f"cannot use {exc.filename}: {reason}"
    return reason


@contextmanager
def progress_bar() -> Iterator[ProgressCallback | None]:
    """A ``ProgressCallback`` drawing one rich bar per stage on stderr, or None when stderr is not a terminal.

    None (not a silent callback) so the operation skips its reporting entirely. The bars are
    transient: once the operation ends they are erased and the command's own summary line is
    all that stays, as before.
    """
    if not err_console.is_terminal:
        yield None
        return
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TaskID,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )

    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    with Progress(*columns, TimeRemainingColumn(), console=err_console, transient=True) as bars:
        tasks: dict[str, TaskID] = {}

        def update(stage: str, done: int, total: int) -> None:
            task = tasks.get(stage)
            if task is None:  # a new stage: the finished ones make way (a benchmark has dozens)
                finished = {t.id for t in bars.tasks if t.finished}
                for name in [n for n, t in tasks.items() if t in finished]:
                    bars.remove_task(tasks.pop(name))
                task = tasks[stage] = bars.add_task(stage, total=total)
            bars.update(task, completed=done, total=total)

        yield update


@contextmanager
def spinner(text: str | None) -> Iterator[None]:
    """A spinner with ``text`` on stderr while the block runs, for a slow step with nothing to count.

    Nothing when ``text`` is None (the step will be quick) or stderr is not a terminal.
    """
    if text is None or not err_console.is_terminal:
        yield
        return
    with err_console.status(text):
        yield
