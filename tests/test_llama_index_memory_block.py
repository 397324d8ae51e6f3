"""HindsightMemoryBlock inside llama_index.core.memory.Memory, over a real MCP session."""

from __future__ import annotations

import logging
from typing import Any

import pytest
from llama_index.core.agent.workflow import FunctionAgent
from llama_index.core.base.llms.types import ChatMessage, ImageBlock, TextBlock, ThinkingBlock, ToolCallBlock
from llama_index.core.chat_engine import SimpleChatEngine
from llama_index.core.llms.mock import MockFunctionCallingLLMWithChatMemoryOfLastCall, MockLLMWithChatMemoryOfLastCall
from llama_index.core.memory import Memory

from hindsight_integrations.core.recall.context import CONTEXT_HEADER
from hindsight_integrations.llama_index import HindsightMemoryBlock
from hindsight_integrations.llama_index.memory_block import _batches

from .llama_index_support import Stores, stores, texts  # noqa: F401

FACT = "My dog is called Biscuit and she is a three year old beagle."
QUESTION = "What is the name of my dog?"
CONVERSATION = [
    ChatMessage(role="user", content=FACT),
    ChatMessage(role="assistant", content="Biscuit is a lovely name for a beagle!"),
    ChatMessage(role="user", content="Thanks!"),
    ChatMessage(role="assistant", content="You're welcome."),
    ChatMessage(role="user", content="Can you help me plan the week?"),
]


def block_for(stores: Stores, namespace: str = "u1", **kwargs: object) -> HindsightMemoryBlock:
    return HindsightMemoryBlock(name="hindsight", namespace=namespace, client=stores.client(namespace), **kwargs)


async def teach(stores: Stores, namespace: str = "u1") -> HindsightMemoryBlock:
    """First "process": a Memory small enough that the fact is flushed into the block."""
    block = block_for(stores, namespace)
    memory = Memory.from_defaults(session_id="first", token_limit=60, memory_blocks=[block])
    await memory.aput_messages(CONVERSATION)
    return block


async def test_flushed_messages_are_stored_and_chit_chat_is_not(stores: Stores) -> None:
    block = await teach(stores)
    stored = [r.content for r in block.client.list(limit=50)]
    assert FACT in stored
    assert "Thanks!" not in stored and "You're welcome." not in stored
    (fact,) = [r for r in block.client.list(limit=50) if r.content == FACT]
    assert fact.session_id == "first" and fact.metadata["origin"] == "llama_index.memory_block"


async def test_later_process_chat_engine_prompt_contains_the_fact(stores: Stores) -> None:
    await teach(stores)
    memory = Memory.from_defaults(session_id="second", memory_blocks=[block_for(stores)])
    llm = MockLLMWithChatMemoryOfLastCall(is_chat_model=True)
    await SimpleChatEngine.from_defaults(llm=llm, memory=memory).achat(QUESTION)
    system = llm.last_chat_messages[0]
    assert system.role == "system" and "<hindsight>" in str(system.content)
    assert CONTEXT_HEADER in str(system.content) and "Biscuit" in str(system.content)


async def test_later_agent_run_prompt_contains_the_fact(stores: Stores) -> None:
    await teach(stores)
    memory = Memory.from_defaults(session_id="agent", memory_blocks=[block_for(stores)])
    llm = MockFunctionCallingLLMWithChatMemoryOfLastCall()
    await FunctionAgent(llm=llm, tools=[], streaming=False).run(QUESTION, memory=memory)
    assert "Biscuit" in texts(llm.last_chat_messages)


async def test_an_agent_turn_counts_one_access_however_many_steps_read_the_block(stores: Stores) -> None:
    """``Memory`` asks the block at each step of a FunctionAgent's turn and to finish: a turn uses its memories once."""
    engine = stores.engine()
    fact = engine.store(FACT, namespace="u1").stored[0]
    block = HindsightMemoryBlock(namespace="u1", client=stores.client("u1", engine))
    memory = Memory.from_defaults(session_id="agent", memory_blocks=[block])

    def accesses() -> list[int]:
        hits = engine.recall("dog called Biscuit beagle", namespace="u1", touch=False).hits
        return [h.record.access_count for h in hits if h.record.id == fact.id]

    llm = MockFunctionCallingLLMWithChatMemoryOfLastCall()
    await FunctionAgent(llm=llm, tools=[], streaming=False).run(QUESTION, memory=memory)
    assert "Biscuit" in texts(llm.last_chat_messages) and accesses() == [1]
    await FunctionAgent(llm=llm, tools=[], streaming=False).run(QUESTION, memory=memory)  # asked again: a new turn
    assert "Biscuit" in texts(llm.last_chat_messages) and accesses() == [2]


async def test_namespaces_are_isolated(stores: Stores) -> None:
    await teach(stores, namespace="alice")
    messages = [ChatMessage(role="user", content=QUESTION)]
    assert "Biscuit" in await block_for(stores, "alice")._aget(messages)
    assert await block_for(stores, "bob")._aget(messages) == ""


async def test_a_retried_flush_is_stored_once(stores: Stores) -> None:
    block = block_for(stores)
    flushed = [ChatMessage(role="user", content=FACT)]
    await block.aput(flushed, from_short_term_memory=True, session_id="s1")
    await block.aput([ChatMessage(role="user", content=FACT)], from_short_term_memory=True, session_id="s1")
    assert [r.content for r in block.client.list(limit=50)] == [FACT]


async def seed(block: HindsightMemoryBlock) -> str:
    block.client.store(
        [
            {"content": FACT, "kind": "fact"},
            {"content": "My dog Biscuit is allergic to chicken, so her food must be chicken free.", "kind": "fact"},
            {"content": "I walk my dog in the park by the river every morning before work.", "kind": "context"},
        ]
    )
    content = await block._aget([ChatMessage(role="user", content="What should I know about my dog Biscuit?")])
    assert content.count("\n- (") == 3
    return content


async def test_atruncate_drops_the_lowest_scoring_memories_first(stores: Stores) -> None:
    block = block_for(stores, priority=1)
    content = await seed(block)
    shorter = await block.atruncate(content, 5)
    assert shorter is not None and shorter.startswith(CONTEXT_HEADER)
    assert shorter.count("\n- (") == 2
    assert await block.atruncate(content, 10_000) is None


async def test_memory_truncates_the_block_only_when_its_priority_allows(stores: Stores) -> None:
    block = block_for(stores, priority=1)
    content = await seed(block)
    question = ChatMessage(role="user", content="What should I know about my dog Biscuit?")
    # Room for the whole block but not for the block plus the question: something must give.
    limit = len(memory_tokens(content))
    for priority, expected in ((0, {3}), (1, {1, 2})):
        block.priority = priority
        memory = Memory.from_defaults(session_id=f"tight-{priority}", memory_blocks=[block], token_limit=limit)
        await memory.aput(question)
        system = (await memory.aget())[0]
        assert str(system.content).count("\n- (") in expected, (priority, system.content)
        if priority:
            assert "allergic to chicken" in str(system.content)  # the best match survives


def memory_tokens(text: str) -> list:
    from llama_index.core.utils import get_tokenizer

    return get_tokenizer()(text)


async def test_non_text_blocks_are_stored_as_text_or_skipped(stores: Stores, caplog: pytest.LogCaptureFixture) -> None:
    block = block_for(stores)
    png = b"\x89PNG\r\n\x1a\n" + b"\x00" * 16
    with caplog.at_level(logging.INFO, logger="hindsight.llama_index"):
        await block.aput(
            [
                ChatMessage(role="user", blocks=[ImageBlock(image=png, image_mimetype="image/png")]),
                ChatMessage(
                    role="assistant",
                    blocks=[
                        ThinkingBlock(content="secret reasoning"),
                        TextBlock(text="We decided to deploy the project on Ubuntu 22.04."),
                    ],
                ),
                ChatMessage(
                    role="assistant",
                    blocks=[ToolCallBlock(tool_call_id="c1", tool_name="set_config", tool_kwargs={"port": 8080})],
                ),
                ChatMessage(
                    role="tool",
                    content="Configuration saved: the server port is now 8080.",
                    additional_kwargs={"tool_call_id": "c1"},
                ),
                ChatMessage(role="user", content="My project deadline is next Friday. " + "x" * 40_000),
                ChatMessage(role="user", content="Our team uses PostgreSQL 16 as the database for the project."),
            ],
            from_short_term_memory=True,
            session_id="s1",
        )
    # The oversized message is rejected alone; the write filter drops the bare tool call.
    stored = sorted(r.content for r in block.client.list(limit=50))
    assert stored == [
        "Configuration saved: the server port is now 8080.",
        "Our team uses PostgreSQL 16 as the database for the project.",
        "We decided to deploy the project on Ubuntu 22.04.",
    ]
    assert "image" in caplog.text and "not stored" in caplog.text
    assert "secret reasoning" not in block.client.dump()


async def test_a_long_flush_is_stored_in_batches_a_server_takes(
    stores: Stores, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A flush went as one call: past a server's 1,000 items (or its 4 MB request), refused whole."""
    block = block_for(stores)
    sent: list[int] = []
    decided: list[int] = []
    real = block.client.astore

    async def counted(items: Any, **options: Any) -> Any:
        sent.append(len(items))
        result = await real(items, **options)
        decided.append(len(result.stored) + len(result.skipped))
        return result

    monkeypatch.setattr(block.client, "astore", counted)
    flushed = [
        ChatMessage(role="user", content=f"Invoice {1000 + n} for client number {n} is due on day {n % 28 + 1}.")
        for n in range(250)
    ]
    await block.aput(flushed, from_short_term_memory=True, session_id="s1")
    assert sent == [100, 100, 50] and decided == sent  # every message reached the server and was judged
    big = [{"content": "x" * 30_000, "role": "user"} for _ in range(70)]  # 2.1 MB of text
    assert [len(b) for b in _batches(big)] == [33, 33, 4]
