"""Server and client behaviour that is not per-transport: logging, rate limits, namespaces,
transport selection, stdio stream hygiene and a stdio client dying mid-call."""

from __future__ import annotations

import json
import logging
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from hindsight_integrations import MemoryEngine
from hindsight_integrations.core.errors import ConfigurationError, InvalidInputError
from hindsight_integrations.mcp import MemoryClient, MemoryServerUnavailableError, MemoryToolError
from hindsight_integrations.mcp.auth import load_token_map, parse_token_env
from hindsight_integrations.mcp.observability import JsonFormatter, RateLimiter
from hindsight_integrations.mcp.server import build_server
from hindsight_integrations.mcp.server_stderr import why_it_stopped

from .mcp_support import SERVER_CMD, server_env


@pytest.fixture(scope="module")
def engine(tmp_path_factory: pytest.TempPathFactory, embedder) -> MemoryEngine:
    return MemoryEngine(store=tmp_path_factory.mktemp("server"), embedder=embedder, llm=False)


@pytest.fixture(scope="module")
def client(engine: MemoryEngine) -> Iterator[MemoryClient]:
    with MemoryClient.in_process(engine, namespace="logged") as c:
        yield c


def test_every_tool_call_is_logged_as_one_json_line(client: MemoryClient, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="hindsight.mcp")
    client.store("The user's birthday is on the 4th of May " + "x" * 200)
    with pytest.raises(MemoryToolError):
        client.call_tool("retrieve_memory", {"query": "x", "top_k": "many"})
    calls = [r for r in caplog.records if r.name == "hindsight.mcp" and r.getMessage() == "tool_call"]
    ok, failed = calls[-2], calls[-1]
    line = json.loads(JsonFormatter().format(ok))
    assert (
        line["tool"] == "store_memory"
        and line["namespace"] == "logged"
        and line["outcome"] == "ok"
        and line["latency_ms"] >= 0
    )
    assert "chars)" in line["arguments"]["content"]  # content is summarised, not logged verbatim
    failed_line = json.loads(JsonFormatter().format(failed))
    assert failed_line["outcome"] == "invalid_input" and "top_k" in failed_line["error"]


def test_two_servers_on_one_engine_keep_their_namespaces_apart(engine: MemoryEngine) -> None:
    with MemoryClient.in_process(engine, namespace="ns-a") as a, MemoryClient.in_process(engine, namespace="ns-b") as b:
        a.store("I prefer dark mode in every editor", kind="preference")
        assert a.stats().total == 1 and b.stats().total == 0
        assert not b.recall("which editor theme?").hits


def test_rate_limit_refuses_with_a_retry_hint(engine: MemoryEngine) -> None:
    import anyio
    from mcp.shared.memory import create_connected_server_and_client_session

    server = build_server(engine, namespace="limited", rate_limit_per_minute=3)

    async def scenario() -> list[bool]:
        async with create_connected_server_and_client_session(server) as session:
            return [(await session.call_tool("memory_stats", {})).isError for _ in range(5)]

    errors = anyio.run(scenario)
    assert errors[:3] == [False] * 3 and errors[3:] == [True, True]
    limiter = RateLimiter(per_minute=60, burst=1)
    assert limiter.acquire("x") == 0 and limiter.acquire("x") > 0 and limiter.acquire("y") == 0


def test_token_configuration_is_validated(tmp_path: Path) -> None:
    assert parse_token_env("tok-aaaaaaa1=u1, tok-bbbbbbb2=u2") == {"tok-aaaaaaa1": "u1", "tok-bbbbbbb2": "u2"}
    path = tmp_path / "tokens.json"
    strong = "long-enough-token-8c2e6a4f1d9b7305"
    path.write_text(json.dumps({"tokens": {strong: "team.a"}}))
    assert load_token_map(path, environ={}) == {strong: "team.a"}
    assert load_token_map(None, environ={}) is None
    for bad in (
        {"HINDSIGHT_TOKENS": "no-equals-sign"},
        {"HINDSIGHT_TOKENS": "short=ns"},
        {"HINDSIGHT_TOKENS": f"{strong}=bad/ns"},
    ):
        with pytest.raises(ConfigurationError):
            load_token_map(None, environ=bad)


def test_from_settings_picks_the_transport_from_the_environment(
    engine: MemoryEngine, monkeypatch: pytest.MonkeyPatch
) -> None:
    with MemoryClient.from_settings(
        environ={"HINDSIGHT_MCP_URL": "http://127.0.0.1:9/mcp", "HINDSIGHT_MCP_TOKEN": "t"}
    ) as c:
        assert c.transport == "http" and c.target == "http://127.0.0.1:9/mcp"
    with MemoryClient.from_settings(environ={"HINDSIGHT_MCP_COMMAND": "hindsight serve --transport stdio"}) as c:
        assert c.transport == "stdio" and c.target.startswith("hindsight serve")
    import hindsight_integrations.core.engine as engine_module

    monkeypatch.setattr(engine_module, "MemoryEngine", lambda settings=None, **kwargs: engine)  # reuse the loaded model
    with MemoryClient.from_settings(environ={}) as c:
        assert c.transport == "in-process" and c.stats().namespace == "default"


def known_namespace(client: MemoryClient) -> str | None:
    """The client's namespace before any call; the client is closed (it never connected)."""
    with client:
        return client.namespace


def test_a_client_knows_its_namespace_before_the_first_call(
    tmp_path: Path, engine: MemoryEngine, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Known at construction wherever the client can know it; the spawned server then confirms it."""
    monkeypatch.delenv("HINDSIGHT_NAMESPACE", raising=False)
    assert known_namespace(MemoryClient.in_process(engine)) == "default"
    assert known_namespace(MemoryClient.stdio()) == "default"  # our server's own default
    assert known_namespace(MemoryClient.stdio(args=["--namespace", "dave"])) == "dave"
    assert known_namespace(MemoryClient.stdio(env={"HINDSIGHT_NAMESPACE": "erin"})) == "erin"
    monkeypatch.setenv("HINDSIGHT_NAMESPACE", "frank")
    assert known_namespace(MemoryClient.stdio()) == "frank"
    assert known_namespace(MemoryClient.stdio(args=["--namespace=gina"])) == "gina"
    # Only the server can say: another command, or an HTTP token.
    assert known_namespace(MemoryClient.stdio(["some-other-mcp-server"])) is None
    assert known_namespace(MemoryClient.http("http://127.0.0.1:9/mcp", token="t" * 8)) is None

    with MemoryClient.stdio(args=["--namespace", "dave"], env={"HINDSIGHT_STORE": str(tmp_path / "s")}) as client:
        assert client.namespace == "dave"
        assert client.stats().namespace == "dave"  # what the server really serves


def test_a_stdio_command_that_cannot_start_is_a_clear_error() -> None:
    with (
        MemoryClient.stdio(["/nonexistent/hindsight-server"], retries=0, connect_timeout=20) as c,
        pytest.raises(MemoryServerUnavailableError) as err,
    ):
        c.stats()
    assert err.value.transport == "stdio" and "/nonexistent/hindsight-server" in str(err.value)


def test_a_stdio_server_that_refuses_its_settings_is_quoted_in_the_error(tmp_path: Path) -> None:
    """The server prints why it will not start and exits; the client's error says it, not only "connection closed"."""
    env = {"HINDSIGHT_STORE": str(tmp_path / "store"), "HINDSIGHT_EMBEDDING_BACKEND": "tensorrt"}
    log = tmp_path / "server.log"
    with (
        log.open("w") as errlog,
        MemoryClient.stdio(env=env, errlog=errlog, retries=0, connect_timeout=60) as c,
        pytest.raises(MemoryServerUnavailableError) as err,
    ):
        c.stats()
    assert "the server exited saying: hindsight mcp: invalid configuration" in str(err.value)
    assert "HINDSIGHT_EMBEDDING_BACKEND" in str(err.value)
    assert "HINDSIGHT_EMBEDDING_BACKEND" in log.read_text(encoding="utf-8")  # still passed on to errlog


CRASHING_SERVER = """
import asyncio, atexit, logging
from hindsight_integrations.mcp.observability import configure_logging
configure_logging()
log = logging.getLogger("hindsight.mcp")
atexit.register(log.info, "server_stopped")  # logged after Python printed the traceback
log.info("server_start")
async def open_store():
    raise RuntimeError("the store's lock is held by process 4242")
async def main():
    async with asyncio.TaskGroup() as group:
        group.create_task(open_store())
asyncio.run(main())
"""


def test_a_stdio_server_that_crashed_is_quoted_by_its_exception_not_its_last_log_line(tmp_path: Path) -> None:
    # The error used to quote the last line on stderr: the shutdown's '{"level": "info", ... "server_stopped"}'.
    log, server = tmp_path / "server.log", tmp_path / "crashing_server.py"
    server.write_text(CRASHING_SERVER, encoding="utf-8")
    with (
        log.open("w") as errlog,
        MemoryClient.stdio([sys.executable, str(server)], errlog=errlog, retries=0, connect_timeout=60) as c,
        pytest.raises(MemoryServerUnavailableError) as err,
    ):
        c.stats()
    assert "the server exited saying: RuntimeError: the store's lock is held by process 4242" in str(err.value)
    assert "server_stopped" not in str(err.value) and "ExceptionGroup" not in str(err.value)
    assert "server_stopped" in log.read_text(encoding="utf-8")  # every line still passed on to errlog


def _logged(level: int, event: str, exc_info: bool = False) -> str:
    record = logging.LogRecord("hindsight.mcp", level, __file__, 1, event, None, sys.exc_info() if exc_info else None)
    return JsonFormatter().format(record)


def test_why_a_server_stopped_is_read_from_its_errors_not_its_last_line() -> None:
    try:
        raise KeyError("namespace")
    except KeyError:
        failed = _logged(logging.ERROR, "upkeep_failed", exc_info=True)
    said = why_it_stopped([_logged(logging.INFO, "server_start"), failed, _logged(logging.INFO, "server_stopped")])
    assert said.startswith("upkeep_failed: KeyError: <#")  # the event and its exception, as redacted in the log
    plain = ["INFO:uvicorn:started", "ERROR:root:cannot bind 127.0.0.1:8765", "INFO:uvicorn:shutting down"]
    assert why_it_stopped(plain) == "ERROR:root:cannot bind 127.0.0.1:8765"
    assert why_it_stopped(["usage: server [-h]", "server: error: unrecognized arguments: --bogus"]) == (
        "server: error: unrecognized arguments: --bogus"
    )
    chained = ["Traceback (most recent call last):", '  File "a.py", line 1', "OSError: disk full", "",
               "During handling of the above exception, another exception occurred:", "",
               "Traceback (most recent call last):", '  File "a.py", line 3', "    save()", "ValueError: not saved",
               "INFO shutting down"]  # fmt: skip
    assert why_it_stopped(chained) == "OSError: disk full | ValueError: not saved"
    assert why_it_stopped([f"ERROR step {n}" for n in range(5)]) == "ERROR step 2 | ERROR step 3 | ERROR step 4"
    assert why_it_stopped(["starting", "listening on stdin", ""]) == "listening on stdin"  # nothing says why
    assert why_it_stopped([]) == ""
    assert len(why_it_stopped(["ERROR " + "x" * 1000])) == 300


def test_a_bad_namespace_in_the_environment_is_refused_before_spawning(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HINDSIGHT_NAMESPACE", "bad name")
    with pytest.raises(InvalidInputError) as err:
        MemoryClient.stdio(["/nonexistent/hindsight-server"])  # never started: the check comes first
    assert err.value.field == "HINDSIGHT_NAMESPACE"


def _rpc(n: int, method: str, params: dict) -> str:
    return json.dumps({"jsonrpc": "2.0", "id": n, "method": method, "params": params}) + "\n"


@pytest.mark.server
def test_stdio_stdout_carries_only_protocol_and_a_killed_client_loses_nothing_acknowledged(tmp_path: Path) -> None:
    """Raw stdio: every stdout line is JSON-RPC; when the client vanishes mid-call the server exits
    cleanly, and a new server on the same store still has everything that was acknowledged."""
    store = tmp_path / "store"
    proc = subprocess.Popen(
        [*SERVER_CMD],
        env=server_env(store),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    assert proc.stdin and proc.stdout
    init = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "raw", "version": "0"}}
    proc.stdin.write(_rpc(1, "initialize", init))
    proc.stdin.write(json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}) + "\n")
    proc.stdin.write(
        _rpc(
            2,
            "tools/call",
            {
                "name": "store_memory",
                "arguments": {"content": "The user's passport expires in 2031", "request_id": "r-1"},
            },
        )
    )
    proc.stdin.flush()
    lines = [json.loads(proc.stdout.readline()) for _ in range(2)]  # json.loads fails on any stray non-protocol line
    acknowledged = lines[1]["result"]["structuredContent"]["ids"]
    assert lines[0]["id"] == 1 and acknowledged
    proc.stdin.write(
        _rpc(
            3,
            "tools/call",
            {"name": "store_memory", "arguments": {"content": "In flight when the client died", "request_id": "r-2"}},
        )
    )
    proc.stdin.flush()
    proc.stdin.close()  # the client is gone mid-call
    proc.kill() if proc.wait(timeout=30) is None else None
    assert proc.returncode == 0
    with MemoryClient.stdio(env={"HINDSIGHT_STORE": str(store)}) as client:
        ids = {r.id for r in client.list(limit=100)}
        assert set(acknowledged) <= ids
        retried = client.store("In flight when the client died", request_id="r-2")
        assert client.store("In flight when the client died", request_id="r-2").ids == retried.ids
