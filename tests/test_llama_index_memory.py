"""HindsightChatMemory with LlamaIndex chat engines and workflow agents, over a real MCP session."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from llama_index.core.agent.workflow import FunctionAgent, ReActAgent
from llama_index.core.base.llms.types import (
    ChatMessage,
    ImageBlock,
    MessageRole,
    TextBlock,
    ThinkingBlock,
    ToolCallBlock,
)
from llama_index.core.chat_engine import CondensePlusContextChatEngine, ContextChatEngine, SimpleChatEngine
from llama_index.core.llms.mock import MockFunctionCallingLLMWithChatMemoryOfLastCall, MockLLMWithChatMemoryOfLastCall
from llama_index.core.tools import FunctionTool

from hindsight_integrations.core.errors import ConfigurationError
from hindsight_integrations.core.recall.context import CONTEXT_HEADER
from hindsight_integrations.llama_index import HindsightChatMemory, HindsightRetriever
from hindsight_integrations.mcp import resolve

from .llama_index_support import ScriptedChatLLM, Stores, stores, texts  # noqa: F401

FACT = "My dog is called Biscuit and she is a three year old beagle."
QUESTION = "What is the name of my dog?"


def teach(stores: Stores, namespace: str = "u1", session: str = "teach") -> None:
    """First "process": a SimpleChatEngine conversation in which the user states FACT."""
    memory = HindsightChatMemory.from_defaults(namespace=namespace, session_id=session, client=stores.client(namespace))
    SimpleChatEngine.from_defaults(llm=MockLLMWithChatMemoryOfLastCall(is_chat_model=True), memory=memory).chat(FACT)


def later_memory(
    stores: Stores, namespace: str = "u1", session: str = "later", **kwargs: object
) -> HindsightChatMemory:
    """A memory in a later "process": new engine, new MCP session, new conversation."""
    return HindsightChatMemory.from_defaults(
        namespace=namespace, session_id=session, client=stores.client(namespace), **kwargs
    )


def test_simple_chat_engine_later_process_sees_the_fact(stores: Stores) -> None:
    teach(stores)
    llm = MockLLMWithChatMemoryOfLastCall(is_chat_model=True)
    engine = SimpleChatEngine.from_defaults(llm=llm, memory=later_memory(stores), system_prompt="Be brief.")
    engine.chat(QUESTION)
    sent = llm.last_chat_messages
    assert sent[0].content == "Be brief."
    injected = [m for m in sent if m.role == MessageRole.SYSTEM and CONTEXT_HEADER in str(m.content)]
    assert len(injected) == 1 and "Biscuit" in str(injected[0].content)
    assert sent[-1].role == MessageRole.USER and sent[-1].content == QUESTION


def test_working_window_resumes_the_conversation_after_a_restart(stores: Stores) -> None:
    teach(stores, session="s1")
    memory = later_memory(stores, session="s1")  # same session, new process
    history = memory.get_all()
    assert [m.role for m in history] == [MessageRole.USER, MessageRole.ASSISTANT]
    assert history[0].content == FACT
    # The fact is in the window verbatim, so it is not injected a second time as a "memory".
    assert CONTEXT_HEADER not in texts(memory.get(QUESTION))


@pytest.mark.parametrize("engine_cls", [ContextChatEngine, CondensePlusContextChatEngine])
def test_context_chat_engines_see_the_fact(stores: Stores, engine_cls: type) -> None:
    teach(stores)
    client = stores.client("u1")
    llm = MockLLMWithChatMemoryOfLastCall(is_chat_model=True)
    memory = HindsightChatMemory.from_defaults(namespace="u1", session_id="later", client=client)
    # A knowledge base without the fact as the engine's own retriever: the fact must come from the
    # memory. (Related enough to pass the relevance floor: with no node at all, LlamaIndex's
    # condense-plus-context engine answers "Empty Response" without calling the model.)
    docs = stores.client("docs")
    docs.store("My neighbour's dog is a beagle who barks at the mail carrier.", kind="fact")
    retriever = HindsightRetriever(namespace="docs", client=docs)
    # The mock model cannot condense a question (it echoes its prompt), so the engine asks the
    # question itself.
    extra = {"skip_condense": True} if engine_cls is CondensePlusContextChatEngine else {}
    engine = engine_cls.from_defaults(retriever=retriever, llm=llm, memory=memory, **extra)
    response = engine.chat(QUESTION)
    assert "Biscuit" in texts(llm.last_chat_messages)
    assert str(response)
    # Both turns were recorded in the session's working memory through MCP.
    assert [r.role.value for r in client.working_memory("later")] == ["user", "assistant"]


async def test_function_agent_later_run_sees_the_fact_and_replays_tool_calls(stores: Stores) -> None:
    teach(stores)

    def pantry_status(item: str = "dog food") -> str:
        """How much of an item is left in the pantry."""
        return f"Two bags of {item} left."

    client = stores.client("u1")
    llm = MockFunctionCallingLLMWithChatMemoryOfLastCall()
    agent = FunctionAgent(llm=llm, tools=[FunctionTool.from_defaults(pantry_status)], streaming=False)
    memory = HindsightChatMemory.from_defaults(namespace="u1", session_id="agent", client=client)
    result = await agent.run(QUESTION, memory=memory)
    assert "Tool calls complete" in str(result)
    assert "Biscuit" in texts(llm.last_chat_messages)
    # The tool call and its result went to working memory and come back as real tool messages.
    history = await memory.aget_all()
    assert [m.role for m in history] == [
        MessageRole.USER,
        MessageRole.ASSISTANT,
        MessageRole.TOOL,
        MessageRole.ASSISTANT,
    ]
    (call,) = [b for b in history[1].blocks if isinstance(b, ToolCallBlock)]
    assert call.tool_name == "pantry_status"
    assert history[2].additional_kwargs["tool_call_id"] == call.tool_call_id
    assert "Two bags of dog food" in str(history[2].content)

    # A second run in a new process resumes the same session with the tool exchange intact.
    llm2 = MockFunctionCallingLLMWithChatMemoryOfLastCall()
    agent2 = FunctionAgent(llm=llm2, tools=[], streaming=False)
    await agent2.run("And how much food is left?", memory=later_memory(stores, session="agent"))
    sent = llm2.last_chat_messages
    assert any(isinstance(b, ToolCallBlock) for m in sent for b in m.blocks)
    assert "Two bags of dog food" in texts(sent)


@pytest.mark.parametrize("insert_method, system_prompt", [("user", None), ("system", "You help dog owners.")])
async def test_react_agent_sees_the_fact(stores: Stores, insert_method: str, system_prompt: str | None) -> None:
    teach(stores)
    llm = ScriptedChatLLM(replies=["Thought: I can answer from memory.\nAnswer: Your dog is Biscuit."])
    # ReActAgent drops the first system message of its input (it expects its own prompt there):
    # without a system_prompt the memories must ride in the user message instead.
    memory = later_memory(stores, insert_method=insert_method)
    agent = ReActAgent(llm=llm, tools=[], streaming=False, system_prompt=system_prompt)
    result = await agent.run(QUESTION, memory=memory)
    assert "Biscuit" in str(result)
    sent = llm.last_chat_messages
    carrier = [m for m in sent if CONTEXT_HEADER in str(m.content)]
    assert len(carrier) == 1 and "Biscuit" in str(carrier[0].content)
    assert carrier[0].role == (MessageRole.USER if insert_method == "user" else MessageRole.SYSTEM)
    assert QUESTION in str(sent[-1].content)


async def test_an_agent_turn_counts_one_access_however_many_steps_read_the_memory(stores: Stores) -> None:
    """A FunctionAgent reads its memory at each step and to finish: a turn used its memories once, not per read."""
    engine = stores.engine()
    fact = engine.store(FACT, namespace="u1").stored[0]
    memory = HindsightChatMemory.from_defaults(namespace="u1", session_id="agent", client=stores.client("u1", engine))

    def accesses() -> list[int]:
        hits = engine.recall("dog called Biscuit beagle", namespace="u1", touch=False).hits
        return [h.record.access_count for h in hits if h.record.id == fact.id]

    agent = FunctionAgent(llm=MockFunctionCallingLLMWithChatMemoryOfLastCall(), tools=[], streaming=False)
    await agent.run(QUESTION, memory=memory)
    assert "Biscuit" in texts(await memory.aget())  # every read still gets the memory
    assert accesses() == [1]
    await agent.run(QUESTION, memory=memory)  # the same question again is a new turn, a new use
    memory.get()
    assert accesses() == [2]


def test_reset_clears_the_window_but_keeps_long_term_memory(stores: Stores) -> None:
    client = stores.client("u1")
    memory = HindsightChatMemory.from_defaults(namespace="u1", session_id="s1", client=client)
    memory.put(ChatMessage(role="user", content=FACT))
    memory.put(ChatMessage(role="assistant", content="Biscuit sounds lovely."))
    assert len(memory.get_all()) == 2
    memory.reset()
    assert memory.get_all() == []
    messages = memory.get(QUESTION)
    assert len(messages) == 1 and messages[0].role == MessageRole.SYSTEM and "Biscuit" in str(messages[0].content)


def test_namespaces_are_isolated(stores: Stores) -> None:
    teach(stores, namespace="alice")
    bob = later_memory(stores, namespace="bob")
    assert "Biscuit" not in texts(bob.get(QUESTION))
    alice = later_memory(stores, namespace="alice")
    assert "Biscuit" in texts(alice.get(QUESTION))


def test_a_missing_namespace_is_an_error_not_a_default_user(stores: Stores, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("HINDSIGHT_NAMESPACE", raising=False)
    with pytest.raises(ConfigurationError, match="HindsightChatMemory needs a namespace"):
        HindsightChatMemory.from_defaults(session_id="s", engine=stores.engine())
    with pytest.raises(ConfigurationError, match="HindsightRetriever needs a namespace"):
        HindsightRetriever(engine=stores.engine())
    # A client that knows its user names it; so does the environment.
    assert HindsightRetriever(client=stores.client("u1")).namespace == "u1"
    monkeypatch.setenv("HINDSIGHT_NAMESPACE", "u3")
    assert HindsightChatMemory.from_defaults(session_id="s", engine=stores.engine()).client.namespace == "u3"


def test_a_client_for_another_namespace_is_refused(stores: Stores) -> None:
    with pytest.raises(ConfigurationError, match="serves namespace 'u1'"):
        HindsightChatMemory.from_defaults(namespace="u2", session_id="s", client=stores.client("u1"))


async def test_async_paths(stores: Stores) -> None:
    teach(stores)
    client = stores.client("u1")
    memory = HindsightChatMemory.from_defaults(namespace="u1", session_id="async", client=client)
    await memory.aput(ChatMessage(role="user", content="Hello there, can you help me plan a walk?"))
    await memory.aput_messages([ChatMessage(role="assistant", content="Of course, where would you like to go?")])
    assert [m.role for m in await memory.aget_all()] == [MessageRole.USER, MessageRole.ASSISTANT]
    messages = await memory.aget(QUESTION)
    assert "Biscuit" in str(messages[0].content) and len(messages) == 3

    await memory.aset([ChatMessage(role="user", content="Start over: I want to plan a picnic instead.")])
    assert [m.content for m in await memory.aget_all()] == ["Start over: I want to plan a picnic instead."]
    await memory.areset()
    assert await memory.aget_all() == []

    llm = MockLLMWithChatMemoryOfLastCall(is_chat_model=True)
    await SimpleChatEngine.from_defaults(llm=llm, memory=memory).achat(QUESTION)
    assert "Biscuit" in texts(llm.last_chat_messages)


def test_set_only_records_what_is_new_and_never_relearns_injected_memories(stores: Stores) -> None:
    teach(stores)
    client = stores.client("u1")
    memory = HindsightChatMemory.from_defaults(namespace="u1", session_id="s", client=client)
    first = [
        ChatMessage(role="user", content="I want to adopt a second dog."),
        ChatMessage(role="assistant", content="Great idea!"),
    ]
    memory.set(first)
    ids = [r.id for r in client.working_memory("s")]
    # Handing back what get() returned (injected block included) plus one new message.
    got = memory.get(QUESTION)
    assert CONTEXT_HEADER in str(got[0].content)
    memory.set([*got, ChatMessage(role="user", content="Which breed goes well with a beagle?")])
    window = client.working_memory("s")
    assert [r.id for r in window[:2]] == ids
    assert len(window) == 3 and all(CONTEXT_HEADER not in r.content for r in window)
    # A different history replaces the window.
    memory.set([ChatMessage(role="user", content="New topic: my garden.")])
    assert [r.content for r in client.working_memory("s")] == ["New topic: my garden."]


def test_non_text_blocks_are_stored_as_text_or_skipped(stores: Stores, caplog: pytest.LogCaptureFixture) -> None:
    client = stores.client("u1")
    memory = HindsightChatMemory.from_defaults(namespace="u1", session_id="s", client=client)
    png = b"\x89PNG\r\n\x1a\n" + b"\x00" * 16
    with caplog.at_level(logging.INFO, logger="hindsight.llama_index"):
        memory.put(ChatMessage(role="user", blocks=[ImageBlock(image=png, image_mimetype="image/png")]))
        memory.put(
            ChatMessage(
                role="user",
                blocks=[
                    ImageBlock(image=png, image_mimetype="image/png"),
                    TextBlock(text="This is a photo of my beagle Biscuit."),
                ],
            )
        )
        memory.put(
            ChatMessage(
                role="assistant",
                blocks=[ThinkingBlock(content="the user likes dogs"), TextBlock(text="What a cute dog!")],
            )
        )
        memory.put(
            ChatMessage(
                role="assistant",
                blocks=[ToolCallBlock(tool_call_id="c1", tool_name="lookup_breed", tool_kwargs={"breed": "beagle"})],
            )
        )
        memory.put(
            ChatMessage(role="tool", content="Beagles are friendly hounds.", additional_kwargs={"tool_call_id": "c1"})
        )
    window = client.working_memory("s")
    assert [r.content for r in window] == [
        "This is a photo of my beagle Biscuit.",
        "What a cute dog!",
        '[tool call] lookup_breed({"breed": "beagle"})',
        "Beagles are friendly hounds.",
    ]
    logged = caplog.text
    assert "image" in logged and "thinking" in logged
    assert "the user likes dogs" not in str(client.dump())
    history = memory.get_all()
    assert history[3].role == MessageRole.TOOL and history[3].additional_kwargs["tool_call_id"] == "c1"


def test_bad_recall_settings_fail_when_the_memory_is_built(stores: Stores) -> None:
    with pytest.raises(ValueError, match="kinds"):
        HindsightChatMemory.from_defaults(namespace="u1", client=stores.client("u1"), filters={"kinds": ["gossip"]})
    with pytest.raises(ValueError, match="top_k"):
        HindsightChatMemory.from_defaults(namespace="u1", client=stores.client("u1"), top_k=0)


def test_clients_from_the_environment_are_shared_per_namespace(monkeypatch: pytest.MonkeyPatch) -> None:
    from hindsight_integrations.mcp import MemoryServerUnavailableError

    for var in resolve.CONFIG_VARS:
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("HINDSIGHT_MCP_URL", "http://127.0.0.1:9/mcp")  # nothing listens on port 9
    try:
        first = HindsightChatMemory.from_defaults(namespace="u1", session_id="s1")
        assert HindsightRetriever(namespace="u1").client is first.client
        assert HindsightChatMemory.from_defaults(namespace="u2").client is not first.client
        assert first.client.transport == "http"
        first.client.retries = 0
        with pytest.raises(MemoryServerUnavailableError, match=r"127\.0\.0\.1:9"):
            first.get_all()
    finally:
        resolve.clear_client_cache()


SECOND_PROCESS = textwrap.dedent(
    """
    import sys
    from llama_index.core.chat_engine import SimpleChatEngine
    from llama_index.core.llms.mock import MockLLMWithChatMemoryOfLastCall
    from hindsight_integrations.llama_index import HindsightChatMemory

    question = sys.argv[1]
    for namespace in sys.argv[2:]:
        memory = HindsightChatMemory.from_defaults(namespace=namespace, session_id="second-process")
        llm = MockLLMWithChatMemoryOfLastCall(is_chat_model=True)
        SimpleChatEngine.from_defaults(llm=llm, memory=memory).chat(question)
        print("=== " + namespace)
        print("\\n".join(str(m.content) for m in llm.last_chat_messages))
    """
)


def test_a_real_second_process_recalls_the_fact(stores: Stores, store_path: Path) -> None:
    teach(stores)
    stores.close()
    env = {**os.environ, "HINDSIGHT_STORE": str(store_path), "HF_HUB_OFFLINE": "1"}
    out = subprocess.run(
        [sys.executable, "-c", SECOND_PROCESS, QUESTION, "u1", "u2"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr[-2000:]
    _, u1, u2 = out.stdout.split("=== ")
    assert u1.startswith("u1") and "Biscuit" in u1 and QUESTION in u1
    assert u2.startswith("u2") and "Biscuit" not in u2 and QUESTION in u2


def test_put_passes_the_message_name_as_speaker(stores) -> None:
    memory = HindsightChatMemory.from_defaults(namespace="u1", session_id="s1", client=stores.client("u1"))
    memory.put(
        ChatMessage(
            role=MessageRole.USER,
            content="I moved to Porto in March and work at a bakery there.",
            additional_kwargs={"name": "Maya"},
        )
    )
    recalled = stores.client("u1").recall("Where does Maya work?", top_k=1)
    assert recalled.records[0].entities == ["Maya"]
    assert recalled.records[0].content.startswith("Maya: ")


def test_a_tool_call_with_arguments_over_the_metadata_limit_is_kept_as_text(
    stores: Stores, caplog: pytest.LogCaptureFixture
) -> None:
    """Its replayable details (~10 KB of arguments) are over 8 KB of metadata: the turn keeps its text instead."""
    memory = HindsightChatMemory.from_defaults(namespace="u1", session_id="tools", client=stores.client("u1"))
    arguments = {"path": "notes.md", "text": "Meeting notes: we agreed on the budget. " * 250}
    call = ChatMessage(
        role="assistant", blocks=[ToolCallBlock(tool_call_id="call_1", tool_name="write_file", tool_kwargs=arguments)]
    )
    with caplog.at_level(logging.INFO, logger="hindsight.llama_index"):
        memory.put(call)
    memory.put(ChatMessage(role="user", content="Thanks, what did we agree on?"))
    history = memory.get_all()
    assert [m.role for m in history] == [MessageRole.ASSISTANT, MessageRole.USER]
    assert "write_file" in str(history[0].content) and "agreed on the budget" in str(history[0].content)
    assert any("over the metadata limit" in r.getMessage() for r in caplog.records)


async def test_recall_stays_within_the_max_top_k_the_server_announced(tmp_path: Path, embedder) -> None:
    """A server with ``max_top_k`` 40 refused every recall of a chat memory asking for 38: its over-fetch asked 43."""
    from hindsight_integrations import MemoryEngine

    with MemoryEngine(store=tmp_path / "store", embedder=embedder, llm=False, max_top_k=40) as engine:
        memory = HindsightChatMemory.from_defaults(namespace="u1", session_id="s1", engine=engine, top_k=38)
        engine.store("My sister Ana lives in Lisbon.", namespace="u1")
        assert memory.client.max_top_k() == 40
        for messages in (memory.get("Where does my sister live?"), await memory.aget("Where does Ana live?")):
            assert any("Lisbon" in str(m.content) for m in messages)
