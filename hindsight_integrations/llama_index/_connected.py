"""What a LlamaIndex component holding a client does when it is built, copied, pickled or restored.

The chat memory and the memory block are pydantic components that LlamaIndex copies, pickles
and rebuilds from their saved fields (a workflow ``Context``'s serialisers). A client is a
connection, not state: a copy shares it, a pickle leaves it out, and a component rebuilt from its
fields reconnects to the store it was saved from (``store_address``), or refuses; it never falls
back to whatever store the environment names. One saved before ``store_address`` existed cannot
say where its store is: it comes back on the environment's store, where the version that saved it
restored it, only when that store exists (``address_of_older_save``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from llama_index.core.bridge.pydantic import BaseModel

from ..mcp.address import StoreAddress, client_address
from ..mcp.resolve import address_of_older_save, reconnect, resolve_client, resolve_namespace

if TYPE_CHECKING:
    from ..core.engine import MemoryEngine
    from ..mcp.client import MemoryClient


class ConnectedComponent:
    """Mixed into a pydantic component with ``namespace`` and ``store_address`` fields and a ``_client``."""

    if TYPE_CHECKING:  # the fields are the component's own; declared here for the type checker only
        namespace: str | None
        store_address: StoreAddress | None
        _client: Any

    def _connect(self, client: MemoryClient | None, engine: MemoryEngine | None, owner: str) -> None:
        """Take ``client`` (or ``engine``'s, or the environment's), or reconnect a restored component to its store."""
        self.namespace = resolve_namespace(self.namespace, owner, client)
        if client is None and engine is None and self.store_address is not None:  # restored
            self._client = reconnect(self.store_address, self.namespace, owner)
        else:
            self._client = resolve_client(client, namespace=self.namespace, engine=engine)
            self.store_address = client_address(self._client)

    @classmethod
    def from_dict(cls, data: dict[str, Any], **kwargs: Any) -> Any:
        """``BaseComponent.from_dict`` (how ``JsonSerializer`` restores a component), for a save with no address too."""
        if data.get("store_address") is None and not {"client", "engine", "store_address"} & kwargs.keys():
            data = {**data, "store_address": address_of_older_save(cls.__name__)}
        return super().from_dict(data, **kwargs)  # type: ignore[misc]

    @classmethod
    def model_validate(cls, obj: Any, *args: Any, **kwargs: Any) -> Any:
        """pydantic's ``model_validate`` (how ``JsonSerializer`` restores a model), for a save with no address too."""
        if isinstance(obj, dict) and obj.get("store_address") is None:
            obj = {**obj, "store_address": address_of_older_save(cls.__name__)}
        return super().model_validate(obj, *args, **kwargs)  # type: ignore[misc]

    def __deepcopy__(self, memo: dict[int, Any] | None = None) -> Any:
        """A copy on the same client: a connection is not state to duplicate."""
        memo = {} if memo is None else memo
        memo[id(self._client)] = self._client
        return super().__deepcopy__(memo)  # type: ignore[misc]

    def __getstate__(self) -> dict[str, Any]:
        """Pickle the fields only: the client is a connection, reopened from ``store_address`` when loaded."""
        # Not ``BaseComponent.__getstate__``: it would try to pickle the client and log a warning.
        return {**BaseModel.__getstate__(self), "__pydantic_private__": {}}  # type: ignore[arg-type]

    def __setstate__(self, state: dict[str, Any]) -> None:
        # ``BaseComponent.__setstate__`` falls back to a bare restore when ``__init__`` raises,
        # which would leave a component without a client; a refusal to reconnect must be seen.
        fields = state["__dict__"]
        if fields.get("store_address") is None:
            fields = {**fields, "store_address": address_of_older_save(type(self).__name__)}
        self.__init__(**fields)  # type: ignore[misc]


__all__ = ["ConnectedComponent"]
