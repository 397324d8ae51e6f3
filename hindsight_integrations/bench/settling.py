"""Waiting, before a benchmark measures a namespace, for what its store finishes in the background.

The store's own waits are bounded (``wait_for_rebuild``, ``wait_for_context``), so a stalled
embedder or rebuild cannot hang a caller. A benchmark's namespaces are larger, so it waits
longer, and says so; but running out of time is an error here, not a shrug: numbers measured on
a half-built namespace would be wrong without anything saying they are.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..core.errors import HindsightError

if TYPE_CHECKING:
    from ..core.storage.namespace_store import NamespaceStore

SETTLE_SECONDS = 1800.0
"""How long a benchmark waits for one namespace's BM25 rebuild or context vectors (minutes, at 100k memories)."""


def rebuilt(handle: NamespaceStore, seconds: float = SETTLE_SECONDS) -> None:
    """Return once ``handle``'s background BM25 rebuild has landed; raise if it takes over ``seconds``."""
    if not handle.lexical.wait_for_rebuild(seconds):
        raise HindsightError(
            f"the BM25 index of namespace {handle.name!r} was still being rebuilt after {seconds:g} s; "
            "nothing was measured on it half-built (is the machine overloaded?)"
        )


def context_written(handle: NamespaceStore, seconds: float = SETTLE_SECONDS) -> None:
    """Return once ``handle``'s queued context vectors are written; raise if it takes over ``seconds``."""
    if not handle.wait_for_context(seconds):
        raise HindsightError(
            f"the context vectors of namespace {handle.name!r} were still being made after {seconds:g} s; "
            "nothing was measured on it half-built (is the embedder stalled?)"
        )


__all__ = ["SETTLE_SECONDS", "context_written", "rebuilt"]
