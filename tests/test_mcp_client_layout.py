"""How ``MemoryClient`` is built: light to import, sync methods generated from their async twins,
and transport failures retried only when a retry cannot run a write twice."""

from __future__ import annotations

import ast
import inspect
import json
import subprocess
import sys
import uuid
from collections.abc import Iterator
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import McpError
from mcp.types import CONNECTION_CLOSED, ErrorData

from hindsight_integrations import MemoryEngine
from hindsight_integrations.mcp import MemoryClient, MemoryServerUnavailableError, MemoryToolNotFoundError
from hindsight_integrations.mcp.errors import MemoryAuthError
from hindsight_integrations.mcp.session import retryable
from hindsight_integrations.mcp.transports import Transport

from .mcp_support import REPO

MCP_DIR = REPO / "hindsight_integrations" / "mcp"
HEAVY = ("chromadb", "torch", "sentence_transformers", "hindsight_integrations.core.engine")


# -- imports --------------------------------------------------------------------------------------------------


def test_importing_the_client_loads_neither_the_engine_nor_chroma() -> None:
    """Needs the package ``__init__``s to load the engine lazily too (they do since the engine split)."""
    script = (
        "import json, sys\n"
        "import hindsight_integrations.mcp\n"
        "from hindsight_integrations.mcp import MemoryClient\n"
        f"print(json.dumps({{m: m in sys.modules for m in {HEAVY!r}}}))\n"
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True, cwd=REPO)
    assert json.loads(out.stdout.strip().splitlines()[-1]) == dict.fromkeys(HEAVY, False)


def module_level_imports(path: Path) -> list[str]:
    """Modules imported when ``path`` is imported (not inside functions or ``if TYPE_CHECKING``)."""
    found = []
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.Import):
            found += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = "." * node.level + (node.module or "")
            found += [base] + [f"{base}.{alias.name}" if node.module else f"{base}{alias.name}" for alias in node.names]
    return found


@pytest.mark.parametrize("path", sorted(MCP_DIR.glob("*.py")), ids=lambda p: p.name)
def test_no_mcp_module_imports_the_engine_or_the_store_at_module_level(path: Path) -> None:
    for name in module_level_imports(path):
        assert not name.startswith(("..core.engine", "..core.store", "chromadb")), f"{path.name} imports {name}"


CLIENT_SIDE = [
    "__init__.py",
    "client.py",
    "client_calls.py",
    "session.py",
    "transport_failures.py",
    "transports.py",
    "server_stderr.py",
    "wire.py",
    "answers.py",
    "protocol.py",
    "errors.py",
]


@pytest.mark.parametrize("name", CLIENT_SIDE)
def test_client_side_modules_do_not_import_the_server(name: str) -> None:
    for imported in module_level_imports(MCP_DIR / name):
        assert imported.lstrip(".").split(".")[0] not in ("server", "app", "tools", "routes", "startup"), imported


# -- sync twins -----------------------------------------------------------------------------------------------

ASYNC_API = [
    name
    for name, member in inspect.getmembers(MemoryClient, inspect.iscoroutinefunction)
    if name.startswith("a") and not name.startswith("__") and name != "aclose"
]


@pytest.mark.parametrize("async_name", ASYNC_API)
def test_every_async_method_has_a_generated_sync_twin_with_its_signature(async_name: str) -> None:
    sync = getattr(MemoryClient, async_name.removeprefix("a"))
    asynchronous = getattr(MemoryClient, async_name)
    assert not inspect.iscoroutinefunction(sync) and sync.__wrapped__ is asynchronous
    assert inspect.signature(sync) == inspect.signature(asynchronous)
    assert sync.__name__ == async_name.removeprefix("a") and sync.__doc__


@pytest.fixture(scope="module")
def client(tmp_path_factory: pytest.TempPathFactory, embedder) -> Iterator[MemoryClient]:
    engine = MemoryEngine(store=tmp_path_factory.mktemp("twins"), embedder=embedder, llm=False)
    with MemoryClient.in_process(engine, namespace="twins") as c:
        yield c


async def test_sync_and_async_methods_return_equal_results(client: MemoryClient) -> None:
    request_id = str(uuid.uuid4())
    items = [{"content": "I keep bees on the roof of my flat", "kind": "fact"}, "My sister is a violinist in Leeds"]
    stored = client.store(items, request_id=request_id)
    replayed = await client.astore(items, request_id=request_id)
    assert replayed.replayed and replayed.stored == stored.stored
    assert client.list(limit=100) == await client.alist(limit=100)
    assert client.stats() == await client.astats()
    assert client.dump() == await client.adump()
    assert client.list_tools() == await client.alist_tools()
    assert client.call_tool("memory_stats") == await client.acall_tool("memory_stats")
    sync_hits, async_hits = client.recall("who plays the violin?"), await client.arecall("who plays the violin?")
    assert [h.record.id for h in sync_hits.hits] == [h.record.id for h in async_hits.hits]
    assert sync_hits.context == async_hits.context
    client.record_turn("We talked about the bees", session_id="s-twins")
    assert client.working_memory("s-twins") == await client.aworking_memory("s-twins")
    memory_id = stored.ids[0]
    synced, awaited = client.update(memory_id, importance=0.9), await client.aupdate(memory_id, importance=0.9)
    assert (synced.id, synced.importance, synced.content) == (awaited.id, awaited.importance, awaited.content)
    with pytest.raises(MemoryToolNotFoundError) as sync_err:
        client.forget("no-such-id")
    with pytest.raises(MemoryToolNotFoundError) as async_err:
        await client.aforget("no-such-id")
    assert str(sync_err.value) == str(async_err.value)


async def test_a_sync_call_on_a_closed_client_is_refused_not_hung(embedder, tmp_path: Path) -> None:
    engine = MemoryEngine(store=tmp_path / "closed", embedder=embedder, llm=False)
    client = MemoryClient.in_process(engine, namespace="closed")
    client.close()
    with pytest.raises(MemoryServerUnavailableError, match="closed"):
        client.stats()
    with pytest.raises(MemoryServerUnavailableError, match="closed"):
        await client.astats()


# -- retries --------------------------------------------------------------------------------------------------


def test_retry_classification() -> None:
    before = MemoryServerUnavailableError("http", "u", "cannot connect", before_send=True)
    after = MemoryServerUnavailableError("http", "u", "connection closed during record_turn")
    assert retryable(before, idempotent=False) and retryable(before, idempotent=True)
    assert not retryable(after, idempotent=False) and retryable(after, idempotent=True)
    assert not retryable(MemoryAuthError("http", "u", "HTTP 401", before_send=True), idempotent=True)
    assert not retryable(ValueError("a tool error is not a transport failure"), idempotent=True)


class FakeSession:
    """Stands in for the SDK's ClientSession: every call fails as the SDK fails one whose connection closed after
    sending it (or, with ``unsent``, as one whose session was closed before: its write stream refuses the request)."""

    def __init__(self, counts: dict[str, int], *, unsent: bool = False) -> None:
        self.counts = counts
        self.unsent = unsent

    def get_server_capabilities(self) -> None:
        return None

    async def call_tool(self, tool: str, arguments: dict[str, Any], **_: Any) -> Any:
        if self.unsent:
            raise anyio.ClosedResourceError
        self.counts["sent"] += 1
        raise McpError(ErrorData(code=CONNECTION_CLOSED, message="Connection closed"))


def flaky(fail_to_open: bool, *, unsent: bool = False) -> tuple[Transport, dict[str, int]]:
    counts = {"opened": 0, "sent": 0}

    async def open_session(stack: AsyncExitStack, timeout: float) -> Any:
        counts["opened"] += 1
        if fail_to_open:
            raise ConnectionRefusedError("nobody listening")
        return FakeSession(counts, unsent=unsent)

    return Transport("http", "http://fake/mcp", open_session), counts


def test_a_failure_before_sending_is_retried_even_for_a_non_idempotent_call() -> None:
    transport, counts = flaky(fail_to_open=True)
    with MemoryClient(transport, retries=2, backoff=0) as client, pytest.raises(MemoryServerUnavailableError) as err:
        client.record_turn("hello", session_id="s")
    assert err.value.before_send and counts == {"opened": 3, "sent": 0}


def test_a_request_the_closed_session_refused_is_retried_even_for_a_non_idempotent_call() -> None:
    transport, counts = flaky(fail_to_open=False, unsent=True)
    with MemoryClient(transport, retries=2, backoff=0) as client, pytest.raises(MemoryServerUnavailableError) as err:
        client.record_turn("hello", session_id="s")
    assert err.value.before_send and counts == {"opened": 3, "sent": 0}


def test_a_failure_after_sending_is_not_retried_for_a_non_idempotent_call() -> None:
    transport, counts = flaky(fail_to_open=False)
    with MemoryClient(transport, retries=2, backoff=0) as client, pytest.raises(MemoryServerUnavailableError) as err:
        client.record_turn("hello", session_id="s")
    assert not err.value.before_send and counts["sent"] == 1


def test_a_failure_after_sending_is_retried_for_an_idempotent_call() -> None:
    transport, counts = flaky(fail_to_open=False)
    with MemoryClient(transport, retries=2, backoff=0) as client, pytest.raises(MemoryServerUnavailableError):
        client.store("The spare key is under the blue pot")  # idempotent: it always carries a request_id
    assert counts["sent"] == 3
