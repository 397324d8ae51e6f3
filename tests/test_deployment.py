"""The scale-out topology: docker-compose.yml checked, and the same topology run on loopback.

No Docker engine runs here, so the compose file is validated structurally and the topology
it describes (a Chroma server + two stateless MCP HTTP replicas + their lock database) is started
as processes: `chroma run`, a throw-away PostgreSQL and two `hindsight serve --transport http`.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

import httpx
import pytest
import yaml
from mcp import ClientSession
from mcp.client.streamable_http import streamablehttp_client

from hindsight_integrations.processes import chroma_server, free_port, postgres_binaries, postgres_server, running

REPO = Path(__file__).resolve().parent.parent
ALICE_TOKEN, BOB_TOKEN = "token-alice-1-6f2b8d4a9c7e31059a", "token-bob-22-3a9e7c1f5b2d80647e1"


def test_compose_file_describes_the_topology() -> None:
    compose = yaml.safe_load((REPO / "docker-compose.yml").read_text())
    services = compose["services"]
    assert {"chroma", "locks", "memory-a", "memory-b"} <= set(services)
    assert "chroma-data" in compose["volumes"] and "chroma-data:/data" in services["chroma"]["volumes"]
    for name in ("chroma", "memory-a", "memory-b"):
        assert services[name]["healthcheck"]["test"], name
    for name in ("memory-a", "memory-b"):
        service = services[name]
        assert service["depends_on"]["chroma"]["condition"] == "service_healthy"
        assert service["environment"]["HINDSIGHT_CHROMA_URL"] == "http://chroma:8000"
        assert int(service["environment"]["HINDSIGHT_CHROMA_CONNECT_ATTEMPTS"]) > 1  # start-up retry
        # replicas serialise each namespace's writes through the lock database (core/storage/locks.py)
        assert service["environment"]["HINDSIGHT_LOCK_URL"].startswith("postgresql://postgres@locks:")
        assert service["depends_on"]["locks"]["condition"] == "service_healthy"
    tokens = json.loads((REPO / compose["secrets"]["hindsight_tokens"]["file"]).read_text())
    assert set(tokens["tokens"].values()) == {"alice", "bob"}
    assert "hindsight" in (REPO / "Dockerfile").read_text() and (REPO / "Dockerfile").exists()


def test_the_images_warm_up_step_runs_here_without_torch(tmp_path: Path) -> None:
    """The Dockerfile's python steps, run as written (no engine to build the image here), import no torch."""
    steps = re.findall(r'^RUN python -c "(.*)"$', (REPO / "Dockerfile").read_text(), flags=re.MULTILINE)
    assert steps
    guard = "import sys\nfor m in ('torch', 'sentence_transformers', 'transformers'): sys.modules[m] = None\n"
    env = {k: v for k, v in os.environ.items() if not k.startswith("HINDSIGHT_")}
    env |= {"HINDSIGHT_CACHE_DIR": str(tmp_path / "cache"), "HF_HUB_OFFLINE": "1"}
    for step in steps:
        done = subprocess.run(
            [sys.executable, "-c", guard + step], capture_output=True, text=True, env=env, timeout=300
        )
        assert done.returncode == 0, done.stderr
        assert done.stdout.strip().splitlines()[-1] == "all-MiniLM-L6-v2"
    assert any((tmp_path / "cache" / "onnx").glob("*.int8-*.onnx"))  # the int8 copy is made at build time too


@contextmanager
def _replica(chroma_url: str, tokens: str, lock_url: str) -> Iterator[str]:
    port = free_port()
    env = {
        **os.environ,
        "HINDSIGHT_CHROMA_URL": chroma_url,
        "HINDSIGHT_LOCK_URL": lock_url,  # as in docker-compose.yml: replicas without one refuse writes
        "HINDSIGHT_TOKENS": tokens,
        "HINDSIGHT_LEXICAL_SYNC_SECONDS": "0",
        "HF_HUB_OFFLINE": "1",
    }
    env.pop("HINDSIGHT_STORE", None)
    command = [str(Path(sys.executable).with_name("hindsight")), "serve", "--transport", "http", "--port", str(port)]
    base = f"http://127.0.0.1:{port}"
    with running(command, health_url=f"{base}/health", env=env, startup_seconds=120):
        yield base


async def _call(base: str, token: str, tool: str, arguments: dict) -> dict:
    headers = {"Authorization": f"Bearer {token}"}
    async with (
        streamablehttp_client(f"{base}/mcp", headers=headers) as (read, write, _),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        result = await session.call_tool(tool, arguments)
        assert not result.isError, result.content
        return result.structuredContent


@pytest.mark.server
@pytest.mark.slow
@pytest.mark.skipif(postgres_binaries() is None, reason="PostgreSQL (the replicas' lock service) is not installed")
async def test_two_stateless_replicas_share_one_chroma(tmp_path: Path) -> None:
    with ExitStack() as stack:
        chroma_url = stack.enter_context(chroma_server(tmp_path / "chroma")).url
        locks = stack.enter_context(postgres_server())
        a = stack.enter_context(_replica(chroma_url, f"{ALICE_TOKEN}=alice,{BOB_TOKEN}=bob", locks))
        b = stack.enter_context(_replica(chroma_url, f"{ALICE_TOKEN}=alice,{BOB_TOKEN}=bob", locks))
        stored = await _call(
            a,
            ALICE_TOKEN,
            "store_memory",
            {"content": "Alice's build server is named ORION-77.", "request_id": "r1"},
        )
        assert stored["ids"]
        found = await _call(b, ALICE_TOKEN, "retrieve_memory", {"query": "ORION-77", "top_k": 3})
        assert found["memories"][0]["content"] == "Alice's build server is named ORION-77."
        again = await _call(
            b,
            ALICE_TOKEN,
            "store_memory",
            {"content": "Alice's build server is named ORION-77.", "request_id": "r1"},
        )
        assert again["ids"] == stored["ids"]  # idempotent across replicas
        other = await _call(b, BOB_TOKEN, "retrieve_memory", {"query": "ORION-77 build server", "top_k": 3})
        assert other["memories"] == []  # bob's token never sees alice's namespace
        assert httpx.post(f"{a}/mcp", json={}).status_code == 401
