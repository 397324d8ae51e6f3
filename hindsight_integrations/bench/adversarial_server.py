"""The shared server `hindsight bench adversarial` attacks, and the other tenant who waits on it.

``Server`` is one ``hindsight serve --transport http`` process on 127.0.0.1 with two tokens (an
attacker's and a victim's namespace, as on a server shared by tenants), restartable on the same
store when an attack kills it; its calls are raw JSON-RPC requests, timed, and their outcome
read as "ok", a refusal with its error type, a timeout or "server died". ``other_tenant`` is
the victim recalling in a loop on its own connection while an attack runs.
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from ..mcp import MemoryClient
from ..processes import free_port, running
from .scale import percentile

VICTIM_QUERY = "What grows in my garden?"
_HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


@dataclass
class Outcome:
    """One timed call: seconds, and what came of it."""

    seconds: float
    result: str


@dataclass
class Waits:
    """The other tenant's recall latencies (ms) over a window."""

    latencies_ms: list[float] = field(default_factory=list)
    errors: int = 0

    def summary(self) -> dict[str, Any]:
        """Count, p50 and max in milliseconds (and errors)."""
        values = self.latencies_ms
        return {
            "recalls": len(values),
            "p50_ms": round(percentile(values, 50), 1),
            "max_ms": round(max(values), 1) if values else 0.0,
            "errors": self.errors,
        }


class Server:
    """A ``hindsight serve --transport http`` process with an attacker's and a victim's token; restartable."""

    def __init__(self, workdir: Path, *, startup_seconds: float = 180.0) -> None:
        self.attacker = "attacker-" + uuid.uuid4().hex
        self.victim = "victim-" + uuid.uuid4().hex
        self._workdir = workdir
        self._startup = startup_seconds
        self._stack: ExitStack | None = None
        self._process: Any = None
        self.base = ""
        self.restarts = 0

    def start(self) -> None:
        """Start (or start again, on the same store) and wait until ``/health`` answers."""
        self.stop()
        port = free_port()
        self.base = f"http://127.0.0.1:{port}"
        env = {k: v for k, v in os.environ.items() if not k.startswith("HINDSIGHT_")}
        env.update(
            {
                "HINDSIGHT_STORE": str(self._workdir / "store"),
                "HINDSIGHT_TOKENS": f"{self.attacker}=attacker,{self.victim}=victim",
                "HF_HUB_OFFLINE": "1",
                "TOKENIZERS_PARALLELISM": "false",
            }
        )
        command = [sys.executable, "-m", "hindsight_integrations.mcp", "--transport", "http", "--port", str(port)]
        stack = ExitStack()
        log = stack.enter_context(open(self._workdir / f"server-{self.restarts}.log", "ab"))  # noqa: SIM115
        self._process = stack.enter_context(
            running(command, health_url=f"{self.base}/health", env=env, log=log, startup_seconds=self._startup)
        )
        self._stack = stack

    def stop(self) -> None:
        """Stop the process (if any)."""
        if self._stack is not None:
            self._stack.close()
            self._stack = None

    def alive(self) -> bool:
        """Whether the process runs and ``/health`` answers."""
        if self._process is None or self._process.poll() is not None:
            return False
        try:
            return httpx.get(f"{self.base}/health", timeout=10).status_code == 200
        except httpx.HTTPError:
            return False

    def call(self, token: str, tool: str, arguments: dict[str, Any] | bytes, *, timeout: float) -> Outcome:
        """One raw ``tools/call`` (``arguments`` as JSON bytes when the caller built them itself), timed."""
        if isinstance(arguments, bytes):
            body = b'{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "%s", "arguments": %s}}' % (
                tool.encode(),
                arguments,
            )
        else:
            body = json.dumps(
                {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": tool, "arguments": arguments}}
            ).encode()
        headers = {**_HEADERS, "Authorization": f"Bearer {token}"}
        started = time.perf_counter()
        try:
            response = httpx.post(f"{self.base}/mcp", content=body, headers=headers, timeout=timeout)
        except httpx.TimeoutException:
            return Outcome(time.perf_counter() - started, f"timed out (> {timeout:.0f} s)")
        except httpx.HTTPError as exc:
            seconds = time.perf_counter() - started
            return Outcome(seconds, "server died" if not self.alive() else f"connection error: {type(exc).__name__}")
        seconds = time.perf_counter() - started
        return Outcome(seconds, _result_of(response))

    def __enter__(self) -> Server:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def _result_of(response: httpx.Response) -> str:
    """ "ok", or the error a tool call answered with ("refused: invalid_input", "internal_error", "http 413")."""
    try:
        payload = response.json()
    except ValueError:
        return f"http {response.status_code}"
    if "error" in payload:
        return f"refused: http {response.status_code}"
    result = payload.get("result") or {}
    if not result.get("isError"):
        return "ok"
    error = (result.get("structuredContent") or {}).get("error") or {}
    kind = error.get("type", "error")
    return "internal_error" if kind == "internal_error" else f"refused: {kind}"


@contextmanager
def other_tenant(server: Server) -> Iterator[Waits]:
    """The victim recalling in a loop on its own connection for as long as the block runs.

    The block starts once the victim's connection is up and has answered one recall (not
    counted), so what is measured is the wait the attack causes, not the connection's setup.
    """
    waits = Waits()
    ready = threading.Event()
    stop = threading.Event()

    def loop() -> None:
        try:
            # A recall unanswered after a minute is counted as failed: the server may have died under it.
            with MemoryClient.http(f"{server.base}/mcp", token=server.victim, retries=0, timeout=60) as client:
                client.recall(VICTIM_QUERY)
                ready.set()
                while not stop.is_set() or not (waits.latencies_ms or waits.errors):
                    started = time.perf_counter()
                    try:
                        client.recall(VICTIM_QUERY)
                        waits.latencies_ms.append((time.perf_counter() - started) * 1000)
                    except Exception:  # noqa: BLE001 - counted: a refused or failed recall is what we measure
                        waits.errors += 1
                        if stop.is_set():
                            return
                        time.sleep(0.1)
        except Exception:  # noqa: BLE001 - the connection itself failed (server down): counted
            waits.errors += 1
        finally:
            ready.set()

    thread = threading.Thread(target=loop, daemon=True)
    thread.start()
    ready.wait(timeout=120)
    try:
        yield waits
    finally:
        stop.set()
        thread.join(timeout=120)


def store_all(server: Server, texts: list[str]) -> list[str]:
    """Store ``texts`` as the attacker (one batch, no dedup); the ids stored."""
    body = json.dumps({"memories": [{"content": t} for t in texts], "dedup": False}).encode()
    response = httpx.post(
        f"{server.base}/mcp",
        content=b'{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "store_memory", '
        b'"arguments": ' + body + b"}}",
        headers={**_HEADERS, "Authorization": f"Bearer {server.attacker}"},
        timeout=600,
    )
    content = (response.json().get("result") or {}).get("structuredContent") or {}
    return list(content.get("ids") or [])


__all__ = ["VICTIM_QUERY", "Outcome", "Server", "Waits", "other_tenant", "store_all"]
