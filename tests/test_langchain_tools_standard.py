"""memory_tools against langchain-tests' standard tool contract (schema, invoke, ainvoke, ToolCall in and out)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from langchain_core.tools import BaseTool
from langchain_tests.integration_tests import ToolsIntegrationTests
from langchain_tests.unit_tests import ToolsUnitTests

from hindsight_integrations import MemoryEngine
from hindsight_integrations.langchain import memory_tools
from hindsight_integrations.mcp.client import MemoryClient


@pytest.fixture(scope="module")
def shared_client(tmp_path_factory: pytest.TempPathFactory, embedder: Any) -> Iterator[MemoryClient]:
    engine = MemoryEngine(store=tmp_path_factory.mktemp("tools"), embedder=embedder, llm=False)
    client = MemoryClient.in_process(engine, namespace="u1")
    yield client
    client.close()


class _MemoryTool:
    """One of the memory tools, with arguments that work: ``forget`` gets a memory stored for the test."""

    name = ""

    @pytest.fixture(autouse=True)
    def _tools(self, shared_client: MemoryClient) -> None:
        self.tools = {t.name: t for t in memory_tools("u1", client=shared_client)}
        stored = shared_client.store("I live in Berlin and work as a nurse at the Charité.", kind="fact")
        self.memory_id = stored.stored[0].id

    @property
    def tool_constructor(self) -> BaseTool:
        return self.tools[self.name]

    @property
    def tool_invoke_params_example(self) -> dict[str, Any]:
        return {
            "remember": {"content": "The user prefers green tea to coffee.", "kind": "preference"},
            "recall": {"query": "Where does the user live?", "top_k": 2},
            "forget": {"memory_id": self.memory_id},
        }[self.name]


class TestRememberUnit(_MemoryTool, ToolsUnitTests):
    name = "remember"


class TestRecallUnit(_MemoryTool, ToolsUnitTests):
    name = "recall"


class TestForgetUnit(_MemoryTool, ToolsUnitTests):
    name = "forget"


class TestRememberIntegration(_MemoryTool, ToolsIntegrationTests):
    name = "remember"


class TestRecallIntegration(_MemoryTool, ToolsIntegrationTests):
    name = "recall"


class TestForgetIntegration(_MemoryTool, ToolsIntegrationTests):
    name = "forget"
