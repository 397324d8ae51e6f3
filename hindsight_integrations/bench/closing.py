"""``ClosedOnExit``: what the benchmarks' long-lived helpers share, a ``with`` block that closes them.

The loopback servers (``http_json.LoopbackServer``) and the mem0 runner process
(``mem0_peer.Mem0Runner``) hold a port, a thread or a child process; leaving their ``with``
block, by an error too, must release it, or a failed benchmark leaves it behind.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from types import TracebackType
from typing import Self


class ClosedOnExit(ABC):
    """A resource whose ``with`` block ends by ``close()``, whatever happened inside it."""

    @abstractmethod
    def close(self) -> None:
        """Release what the resource holds; called once on leaving its ``with`` block."""

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()


__all__ = ["ClosedOnExit"]
