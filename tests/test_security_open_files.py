"""An HTTP server serves with the open files its hard limit allows, not the soft limit it was started with.

Many systems start processes with a soft limit of 1,024 open files whatever the hard limit; the
server kept it, so a shared server refused connections (each holds a file) at ~1,000 although the
system allowed far more. Started here under ``ulimit -Sn 256``: it now raises its own limit and
says so; where the limit cannot be raised (``ulimit -n 256`` sets both), it serves and warns.
"""

from __future__ import annotations

import json
import resource
import shlex
import socket
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest

from hindsight_integrations.processes import LocalServer, free_port, running

from .mcp_support import REPO, SERVER_CMD, server_env

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="no ulimit")

SOFT = 256
CONNECTIONS = 300  # more than SOFT: each held open at once


@contextmanager
def served_under(ulimit: str, store: Path, log_path: Path) -> Iterator[LocalServer]:
    """The HTTP server started by a shell that first runs ``ulimit`` (the limits it then inherits)."""
    port = free_port()
    command = shlex.join([*SERVER_CMD, "--transport", "http", "--port", str(port)])
    base = f"http://127.0.0.1:{port}"
    with (
        open(log_path, "wb") as log,
        running(
            ["sh", "-c", f"{ulimit} && exec {command}"],
            health_url=f"{base}/health",
            env=server_env(store),
            log=log,
            cwd=REPO,
        ) as process,
    ):
        yield LocalServer(base, process)


def log_lines(log_path: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in log_path.read_text().splitlines() if line.startswith("{")]


def test_the_server_raises_its_soft_open_file_limit_and_serves_more_connections(tmp_path: Path) -> None:
    hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
    if hard != resource.RLIM_INFINITY and hard < 2 * CONNECTIONS:
        pytest.skip(f"the hard open-file limit here ({hard}) leaves nothing to raise to")
    log_path = tmp_path / "server.log"
    with served_under(f"ulimit -Sn {SOFT}", tmp_path / "store", log_path) as server:
        port = int(server.url.rsplit(":", 1)[1])
        held = []
        try:
            for _ in range(CONNECTIONS):  # all open at once, each asking for /health and kept alive
                connection = socket.create_connection(("127.0.0.1", port), timeout=30)
                connection.sendall(f"GET /health HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n\r\n".encode())
                held.append(connection)
            for connection in held:  # before, the server stopped accepting at ~250: the rest waited unanswered
                assert connection.recv(64).startswith(b"HTTP/1.1 200")
        finally:
            for connection in held:
                connection.close()
        assert server.process.poll() is None
    ready = next(line for line in log_lines(log_path) if line.get("event") == "ready")
    assert ready["open_files_limit_was"] == SOFT
    assert isinstance(ready["open_files_limit"], int) and ready["open_files_limit"] > CONNECTIONS


def test_a_server_whose_limit_cannot_be_raised_serves_and_says_how_to_raise_it(tmp_path: Path) -> None:
    log_path = tmp_path / "server.log"
    with served_under(f"ulimit -n {SOFT}", tmp_path / "store", log_path) as server:  # soft and hard alike
        assert httpx.get(f"{server.url}/health").status_code == 200
    lines = log_lines(log_path)
    ready = next(line for line in lines if line.get("event") == "ready")
    assert ready["open_files_limit"] == SOFT and "open_files_limit_was" not in ready
    warning = next(line for line in lines if "open files" in str(line.get("event")))
    assert warning["level"] == "warning" and "ulimit -Hn" in str(warning["event"])
