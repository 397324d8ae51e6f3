"""Copying and pickling HindsightMemory, HindsightRetriever and HindsightStore: real Chroma, real MCP sessions.

A copy shares the connection; a pickle keeps where the memories live and reconnects there,
never to the store the environment (or the working directory) would pick.
"""

from __future__ import annotations

import copy
import pickle
from collections.abc import Callable
from pathlib import Path
from typing import Any

import chromadb
import pytest

from hindsight_integrations import MemoryEngine
from hindsight_integrations.core.errors import ConfigurationError
from hindsight_integrations.langchain import HindsightMemory, HindsightRetriever, HindsightStore
from hindsight_integrations.mcp.address import StoreAddress
from hindsight_integrations.mcp.resolve import ClientPool, clear_client_cache

FACT = "My dog is called Biscuit and she is a three year old beagle."

COPIES: dict[str, Callable[[Any], Any]] = {
    "deepcopy": copy.deepcopy,
    "model_copy(deep=True)": lambda adapter: adapter.model_copy(deep=True),
    "copy": copy.copy,
}


def window(memory: HindsightMemory) -> list[str]:
    return [m.text for m in memory.load_memory_variables({})["chat_history"]]


@pytest.mark.parametrize("how", COPIES)
def test_a_copy_shares_the_engine_and_reads_the_same_memories(engine: MemoryEngine, how: str) -> None:
    memory = HindsightMemory(namespace="u1", session_id="s1", engine=engine)
    memory.save_context({"input": FACT}, {"output": "Noted."})
    retriever = HindsightRetriever(namespace="u1", engine=engine)

    memory_copy, retriever_copy = COPIES[how](memory), COPIES[how](retriever)

    assert memory_copy.engine is engine and retriever_copy.engine is engine
    assert window(memory_copy) == [FACT, "Noted."]
    memory_copy.save_context({"input": "I live in Lyon."}, {"output": "Nice."})
    assert window(memory) == [FACT, "Noted.", "I live in Lyon.", "Nice."]  # one conversation, not two
    assert any("Biscuit" in d.page_content for d in retriever_copy.invoke("what is my dog called?"))


def test_a_pickled_memory_reconnects_to_the_engine_it_was_built_with(engine: MemoryEngine, elsewhere: Path) -> None:
    memory = HindsightMemory(namespace="u1", session_id="s1", engine=engine)
    memory.save_context({"input": FACT}, {"output": "Noted."})
    retriever = HindsightRetriever(namespace="u1", engine=engine, k=2)

    loaded: HindsightMemory = pickle.loads(pickle.dumps(memory))
    loaded_retriever: HindsightRetriever = pickle.loads(pickle.dumps(retriever))

    assert window(loaded) == [FACT, "Noted."]
    assert loaded.memory_client.engine is engine  # the same engine, not a second one on the same directory
    assert loaded_retriever.k == 2 and any("Biscuit" in d.page_content for d in loaded_retriever.invoke("my dog?"))
    assert not (elsewhere / ".hindsight").exists()


def test_a_pickled_memory_reopens_its_store_once_its_engine_is_gone(
    store_path: Path, embedder: Any, elsewhere: Path
) -> None:
    with MemoryEngine(store=store_path, embedder=embedder, llm=False) as first:
        memory = HindsightMemory(namespace="u1", session_id="s1", engine=first)
        memory.save_context({"input": FACT}, {"output": "Noted."})
        saved = pickle.dumps(memory)

    loaded: HindsightMemory = pickle.loads(saved)  # as in a later process: that engine is closed

    reopened = loaded.memory_client.engine
    try:
        assert reopened is not None and reopened.settings.store == store_path.resolve()
        assert window(loaded) == [FACT, "Noted."]
        assert not (elsewhere / ".hindsight").exists()
    finally:
        clear_client_cache()  # it opened the shared engine of that store's settings
        reopened.close()


def test_a_memory_whose_store_is_gone_refuses_to_reconnect_elsewhere(elsewhere: Path) -> None:
    gone = StoreAddress(kind="store", target=str(elsewhere / "deleted-store"))
    memory = HindsightMemory(namespace="u1", session_id="s1")
    memory._pool = ClientPool(address=gone, owner="HindsightMemory")  # what unpickling one saved there gives
    loaded: HindsightMemory = pickle.loads(pickle.dumps(memory))

    with pytest.raises(ConfigurationError, match="deleted-store, which does not exist here"):
        loaded.load_memory_variables({})
    assert not (elsewhere / ".hindsight").exists() and not (elsewhere / "deleted-store").exists()


def test_a_memory_on_a_memory_server_reconnects_only_through_the_environment(
    elsewhere: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    url = "http://127.0.0.1:9/mcp"
    memory = HindsightMemory(namespace="u1", session_id="s1")
    memory._pool = ClientPool(address=StoreAddress(kind="http", target=url), owner="HindsightMemory")
    monkeypatch.delenv("HINDSIGHT_MCP_URL", raising=False)

    with pytest.raises(ConfigurationError, match=f"set HINDSIGHT_MCP_URL={url}"):
        pickle.loads(pickle.dumps(memory)).load_memory_variables({})
    assert not (elsewhere / ".hindsight").exists()


def test_pickling_an_adapter_on_a_chroma_client_of_its_own_says_why_not(embedder: Any) -> None:
    with MemoryEngine(chroma_client=chromadb.EphemeralClient(), embedder=embedder, llm=False) as own:
        memory = HindsightMemory(namespace="u1", session_id="s1", engine=own)
        assert copy.deepcopy(memory).engine is own  # copying is fine: the copy shares the engine
        with pytest.raises(TypeError, match=r"HindsightMemory cannot be pickled: .*chroma_client="):
            pickle.dumps(memory)


def test_a_copied_or_pickled_langgraph_store_stays_on_its_engine(engine: MemoryEngine, elsewhere: Path) -> None:
    store = HindsightStore(namespace="u1", engine=engine)
    store.put(("prefs",), "pet", {"text": FACT})

    copied = copy.deepcopy(store)
    loaded: HindsightStore = pickle.loads(pickle.dumps(store))

    assert copied.memory_client is store.memory_client  # one connection, not two
    assert copy.copy(store).memory_client is store.memory_client
    copied.put(("prefs",), "city", {"text": "I live in Lyon."})
    assert {item.key for item in store.search(("prefs",))} == {"pet", "city"}
    assert loaded.memory_client.engine is engine
    assert (item := loaded.get(("prefs",), "pet")) is not None and item.value == {"text": FACT}
    loaded.put(("prefs",), "pet", {"text": "My dog is called Max."})  # the loaded store has a write lock of its own
    assert [item.key for item in store.search(("prefs",))].count("pet") == 1
    assert not (elsewhere / ".hindsight").exists()
