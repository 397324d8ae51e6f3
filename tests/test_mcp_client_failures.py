"""``MemoryClient`` when the server goes away under it, or the client is closed, while calls are in flight.

A call must end with the reason (the server cannot be reached, the client was closed), not wait
for its timeout or for ever, and a write that never left this process is sent again, even one
that is not idempotent.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import os
import signal
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from hindsight_integrations import MemoryEngine
from hindsight_integrations.mcp import MemoryClient, MemoryServerUnavailableError, session
from hindsight_integrations.mcp.errors import MemoryTimeoutError
from hindsight_integrations.processes import free_port, running

from .mcp_support import REPO, SERVER_CMD, http_server, server_env

TOKEN = "failures-token-01-7c2e9a4f5b8d3e61"


@pytest.fixture
def held(engine: MemoryEngine, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[threading.Event, threading.Event]]:
    """``engine.store_memories`` held until released: (started, release). Released at the end in any case."""
    started, release = threading.Event(), threading.Event()
    store = engine.store_memories

    def held_store(*args: Any, **kwargs: Any) -> Any:
        started.set()
        release.wait(60)
        return store(*args, **kwargs)

    monkeypatch.setattr(engine, "store_memories", held_store)
    yield started, release
    release.set()


def test_closing_the_client_ends_a_blocking_call_in_flight(
    engine: MemoryEngine, held: tuple[threading.Event, threading.Event]
) -> None:
    started, release = held
    client = MemoryClient.in_process(engine, namespace="u1", timeout=5, connect_timeout=5, retries=0)
    outcome: list[BaseException] = []

    def store() -> None:
        try:
            client.store("The spare key is under the blue pot.")
        except BaseException as exc:  # the outcome is what the test reads
            outcome.append(exc)

    caller = threading.Thread(target=store)
    caller.start()
    assert started.wait(30)
    closer = threading.Thread(target=client.close)
    closer.start()
    caller.join(20)  # the old client left it waiting until its deadline (tens of seconds)
    finished = not caller.is_alive()
    release.set()
    closer.join(60)
    caller.join(60)
    assert finished, "the call was still waiting after the client was closed"
    assert isinstance(outcome[0], MemoryServerUnavailableError) and not isinstance(outcome[0], MemoryTimeoutError)
    assert "closed during store_memory" in str(outcome[0])


async def test_closing_the_client_ends_an_async_call_in_flight(
    engine: MemoryEngine, held: tuple[threading.Event, threading.Event]
) -> None:
    started, release = held
    client = MemoryClient.in_process(engine, namespace="u1", retries=0)
    call = asyncio.create_task(client.astore("The spare key is under the blue pot."))
    assert await asyncio.to_thread(started.wait, 30)
    closing = asyncio.create_task(client.aclose())
    done, _ = await asyncio.wait([call], timeout=20)  # the old client never ended it
    release.set()
    await closing
    assert done, "the call was still waiting after the client was closed"
    with pytest.raises(MemoryServerUnavailableError, match="closed during store_memory"):
        call.result()


@pytest.mark.server
def test_a_call_to_an_http_server_gone_since_connecting_fails_at_once(tmp_path: Path) -> None:
    with http_server(tmp_path / "store", tokens={TOKEN: "alice"}) as base:
        client = MemoryClient.http(f"{base}/mcp", TOKEN, timeout=20, retries=0)
        client.store("I am allergic to peanuts.")
    with client, pytest.raises(MemoryServerUnavailableError) as err:
        # Not retried (retries=0): the old client waited out its timeout and said "did not answer".
        client.record_turn("I moved to Porto last month.", session_id="s1")
    assert not isinstance(err.value, MemoryTimeoutError) and "cannot connect" in str(err.value)


@pytest.mark.server
def test_a_turn_sent_while_the_http_server_restarts_is_retried_until_it_is_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A refused connection proves nothing was sent, so even a write that is not idempotent is sent again."""
    port = free_port()
    command = [*SERVER_CMD, "--transport", "http", "--port", str(port)]
    env = server_env(tmp_path, HINDSIGHT_TOKENS=f"{TOKEN}=alice")
    health = f"http://127.0.0.1:{port}/health"
    refused = threading.Event()
    judge = session.retryable

    def noting_a_refusal(exc: BaseException, *, idempotent: bool) -> bool:
        refused.set()
        return judge(exc, idempotent=idempotent)

    monkeypatch.setattr(session, "retryable", noting_a_refusal)
    client = MemoryClient.http(f"http://127.0.0.1:{port}/mcp", TOKEN, retries=100, backoff=0.2)
    with running(command, health_url=health, env=env, cwd=REPO):
        client.store("I am allergic to peanuts.")
    outcome: list[Any] = []
    turn = functools.partial(client.record_turn, "I moved to Porto last month.", session_id="s1")
    caller = threading.Thread(target=lambda: outcome.append(_outcome(turn)))
    caller.start()
    assert refused.wait(60), "the turn was never sent"
    with client, running(command, health_url=health, env=env, cwd=REPO):  # up once the first attempt was refused
        caller.join(600)
        # The old client gave up at the first refused connection: "cannot connect".
        assert not isinstance(outcome[0], BaseException), outcome[0]
        assert [t.id for t in client.working_memory("s1")] == [outcome[0].turn.id]


def _outcome(call: Callable[[], Any]) -> Any:
    """What ``call`` returned, or the exception it raised."""
    try:
        return call()
    except Exception as exc:  # the outcome is what the test reads
        return exc


def _children(name: str) -> list[int]:
    """This process's child processes whose command line holds ``name``."""
    pids = []
    for task in Path(f"/proc/{os.getpid()}/task").iterdir():
        pids += [int(p) for p in (task / "children").read_text().split()]
    return [p for p in pids if name in Path(f"/proc/{p}/cmdline").read_text(errors="replace")]


def _session_closed(client: MemoryClient) -> bool:
    """Whether the client's session has closed its end (it read the end of a dead server's output)."""
    session = client._connection._session
    return session is None or session._write_stream._closed


def _wait_until(condition: Callable[[], bool], what: str) -> None:
    for _ in range(1200):
        if condition():
            return
        time.sleep(0.05)
    raise AssertionError(f"gave up waiting for {what}")


@pytest.mark.server
@pytest.mark.skipif(not Path("/proc/self/task").exists(), reason="finds the spawned server through /proc")
def test_a_turn_sent_after_the_stdio_server_died_is_recorded_by_a_new_one(tmp_path: Path) -> None:
    env = server_env(tmp_path / "store")
    with MemoryClient.stdio(env=env, namespace="u1", timeout=60, backoff=0) as client:
        client.store("I am allergic to peanuts.")
        (server,) = _children("hindsight_integrations.mcp")
        os.kill(server, signal.SIGKILL)
        _wait_until(lambda: _session_closed(client), f"the client to notice that server {server} died")
        # The turn never leaves this process (the dead server's session is closed), so it is sent to a new server.
        turn = client.record_turn("I moved to Porto last month.", session_id="s1")
        assert [t.id for t in client.working_memory("s1")] == [turn.turn.id]


def test_a_timeout_names_the_seconds(engine: MemoryEngine, held: tuple[threading.Event, threading.Event]) -> None:
    with MemoryClient.in_process(engine, namespace="u1", timeout=0.25, retries=0) as client:
        with pytest.raises(MemoryTimeoutError, match=r"store_memory did not answer within 0\.25 s"):
            client.store("The spare key is under the blue pot.")  # the old message said "within 0 s"
        held[1].set()


def _stateful_server(store: Path, port: int, **env: str) -> contextlib.AbstractContextManager[Any]:
    command = [*SERVER_CMD, "--transport", "http", "--port", str(port), "--stateful"]
    tokens = {"HINDSIGHT_TOKENS": f"{TOKEN}=alice"}
    return running(
        command, health_url=f"http://127.0.0.1:{port}/health", env=server_env(store, **tokens, **env), cwd=REPO
    )


@pytest.mark.server
def test_a_session_the_server_lost_is_opened_again_and_the_call_sent_once(tmp_path: Path) -> None:
    """A restarted ``--stateful`` server answers 404 to the old session; each later call failed "Session terminated"."""
    port = free_port()
    client = MemoryClient.http(f"http://127.0.0.1:{port}/mcp", TOKEN, retries=0)
    with _stateful_server(tmp_path, port):
        client.store("I am allergic to peanuts.")
    with client, _stateful_server(tmp_path, port):
        turn = client.record_turn("I moved to Porto last month.", session_id="s1")  # not idempotent, never run: sent
        assert [t.id for t in client.working_memory("s1")] == [turn.turn.id]  # once
        assert "peanuts" in client.recall("what am I allergic to").context


@pytest.mark.server
def test_a_closed_client_frees_its_session_on_the_server(tmp_path: Path) -> None:
    port = free_port()
    with _stateful_server(tmp_path, port, HINDSIGHT_MAX_SESSIONS_PER_NAMESPACE="1"):
        for _ in range(2):  # the second would be refused (429) if the first client's session were still held
            with MemoryClient.http(f"http://127.0.0.1:{port}/mcp", TOKEN, retries=0) as client:
                assert client.stats().namespace == "alice"
