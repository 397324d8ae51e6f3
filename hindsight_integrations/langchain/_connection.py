"""Copying and pickling the pydantic adapters (``HindsightMemory``, ``HindsightRetriever``).

LangChain copies runnables and memories (``model_copy``, ``copy.deepcopy``) and users pickle
them. The ``client`` / ``engine`` an adapter holds is a connection, not state: a copy shares
it, and a pickle leaves it out, keeping instead where the memories live (the adapter's
``ClientPool`` pickles as its ``StoreAddress``), so the loaded adapter reconnects to that
store on first use, or refuses with what to do; never to another store.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel


class SharedConnection(BaseModel):
    """Mixin for an adapter with ``client`` and ``engine`` fields and a ``ClientPool`` private attribute."""

    def __deepcopy__(self, memo: dict[int, Any] | None = None) -> SharedConnection:
        memo = {} if memo is None else memo
        for shared in (getattr(self, "client", None), getattr(self, "engine", None)):
            if shared is not None:
                memo[id(shared)] = shared  # already "copied": the copy holds the same object
        return super().__deepcopy__(memo)

    def __getstate__(self) -> dict[Any, Any]:
        state = super().__getstate__()
        state["__dict__"] = {**state["__dict__"], "client": None, "engine": None}
        return state


__all__ = ["SharedConnection"]
