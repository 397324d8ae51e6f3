"""How a long operation tells its caller how far it has got, without the engine drawing anything.

Exporting or importing thousands of memories, or ingesting a benchmark's conversations, takes
seconds to minutes. The engine cannot know whether anyone is watching or how to show it (a
terminal, a log, a notebook), and it must not import a display library, so such operations
take an optional ``ProgressCallback`` and call it as they go; the ``hindsight`` command turns
the calls into a progress bar on a terminal (``terminal.progress_bar``).
"""

from __future__ import annotations

from typing import Protocol


class ProgressCallback(Protocol):
    """Called as ``progress(stage, done, total)`` while an operation runs.

    ``stage`` names what is being counted, in words a person reads (``"embedding memories"``);
    an operation may go through several stages, one after the other. Each stage is reported
    first with ``done == 0`` and last with ``done == total``, with ``done`` never decreasing
    in between, so a caller can draw one bar per stage.
    """

    def __call__(self, stage: str, done: int, total: int) -> None:
        """``done`` of the ``total`` items of ``stage`` are finished."""
        ...


def report(progress: ProgressCallback | None, stage: str, done: int, total: int) -> None:
    """Call ``progress`` if there is one: the engine's operations report through this, never directly."""
    if progress is not None:
        progress(stage, done, total)


def prefixed(progress: ProgressCallback | None, prefix: str) -> ProgressCallback | None:
    """``progress`` with every stage named ``"prefix: stage"``: one step of a longer run (a conversation)."""
    if progress is None:
        return None
    outer = progress

    def inner(stage: str, done: int, total: int) -> None:
        outer(f"{prefix}: {stage}", done, total)

    return inner


__all__ = ["ProgressCallback", "prefixed", "report"]
