"""Which ``MemoryClient`` a framework adapter talks to, and whose memories it acts on.

Every adapter surface (LangChain, LlamaIndex) accepts ``client=`` (an open ``MemoryClient``),
``engine=`` (an embedded ``MemoryEngine``, wrapped in an in-process MCP session) or neither,
in which case the environment decides through ``MemoryClient.from_env``:
``HINDSIGHT_MCP_URL`` → streamable HTTP, ``HINDSIGHT_MCP_COMMAND`` → stdio, otherwise an
in-process engine built from the settings ``MemoryEngine()`` reads (``HINDSIGHT_STORE``,
default ``./.hindsight``, or ``HINDSIGHT_CHROMA_URL``), so an adapter and an engine built
without arguments share one store.

A client serves exactly one namespace, so clients built from the environment are cached per
(process, namespace, configuration): a memory, a retriever and a middleware for the same
user share one MCP session instead of each loading an embedding model or opening a
connection, and two users never share one. In-process clients of all users share one
engine per store, so serving many users loads the embedding model once.
"""

from __future__ import annotations

import contextlib
import functools
import os
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ..core.config import Settings, load_settings, validate_namespace
from ..core.errors import ConfigurationError
from .client import MemoryClient

if TYPE_CHECKING:
    from ..core.engine import MemoryEngine

# The variables that say where memories live. With none set, memories live where
# ``MemoryEngine()`` keeps them: the embedded store at ./.hindsight.
CONFIG_VARS = ("HINDSIGHT_MCP_URL", "HINDSIGHT_MCP_COMMAND", "HINDSIGHT_STORE", "HINDSIGHT_CHROMA_URL")
# A server reached over HTTP or stdio is told apart by these (a spawned stdio server reads the
# store from the environment it inherits); an in-process engine by its settings.
_SERVER_KEY_VARS = (*CONFIG_VARS, "HINDSIGHT_MCP_TOKEN", "HINDSIGHT_EMBEDDING_MODEL")

_env_clients: dict[tuple[Any, ...], MemoryClient] = {}
_env_engines: dict[tuple[Any, ...], MemoryEngine] = {}
_lock = threading.Lock()


def resolve_namespace(namespace: str | None, owner: str, client: Any = None) -> str:
    """The user an adapter acts for: the argument, else the explicit client's, else ``HINDSIGHT_NAMESPACE``.

    There is deliberately no silent "default" user: mixing two people's memories is the one
    mistake a memory layer must not make, so an adapter that cannot name its user fails
    loudly. A client that knows its namespace names it (an HTTP client learns it only when
    it connects, so one opened without ``namespace=`` does not).
    """
    value = namespace
    if value is None and client is not None:
        value = served_namespace(client)
    if value is None:
        value = os.environ.get("HINDSIGHT_NAMESPACE") or None
    if value is None or value == "":
        raise ConfigurationError(
            f"{owner} needs a namespace (the user whose memories it reads and writes): "
            f'pass namespace="..." or set HINDSIGHT_NAMESPACE'
        )
    return validate_namespace(value)


def require_session(session_id: str | None, owner: str) -> str:
    """Conversation surfaces record turns into a session's working memory; say so when it is missing."""
    if not isinstance(session_id, str) or not session_id.strip():
        raise ConfigurationError(
            f'{owner} needs a session_id (the conversation whose turns it records): pass session_id="..."'
        )
    return session_id


def served_namespace(client: Any) -> str | None:
    """The namespace a client serves, when it can tell (``MemoryClient.namespace``)."""
    value = getattr(client, "namespace", None)
    return value if isinstance(value, str) else None


def resolve_client(
    client: MemoryClient | None = None,
    *,
    namespace: str,
    engine: MemoryEngine | None = None,
) -> MemoryClient:
    """The client for ``namespace``: explicit ``client`` wins, then ``engine``, then the environment.

    Raises ``ConfigurationError`` when both ``client`` and ``engine`` are given, or when the
    client serves another namespace (writing user B's turns through user A's client would
    leak them into A's memory); a client that cannot tell yet is claimed for ``namespace``, and
    its first call refused if the server announces another (``MemoryNamespaceError``). With
    neither, the environment decides; with nothing in it, the embedded default store (as
    ``MemoryEngine()``), so the README's one-liners work on a fresh machine.
    """
    if client is not None:
        if engine is not None:
            raise ConfigurationError("pass either client= or engine=, not both: the client already decides the store")
        served = served_namespace(client)
        if served is not None and served != namespace:
            raise ConfigurationError(
                f"the client serves namespace {served!r} but namespace {namespace!r} was asked for; "
                "one client serves one namespace, so pass a client for that user (or engine= / env config)"
            )
        if served is None and callable(expect := getattr(client, "expect_namespace", None)):
            expect(namespace)  # not known before its first call: the server's announcement is checked then
        return client
    if engine is not None:
        # Not cached here: the client keeps the engine alive, so a module-level cache would
        # pin every engine ever passed in. Adapters keep the client they resolved.
        return MemoryClient.in_process(engine, namespace=namespace)
    engine_factory: Callable[[], MemoryEngine] | None = None
    if os.environ.get("HINDSIGHT_MCP_URL") or os.environ.get("HINDSIGHT_MCP_COMMAND"):  # as from_env decides
        key: tuple[Any, ...] = (os.getpid(), namespace, *(os.environ.get(var) for var in _SERVER_KEY_VARS))
    else:
        settings = load_settings()  # what MemoryEngine() reads
        key = (os.getpid(), namespace, _engine_key(settings))
        engine_factory = functools.partial(_shared_engine, settings)
    with _lock:
        cached = _env_clients.get(key)
        if cached is None:
            # Over HTTP the token decides the namespace; ``namespace`` makes the client refuse
            # a token that the server says belongs to someone else.
            cached = _env_clients[key] = MemoryClient.from_env(namespace=namespace, engine_factory=engine_factory)
        return cached


def _engine_key(settings: Settings) -> str:
    """One engine per configuration: every setting but the namespace (one engine serves them all).

    The default store is relative (``./.hindsight``), so the key holds the directory it names
    now: an application that changes directory gets the store of its new directory, as
    ``MemoryEngine()`` there would, not a client cached for the old one.
    """
    return settings.model_copy(update={"store": settings.store.resolve()}).model_dump_json(exclude={"namespace"})


def _shared_engine(settings: Settings) -> MemoryEngine:
    """One engine per store configuration and process, for every namespace's in-process client.

    Called with ``_lock`` held (from ``resolve_client``).
    """
    from ..core.engine import MemoryEngine

    key = (os.getpid(), _engine_key(settings))
    engine = _env_engines.get(key)
    if engine is None:
        engine = _env_engines[key] = MemoryEngine(settings)
    return engine


class ClientPool:
    """The clients one adapter uses, one per namespace it has acted for.

    A middleware serves whichever user the run's context names, so it may need several
    clients; a memory or retriever needs one. Resolving once per namespace keeps a per-call
    adapter cheap and keeps an ``engine=``-built in-process session alive with the adapter.
    """

    def __init__(self, client: MemoryClient | None = None, engine: MemoryEngine | None = None) -> None:
        if client is not None and engine is not None:
            raise ConfigurationError("pass either client= or engine=, not both: the client already decides the store")
        self.client = client
        self.engine = engine
        self._clients: dict[str, MemoryClient] = {}
        self._lock = threading.Lock()

    def get(self, namespace: str) -> MemoryClient:
        """The client for ``namespace``, resolved on first use and kept."""
        with self._lock:
            found = self._clients.get(namespace)
            if found is None:
                found = self._clients[namespace] = resolve_client(self.client, namespace=namespace, engine=self.engine)
            return found


def clear_client_cache() -> None:
    """Close and forget the clients built from the environment (tests, or after changing env vars)."""
    with _lock:
        clients = list(_env_clients.values())
        _env_clients.clear()
        _env_engines.clear()
    for client in clients:
        with contextlib.suppress(Exception):  # best effort: one dead transport must not keep the others open
            client.close()


__all__ = [
    "CONFIG_VARS",
    "ClientPool",
    "clear_client_cache",
    "require_session",
    "resolve_client",
    "resolve_namespace",
    "served_namespace",
]
