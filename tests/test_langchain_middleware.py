"""HindsightMiddleware + memory_tools with langchain 1.x create_agent: real Chroma, real MCP session."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from langchain.agents import create_agent
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage
from langgraph.checkpoint.memory import InMemorySaver

from hindsight_integrations import MemoryEngine
from hindsight_integrations.core.errors import ConfigurationError
from hindsight_integrations.core.recall.context import CONTEXT_HEADER
from hindsight_integrations.langchain import HindsightMiddleware, memory_tools
from hindsight_integrations.mcp.errors import MemoryToolInputError

try:  # tests/ may or may not be a package, depending on how the suite is laid out
    from .langchain_fakes import PromptEcho
except ImportError:
    from langchain_fakes import PromptEcho  # type: ignore[no-redef]


@dataclass
class UserContext:
    user_id: str
    session_id: str | None = None


def ask(agent: Any, text: str, **kwargs: Any) -> dict[str, Any]:
    return agent.invoke({"messages": [HumanMessage(text)]}, **kwargs)


def test_recalled_memories_reach_the_model_of_a_later_agent(store_path: Path, embedder: Any) -> None:
    first = MemoryEngine(store=store_path, embedder=embedder, llm=False)
    teach = create_agent(
        PromptEcho(),
        system_prompt="You are a barista.",
        middleware=[HindsightMiddleware(engine=first)],
        context_schema=UserContext,
    )
    ask(teach, "I prefer green tea over coffee, always.", context=UserContext(user_id="u1", session_id="morning"))
    assert [t.role.value for t in first.working_window(session_id="morning", namespace="u1")] == ["user", "assistant"]
    first.chroma.flush()

    later = MemoryEngine(store=store_path, embedder=embedder, llm=False)  # a fresh engine and MCP session
    model = PromptEcho()
    agent = create_agent(
        model,
        system_prompt="You are a barista.",
        middleware=[HindsightMiddleware(engine=later)],
        context_schema=UserContext,
    )
    out = ask(agent, "What should you offer me to drink?", context=UserContext(user_id="u1", session_id="evening"))
    prompt = model.prompts[-1]
    assert prompt.startswith("[system] You are a barista.\n\n" + CONTEXT_HEADER)
    assert "green tea" in prompt
    # Injected for that call only: the agent state holds no memory block.
    assert not any(isinstance(m, SystemMessage) or CONTEXT_HEADER in m.text for m in out["messages"][:1])
    assert [type(m) for m in out["messages"]] == [HumanMessage, AIMessage]


def test_user_and_thread_from_config_and_isolation(engine: MemoryEngine) -> None:
    middleware = HindsightMiddleware(engine=engine)
    model = PromptEcho()
    agent = create_agent(model, middleware=[middleware], checkpointer=InMemorySaver())
    alice = {"configurable": {"user_id": "alice", "thread_id": "t-alice"}}
    bob = {"configurable": {"user_id": "bob", "thread_id": "t-bob"}}
    ask(agent, "My favourite city is Lisbon and I travel there every spring.", config=alice)
    assert len(engine.working_window(session_id="t-alice", namespace="alice")) == 2

    ask(agent, "Which city do I travel to every spring?", config=bob)
    assert "Lisbon" not in model.prompts[-1]
    ask(agent, "Which city do I travel to every spring?", config=alice)
    assert "Lisbon" in model.prompts[-1].split("[human]")[0], "recalled into the system message"
    # The checkpointer keeps the conversation; only the latest exchange is recorded again.
    turns = engine.working_window(session_id="t-alice", namespace="alice")
    assert [t.content for t in turns][-2] == "Which city do I travel to every spring?" and len(turns) == 4


async def test_async_agent(engine: MemoryEngine) -> None:
    model = PromptEcho()
    agent = create_agent(model, middleware=[HindsightMiddleware("u1", session_id="s-async", engine=engine)])
    await agent.ainvoke({"messages": [HumanMessage("Our backend runs on Ubuntu 22.04 servers.")]})
    await agent.ainvoke({"messages": [HumanMessage("Which OS do our servers run?")]})
    assert "Ubuntu 22.04" in model.prompts[-1].split("[human]")[0]
    assert len(engine.working_window(session_id="s-async", namespace="u1")) == 4


def _weather(city: str) -> str:
    """Today's weather in a city."""
    return f"Sunny in {city}."


@pytest.mark.parametrize("run", ["invoke", "ainvoke"])
async def test_a_turn_counts_one_access_however_many_model_calls_its_tools_take(engine: MemoryEngine, run: str) -> None:
    """Recall ranks by access frequency: a turn that called two tools used its memories once, not three times."""
    fact = engine.store("The user is vegetarian and loves Italian food.", namespace="u1").stored[0]
    calls = [[{"name": "_weather", "args": {"city": city}, "id": city}] for city in ("Rome", "Oslo")]
    model = PromptEcho(tool_calls=calls)
    middleware = HindsightMiddleware("u1", engine=engine, record_turns=False)
    agent = create_agent(model, [_weather], middleware=[middleware])
    question = {"messages": [HumanMessage("Which food do I like?")]}
    await agent.ainvoke(question) if run == "ainvoke" else agent.invoke(question)
    assert len(model.prompts) == 3 and all("Italian food" in prompt for prompt in model.prompts)
    hits = engine.recall("vegetarian Italian food", namespace="u1", touch=False).hits
    assert [h.record.access_count for h in hits if h.record.id == fact.id] == [1]


@pytest.mark.parametrize("run", ["invoke", "ainvoke"])
async def test_a_server_that_predates_touch_still_recalls_for_every_model_call(
    engine: MemoryEngine, run: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The calls after a turn's first ask for ``touch=False``; a server without it refuses, and is asked without it."""
    engine.store("The user is vegetarian and loves Italian food.", namespace="u1")
    model = PromptEcho(tool_calls=[[{"name": "_weather", "args": {"city": "Rome"}, "id": "Rome"}]])
    middleware = HindsightMiddleware("u1", engine=engine, record_turns=False)
    client = middleware._pool.get("u1")
    refused: list[str] = []
    for name in ("recall", "arecall"):
        method = getattr(client, name)

        def older_server(*args: Any, _method: Any = method, _name: str = name, **kwargs: Any) -> Any:
            if "touch" in kwargs:
                refused.append(_name)
                raise MemoryToolInputError("retrieve_memory", "touch: unknown argument", field="touch")
            return _method(*args, **kwargs)

        monkeypatch.setattr(client, name, older_server)
    agent = create_agent(model, [_weather], middleware=[middleware])
    question = {"messages": [HumanMessage("Which food do I like?")]}
    await agent.ainvoke(question) if run == "ainvoke" else agent.invoke(question)
    assert len(model.prompts) == 2 and all("Italian food" in prompt for prompt in model.prompts)
    assert refused == ["arecall" if run == "ainvoke" else "recall"]


def test_memory_tools_and_malformed_arguments(engine: MemoryEngine) -> None:
    model = PromptEcho(
        tool_calls=[
            [{"name": "recall", "args": {"top_k": "lots"}, "id": "bad-1"}],  # no query, top_k not a number
            [{"name": "remember", "args": {"content": "The user's cat is called Miso", "kind": "fact"}, "id": "ok-1"}],
            [{"name": "forget", "args": {"memory_id": "no-such-id"}, "id": "bad-2"}],
            [{"name": "recall", "args": {"query": "what is the cat called"}, "id": "ok-2"}],
        ]
    )
    tools = memory_tools("u1", engine=engine)
    assert [t.name for t in tools] == ["remember", "recall", "forget"]
    agent = create_agent(model, tools, middleware=[HindsightMiddleware("u1", session_id="s-tools", engine=engine)])
    out = ask(agent, "Remember my cat's name, Miso.")
    results = {m.tool_call_id: m for m in out["messages"] if isinstance(m, ToolMessage)}
    assert results["bad-1"].status == "error" and "query" in results["bad-1"].text
    assert results["ok-1"].status == "success" and "Remembered" in results["ok-1"].text
    assert results["bad-2"].status == "error" and "no-such-id" in results["bad-2"].text
    assert "Miso" in results["ok-2"].text
    assert out["messages"][-1].text.startswith("ECHO:"), "the agent continued to its final answer"
    # Memory-tool results are not recorded again as turns.
    roles = [t.role.value for t in engine.working_window(session_id="s-tools", namespace="u1")]
    assert roles == ["user", "assistant"]

    memory_id = results["ok-1"].text.split("[")[1].split("]")[0]
    assert memory_id in {h.record.id for h in engine.recall("cat name", namespace="u1").hits}
    forget = next(t for t in tools if t.name == "forget")
    assert "Forgot" in forget.invoke({"memory_id": memory_id})
    assert memory_id not in {h.record.id for h in engine.recall("cat name", namespace="u1").hits}


def test_missing_user_fails_before_the_model_runs(engine: MemoryEngine, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("HINDSIGHT_NAMESPACE", raising=False)
    model = PromptEcho()
    with pytest.raises(ConfigurationError, match="whose memories"):
        ask(create_agent(model, middleware=[HindsightMiddleware(engine=engine)]), "hello")
    assert model.prompts == []


def test_a_namespace_given_is_never_moved_by_the_run(engine: MemoryEngine) -> None:
    """The run's user_id (set for other code, say LangMem) must not take memories from the namespace given."""
    model = PromptEcho()
    agent = create_agent(model, middleware=[HindsightMiddleware("u1", engine=engine)], context_schema=UserContext)
    engine.store("I prefer green tea over coffee, always.", namespace="u1")
    refused = r"namespace='u1'\) serves that user only.*'alice'.*leave namespace= out"
    for run in ({"context": UserContext(user_id="alice")}, {"config": {"configurable": {"user_id": "alice"}}}):
        with pytest.raises(ConfigurationError, match=refused):
            ask(agent, "What do I drink?", **run)
    assert model.prompts == [] and engine.namespaces() == ["u1"]  # refused before the model, nothing written
    ask(agent, "What do I drink?", context=UserContext(user_id="u1", session_id="t1"))  # the same user
    assert "green tea" in model.prompts[-1] and len(engine.working_window(session_id="t1", namespace="u1")) == 2


def test_a_plain_agent_run_needs_no_session(engine: MemoryEngine) -> None:
    """No checkpointer, no thread, no session_id: the runs form the middleware's own conversation."""
    model = PromptEcho()
    middleware = HindsightMiddleware("u1", engine=engine)
    agent = create_agent(model, middleware=[middleware])
    ask(agent, "Our backend runs on PostgreSQL 16.")
    ask(agent, "Which database do we run?")
    assert "PostgreSQL 16" in model.prompts[-1].split("[human]")[0], "recalled into the system message"
    session = middleware.default_session_id
    turns = engine.working_window(session_id=session, namespace="u1")
    assert [t.role.value for t in turns] == ["user", "assistant", "user", "assistant"]
    assert HindsightMiddleware("u1", engine=engine).default_session_id != session, "one conversation per middleware"


def test_a_message_over_the_size_limit_is_answered_and_left_out_of_memory(engine: MemoryEngine) -> None:
    """A 38 KB paste: recall reads its end, the agent answers, the turn the server refuses is not recorded."""
    engine.store("The cache in module x is backed by Redis.", namespace="u1")
    pasted = "Here is the log:\n" + "2026-01-01 ERROR the cache in module x failed\n" * 800
    model = PromptEcho()
    middleware = HindsightMiddleware("u1", engine=engine)
    answer = ask(create_agent(model, middleware=[middleware]), pasted)["messages"][-1]
    assert answer.text.startswith("ECHO:") and "Redis" in model.prompts[-1].split("[human]")[0]
    session = middleware.default_session_id
    assert engine.working_window(session_id=session, namespace="u1") == []  # the echoed answer is as long
    ask(create_agent(model, middleware=[middleware]), "Which store backs the cache?")
    assert [t.role.value for t in engine.working_window(session_id=session, namespace="u1")] == ["user", "assistant"]


def test_the_thread_id_names_the_session_without_a_checkpointer(engine: MemoryEngine) -> None:
    middleware = HindsightMiddleware("u1", engine=engine)
    agent = create_agent(PromptEcho(), middleware=[middleware])
    ask(agent, "Our backend runs on PostgreSQL 16.", config={"configurable": {"thread_id": "t-42"}})
    assert len(engine.working_window(session_id="t-42", namespace="u1")) == 2
    assert engine.working_window(session_id=middleware.default_session_id, namespace="u1") == []


def test_without_recording_nothing_is_written_to_a_session(engine: MemoryEngine) -> None:
    model = PromptEcho()
    middleware = HindsightMiddleware("u1", engine=engine, record_turns=False)
    ask(create_agent(model, middleware=[middleware]), "Our backend runs on PostgreSQL 16.")
    assert len(model.prompts) == 1
    assert engine.working_window(session_id=middleware.default_session_id, namespace="u1") == []


def test_recorded_turns_carry_the_message_names() -> None:
    messages = [
        HumanMessage("Where should we hold the offsite?", name="Maya"),
        ToolMessage("Lisbon has three venues free", tool_call_id="c1", name="venues"),
        AIMessage("Lisbon: three venues are free in May.", name="planner"),
    ]
    assert HindsightMiddleware.named_turns(messages) == [
        ("Where should we hold the offsite?", "user", "Maya"),
        ("Lisbon has three venues free", "tool", None),
        ("Lisbon: three venues are free in May.", "assistant", "planner"),
    ]
    assert HindsightMiddleware.turns(messages)[0] == ("Where should we hold the offsite?", "user")


@pytest.mark.parametrize("setting", [{"top_k": 0}, {"min_score": 1.5}, {"token_budget": 0}, {"top_k": "many"}])
def test_a_wrong_recall_setting_fails_when_the_middleware_is_built(engine: MemoryEngine, setting: dict) -> None:
    """Not on every model call of every run, after the agent has started."""
    with pytest.raises(ValueError, match=f"validation error for HindsightMiddleware\n{next(iter(setting))}"):
        HindsightMiddleware("u1", engine=engine, **setting)
    assert HindsightMiddleware("u1", engine=engine, top_k="3", min_score=1).top_k == 3


def test_a_run_that_adds_no_user_message_does_not_record_the_last_one_again(engine: MemoryEngine) -> None:
    """Continuing a thread (``invoke({"messages": []})``) records the new answer only."""
    agent = create_agent(
        PromptEcho(), middleware=[HindsightMiddleware("u1", engine=engine)], checkpointer=InMemorySaver()
    )
    config: Any = {"configurable": {"thread_id": "t1"}}
    ask(agent, "Our backend runs on PostgreSQL 16.", config=config)
    out = agent.invoke({"messages": []}, config)
    assert "hindsight_recorded" not in out  # the middleware's own bookkeeping stays private
    turns = engine.working_window(session_id="t1", namespace="u1")
    assert [t.role.value for t in turns] == ["user", "assistant", "assistant"]
    ask(agent, "Which database do we run?", config=config)
    turns = engine.working_window(session_id="t1", namespace="u1")
    assert [t.content for t in turns if t.role.value == "user"] == [
        "Our backend runs on PostgreSQL 16.",
        "Which database do we run?",
    ]
