"""Scripted chat models for the LangChain adapter tests: deterministic, offline, and honest.

``PromptEcho`` answers with the text of the whole prompt it was given, so a test can
assert that a memory actually reached the model's input (not merely that it was stored).
It can be scripted to make tool calls first, including malformed ones.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from pydantic import Field


def prompt_text(messages: Sequence[BaseMessage]) -> str:
    return "\n".join(f"[{m.type}] {m.text}" for m in messages)


class PromptEcho(BaseChatModel):
    """Replies ``ECHO:`` + the prompt; ``tool_calls`` are emitted one per call before that."""

    tool_calls: list[list[dict[str, Any]]] = Field(default_factory=list)
    prompts: list[str] = Field(default_factory=list)

    @property
    def _llm_type(self) -> str:
        return "prompt-echo"

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> PromptEcho:
        return self

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        text = prompt_text(messages)
        self.prompts.append(text)
        if self.tool_calls:
            calls = self.tool_calls.pop(0)
            message = AIMessage(content="", tool_calls=calls)
        else:
            message = AIMessage(content=f"ECHO: {text}")
        return ChatResult(generations=[ChatGeneration(message=message)])
