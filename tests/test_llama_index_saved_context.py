"""A FunctionAgent's Context saved and restored with HindsightChatMemory in it: the memory comes back on its store.

The retriever and memory block too, copied, pickled or rebuilt by LlamaIndex's serializers.

Real Chroma, real MCP sessions, LlamaIndex's own serializers; one restore runs in a new process
whose environment names another store.
"""

from __future__ import annotations

import asyncio
import copy
import json
import os
import pickle
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import chromadb
import pytest
from llama_index.core.agent.workflow import FunctionAgent
from llama_index.core.base.llms.types import ChatMessage, MessageRole
from llama_index.core.llms.mock import MockFunctionCallingLLMWithChatMemoryOfLastCall
from llama_index.core.workflow import Context, JsonPickleSerializer, JsonSerializer
from workflows.context.serializers import PickleSerializer

from hindsight_integrations import MemoryEngine
from hindsight_integrations.core.errors import ConfigurationError
from hindsight_integrations.llama_index import HindsightChatMemory, HindsightMemoryBlock, HindsightRetriever
from hindsight_integrations.mcp import MemoryClient

REPO = Path(__file__).resolve().parents[1]
FACT = "My dog is called Biscuit."


def agent() -> FunctionAgent:
    return FunctionAgent(llm=MockFunctionCallingLLMWithChatMemoryOfLastCall(), tools=[], streaming=False)


def saved_context(memory: HindsightChatMemory, serializer: Any = None) -> dict[str, Any]:
    """Run the agent once with ``memory`` and save its Context, as the documented resume flow does."""

    async def run() -> dict[str, Any]:
        ctx = Context(agent())
        await agent().run(FACT, memory=memory, ctx=ctx)
        return ctx.to_dict(serializer=serializer or JsonSerializer())

    return asyncio.run(run())


def restored_memory(data: dict[str, Any], serializer: Any = None) -> HindsightChatMemory:
    async def restore() -> HindsightChatMemory:
        ctx = Context.from_dict(agent(), data, serializer=serializer or JsonSerializer())
        memory: HindsightChatMemory = await ctx.store.get("memory")
        return memory

    return asyncio.run(restore())


@pytest.mark.parametrize("serializer", [JsonSerializer(), JsonPickleSerializer()], ids=["json", "json-pickle"])
@pytest.mark.parametrize("given", ["engine", "client"])
def test_a_restored_context_brings_the_memory_back_on_its_engine(
    engine: MemoryEngine, elsewhere: Path, given: str, serializer: Any
) -> None:
    chosen = {"engine": engine} if given == "engine" else {"client": MemoryClient.in_process(engine, namespace="u1")}
    memory = HindsightChatMemory.from_defaults(namespace="u1", session_id="s1", **chosen)

    restored = restored_memory(saved_context(memory, serializer), serializer)

    assert restored.session_id == "s1" and restored.client.engine is engine
    assert FACT in [m.content for m in restored.get_all()]
    assert not (elsewhere / ".hindsight").exists()


def test_a_pickled_or_copied_memory_stays_on_its_engine(
    engine: MemoryEngine, elsewhere: Path, caplog: pytest.LogCaptureFixture
) -> None:
    memory = HindsightChatMemory.from_defaults(namespace="u1", session_id="s1", engine=engine)

    loaded: HindsightChatMemory = pickle.loads(pickle.dumps(memory))
    copied = copy.deepcopy(memory)

    assert loaded.client.engine is engine and loaded.session_id == "s1"
    assert copied.client is memory.client
    assert "unpickleable" not in caplog.text  # the client is left out on purpose, not after a failed try
    assert not (elsewhere / ".hindsight").exists()


def test_a_context_whose_store_is_gone_is_refused(engine: MemoryEngine, elsewhere: Path) -> None:
    memory = HindsightChatMemory.from_defaults(namespace="u1", session_id="s1", engine=engine)
    data = json.loads(json.dumps(saved_context(memory)).replace(str(engine.settings.store.resolve()), "/nowhere/store"))

    with pytest.raises(ValueError, match="saved connected to the embedded store /nowhere/store, which does not exist"):
        restored_memory(data)
    assert not (elsewhere / ".hindsight").exists()


def test_a_memory_saved_on_a_memory_server_reconnects_only_through_the_environment(
    elsewhere: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("HINDSIGHT_MCP_URL", raising=False)
    data = {"namespace": "u1", "session_id": "s1", "store_address": {"kind": "http", "target": "http://mem:8765/mcp"}}

    with pytest.raises(ConfigurationError, match="set HINDSIGHT_MCP_URL=http://mem:8765/mcp"):
        HindsightChatMemory.from_dict(data)
    assert not (elsewhere / ".hindsight").exists()


def test_a_memory_that_cannot_reconnect_is_restored_on_a_client_given(engine: MemoryEngine, elsewhere: Path) -> None:
    memory = HindsightChatMemory.from_defaults(namespace="u1", session_id="s1", engine=engine)
    memory.put(ChatMessage(role=MessageRole.USER, content=FACT))
    data = {**memory.to_dict(), "store_address": {"kind": "store", "target": "/nowhere/store"}}

    with pytest.raises(ConfigurationError, match="build it anew with client= or engine="):
        HindsightChatMemory.from_dict(data)
    restored = HindsightChatMemory.from_dict(data, client=MemoryClient.in_process(engine, namespace="u1"))

    assert [m.content for m in restored.get_all()] == [FACT]
    assert restored.store_address == memory.store_address  # saved again where it now is


LATER_PROCESS = textwrap.dedent(
    """
    import asyncio, json, sys
    from llama_index.core.agent.workflow import FunctionAgent
    from llama_index.core.llms.mock import MockFunctionCallingLLMWithChatMemoryOfLastCall
    from llama_index.core.workflow import Context, JsonSerializer

    agent = FunctionAgent(llm=MockFunctionCallingLLMWithChatMemoryOfLastCall(), tools=[], streaming=False)

    async def main():
        ctx = Context.from_dict(agent, json.load(open(sys.argv[1])), serializer=JsonSerializer())
        memory = await ctx.store.get("memory")
        print([m.content for m in memory.get_all()])

    asyncio.run(main())
    """
)


def test_a_context_restored_in_a_later_process_reads_its_store_not_the_environments(
    store_path: Path, embedder: Any, tmp_path: Path
) -> None:
    with MemoryEngine(store=store_path, embedder=embedder, llm=False) as first:
        memory = HindsightChatMemory.from_defaults(namespace="u1", session_id="s1", engine=first)
        saved = tmp_path / "context.json"
        saved.write_text(json.dumps(saved_context(memory)))
    other = tmp_path / "the-environments-store"

    done = subprocess.run(
        [sys.executable, "-c", LATER_PROCESS, str(saved)],
        env={**os.environ, "HINDSIGHT_STORE": str(other), "HINDSIGHT_USE_LLM": "false", "PYTHONPATH": str(REPO)},
        capture_output=True,
        text=True,
        timeout=240,
        cwd=str(tmp_path),
    )

    assert done.returncode == 0, done.stderr[-3000:]
    assert FACT in done.stdout
    assert not other.exists() and not (tmp_path / ".hindsight").exists()


def test_a_copied_pickled_or_restored_retriever_and_block_stay_on_their_engine(
    engine: MemoryEngine, elsewhere: Path
) -> None:
    MemoryClient.in_process(engine, namespace="u1").store([{"content": FACT, "kind": "fact"}], apply_filter=False)
    retriever = HindsightRetriever("u1", engine=engine, top_k=2)
    block = HindsightMemoryBlock(namespace="u1", engine=engine, top_k=2)
    chat = [ChatMessage(role=MessageRole.USER, content="What is my dog called?")]

    copies = [copy.deepcopy(retriever), copy.deepcopy(block)]
    pickled_retriever: HindsightRetriever = PickleSerializer().deserialize(PickleSerializer().serialize(retriever))
    pickled_block: HindsightMemoryBlock = pickle.loads(pickle.dumps(block))
    restored_block: HindsightMemoryBlock = JsonSerializer().deserialize(JsonSerializer().serialize(block))

    assert [c.client for c in copies] == [retriever.client, block.client]  # the very clients: one connection
    assert pickled_retriever.client.engine is engine and pickled_retriever.options.top_k == 2
    assert any("Biscuit" in n.node.get_content() for n in pickled_retriever.retrieve("what is my dog called?"))
    for loaded in (pickled_block, restored_block):
        assert loaded.client.engine is engine and loaded.top_k == 2
        assert "Biscuit" in asyncio.run(loaded.aget(chat))
    assert not (elsewhere / ".hindsight").exists()


def test_a_retriever_or_block_whose_store_is_gone_is_refused(store_path: Path, embedder: Any, elsewhere: Path) -> None:
    with MemoryEngine(store=store_path, embedder=embedder, llm=False) as first:
        pickled = pickle.dumps(HindsightRetriever("u1", engine=first))
        saved = JsonSerializer().serialize(HindsightMemoryBlock(namespace="u1", engine=first))
    shutil.rmtree(store_path)

    with pytest.raises(ConfigurationError, match=r"HindsightRetriever was saved connected to .*, which does not exist"):
        pickle.loads(pickled)
    with pytest.raises(ConfigurationError, match=r"HindsightMemoryBlock was saved connected to .*, which does not"):
        JsonSerializer().deserialize(saved)
    assert not (elsewhere / ".hindsight").exists() and not store_path.exists()


def test_pickling_a_retriever_on_a_chroma_client_of_its_own_says_why_not(embedder: Any) -> None:
    with MemoryEngine(chroma_client=chromadb.EphemeralClient(), embedder=embedder, llm=False) as own:
        retriever = HindsightRetriever("u1", engine=own)
        assert copy.deepcopy(retriever).client is retriever.client
        with pytest.raises(TypeError, match=r"HindsightRetriever cannot be pickled: .*chroma_client="):
            pickle.dumps(retriever)


def without_store_address(saved: Any) -> Any:
    """``saved`` as a version before ``store_address`` existed wrote it: the key left out wherever it is."""
    if isinstance(saved, dict):
        return {k: without_store_address(v) for k, v in saved.items() if k != "store_address"}
    if isinstance(saved, list):
        return [without_store_address(v) for v in saved]
    if isinstance(saved, str) and "store_address" in saved:  # a Context keeps each value as JSON text
        return json.dumps(without_store_address(json.loads(saved)))
    return saved


def test_a_context_saved_before_store_address_is_refused_rather_than_restored_on_a_new_empty_store(
    engine: MemoryEngine, elsewhere: Path
) -> None:
    memory = HindsightChatMemory.from_defaults(namespace="u1", session_id="s1", engine=engine)
    older = without_store_address(saved_context(memory))
    block = json.loads(JsonSerializer().serialize(HindsightMemoryBlock(namespace="u1", engine=engine)))

    # It came back on ./.hindsight, created empty there: no history, and new turns written where nobody reads them.
    with pytest.raises(ValueError, match=r"HindsightChatMemory was saved by a version that did not record its store"):
        restored_memory(older)
    with pytest.raises(ConfigurationError, match=r"set HINDSIGHT_STORE \(or HINDSIGHT_CHROMA_URL, HINDSIGHT_MCP_URL\)"):
        JsonSerializer().deserialize(json.dumps(without_store_address(block)))
    pickled = memory.__getstate__()
    del pickled["__dict__"]["store_address"]
    with pytest.raises(ConfigurationError, match="which does not exist here"):
        HindsightChatMemory.__new__(HindsightChatMemory).__setstate__(pickled)
    assert not (elsewhere / ".hindsight").exists()


def test_a_context_saved_before_store_address_comes_back_on_the_environments_store_when_it_exists(
    engine: MemoryEngine, elsewhere: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    memory = HindsightChatMemory.from_defaults(namespace="u1", session_id="s1", engine=engine)
    older = without_store_address(saved_context(memory))
    retriever_state = HindsightRetriever("u1", engine=engine).__getstate__()
    del retriever_state["store_address"]  # a retriever pickled before it kept its store
    monkeypatch.setenv("HINDSIGHT_STORE", str(engine.settings.store))

    restored = restored_memory(older)
    retriever = HindsightRetriever.__new__(HindsightRetriever)
    retriever.__setstate__(retriever_state)  # raised KeyError: 'store_address'

    assert restored.client.engine is engine and FACT in [m.content for m in restored.get_all()]
    assert retriever.client.engine is engine
    assert "saved without its store_address" in caplog.text and str(engine.settings.store) in caplog.text
