"""A classic LangChain ``AgentExecutor`` with Hindsight memory, remembering across processes.

Run it::

    python examples/langchain_agent_executor.py

Process 1 talks to the agent; ``HindsightMemory`` records each turn through the MCP
client (working memory + long-term extraction). Then a *second Python process* on the same
store opens a new session: its prompt's ``{long_term_memory}`` holds what process 1 taught.

Offline by default: a tiny local model stands in for the LLM and answers by quoting the
memories it was given. With ``OPENAI_API_KEY`` set (optionally ``OPENAI_BASE_URL`` and
``HINDSIGHT_EXAMPLE_MODEL``) ChatOpenAI answers instead; that needs
``pip install langchain-openai``.

Where memories live: ``HINDSIGHT_STORE`` (default here: ./.hindsight-example), or
``HINDSIGHT_CHROMA_URL`` / ``HINDSIGHT_MCP_URL`` for a shared deployment. The user is the
namespace ``example-agent-executor`` (``--user`` to change it): each example has its own, so examples
sharing a store never recall each other's facts.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from collections.abc import Sequence
from typing import Any

from langchain_classic.agents import AgentExecutor, create_tool_calling_agent
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, SystemMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.prompts import ChatPromptTemplate, MessagesPlaceholder

from hindsight_integrations.core.recall.context import CONTEXT_HEADER
from hindsight_integrations.langchain import HindsightMemory, memory_tools

NAMESPACE = "example-agent-executor"  # this example's own user: never another example's memories

PROMPT = ChatPromptTemplate.from_messages(
    [
        (
            "system",
            "You are a helpful assistant. Use the remembered facts when they are relevant.\n\n{long_term_memory}",
        ),
        MessagesPlaceholder("chat_history"),
        ("human", "{input}"),
        MessagesPlaceholder("agent_scratchpad"),
    ]
)


class QuotingChatModel(BaseChatModel):
    """Offline stand-in for a chat model: answers with the memory lines found in its system prompt."""

    @property
    def _llm_type(self) -> str:
        return "quoting-offline"

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> QuotingChatModel:
        return self  # it never calls tools; a real model decides that on its own

    def _generate(
        self, messages: list[BaseMessage], stop: list[str] | None = None, run_manager: Any = None, **kwargs: Any
    ) -> ChatResult:
        remembered = [
            line[2:]
            for m in messages
            if isinstance(m, SystemMessage) and CONTEXT_HEADER in m.text
            for line in m.text.splitlines()
            if line.startswith("- (")
        ]
        answer = ("From what you told me before: " + " ".join(remembered)) if remembered else "Noted."
        return ChatResult(generations=[ChatGeneration(message=AIMessage(content=answer))])


def build_model() -> BaseChatModel:
    """ChatOpenAI when a key is configured, else the offline model."""
    if not os.environ.get("OPENAI_API_KEY"):
        return QuotingChatModel()
    try:
        # Optional, so mypy may not find it; where it is installed the ignore is unused, hence both codes.
        from langchain_openai import ChatOpenAI  # type: ignore[import-not-found, unused-ignore]
    except ImportError:
        sys.exit("OPENAI_API_KEY is set but langchain-openai is not installed: pip install langchain-openai")
    return ChatOpenAI(
        model=os.environ.get("HINDSIGHT_EXAMPLE_MODEL", "gpt-4o-mini"), base_url=os.environ.get("OPENAI_BASE_URL")
    )


def chat(user: str, session: str, message: str) -> str:
    memory = HindsightMemory(namespace=user, session_id=session)
    tools = memory_tools(user, session_id=session)
    agent = create_tool_calling_agent(build_model(), tools, PROMPT)
    executor = AgentExecutor(agent=agent, tools=tools, memory=memory, handle_parsing_errors=True)
    return executor.invoke({"input": message})["output"]


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
        print(f"[process 2] assistant: {chat(args.user, 'support-ticket-2', args.ask)}")
        return

    where = (
        os.environ.get("HINDSIGHT_STORE")
        or os.environ.get("HINDSIGHT_CHROMA_URL")
        or os.environ.get("HINDSIGHT_MCP_URL")
    )
    print(f"memories are stored in {where}")
    for line in ("My order number is 48213 and I want delivery to Lyon.", "Please always reply in French."):
        print(f"[process 1, pid {os.getpid()}] user: {line}")
        print(f"[process 1] assistant: {chat(args.user, 'support-ticket-1', line)}")
    # A brand-new interpreter: nothing is shared with this one except the store.
    subprocess.run(
        [
            sys.executable,
            os.path.abspath(__file__),
            "--user",
            args.user,
            "--ask",
            "Where is my order going, and in which language should you reply?",
        ],
        check=True,
        env=os.environ.copy(),
    )


if __name__ == "__main__":
    main()
