"""Start local servers (a Chroma server, our MCP server) as child processes, on loopback.

Benchmarks and tests run the scale-out topology without Docker by starting processes;
this module is the one place that knows how to pick a free port, wait until a server
answers its health URL (a started process is not a ready one), and stop it again.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import IO

import httpx


def free_port() -> int:
    """A loopback port the OS says is free now (another process may still take it before the server binds)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextmanager
def running(
    command: Sequence[str],
    *,
    health_url: str,
    env: Mapping[str, str] | None = None,
    log: IO[bytes] | None = None,
    startup_seconds: float = 90.0,
    cwd: str | Path | None = None,
) -> Iterator[subprocess.Popen[bytes]]:
    """Run ``command`` until the block ends; yield once ``health_url`` answers 200."""
    sink = log if log is not None else subprocess.DEVNULL
    process = subprocess.Popen(
        list(command), env=dict(env) if env is not None else None, stdout=sink, stderr=sink, cwd=cwd
    )
    try:
        deadline = time.monotonic() + startup_seconds
        while True:
            if process.poll() is not None:
                raise RuntimeError(f"{command[0]} exited with {process.returncode} before answering {health_url}")
            try:
                if httpx.get(health_url, timeout=1.0).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError(f"{command[0]} did not answer {health_url} within {startup_seconds:.0f} s")
            time.sleep(0.25)
        yield process
    finally:
        process.terminate()
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def chroma_executable() -> str:
    """The ``chroma`` CLI of this interpreter's environment, else the one on PATH; raises if neither exists."""
    local = Path(sys.executable).with_name("chroma")
    found = str(local) if local.exists() else shutil.which("chroma")
    if found is None:
        raise RuntimeError("the `chroma` executable (from the chromadb package) is not installed")
    return found


@dataclass(frozen=True)
class LocalServer:
    """A server started by ``chroma_server``: its base URL and process (e.g. to read its memory use)."""

    url: str
    process: subprocess.Popen[bytes]


@contextmanager
def chroma_server(path: Path, *, startup_seconds: float = 90.0, log: IO[bytes] | None = None) -> Iterator[LocalServer]:
    """``chroma run`` on a free loopback port with its data in ``path``."""
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    command = [chroma_executable(), "run", "--path", str(path), "--host", "127.0.0.1", "--port", str(port)]
    env = {**os.environ, "ANONYMIZED_TELEMETRY": "False"}
    with running(
        command, health_url=f"{url}/api/v2/heartbeat", env=env, log=log, startup_seconds=startup_seconds
    ) as process:
        yield LocalServer(url, process)
