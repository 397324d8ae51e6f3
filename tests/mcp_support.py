"""Helpers shared by the MCP tests: spawning servers on a temp store and a free port."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from hindsight_integrations.processes import LocalServer, free_port, running

REPO = Path(__file__).resolve().parent.parent
SERVER_CMD = [sys.executable, "-m", "hindsight_integrations.mcp"]
MCP_HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
"""What a streamable-HTTP MCP request carries, for tests that speak the protocol by hand."""
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "test", "version": "1"}},
}
"""An MCP ``initialize`` request: on a ``--stateful`` server it opens a session."""


def server_env(store: Path, **extra: str) -> dict[str, str]:
    env = {
        **os.environ,
        "HINDSIGHT_STORE": str(store),
        "HF_HUB_OFFLINE": "1",
        "TOKENIZERS_PARALLELISM": "false",
        **extra,
    }
    for var in (
        "HINDSIGHT_MCP_URL",
        "HINDSIGHT_MCP_COMMAND",
        "HINDSIGHT_TOKENS",
        "HINDSIGHT_TOKENS_FILE",
        "OPENAI_API_KEY",
    ):
        if var not in extra:
            env.pop(var, None)
    return env


@contextmanager
def http_server(
    store: Path,
    *,
    tokens: dict[str, str] | None = None,
    namespace: str | None = None,
    log_path: Path | None = None,
    env: dict[str, str] | None = None,
) -> Iterator[str]:
    """A ``--transport http`` server subprocess; yields its base URL (``http://127.0.0.1:PORT``)."""
    with http_server_process(store, tokens=tokens, namespace=namespace, log_path=log_path, env=env) as server:
        yield server.url


@contextmanager
def http_server_process(
    store: Path,
    *,
    tokens: dict[str, str] | None = None,
    namespace: str | None = None,
    log_path: Path | None = None,
    env: dict[str, str] | None = None,
) -> Iterator[LocalServer]:
    """``http_server``, yielding its process too (to check it is still alive, or how it exited)."""
    port = free_port()
    extra = {"HINDSIGHT_TOKENS": ",".join(f"{t}={ns}" for t, ns in tokens.items())} if tokens else {}
    extra.update(env or {})
    if namespace:
        extra["HINDSIGHT_NAMESPACE"] = namespace
    base = f"http://127.0.0.1:{port}"
    with (
        open(log_path or os.devnull, "wb") as log,
        running(
            [*SERVER_CMD, "--transport", "http", "--port", str(port)],
            health_url=f"{base}/health",
            env=server_env(store, **extra),
            log=log,
            cwd=REPO,
        ) as process,
    ):
        yield LocalServer(base, process)


def inspector_bin() -> Path | None:
    """The MCP Inspector CLI, installed once into <repo>/.tools (gitignored); None without npm."""
    binary = REPO / ".tools" / "node_modules" / ".bin" / "mcp-inspector"
    if binary.exists():
        return binary
    npm = shutil.which("npm")
    if npm is None:
        return None
    subprocess.run(
        [
            npm,
            "install",
            "--prefix",
            str(REPO / ".tools"),
            "--no-audit",
            "--no-fund",
            "@modelcontextprotocol/inspector",
        ],
        check=True,
        capture_output=True,
        timeout=600,
    )
    return binary if binary.exists() else None
