"""What HindsightChatMemory replays to the model is what a chat API accepts, whatever the messages held.

Chat APIs (OpenAI, Anthropic) reject a history in which an assistant's tool call has no
tool result after it, so every replayed call must be answered; and a message the memory
server refuses whole (over its size limit) must still reach the model.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from llama_index.core.agent.workflow import FunctionAgent
from llama_index.core.base.llms.types import ChatMessage, MessageRole, TextBlock, ToolCallBlock
from llama_index.core.chat_engine import SimpleChatEngine
from llama_index.core.llms.mock import MockFunctionCallingLLMWithChatMemoryOfLastCall, MockLLMWithChatMemoryOfLastCall
from llama_index.core.tools import FunctionTool

from hindsight_integrations import MemoryEngine
from hindsight_integrations.llama_index import HindsightChatMemory
from hindsight_integrations.llama_index._messages import sanitize_history

from .llama_index_support import Stores, stores  # noqa: F401


def unanswered_calls(history: Sequence[ChatMessage]) -> list[str]:
    """Names of the tool calls in ``history`` that no tool message answers."""
    answered = {m.additional_kwargs.get("tool_call_id") for m in history if m.role == MessageRole.TOOL}
    return [
        b.tool_name
        for m in history
        for b in m.blocks
        if isinstance(b, ToolCallBlock) and b.tool_call_id not in answered
    ]


@pytest.mark.parametrize(
    "result",
    ["", "log line\n" * 1100, "log line\n" * 5000],
    ids=["empty", "10KB-over-the-metadata-limit", "45KB-over-the-content-limit"],
)
async def test_every_replayed_tool_call_has_its_result(stores: Stores, result: str) -> None:
    def run_job() -> str:
        """Run the nightly job and return its output."""
        return result

    memory = HindsightChatMemory.from_defaults(namespace="u1", session_id="tools", client=stores.client("u1"))
    agent = FunctionAgent(
        llm=MockFunctionCallingLLMWithChatMemoryOfLastCall(), tools=[FunctionTool.from_defaults(run_job)]
    )
    await agent.run("Please run the nightly job.", memory=memory)
    history = await memory.aget_all()
    assert unanswered_calls(history) == []
    if len(result) < 30_000:  # recorded whole: replayed as the tool message it was
        (tool,) = [m for m in history if m.role == MessageRole.TOOL]
        assert str(tool.content).strip() == (result.strip() or "(the tool returned nothing)")


def test_a_call_without_its_result_is_replayed_as_text_and_an_answered_one_is_kept() -> None:
    window = [
        ChatMessage(role="user", content="Check the weather and the calendar."),
        ChatMessage(
            role="assistant",
            blocks=[
                ToolCallBlock(tool_call_id="c1", tool_name="weather", tool_kwargs={"city": "Oslo"}),
                ToolCallBlock(tool_call_id="c2", tool_name="calendar", tool_kwargs={}),
            ],
        ),
        ChatMessage(role="tool", content="Sunny", additional_kwargs={"tool_call_id": "c1"}),
        ChatMessage(
            role="assistant",
            content="",
            additional_kwargs={"tool_calls": [{"id": "c3", "function": {"name": "email", "arguments": "{}"}}]},
        ),
        ChatMessage(role="assistant", content="Sunny in Oslo."),
    ]
    history = sanitize_history(window)
    assert unanswered_calls(history) == []
    assert [m.role for m in history] == [m.role for m in window]
    calls = history[1]
    assert [b.tool_call_id for b in calls.blocks if isinstance(b, ToolCallBlock)] == ["c1"]
    assert any(isinstance(b, TextBlock) and b.text == "[tool call] calendar({})" for b in calls.blocks)
    assert "tool_calls" not in history[3].additional_kwargs
    assert "[tool call] email({})" in str(history[3].content)
    assert history[2].content == "Sunny"


PASTE = "Please find the bug in this log:\n" + "ERROR the cache in module x failed at line 42\n" * 900 + "What's wrong?"


def test_a_message_over_the_size_limit_still_reaches_the_model(stores: Stores) -> None:
    """A 42 KB paste (the limit is 32 KB): the model is shown its beginning and its question, not the turn before."""
    llm = MockLLMWithChatMemoryOfLastCall(is_chat_model=True)
    memory = HindsightChatMemory.from_defaults(namespace="u1", session_id="paste", client=stores.client("u1"))
    SimpleChatEngine.from_defaults(llm=llm, memory=memory).chat("Hello, I am Ann.")
    SimpleChatEngine.from_defaults(llm=llm, memory=memory).chat(PASTE)
    shown = str(llm.last_chat_messages[-1].content)
    assert llm.last_chat_messages[-1].role == MessageRole.USER
    assert shown.startswith("Please find the bug in this log:") and shown.endswith("What's wrong?")
    assert "characters left out here" in shown
    assert [m.role for m in memory.get_all()][-2:] == [MessageRole.USER, MessageRole.ASSISTANT]


async def test_a_server_with_a_lower_limit_gets_a_shorter_message(store_path: Path, embedder: Any) -> None:
    engine = MemoryEngine(store=store_path, embedder=embedder, llm=False, max_content_bytes=5000)
    try:
        memory = HindsightChatMemory.from_defaults(namespace="u1", session_id="paste", engine=engine)
        await memory.aput(ChatMessage(role="user", content=PASTE))
        (turn,) = await memory.aget_all()
        assert len(str(turn.content).encode()) <= 5000 and str(turn.content).endswith("What's wrong?")
    finally:
        engine.close()


def test_memories_put_in_a_user_message_are_never_recorded_as_the_users_words(stores: Stores) -> None:
    """insert_method="user" puts the recalled block before the user's text; handing it back records the text only."""
    client = stores.client("u1")
    HindsightChatMemory.from_defaults(namespace="u1", session_id="teach", client=client).put(
        ChatMessage(role="user", content="My dog is called Biscuit and she is a three year old beagle.")
    )
    memory = HindsightChatMemory.from_defaults(namespace="u1", session_id="s", client=client, insert_method="user")
    memory.put(ChatMessage(role="user", content="What is the name of my dog?"))
    shown = memory.get()
    assert "Biscuit" in str(shown[-1].content)
    memory.set(shown)  # e.g. agent.run(chat_history=...) with what the memory returned
    memory.put_messages([shown[-1], ChatMessage(role="assistant", content="Her name is Biscuit.")])
    assert [r.content for r in client.working_memory("s")] == [
        "What is the name of my dog?",
        "What is the name of my dog?",
        "Her name is Biscuit.",
    ]
