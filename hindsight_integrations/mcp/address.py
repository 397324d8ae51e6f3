"""Where an adapter's memories live, as data an adapter can be saved with and reconnected from.

Framework objects get copied and saved: LangChain copies runnables and users pickle memories;
a LlamaIndex workflow ``Context`` is saved with ``to_dict`` and restored with ``from_dict``.
The MCP session or engine behind an adapter cannot be saved (it is a connection, not state),
so an adapter saves the ``StoreAddress`` it was connected to and a restored adapter
reconnects there (``resolve.reconnect``). Only there: a restored memory that quietly opened
the default store would show the user an empty history and record their turns where nobody
reads them.

Engines that adapters use are remembered here (weakly, per process), so that an adapter
restored in the process that saved it reuses the very engine (same embedder, same LLM, one
Chroma client) instead of opening a second one on the same directory.
"""

from __future__ import annotations

import os
import shlex
import weakref
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict

from ..core.config import Settings, load_settings

if TYPE_CHECKING:
    from ..core.engine import MemoryEngine


class StoreAddress(BaseModel):
    """Where memories live: an embedded store, a Chroma server, or a memory server over HTTP or stdio.

    ``kind`` "store": ``target`` is the absolute path of an embedded Chroma directory;
    "chroma": a Chroma server URL; "http": a memory server URL; "stdio": the memory server
    command; "unknown": an engine on a Chroma client of the caller's own, or a client this
    package cannot describe, so ``target`` only names it and a restore is refused. No token
    or key is ever part of an address: it is saved with the adapter, in clear.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: Literal["store", "chroma", "http", "stdio", "unknown"]
    target: str

    def describe(self) -> str:
        """The address as words for an error message."""
        return {
            "store": f"the embedded store {self.target}",
            "chroma": f"the Chroma server {self.target}",
            "http": f"the memory server {self.target}",
            "stdio": f"the memory server command {self.target!r}",
            "unknown": f"{self.target}, whose store cannot be recorded",
        }[self.kind]


def settings_address(settings: Settings) -> StoreAddress:
    """Where an engine built from ``settings`` keeps its memories (a Chroma URL wins, as the engine decides)."""
    if settings.chroma_url:
        return StoreAddress(kind="chroma", target=settings.chroma_url)
    return StoreAddress(kind="store", target=str(settings.store.resolve()))


def engine_address(engine: MemoryEngine) -> StoreAddress:
    """Where ``engine`` keeps its memories; "unknown" when it was given a Chroma client of the caller's."""
    if not engine.chroma.owns_client:
        return StoreAddress(kind="unknown", target="an engine on a Chroma client passed as chroma_client=")
    return settings_address(engine.settings)


def client_address(client: Any) -> StoreAddress:
    """Where a ``MemoryClient`` (or a client of the same shape) reaches its memories."""
    engine = getattr(client, "engine", None)
    if engine is not None:
        return engine_address(engine)
    kind = getattr(client, "transport", None)
    target = getattr(client, "target", None)
    if kind in ("http", "stdio") and isinstance(target, str):
        return StoreAddress(kind=kind, target=target)
    return StoreAddress(kind="unknown", target=f"the client {client!r}")


def picklable_address(address: StoreAddress, owner: str) -> StoreAddress:
    """``address``, to pickle ``owner`` with; a ``TypeError`` saying what to do when it could not reconnect from it."""
    if address.kind == "unknown":
        raise TypeError(
            f"{owner} cannot be pickled: it is connected to {address.describe()}, so it could not "
            "reconnect once loaded; pickle one built with engine= on a store path or Chroma URL, a memory "
            "server client, or the environment's settings (or build a new one after loading)"
        )
    return address


def environment_address() -> StoreAddress:
    """Where a client built from the environment reaches its memories now, without connecting.

    The order ``MemoryClient.from_env`` follows: ``HINDSIGHT_MCP_URL``, ``HINDSIGHT_MCP_COMMAND``,
    then the settings ``MemoryEngine()`` reads.
    """
    if url := os.environ.get("HINDSIGHT_MCP_URL"):
        return StoreAddress(kind="http", target=url)
    if command := os.environ.get("HINDSIGHT_MCP_COMMAND"):
        return StoreAddress(kind="stdio", target=" ".join(shlex.split(command)))  # as the stdio client names it
    return settings_address(load_settings())


_live_engines: weakref.WeakValueDictionary[tuple[int, StoreAddress], MemoryEngine] = weakref.WeakValueDictionary()


def remember_engine(engine: MemoryEngine | None) -> None:
    """Note that an adapter uses ``engine``, so an adapter restored in this process can use it again."""
    if engine is None:
        return
    address = engine_address(engine)
    if address.kind != "unknown":
        _live_engines[(os.getpid(), address)] = engine


def live_engine(address: StoreAddress) -> MemoryEngine | None:
    """An open engine of this process that an adapter used on ``address``, if there is one."""
    engine = _live_engines.get((os.getpid(), address))
    return engine if engine is not None and not engine.chroma.closed else None


__all__ = [
    "StoreAddress",
    "client_address",
    "engine_address",
    "environment_address",
    "live_engine",
    "picklable_address",
    "remember_engine",
    "settings_address",
]
