"""The server driven by clients nobody here wrote: the official MCP SDK, langchain-mcp-adapters
and the MCP Inspector CLI, over stdio and streamable HTTP."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamablehttp_client

from .mcp_support import REPO, http_server, inspector_bin, server_env

pytestmark = pytest.mark.server


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("real-clients")


@pytest.fixture(scope="module")
def http_base(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    # Its own store: an embedded Chroma directory must not be open in two processes at once.
    with http_server(
        tmp_path_factory.mktemp("real-clients-http"), namespace="shared"
    ) as base:  # no auth: the Inspector CLI 0.x cannot send headers
        yield base


def stdio_params(store: Path) -> StdioServerParameters:
    return StdioServerParameters(
        command=sys.executable,
        args=["-m", "hindsight_integrations.mcp", "--namespace", "shared"],
        env=server_env(store),
    )


def content_text(result) -> str:
    if isinstance(result, str):
        return result
    if isinstance(result, list):
        return "\n".join(
            item.get("text", "") if isinstance(item, dict) else getattr(item, "text", str(item)) for item in result
        )
    return "\n".join(getattr(c, "text", "") for c in result.content)


async def exercise_sdk_session(session: ClientSession) -> None:
    await session.initialize()
    tools = {t.name: t for t in (await session.list_tools()).tools}
    assert {"store_memory", "retrieve_memory", "record_turn"} <= set(tools)
    assert "query" in tools["retrieve_memory"].inputSchema["required"]
    assert tools["retrieve_memory"].annotations.readOnlyHint is True
    stored = await session.call_tool(
        "store_memory", {"content": "The user's favourite tea is genmaicha", "kind": "preference"}
    )
    assert not stored.isError and stored.structuredContent["ids"]
    found = await session.call_tool("retrieve_memory", {"query": "what tea does the user like?", "top_k": "2"})
    assert (
        not found.isError and "genmaicha" in found.structuredContent["context"] and "genmaicha" in content_text(found)
    )
    bad = await session.call_tool("retrieve_memory", {"query": "x", "top_k": "lots"})
    assert bad.isError and "top_k" in content_text(bad)
    still = await session.call_tool("memory_stats", {})
    assert not still.isError and still.structuredContent["total"] >= 1


async def test_official_sdk_over_stdio(store: Path) -> None:
    async with stdio_client(stdio_params(store)) as (read, write), ClientSession(read, write) as session:
        await exercise_sdk_session(session)


async def test_official_sdk_over_streamable_http(http_base: str) -> None:
    async with streamablehttp_client(f"{http_base}/mcp") as (read, write, _), ClientSession(read, write) as session:
        await exercise_sdk_session(session)


async def exercise_langchain(client, server: str) -> None:
    from langchain_mcp_adapters.tools import load_mcp_tools

    async with client.session(server) as session:
        tools = {t.name: t for t in await load_mcp_tools(session)}
        assert {"store_memory", "retrieve_memory", "forget_memory"} <= set(tools)
        await tools["store_memory"].ainvoke(
            {"content": "The user is training for the Berlin marathon", "kind": "event"}
        )
        answer = await tools["retrieve_memory"].ainvoke({"query": "which race is the user training for?", "top_k": 3})
        assert "Berlin marathon" in content_text(answer)
        # A tool error reaches the model as a ToolMessage with status="error" and the server's message.
        message = await tools["forget_memory"].ainvoke(
            {"type": "tool_call", "id": "call-1", "name": "forget_memory", "args": {"id": "no-such-memory"}}
        )
        assert message.status == "error" and "no memory 'no-such-memory'" in content_text(message.content)


async def test_langchain_mcp_adapters_over_stdio(store: Path) -> None:
    from langchain_mcp_adapters.client import MultiServerMCPClient

    params = stdio_params(store)
    client = MultiServerMCPClient(
        {"memory": {"transport": "stdio", "command": params.command, "args": params.args, "env": params.env}}
    )
    await exercise_langchain(client, "memory")


async def test_langchain_mcp_adapters_over_http(http_base: str) -> None:
    from langchain_mcp_adapters.client import MultiServerMCPClient

    client = MultiServerMCPClient({"memory": {"transport": "streamable_http", "url": f"{http_base}/mcp"}})
    await exercise_langchain(client, "memory")


@pytest.fixture(scope="module")
def inspector() -> Path:
    binary = inspector_bin()
    if binary is None:
        pytest.skip("npm is not installed: cannot install the MCP Inspector CLI (@modelcontextprotocol/inspector)")
    return binary


def run_inspector(inspector: Path, target: list[str], *args: str, env: dict[str, str] | None = None) -> dict:
    proc = subprocess.run(
        [str(inspector), "--cli", *target, *args], capture_output=True, text=True, timeout=120, env=env, cwd=REPO
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    return json.loads(proc.stdout)


def test_inspector_cli_over_stdio(inspector: Path, store: Path) -> None:
    target = [sys.executable, "-m", "hindsight_integrations.mcp", "--namespace", "shared"]
    listed = run_inspector(inspector, target, "--method", "tools/list", env=server_env(store))
    assert "retrieve_memory" in {t["name"] for t in listed["tools"]}


def test_inspector_cli_over_http(inspector: Path, http_base: str) -> None:
    url = f"{http_base}/mcp"
    listed = run_inspector(inspector, [url], "--transport", "http", "--method", "tools/list")
    assert "store_memory" in {t["name"] for t in listed["tools"]}
    # The Inspector sends every --tool-arg as a string: importance "0.9" and top_k "3" must be coerced.
    stored = run_inspector(
        inspector,
        [url],
        "--transport",
        "http",
        "--method",
        "tools/call",
        "--tool-name",
        "store_memory",
        "--tool-arg",
        "content=The user's dentist is Dr. Okafor",
        "--tool-arg",
        "importance=0.9",
    )
    assert not stored.get("isError") and stored["structuredContent"]["ids"]
    found = run_inspector(
        inspector,
        [url],
        "--transport",
        "http",
        "--method",
        "tools/call",
        "--tool-name",
        "retrieve_memory",
        "--tool-arg",
        "query=who is the dentist?",
        "--tool-arg",
        "top_k=3",
    )
    assert not found.get("isError") and "Okafor" in found["structuredContent"]["context"]
    bad = run_inspector(
        inspector,
        [url],
        "--transport",
        "http",
        "--method",
        "tools/call",
        "--tool-name",
        "retrieve_memory",
        "--tool-arg",
        "top_k=3",
    )
    assert bad["isError"] and "query" in bad["content"][0]["text"]
