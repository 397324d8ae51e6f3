"""Helpers for the LlamaIndex integration tests: MCP clients over real stores, scripted LLMs.

A "process" in these tests is a fresh ``MemoryEngine`` + in-process MCP client opened on the
same Chroma directory, so nothing survives from one to the next except what is on disk;
one test per surface family also runs a real second Python process.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, ClassVar

import pytest
from llama_index.core.base.llms.types import ChatMessage, ChatResponse, CompletionResponse, LLMMetadata, MessageRole
from llama_index.core.llms.callbacks import llm_chat_callback, llm_completion_callback
from llama_index.core.llms.custom import CustomLLM

from hindsight_integrations import MemoryEngine
from hindsight_integrations.mcp import MemoryClient


class Stores:
    """Opens engine + MCP client pairs on one store directory and closes them at the end."""

    def __init__(self, path: Path, embedder: Any) -> None:
        self.path = path
        self.embedder = embedder
        self.clients: list[MemoryClient] = []
        self.engines: list[MemoryEngine] = []

    def engine(self) -> MemoryEngine:
        engine = MemoryEngine(store=self.path, embedder=self.embedder, llm=False)
        self.engines.append(engine)
        return engine

    def client(self, namespace: str = "u1", engine: MemoryEngine | None = None) -> MemoryClient:
        client = MemoryClient.in_process(engine or self.engine(), namespace=namespace)
        self.clients.append(client)
        return client

    def close(self) -> None:
        for client in self.clients:
            client.close()
        for engine in self.engines:
            engine.chroma.flush()


@pytest.fixture
def stores(store_path: Path, embedder: Any) -> Iterator[Stores]:
    s = Stores(store_path, embedder)
    yield s
    s.close()


def texts(messages: Sequence[ChatMessage] | None) -> str:
    """Everything the LLM was shown, as one string (text blocks of every message)."""
    return "\n".join(str(m.content or "") for m in messages or [])


class ScriptedChatLLM(CustomLLM):
    """A chat model that answers with fixed replies, in order, and records each call's messages.

    Used for ReActAgent, whose output parser needs "Thought: ... Answer: ..." rather than
    the echo of ``MockLLM``.
    """

    replies: list[str]
    calls: ClassVar[list[list[ChatMessage]]] = []  # shared on purpose: tests read every call of the class

    @property
    def metadata(self) -> LLMMetadata:
        return LLMMetadata(is_chat_model=True)

    @property
    def last_chat_messages(self) -> list[ChatMessage] | None:
        return self.calls[-1] if self.calls else None

    def _next(self) -> str:
        return self.replies[min(len(self.calls) - 1, len(self.replies) - 1)]

    @llm_chat_callback()
    def chat(self, messages: Sequence[ChatMessage], **kwargs: Any) -> ChatResponse:
        self.calls.append(copy.deepcopy(list(messages)))
        return ChatResponse(message=ChatMessage(role=MessageRole.ASSISTANT, content=self._next()))

    @llm_chat_callback()
    async def achat(self, messages: Sequence[ChatMessage], **kwargs: Any) -> ChatResponse:
        return self.chat(messages, **kwargs)

    @llm_chat_callback()
    def stream_chat(self, messages: Sequence[ChatMessage], **kwargs: Any) -> Any:
        reply = self.chat(messages, **kwargs).message

        def gen() -> Any:
            yield ChatResponse(message=reply, delta=reply.content)

        return gen()

    @llm_chat_callback()
    async def astream_chat(self, messages: Sequence[ChatMessage], **kwargs: Any) -> Any:
        reply = self.chat(messages, **kwargs).message

        async def gen() -> Any:
            yield ChatResponse(message=reply, delta=reply.content)

        return gen()

    @llm_completion_callback()
    def complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> CompletionResponse:
        return CompletionResponse(text=self.replies[-1])

    @llm_completion_callback()
    def stream_complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> Any:
        yield CompletionResponse(text=self.replies[-1], delta=self.replies[-1])
