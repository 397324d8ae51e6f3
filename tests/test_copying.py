"""``deepcopy_sharing``: what the LangGraph store and the LlamaIndex retriever copy with."""

from __future__ import annotations

import copy
import threading

from hindsight_integrations._copying import deepcopy_sharing


class _Adapter:
    """A plain class like the adapters: settings to copy, a lock and a connection to share."""

    def __init__(self) -> None:
        self.settings = {"k": [1, 2]}
        self.lock = threading.Lock()
        self.connection = object()
        self.itself = self

    def __deepcopy__(self, memo: dict[int, object]) -> _Adapter:
        return deepcopy_sharing(self, memo, self.lock, self.connection)


def test_a_copy_shares_what_is_shared_and_copies_the_rest() -> None:
    adapter = _Adapter()
    copied = copy.deepcopy(adapter)
    assert type(copied) is _Adapter and copied is not adapter
    assert copied.lock is adapter.lock and copied.connection is adapter.connection
    assert copied.settings == adapter.settings and copied.settings is not adapter.settings
    assert copied.itself is copied  # a reference to the adapter is one to its copy
    holder = copy.deepcopy({"a": adapter, "b": adapter})
    assert holder["a"] is holder["b"]  # copied once within one deepcopy
