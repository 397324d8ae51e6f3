"""Resolve the MCP client an adapter writes through.

Every LlamaIndex surface accepts ``client=`` (an open ``MemoryClient``), ``engine=`` (an
embedded ``MemoryEngine``, wrapped in an in-process MCP session) or neither, in which case
the environment decides (``HINDSIGHT_MCP_URL`` → streamable HTTP, ``HINDSIGHT_MCP_COMMAND``
→ stdio, ``HINDSIGHT_STORE`` / ``HINDSIGHT_CHROMA_URL`` → an in-process engine). Clients
built from the environment are cached per namespace and configuration so that a chat
memory, a memory block and a retriever for the same user share one MCP session instead of
each loading an embedding model or opening a connection.
"""

from __future__ import annotations

import os
import threading
from typing import TYPE_CHECKING, Any

from ..core.errors import ConfigurationError

if TYPE_CHECKING:
    from ..core.engine import MemoryEngine
    from ..mcp.client import MemoryClient

# Any one of these says where memories live; without one we refuse rather than silently
# creating ./.hindsight in whatever directory the application happens to run from.
CONFIG_VARS = ("HINDSIGHT_MCP_URL", "HINDSIGHT_MCP_COMMAND", "HINDSIGHT_STORE", "HINDSIGHT_CHROMA_URL")
_KEY_VARS = (*CONFIG_VARS, "HINDSIGHT_MCP_TOKEN", "HINDSIGHT_NAMESPACE")

_cache: dict[tuple[Any, ...], "MemoryClient"] = {}
_cache_lock = threading.Lock()


def _client_class() -> type["MemoryClient"]:
    from ..mcp.client import MemoryClient

    return MemoryClient


def resolve_client(
    client: "MemoryClient | None" = None,
    *,
    namespace: str | None = None,
    engine: "MemoryEngine | None" = None,
) -> "MemoryClient":
    """The client to use: explicit ``client`` wins, then ``engine``, then the environment.

    Raises ``ConfigurationError`` when both ``client`` and ``engine`` are given, when the
    client is known to serve a different namespace than the one asked for, or when nothing
    says where the memory store is.
    """
    if client is not None:
        if engine is not None:
            raise ConfigurationError("pass either client= or engine=, not both: the client already decides the store")
        served = served_namespace(client)
        if namespace is not None and served is not None and served != namespace:
            raise ConfigurationError(
                f"the client serves namespace {served!r} but namespace={namespace!r} was asked for; "
                "one client serves one namespace, so open a client for that namespace"
            )
        return client
    cls = _client_class()
    if engine is not None:
        return cls.in_process(engine, namespace=namespace)
    if not any(os.environ.get(var) for var in CONFIG_VARS):
        raise ConfigurationError(
            "no memory store configured: set HINDSIGHT_STORE (an embedded Chroma directory), "
            "HINDSIGHT_CHROMA_URL (a Chroma server), HINDSIGHT_MCP_URL (a Hindsight MCP server over HTTP) "
            "or HINDSIGHT_MCP_COMMAND (one over stdio), or pass client= or engine= explicitly"
        )
    key = (namespace, *(os.environ.get(var) for var in _KEY_VARS))
    with _cache_lock:
        cached = _cache.get(key)
        if cached is None:
            cached = _from_env(cls, namespace)
            _cache[key] = cached
        return cached


def served_namespace(client: Any) -> str | None:
    """The namespace a client is known to serve (in-process and stdio clients know it; HTTP: the token decides)."""
    for holder in (client, getattr(client, "server", None)):
        value = getattr(holder, "namespace", None)
        if isinstance(value, str):
            return value
    return None


def _from_env(cls: type["MemoryClient"], namespace: str | None) -> "MemoryClient":
    """Pick the transport like ``MemoryClient.from_env`` does, but for a given namespace.

    Over HTTP the bearer token decides the namespace (a token can never read another), so
    ``namespace`` is not sent; a stdio server is started for ``namespace``; in process, one
    engine per store is shared by every namespace's client (it holds the embedding model).
    """
    url = os.environ.get("HINDSIGHT_MCP_URL")
    if url:
        return cls.http(url, token=os.environ.get("HINDSIGHT_MCP_TOKEN") or None)
    command = os.environ.get("HINDSIGHT_MCP_COMMAND")
    if command:
        return cls.stdio(command, namespace=namespace or os.environ.get("HINDSIGHT_NAMESPACE"))
    return cls.in_process(_shared_engine(), namespace=namespace)


_engines: dict[tuple[str | None, ...], "MemoryEngine"] = {}


def _shared_engine() -> "MemoryEngine":
    from ..core.engine import MemoryEngine

    key = tuple(os.environ.get(var) for var in ("HINDSIGHT_STORE", "HINDSIGHT_CHROMA_URL", "HINDSIGHT_EMBEDDING_MODEL"))
    engine = _engines.get(key)
    if engine is None:
        engine = _engines[key] = MemoryEngine()
    return engine


def clear_cache() -> None:
    """Close and forget the clients built from the environment (tests, or after changing env vars)."""
    with _cache_lock:
        clients = list(_cache.values())
        _cache.clear()
        _engines.clear()
    for client in clients:
        try:
            client.close()
        except Exception:  # closing is best effort; a dead transport must not block the others
            pass
