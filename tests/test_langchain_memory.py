"""HindsightMemory with the classic AgentExecutor: real Chroma, real MCP session, a second process."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
from langchain_classic.agents import AgentExecutor, create_tool_calling_agent
from langchain_core.messages import AIMessage, HumanMessage
from langchain_core.prompts import ChatPromptTemplate, MessagesPlaceholder

from hindsight_integrations import MemoryEngine
from hindsight_integrations.core.errors import ConfigurationError
from hindsight_integrations.core.language.tokens import estimate_tokens
from hindsight_integrations.core.recall.context import CONTEXT_HEADER
from hindsight_integrations.langchain import HindsightMemory, memory_tools
from hindsight_integrations.mcp.errors import MemoryServerUnavailableError
from hindsight_integrations.mcp.resolve import clear_client_cache

try:  # tests/ may or may not be a package, depending on how the suite is laid out
    from .langchain_fakes import PromptEcho
except ImportError:
    from langchain_fakes import PromptEcho  # type: ignore[no-redef]

REPO = Path(__file__).resolve().parents[1]

PROMPT = ChatPromptTemplate.from_messages(
    [
        ("system", "You are a helpful assistant.\n{long_term_memory}"),
        MessagesPlaceholder("chat_history"),
        ("human", "{input}"),
        MessagesPlaceholder("agent_scratchpad"),
    ]
)


def executor(memory: HindsightMemory, model: PromptEcho | None = None) -> AgentExecutor:
    model = model or PromptEcho()
    tools = memory_tools(memory.namespace, engine=memory.engine) if memory.engine is not None else []
    agent = create_tool_calling_agent(model, tools, PROMPT)
    return AgentExecutor(agent=agent, tools=tools, memory=memory)


def test_agent_executor_uses_working_window_and_long_term_memory(engine: MemoryEngine) -> None:
    memory = HindsightMemory(namespace="u1", session_id="s1", engine=engine)
    run = executor(memory)
    run.invoke({"input": "Please always answer in French, I prefer it."})
    second = run.invoke({"input": "Which language do I want answers in?"})["output"]
    # The previous exchange is in the working window (chat_history) ...
    assert "[human] Please always answer in French, I prefer it." in second
    # ... and the preference was remembered long-term and injected as dated memory lines.
    window = engine.working_window(session_id="s1", namespace="u1")
    assert [t.role.value for t in window] == ["user", "assistant", "user", "assistant"]

    fresh = HindsightMemory(namespace="u1", session_id="s2", engine=engine)
    loaded = fresh.load_memory_variables({"input": "What language should replies use?"})
    assert loaded["chat_history"] == []
    assert CONTEXT_HEADER in loaded["long_term_memory"] and "French" in loaded["long_term_memory"]


def test_string_history_and_memory_variables(engine: MemoryEngine) -> None:
    memory = HindsightMemory(namespace="u1", session_id="s1", engine=engine, return_messages=False)
    assert memory.memory_variables == ["chat_history", "long_term_memory"]
    memory.save_context({"input": "My project deadline is next Friday."}, {"output": "Noted, Friday it is."})
    loaded = memory.load_memory_variables({"input": "When is the deadline?"})
    assert loaded["chat_history"] == "Human: My project deadline is next Friday.\nAI: Noted, Friday it is."
    # The deadline is in the window verbatim, so it is not repeated as a recalled memory.
    assert "deadline" not in loaded["long_term_memory"]


def test_clear_keeps_long_term_memory(engine: MemoryEngine) -> None:
    memory = HindsightMemory(namespace="u1", session_id="s1", engine=engine)
    memory.save_context({"input": "I'm allergic to peanuts, never suggest them."}, {"output": "Understood."})
    assert len(memory.load_memory_variables({"input": "hi"})["chat_history"]) == 2
    memory.clear()
    loaded = memory.load_memory_variables({"input": "Can you suggest a snack without allergens?"})
    assert loaded["chat_history"] == []
    assert "peanuts" in loaded["long_term_memory"]


async def test_async_variants(engine: MemoryEngine) -> None:
    memory = HindsightMemory(namespace="u1", session_id="s1", engine=engine)
    await memory.asave_context({"input": "Our database is PostgreSQL 16."}, {"output": "Got it."})
    loaded = await memory.aload_memory_variables({"input": "Which database do we run?"})
    assert loaded["chat_history"] == [
        HumanMessage("Our database is PostgreSQL 16.", id=loaded["chat_history"][0].id),
        AIMessage("Got it.", id=loaded["chat_history"][1].id),
    ]
    await memory.aclear()
    loaded = await memory.aload_memory_variables({"input": "Which database do we run?"})
    assert loaded["chat_history"] == [] and "PostgreSQL" in loaded["long_term_memory"]


def test_users_never_see_each_other(engine: MemoryEngine) -> None:
    alice = HindsightMemory(namespace="alice", session_id="s", engine=engine)
    bob = HindsightMemory(namespace="bob", session_id="s", engine=engine)
    alice.save_context({"input": "I prefer vegetarian recipes."}, {"output": "Sure."})
    loaded = bob.load_memory_variables({"input": "What recipes do I prefer?"})
    assert loaded == {"chat_history": [], "long_term_memory": ""}


def test_missing_configuration_is_a_clear_error(engine: MemoryEngine, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("HINDSIGHT_NAMESPACE", raising=False)
    with pytest.raises(ConfigurationError, match="namespace"):
        HindsightMemory(session_id="s1", engine=engine)
    with pytest.raises(ConfigurationError, match="session_id"):
        HindsightMemory(namespace="u1", engine=engine)


def test_unreachable_memory_server_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    with socket.socket() as sock:  # a port nobody listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    url = f"http://127.0.0.1:{port}/mcp"
    monkeypatch.setenv("HINDSIGHT_MCP_URL", url)
    clear_client_cache()
    try:
        memory = HindsightMemory(namespace="u1", session_id="s1")
        with pytest.raises(MemoryServerUnavailableError) as caught:
            memory.load_memory_variables({"input": "hello there"})
        assert url in str(caught.value)
    finally:
        clear_client_cache()


SECOND_PROCESS = textwrap.dedent(
    """
    import sys
    sys.path.insert(0, sys.argv[1])
    from langchain_classic.agents import AgentExecutor, create_tool_calling_agent
    from langchain_core.prompts import ChatPromptTemplate, MessagesPlaceholder
    from langchain_fakes import PromptEcho
    from hindsight_integrations.langchain import HindsightMemory

    PROMPT = ChatPromptTemplate.from_messages([
        ("system", "You are a helpful assistant.\\n{long_term_memory}"),
        MessagesPlaceholder("chat_history"),
        ("human", "{input}"),
        MessagesPlaceholder("agent_scratchpad"),
    ])

    memory = HindsightMemory(namespace="u1", session_id="second-session")
    agent = AgentExecutor(agent=create_tool_calling_agent(PromptEcho(), [], PROMPT), tools=[], memory=memory)
    print(agent.invoke({"input": "How should you format code snippets for me?"})["output"])
    """
)


def test_preference_reaches_a_later_process(store_path: Path, embedder: Any) -> None:
    first = MemoryEngine(store=store_path, embedder=embedder, llm=False)
    memory = HindsightMemory(namespace="u1", session_id="first-session", engine=first)
    executor(memory).invoke({"input": "I prefer code snippets with type hints and no comments."})
    first.chroma.flush()

    env = {**os.environ, "HINDSIGHT_STORE": str(store_path), "HF_HUB_OFFLINE": "1", "PYTHONPATH": str(REPO)}
    done = subprocess.run(
        [sys.executable, "-c", SECOND_PROCESS, str(Path(__file__).parent)],
        env=env,
        capture_output=True,
        text=True,
        timeout=240,
        cwd=str(REPO),
    )
    assert done.returncode == 0, done.stderr[-3000:]
    # The second process's model saw the first process's preference in its system prompt.
    assert "[system] You are a helpful assistant." in done.stdout
    assert CONTEXT_HEADER in done.stdout and "type hints" in done.stdout


def test_save_context_passes_the_message_name_as_speaker(engine: MemoryEngine) -> None:
    memory = HindsightMemory(namespace="u1", session_id="s1", engine=engine)
    memory.save_context(
        {"input": HumanMessage("I moved to Porto in March and work at a bakery there.", name="Maya")},
        {"output": AIMessage("Noted, Porto and the bakery.")},
    )
    (memory_record,) = [r for r in engine.list(namespace="u1") if r.tier.value != "working"]
    assert memory_record.entities == ["Maya"]
    assert memory_record.content.startswith("Maya: ")


PASTED_LOG = "Here is the log I pasted:\n" + "2026-01-01 ERROR the cache in module x failed\n" * 800  # ~38 KB


def test_a_message_over_the_size_limit_does_not_stop_the_chain(
    engine: MemoryEngine, caplog: pytest.LogCaptureFixture
) -> None:
    """The server refuses a turn over 32 KB: it is logged and left out, the other turn recorded, recall on its end."""
    engine.store("The cache in module x is backed by Redis.", namespace="u1")
    memory = HindsightMemory(namespace="u1", session_id="s1", engine=engine)
    variables = memory.load_memory_variables({"input": PASTED_LOG})  # recalled for the message's last 2,000 characters
    assert "Redis" in variables["long_term_memory"]
    with caplog.at_level("WARNING", logger="hindsight_integrations.mcp.refusals"):
        memory.save_context({"input": PASTED_LOG}, {"output": "The cache failed."})
        memory.save_context({"input": "Summarise the log."}, {"output": PASTED_LOG})
    window = [t.content for t in engine.working_window(session_id="s1", namespace="u1")]
    assert window[-2:] == ["The cache failed.", "Summarise the log."]
    assert sum("turn not recorded in memory" in r.getMessage() for r in caplog.records) == 2


def test_the_long_term_block_keeps_to_its_token_budget(engine: MemoryEngine) -> None:
    """Whole recalled memories over ``token_budget`` are trimmed as the server trims its own block."""
    facts = [
        "I am vegetarian and never eat meat or fish at any meal, including at work dinners and conferences.",
        "I prefer Italian food, especially risotto with mushrooms and fresh pasta with pesto sauce.",
        "My favourite restaurant is a small Italian trattoria near my flat that serves vegetarian lasagne.",
        "I am allergic to peanuts and cashews, so please never suggest dishes with nuts in them.",
    ]
    for fact in facts:
        engine.store(fact, kind="preference", namespace="u1")
    question = "Which restaurant and food would you suggest for my dinner tonight?"
    for budget in (80, 120):
        memory = HindsightMemory(namespace="u1", session_id="s1", engine=engine, token_budget=budget)
        block = memory.load_memory_variables({"input": question})["long_term_memory"]
        assert CONTEXT_HEADER in block and estimate_tokens(block) <= budget


async def test_the_window_loads_without_inputs_and_several_inputs_name_the_fix(engine: MemoryEngine) -> None:
    """``memory.load_memory_variables({})``, LangChain's usual way to look at a memory, shows the window."""
    memory = HindsightMemory(namespace="u1", session_id="s1", engine=engine)
    memory.save_context({"input": "My project deadline is next Friday."}, {"output": "Noted, Friday it is."})
    for loaded in (memory.load_memory_variables({}), await memory.aload_memory_variables({})):
        assert [m.text for m in loaded["chat_history"]] == [
            "My project deadline is next Friday.",
            "Noted, Friday it is.",
        ]
        assert loaded["long_term_memory"] == ""
    with pytest.raises(ValueError, match=r"several inputs \['input', 'language'\]; set input_key="):
        memory.load_memory_variables({"input": "When is the deadline?", "language": "fr"})
    keyed = HindsightMemory(namespace="u1", session_id="s1", engine=engine, input_key="input")
    assert len(keyed.load_memory_variables({"input": "When is the deadline?", "language": "fr"})["chat_history"]) == 2
