"""The query vectors an engine has computed lately: agents re-ask the same question across tools and turns."""

from __future__ import annotations

import threading
from collections import OrderedDict


class QueryCache:
    """A small thread-safe LRU of query text → vector (``protocol.embed_query`` reads and fills it)."""

    def __init__(self, size: int = 512) -> None:
        self._size = size
        self._items: OrderedDict[str, list[float]] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, text: str) -> list[float] | None:
        """The vector of ``text`` if it was asked lately (and it becomes the most recent), else None."""
        with self._lock:
            vector = self._items.get(text)
            if vector is not None:
                self._items.move_to_end(text)
            return vector

    def put(self, text: str, vector: list[float]) -> None:
        """Remember ``text``'s vector, dropping the least recently asked one past the size."""
        with self._lock:
            self._items[text] = vector
            if len(self._items) > self._size:
                self._items.popitem(last=False)


__all__ = ["QueryCache"]
