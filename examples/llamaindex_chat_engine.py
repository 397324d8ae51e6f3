"""A LlamaIndex chat engine that remembers users across processes.

Run it::

    python examples/llamaindex_chat_engine.py

It teaches a fact in this process, then starts a *second Python process* on the same
store that asks about it: the second process never saw the first conversation, yet the
model's prompt contains the fact, recalled from Hindsight.

Offline by default: a tiny local model stands in for the LLM and answers by quoting the
memories it was given, so you can see exactly what was injected. With an OpenAI-compatible
endpoint configured (``OPENAI_API_KEY``, optionally ``OPENAI_BASE_URL`` and
``HINDSIGHT_EXAMPLE_MODEL``), a real model answers instead; that needs
``pip install llama-index-llms-openai`` (``llama-index-llms-openai-like`` for a base URL
that is not OpenAI's).

Where memories live: ``HINDSIGHT_STORE`` (default here: ./.hindsight-example), or
``HINDSIGHT_CHROMA_URL`` / ``HINDSIGHT_MCP_URL`` for a shared deployment. The user is the
namespace ``example-llamaindex`` (``--user`` to change it): each example has its own, so examples
sharing a store never recall each other's facts.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from collections.abc import Sequence
from typing import Any

from llama_index.core.base.llms.types import ChatMessage, ChatResponse, CompletionResponse, LLMMetadata, MessageRole
from llama_index.core.chat_engine import SimpleChatEngine
from llama_index.core.llms import LLM
from llama_index.core.llms.callbacks import llm_chat_callback, llm_completion_callback
from llama_index.core.llms.custom import CustomLLM

from hindsight_integrations.core.recall.context import CONTEXT_HEADER
from hindsight_integrations.llama_index import HindsightChatMemory

NAMESPACE = "example-llamaindex"  # this example's own user: never another example's memories

SYSTEM_PROMPT = "You are a helpful assistant. Use the remembered facts when they are relevant."


class QuotingLLM(CustomLLM):
    """Offline stand-in for an LLM: answers with the memory lines found in its prompt."""

    @property
    def metadata(self) -> LLMMetadata:
        return LLMMetadata(is_chat_model=True, model_name="quoting-offline")

    @llm_chat_callback()
    def chat(self, messages: Sequence[ChatMessage], **kwargs: Any) -> ChatResponse:
        remembered = [
            line[2:]
            for m in messages
            if m.role == MessageRole.SYSTEM and CONTEXT_HEADER in str(m.content)
            for line in str(m.content).splitlines()
            if line.startswith("- (")
        ]
        answer = ("From what you told me before: " + " ".join(remembered)) if remembered else "Noted."
        return ChatResponse(message=ChatMessage(role=MessageRole.ASSISTANT, content=answer))

    @llm_completion_callback()
    def complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> CompletionResponse:
        return CompletionResponse(text="Noted.")

    @llm_completion_callback()
    def stream_complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> Any:
        yield CompletionResponse(text="Noted.", delta="Noted.")


def build_llm() -> LLM:
    """A real OpenAI-compatible LLM when configured, else the offline one."""
    if not (os.environ.get("OPENAI_API_KEY") or os.environ.get("OPENAI_BASE_URL")):
        return QuotingLLM()
    model = os.environ.get("HINDSIGHT_EXAMPLE_MODEL", "gpt-4o-mini")
    base_url = os.environ.get("OPENAI_BASE_URL")
    try:
        if base_url:
            # Optional packages, so mypy may not find them; where installed the ignores are unused.
            from llama_index.llms.openai_like import OpenAILike  # type: ignore[import-not-found, unused-ignore]

            return OpenAILike(
                model=model, api_base=base_url, api_key=os.environ.get("OPENAI_API_KEY", "none"), is_chat_model=True
            )
        from llama_index.llms.openai import OpenAI  # type: ignore[import-not-found, unused-ignore]

        return OpenAI(model=model)
    except ImportError:
        package = "llama-index-llms-openai-like" if base_url else "llama-index-llms-openai"
        sys.exit(f"An OpenAI-compatible LLM is configured but its LlamaIndex package is missing: pip install {package}")


def chat(user: str, session: str, message: str) -> str:
    llm = build_llm()  # first, so a missing LLM package is reported before the store is opened
    memory = HindsightChatMemory.from_defaults(namespace=user, session_id=session)
    engine = SimpleChatEngine.from_defaults(llm=llm, memory=memory, system_prompt=SYSTEM_PROMPT)
    return str(engine.chat(message))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--user", default=NAMESPACE, help="namespace: whose memories")
    parser.add_argument("--ask", help="(second process) ask this in a new session and print the answer")
    args = parser.parse_args()
    if not any(
        os.environ.get(v)
        for v in ("HINDSIGHT_STORE", "HINDSIGHT_CHROMA_URL", "HINDSIGHT_MCP_URL", "HINDSIGHT_MCP_COMMAND")
    ):
        os.environ["HINDSIGHT_STORE"] = os.path.abspath(".hindsight-example")
    if args.ask:
        print(f"[process 2, pid {os.getpid()}] user: {args.ask}")
        print(f"[process 2] assistant: {chat(args.user, 'monday', args.ask)}")
        return

    where = (
        os.environ.get("HINDSIGHT_STORE")
        or os.environ.get("HINDSIGHT_CHROMA_URL")
        or os.environ.get("HINDSIGHT_MCP_URL")
    )
    print(f"memories are stored in {where}")
    fact = "I'm allergic to peanuts, and my project deadline is next Friday."
    print(f"[process 1, pid {os.getpid()}] user: {fact}")
    print(f"[process 1] assistant: {chat(args.user, 'friday', fact)}")
    # A brand-new interpreter: nothing is shared with this one except the store.
    subprocess.run(
        [
            sys.executable,
            os.path.abspath(__file__),
            "--user",
            args.user,
            "--ask",
            "Can you suggest a snack for my deadline week?",
        ],
        check=True,
        env=os.environ.copy(),
    )


if __name__ == "__main__":
    main()
