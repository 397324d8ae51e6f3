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

An adapter is copied with the connection it has (a copy shares it) and saved with the
``StoreAddress`` it is connected to: restored, it reconnects to that store or refuses
(``reconnect``), never opens whatever store the environment names instead.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import threading
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..core.config import Settings, load_settings, validate_namespace
from ..core.errors import ConfigurationError
from .address import (
    StoreAddress,
    client_address,
    engine_address,
    environment_address,
    live_engine,
    picklable_address,
    remember_engine,
)
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
log = logging.getLogger(__name__)


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
        remember_engine(getattr(client, "engine", None))
        return client
    if engine is not None:
        # Not cached here: the client keeps the engine alive, so a module-level cache would
        # pin every engine ever passed in. Adapters keep the client they resolved.
        remember_engine(engine)
        return MemoryClient.in_process(engine, namespace=namespace)
    if os.environ.get("HINDSIGHT_MCP_URL") or os.environ.get("HINDSIGHT_MCP_COMMAND"):  # as from_env decides
        key: tuple[Any, ...] = (os.getpid(), namespace, *(os.environ.get(var) for var in _SERVER_KEY_VARS))
        return _cached_client(key, lambda: MemoryClient.from_env(namespace=namespace))
    return _settings_client(load_settings(), namespace)  # what MemoryEngine() reads


def reconnect(address: StoreAddress, namespace: str, owner: str) -> MemoryClient:
    """The client for ``namespace`` on the store a saved adapter was connected to, or a refusal saying what to do.

    In order: the engine this process already has on that store (a copy restored where it was
    saved uses the very engine it was saved from); the environment's client when the
    environment names that store; a new engine on that embedded directory (if it exists: one
    that does not would be created empty, a store nobody has used) or Chroma server. A memory
    server is reached only through the environment, which holds its token or command.
    Raises ``ConfigurationError`` when none of these reaches ``address``.
    """
    engine = live_engine(address)
    if engine is not None:
        return MemoryClient.in_process(engine, namespace=namespace)
    if environment_address() == address:
        return resolve_client(namespace=namespace)
    if address.kind == "store" and Path(address.target).is_dir():
        return _settings_client(load_settings(store=address.target), namespace)
    if address.kind == "chroma":
        return _settings_client(load_settings(chroma_url=address.target), namespace)
    problem = {
        "store": ", which does not exist here: restore it on a machine that has that directory",
        "http": f": set HINDSIGHT_MCP_URL={address.target} (and HINDSIGHT_MCP_TOKEN) before restoring it",
        "stdio": f": set HINDSIGHT_MCP_COMMAND={address.target!r} before restoring it",
    }.get(address.kind, ": it cannot reconnect by itself")
    raise ConfigurationError(
        f"{owner} was saved connected to {address.describe()}{problem}, or build it anew with client= or "
        f"engine= (a restored {owner} never uses another store than the one it was saved with)"
    )


def address_of_older_save(owner: str) -> StoreAddress:
    """Where to restore an adapter saved before it recorded its store (no ``store_address``), or a refusal.

    The version that saved it restored it on the environment's store, so that is where its memories
    went: it comes back there, with a warning naming that store, as long as the store exists. An
    embedded directory that does not exist would be created empty (a store nobody has used, the
    conversation gone without a word), so that is refused, saying what to do.
    """
    address = environment_address()
    if address.kind == "store" and not Path(address.target).is_dir():
        raise ConfigurationError(
            f"{owner} was saved by a version that did not record its store (its saved data has no store_address), "
            f"and the environment names {address.describe()}, which does not exist here: set HINDSIGHT_STORE "
            "(or HINDSIGHT_CHROMA_URL, HINDSIGHT_MCP_URL) to the store it was used with before restoring it, "
            "or build it anew with client= or engine="
        )
    log.warning(
        "%s was saved without its store_address (by an older version); restoring it on the environment's store, "
        "%s, as that version did",
        owner,
        address.describe(),
    )
    return address


def _settings_client(settings: Settings, namespace: str) -> MemoryClient:
    """The cached in-process client for ``namespace`` on the shared engine of ``settings``."""
    key = (os.getpid(), namespace, _engine_key(settings))
    return _cached_client(key, lambda: MemoryClient.in_process(_shared_engine(settings), namespace=namespace))


def _cached_client(key: tuple[Any, ...], build: Callable[[], MemoryClient]) -> MemoryClient:
    """The client cached under ``key``, built (with ``_lock`` held) if there is none yet.

    Over HTTP the token decides the namespace; the client is built for one, so it refuses a
    token that the server says belongs to someone else.
    """
    with _lock:
        cached = _env_clients.get(key)
        if cached is None:
            cached = _env_clients[key] = build()
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
        remember_engine(engine)
    return engine


class ClientPool:
    """The clients one adapter uses, one per namespace it has acted for.

    A middleware serves whichever user the run's context names, so it may need several
    clients; a memory or retriever needs one. Resolving once per namespace keeps a per-call
    adapter cheap and keeps an ``engine=``-built in-process session alive with the adapter.

    A deep copy of an adapter shares its pool (a connection is not state to duplicate); a
    pickled pool keeps only its ``StoreAddress``, and the unpickled one reconnects there on
    first use (``reconnect``). ``address`` is that saved address; ``owner`` names the adapter
    in errors.
    """

    def __init__(
        self,
        client: MemoryClient | None = None,
        engine: MemoryEngine | None = None,
        *,
        address: StoreAddress | None = None,
        owner: str = "this adapter",
    ) -> None:
        if client is not None and engine is not None:
            raise ConfigurationError("pass either client= or engine=, not both: the client already decides the store")
        self.client = client
        self.engine = engine
        self.address = address
        self.owner = owner
        self._clients: dict[str, MemoryClient] = {}
        self._lock = threading.Lock()
        remember_engine(engine if engine is not None else getattr(client, "engine", None))

    def get(self, namespace: str) -> MemoryClient:
        """The client for ``namespace``, resolved on first use and kept."""
        with self._lock:
            found = self._clients.get(namespace)
            if found is None:
                if self.client is None and self.engine is None and self.address is not None:
                    found = reconnect(self.address, namespace, self.owner)
                else:
                    found = resolve_client(self.client, namespace=namespace, engine=self.engine)
                self._clients[namespace] = found
            return found

    async def aget(self, namespace: str) -> MemoryClient:
        """``get`` for async callers: a first use resolves the client in a worker thread.

        Resolving may build an engine (open its store, load its embedding model: seconds), which
        on the caller's event loop would stall every other coroutine of the application meanwhile.
        """
        with self._lock:
            found = self._clients.get(namespace)
        return found if found is not None else await asyncio.to_thread(self.get, namespace)

    def saved_address(self) -> StoreAddress:
        """Where this pool's memories live, as saved with the adapter: pinned now, even when the environment decided."""
        if self.client is not None:
            return client_address(self.client)
        if self.engine is not None:
            return engine_address(self.engine)
        if self.address is not None:
            return self.address
        with self._lock:
            resolved = next(iter(self._clients.values()), None)
        return client_address(resolved) if resolved is not None else environment_address()

    def __deepcopy__(self, memo: dict[int, Any]) -> ClientPool:
        return self

    def __reduce__(self) -> tuple[Callable[[StoreAddress, str], ClientPool], tuple[StoreAddress, str]]:
        return _restored_pool, (picklable_address(self.saved_address(), self.owner), self.owner)


def _restored_pool(address: StoreAddress, owner: str) -> ClientPool:
    """An unpickled ``ClientPool``: no connection yet, reconnecting to ``address`` on first use."""
    return ClientPool(address=address, owner=owner)


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
    "address_of_older_save",
    "clear_client_cache",
    "reconnect",
    "require_session",
    "resolve_client",
    "resolve_namespace",
    "served_namespace",
]
