"""``deepcopy_sharing``: the deep copy of an adapter whose connection or lock is not state.

The LangGraph store and the LlamaIndex retriever are plain classes whose pickling
(``__getstate__``) leaves out what cannot travel: a lock, a client. ``copy.deepcopy`` would go
through that same ``__getstate__`` and lose them, or, without it, try to copy a lock (it cannot)
or a connection (it must not). A copy works on the same ones instead.
"""

from __future__ import annotations

import copy
from typing import Any, TypeVar

Copied = TypeVar("Copied")


def deepcopy_sharing(obj: Copied, memo: dict[int, Any], *shared: object) -> Copied:
    """A deep copy of ``obj``, attribute by attribute, that holds each of ``shared`` itself, not a copy."""
    copied = type(obj).__new__(type(obj))
    memo[id(obj)] = copied
    for held in shared:
        memo[id(held)] = held  # already "copied": the copy holds the same object
    for name, value in obj.__dict__.items():
        setattr(copied, name, copy.deepcopy(value, memo))
    return copied


__all__ = ["deepcopy_sharing"]
