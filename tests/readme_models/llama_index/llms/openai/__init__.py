"""Stand-in for ``llama_index.llms.openai`` while tests/test_readme.py runs the README (see readme_models/README.md)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from llama_index.core.base.llms.types import ChatMessage, MessageRole
from llama_index.core.llms.mock import MockFunctionCallingLLM


def echo_prompt(messages: Sequence[ChatMessage], **kwargs: Any) -> ChatMessage:
    """Answer with every message the model was shown, so a printed answer shows what memory reached it."""
    shown = "\n".join(f"[{m.role.value}] {m.content or ''}" for m in messages)
    return ChatMessage(role=MessageRole.ASSISTANT, content=f"ECHO: {shown}")


class OpenAI(MockFunctionCallingLLM):
    """A function-calling chat model under OpenAI's name that calls no tools and echoes its prompt."""

    model: str = "gpt-4o-mini"

    def __init__(self, model: str = "gpt-4o-mini", **kwargs: Any) -> None:
        super().__init__(response_generator=echo_prompt, is_chat_model=True, **kwargs)
        self.model = model


__all__ = ["OpenAI"]
