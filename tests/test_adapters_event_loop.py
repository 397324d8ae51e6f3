"""The async paths of the LangChain adapters keep the application's event loop running.

An async agent serves many conversations on one event loop: an adapter that did seconds of
synchronous work on it (building the engine the environment names, which opens its store and
loads its embedding model) would stall every other conversation meanwhile. ``LoopGate`` holds
that work until another coroutine has run: work done off the loop is released at once, work
done on it waits out the gate's timeout and is reported as having blocked the loop.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from langchain.agents import create_agent
from langchain_core.messages import HumanMessage

from hindsight_integrations.langchain import (
    HindsightMemory,
    HindsightMiddleware,
    HindsightRetriever,
    HindsightStore,
    memory_tools,
)
from hindsight_integrations.mcp import resolve
from tests.langchain_fakes import PromptEcho


class LoopGate:
    """Holds a piece of work until a coroutine of the calling loop has run; ``blocked`` if none could."""

    def __init__(self) -> None:
        self.entered = threading.Event()
        self.released = threading.Event()
        self.blocked = False

    def hold(self) -> None:
        self.entered.set()
        if not self.released.wait(timeout=5):
            self.blocked = True

    async def run(self, call: Callable[[], Awaitable[Any]]) -> Any:
        """``call()`` with a second coroutine on the same loop, which releases the held work once it is held."""

        async def ticker() -> None:
            while True:
                await asyncio.sleep(0.001)
                if self.entered.is_set():
                    self.released.set()

        ticking = asyncio.create_task(ticker())
        try:
            return await call()
        finally:
            ticking.cancel()


@pytest.fixture
def gate(store_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[LoopGate]:
    """Adapters on the environment's store, whose engine is built behind a ``LoopGate``."""
    monkeypatch.setenv("HINDSIGHT_STORE", str(store_path))
    resolve.clear_client_cache()
    held = LoopGate()
    build = resolve._shared_engine

    def gated(settings: Any) -> Any:
        held.hold()
        return build(settings)

    monkeypatch.setattr(resolve, "_shared_engine", gated)
    yield held
    resolve.clear_client_cache()


def _agent() -> Any:
    return create_agent(PromptEcho(), [], middleware=[HindsightMiddleware(namespace="u1")])


FIRST_CALLS: dict[str, Callable[[], Awaitable[Any]]] = {
    "retriever.ainvoke": lambda: HindsightRetriever(namespace="u1").ainvoke("what do I eat?"),
    "memory.aload_memory_variables": lambda: HindsightMemory(namespace="u1", session_id="s1").aload_memory_variables(
        {"input": "what do I eat?"}
    ),
    "memory.asave_context": lambda: HindsightMemory(namespace="u1", session_id="s1").asave_context(
        {"input": "I am vegetarian."}, {"output": "Noted."}
    ),
    "store.aput": lambda: HindsightStore(namespace="u1").aput(("notes",), "diet", {"text": "vegetarian"}),
    "memory.aclear": lambda: HindsightMemory(namespace="u1", session_id="s1").aclear(),
    "tool remember": lambda: memory_tools("u1")[0].ainvoke({"content": "The user is vegetarian."}),
    "tool recall": lambda: memory_tools("u1")[1].ainvoke({"query": "diet"}),
    "tool forget": lambda: memory_tools("u1")[2].ainvoke({"memory_id": "no-such-memory"}),
    "middleware awrap_model_call": lambda: _agent().ainvoke({"messages": [HumanMessage("what do I eat?")]}),
    # No text to recall for, so the first use of the store is recording the answer.
    "middleware aafter_agent": lambda: _agent().ainvoke({"messages": [HumanMessage(" ")]}),
}


@pytest.mark.parametrize("name", list(FIRST_CALLS))
async def test_a_first_async_call_builds_the_engine_off_the_event_loop(gate: LoopGate, name: str) -> None:
    await gate.run(FIRST_CALLS[name])
    assert gate.entered.is_set(), "the call did not build the environment's engine"
    assert not gate.blocked, f"{name} built the environment's engine on the event loop, stalling it"
