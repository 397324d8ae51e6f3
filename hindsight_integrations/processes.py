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
        _stop(process)


def _stop(process: subprocess.Popen[bytes]) -> None:
    """SIGTERM, then SIGKILL if it has not exited after 20 s."""
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


def postgres_binaries() -> Path | None:
    """The directory holding ``initdb`` and ``postgres`` (Debian's versioned one, else PATH); None if absent."""
    for candidate in sorted(Path("/usr/lib/postgresql").glob("*/bin"), reverse=True):
        if (candidate / "initdb").exists():
            return candidate
    found = shutil.which("initdb")
    return Path(found).parent if found else None


@contextmanager
def postgres_server(startup_seconds: float = 60.0) -> Iterator[str]:
    """A throw-away PostgreSQL on a free loopback port (trust auth); yields its ``postgresql://`` URL.

    Used as the lock service of several replicas (``core/storage/locks.py``). PostgreSQL refuses
    to run as root, so as root the cluster belongs to the ``postgres`` user.
    """
    import tempfile

    binaries = postgres_binaries()
    if binaries is None:
        raise RuntimeError("PostgreSQL is not installed (Debian: apt-get install postgresql)")
    as_user: list[str] = ["runuser", "-u", "postgres", "--"] if os.geteuid() == 0 else []
    home = Path(tempfile.mkdtemp(prefix="hindsight-pg-"))
    if as_user:
        shutil.chown(home, "postgres")
    data, port = home / "data", free_port()
    try:
        subprocess.run(
            [*as_user, str(binaries / "initdb"), "-D", str(data), "-U", "postgres", "--auth=trust", "--no-sync"],
            check=True,
            capture_output=True,
        )
        command = [*as_user, str(binaries / "postgres"), "-D", str(data), "-p", str(port)]
        command += ["-c", "listen_addresses=127.0.0.1", "-c", f"unix_socket_directories={home}", "-c", "fsync=off"]
        process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            _wait_until_accepting(binaries / "pg_isready", port, process, startup_seconds)
            yield f"postgresql://postgres@127.0.0.1:{port}/postgres"
        finally:
            _stop(process)
    finally:
        shutil.rmtree(home, ignore_errors=True)


def _wait_until_accepting(pg_isready: Path, port: int, process: subprocess.Popen[bytes], seconds: float) -> None:
    deadline = time.monotonic() + seconds
    while True:
        if process.poll() is not None:
            raise RuntimeError(f"postgres exited with {process.returncode} before accepting connections")
        probe = [str(pg_isready), "-q", "-h", "127.0.0.1", "-p", str(port)]
        if subprocess.run(probe, check=False).returncode == 0:
            return
        if time.monotonic() > deadline:
            raise RuntimeError(f"postgres did not accept connections on port {port} within {seconds:.0f} s")
        time.sleep(0.1)
