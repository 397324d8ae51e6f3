"""What one tenant may hold of a shared HTTP server at once, attacked over real HTTP on 127.0.0.1.

A ``--stateful`` server kept every tenant's MCP sessions in one table of the SDK's (10,000
sessions): one tenant opening sessions in a loop filled it in ~95 s, grew the server to ~1 GB,
and every other tenant's new session was refused ("Too many open sessions", 503) for the 30
minutes an idle session lives. And a session answered whoever held its id: another tenant
could use it, or end it with ``DELETE``. And a tenant could start uploads and never finish
them: each held its connection for good, and 1,100 of them left a server allowed 1,024 open
files unable to accept anyone's request; half a request head did the same without any token.
"""

from __future__ import annotations

import os
import shutil
import socket
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import mcp
import pytest

from hindsight_integrations import MemoryEngine
from hindsight_integrations.core.embedding.local import LocalEmbedder
from hindsight_integrations.mcp import MemoryClient, MemoryServerUnavailableError
from hindsight_integrations.processes import LocalServer, free_port, running

from .mcp_support import INITIALIZE, MCP_HEADERS, REPO, SERVER_CMD, http_server_process, server_env
from .viewer_support import post_sign_in

MALLORY = "mallory-token-3f9c2a7e5b1d4c8a9e0f6b2d"  # the attacking tenant
VICTIM = "victim-token-8d1e4b7a2c9f5e3d6a0b4c7e"  # everyone else on the server
SESSIONS_PER_NAMESPACE = 3


def stateful_server(store: Path, *, more_tokens: str = "", **env: str) -> Iterator[LocalServer]:
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    tokens = f"{MALLORY}=mallory,{VICTIM}=victim{more_tokens}"
    command = [*SERVER_CMD, "--transport", "http", "--port", str(port), "--stateful"]
    with running(
        command, health_url=f"{base}/health", env=server_env(store, HINDSIGHT_TOKENS=tokens, **env), cwd=REPO
    ) as process:
        yield LocalServer(base, process)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalServer]:
    store = tmp_path_factory.mktemp("sessions")
    yield from stateful_server(store, HINDSIGHT_MAX_SESSIONS_PER_NAMESPACE=str(SESSIONS_PER_NAMESPACE))


def open_session(base: str, token: str) -> httpx.Response:
    return httpx.post(f"{base}/mcp", json=INITIALIZE, headers={**MCP_HEADERS, "Authorization": f"Bearer {token}"})


def in_session(base: str, token: str, session_id: str, method: str = "POST") -> httpx.Response:
    headers = {**MCP_HEADERS, "Authorization": f"Bearer {token}", "mcp-session-id": session_id}
    if method == "DELETE":
        return httpx.delete(f"{base}/mcp", headers=headers)
    listing = {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}
    return httpx.post(f"{base}/mcp", json=listing, headers={**headers, "mcp-protocol-version": "2025-06-18"})


def test_one_tenant_cannot_take_every_session_and_the_others_still_open_theirs(server: LocalServer) -> None:
    opened = [open_session(server.url, MALLORY) for _ in range(SESSIONS_PER_NAMESPACE)]
    assert [answer.status_code for answer in opened] == [200] * SESSIONS_PER_NAMESPACE
    refused = open_session(server.url, MALLORY)
    assert refused.status_code == 429, refused.text
    assert refused.headers["retry-after"] == "1"
    assert refused.json()["error"] == "too_many_sessions"
    assert "HINDSIGHT_MAX_SESSIONS_PER_NAMESPACE" in refused.json()["message"]

    with MemoryClient.http(f"{server.url}/mcp", token=VICTIM, retries=0) as victim:  # the others are served
        victim.store("The spare key is under the blue flowerpot.", apply_filter=False)
        assert "flowerpot" in victim.recall("where is the spare key").context

    closed = in_session(server.url, MALLORY, opened[0].headers["mcp-session-id"], method="DELETE")
    assert closed.status_code == 200
    assert open_session(server.url, MALLORY).status_code == 200  # a closed session frees its place
    assert server.process.poll() is None


def test_a_session_answers_only_the_namespace_that_opened_it(server: LocalServer) -> None:
    opened = open_session(server.url, VICTIM)
    session_id = opened.headers["mcp-session-id"]
    assert in_session(server.url, VICTIM, session_id).status_code == 200

    used = in_session(server.url, MALLORY, session_id)
    assert used.status_code == 404 and "Session not found" in used.text  # as if it did not exist
    assert in_session(server.url, MALLORY, session_id, method="DELETE").status_code == 404
    assert in_session(server.url, VICTIM, session_id).status_code == 200  # still the victim's, still open


RATE_LIMIT = 3  # requests a minute: a bucket of 3 that refills one every 20 s


def test_opening_sessions_counts_against_the_namespaces_rate_limit(tmp_path: Path) -> None:
    """Opening, deleting and opening again was free: a tenant could churn sessions without any limit."""
    for session in stateful_server(tmp_path, HINDSIGHT_RATE_LIMIT=str(RATE_LIMIT)):
        answers = []
        for _ in range(RATE_LIMIT + 1):
            opened = open_session(session.url, MALLORY)
            answers.append(opened)
            if opened.status_code == 200:  # closed at once: the per-namespace session bound never binds
                assert in_session(session.url, MALLORY, opened.headers["mcp-session-id"], "DELETE").status_code == 200
        assert [answer.status_code for answer in answers] == [200] * RATE_LIMIT + [429], answers[-1].text
        refused = answers[-1]
        assert refused.json()["error"] == "rate_limited" and int(refused.headers["retry-after"]) >= 1
        assert "mcp-session-id" not in refused.headers

        assert open_session(session.url, VICTIM).status_code == 200  # another namespace's allowance is its own
        assert session.process.poll() is None


ACCOMPLICE = "accomplice-token-1a2b3c4d5e6f7a8b9c0d1e2f"  # a second attacking tenant


def test_tenants_together_cannot_fill_the_servers_sessions_and_each_keeps_its_share(tmp_path: Path) -> None:
    """The SDK's one table (10,000) was full once 101 tenants held 100 sessions each: everyone else got 503.

    Scaled down: 7 places in all, 3 namespaces at most 3 each, so each is guaranteed 2 (7 // 3).
    """
    limits = {"HINDSIGHT_MAX_SESSIONS": "7", "HINDSIGHT_MAX_SESSIONS_PER_NAMESPACE": "3"}
    for session in stateful_server(tmp_path, more_tokens=f",{ACCOMPLICE}=accomplice", **limits):
        mallory = [open_session(session.url, MALLORY) for _ in range(4)]
        assert [answer.status_code for answer in mallory] == [200, 200, 200, 429]  # the one spare place, then its bound
        accomplice = [open_session(session.url, ACCOMPLICE) for _ in range(3)]
        assert [answer.status_code for answer in accomplice] == [200, 200, 503]  # the rest is the victim's share
        full = accomplice[-1]
        assert full.json()["error"] == "server_sessions_full" and full.headers["retry-after"] == "30"
        assert "HINDSIGHT_MAX_SESSIONS" in full.json()["message"] and "DELETE /mcp" in full.json()["message"]

        victim = [open_session(session.url, VICTIM) for _ in range(3)]
        assert [answer.status_code for answer in victim] == [200, 200, 503]  # its share, whatever the others did
        spare = mallory[0].headers["mcp-session-id"]
        assert in_session(session.url, MALLORY, spare, "DELETE").status_code == 200
        assert open_session(session.url, VICTIM).status_code == 200  # a place freed is anyone's again
        assert session.process.poll() is None


# -- uploads that never finish ---------------------------------------------------------------------

IN_FLIGHT = 4


@pytest.fixture(scope="module")
def stateless(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalServer]:
    store = tmp_path_factory.mktemp("stalled")
    limits = {"HINDSIGHT_MAX_REQUESTS_IN_FLIGHT_PER_NAMESPACE": str(IN_FLIGHT), "HINDSIGHT_BODY_TIMEOUT_SECONDS": "10"}
    with http_server_process(store, tokens={MALLORY: "mallory", VICTIM: "victim"}, env=limits) as running_server:
        yield running_server


def stalled_upload(base: str, token: str) -> socket.socket:
    """A POST that declares a body and sends one byte of it; the rest never comes."""
    port = int(base.rsplit(":", 1)[1])
    connection = socket.create_connection(("127.0.0.1", port), timeout=60)
    head = (
        f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nAuthorization: Bearer {token}\r\n"
        "Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n"
        "Content-Length: 100000\r\n\r\n{"
    )
    connection.sendall(head.encode())
    return connection


def answer_then_close(connection: socket.socket) -> bytes:
    """Everything the server sends until it closes the connection."""
    received = b""
    while chunk := connection.recv(65536):
        received += chunk
    connection.close()
    return received


def one_response(connection: socket.socket) -> bytes:
    """One whole response (its head, then as many body bytes as its Content-Length says), the connection kept open."""
    received = b""
    while b"\r\n\r\n" not in received:
        received += connection.recv(65536)
    head, _, body = received.partition(b"\r\n\r\n")
    length = next(
        int(line.split(b":", 1)[1]) for line in head.split(b"\r\n") if line.lower().startswith(b"content-length:")
    )
    while len(body) < length:
        body += connection.recv(65536)
    return received


def test_uploads_that_never_finish_are_bounded_per_namespace_and_ended(stateless: LocalServer) -> None:
    stalled = [stalled_upload(stateless.url, MALLORY) for _ in range(IN_FLIGHT)]
    listing = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
    for _ in range(200):  # until the server has read the stalled requests' headers (they were only sent)
        more = httpx.post(
            f"{stateless.url}/mcp", json=listing, headers={**MCP_HEADERS, "Authorization": f"Bearer {MALLORY}"}
        )
        if more.status_code != 200:
            break
        time.sleep(0.02)
    assert more.status_code == 429, more.text[:300]
    assert more.json()["error"] == "too_many_requests_in_flight" and more.headers["retry-after"] == "1"
    assert "HINDSIGHT_MAX_REQUESTS_IN_FLIGHT_PER_NAMESPACE" in more.json()["message"]

    with MemoryClient.http(f"{stateless.url}/mcp", token=VICTIM, retries=0) as victim:  # the others are served
        assert victim.stats() is not None

    for connection in stalled:  # each is answered and closed, not held for as long as the sender likes
        answer = answer_then_close(connection)
        assert answer.startswith(b"HTTP/1.1 408"), answer[:200]
        assert b"HINDSIGHT_BODY_TIMEOUT_SECONDS" in answer
    with MemoryClient.http(f"{stateless.url}/mcp", token=MALLORY, retries=0) as mallory:
        assert mallory.stats() is not None  # their places are free again
    assert stateless.process.poll() is None


def test_a_request_head_that_never_finishes_is_closed_without_any_token(stateless: LocalServer) -> None:
    port = int(stateless.url.rsplit(":", 1)[1])
    fresh = socket.create_connection(("127.0.0.1", port), timeout=60)
    fresh.sendall(f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nX-Slow: ".encode())
    kept_alive = socket.create_connection(("127.0.0.1", port), timeout=60)
    kept_alive.sendall(f"GET /health HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n\r\n".encode())
    assert one_response(kept_alive).startswith(b"HTTP/1.1 200")  # all of it: the next read must see only the close
    kept_alive.sendall(f"GET /health HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n".encode())  # the next head stalls

    assert answer_then_close(fresh) == b""  # closed, where before the server waited for as long as we liked
    assert answer_then_close(kept_alive) == b""
    assert httpx.get(f"{stateless.url}/health").status_code == 200


def test_a_client_refused_its_session_says_why_and_what_to_do(tmp_path: Path) -> None:
    """The client said only "HTTP 429 from <url>", and "Session terminated" for a URL that serves no MCP."""
    for session in stateful_server(tmp_path, HINDSIGHT_MAX_SESSIONS_PER_NAMESPACE="1"):
        assert open_session(session.url, MALLORY).status_code == 200  # the namespace's one place
        refused = MemoryClient.http(f"{session.url}/mcp", token=MALLORY, retries=0)
        with refused, pytest.raises(MemoryServerUnavailableError, match="HTTP 429") as err:
            refused.stats()
        assert "HINDSIGHT_MAX_SESSIONS_PER_NAMESPACE" in str(err.value) and "MemoryClient.close()" in str(err.value)

        misdirected = MemoryClient.http(f"{session.url}/", token=VICTIM, retries=0)
        with misdirected, pytest.raises(MemoryServerUnavailableError, match="is the URL right") as err:
            misdirected.stats()
        assert "/mcp" in str(err.value) and "Session terminated" not in str(err.value)


def test_a_request_head_past_64_kb_is_refused_without_any_token(stateless: LocalServer) -> None:
    """uvicorn (httptools) read any head: 150 MB of small headers grew the server by 1.1 GB in 8 s, no token needed."""
    port = int(stateless.url.rsplit(":", 1)[1])
    flood = socket.create_connection(("127.0.0.1", port), timeout=60)
    flood.sendall(f"GET /health HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n".encode() + b"X-Pad: a\r\n" * 7000)
    answer = answer_then_close(flood)  # 70 KB of headers sent, the head not ended: refused before its end
    assert answer.startswith(b"HTTP/1.1 431"), answer[:200]
    assert b"request_head_too_large" in answer

    cookies = "; ".join(f"c{i}={'v' * 200}" for i in range(40))  # 8 KB of cookies, as a browser may send
    assert httpx.get(f"{stateless.url}/health", headers={"Cookie": cookies}).status_code == 200
    kept_alive = socket.create_connection(("127.0.0.1", port), timeout=60)
    for _ in range(20):  # many ordinary requests on one connection do not add up to one large head
        kept_alive.sendall(f"GET /health HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nX-Pad: {'a' * 8000}\r\n\r\n".encode())
        assert one_response(kept_alive).startswith(b"HTTP/1.1 200")
    kept_alive.close()
    assert stateless.process.poll() is None


def test_answers_a_tenant_never_reads_count_as_requests_in_flight(tmp_path: Path, embedder: LocalEmbedder) -> None:
    """A tenant held 30 unread ``/debug/dump`` answers (~10 MB each) past a bound of 4: GETs were not counted, and
    any request ended once uvicorn had buffered its whole answer, read or not."""
    store = tmp_path / "store"
    with MemoryEngine(store=store, embedder=embedder, llm=False, max_content_bytes=2_000_000) as filling:
        huge = " ".join(f"w{i}" for i in range(200_000)) + "."  # 1.5 MB: four fill more than a socket buffers
        filling.store_memories([{"content": huge}] * 4, namespace="mallory", apply_filter=False, dedup=False)
    limits = {"HINDSIGHT_MAX_REQUESTS_IN_FLIGHT_PER_NAMESPACE": str(IN_FLIGHT)}
    with http_server_process(store, tokens={MALLORY: "mallory", VICTIM: "victim"}, env=limits) as running_server:
        port = int(running_server.url.rsplit(":", 1)[1])
        unread = []
        for _ in range(IN_FLIGHT):
            reader = socket.socket()
            reader.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
            reader.connect(("127.0.0.1", port))
            head = f"GET /debug/dump HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nAuthorization: Bearer {MALLORY}\r\n\r\n"
            reader.sendall(head.encode())
            assert reader.recv(12) == b"HTTP/1.1 200"  # being answered, and never read further
            unread.append(reader)
        more = httpx.get(f"{running_server.url}/debug/dump", headers={"Authorization": f"Bearer {MALLORY}"})
        assert more.status_code == 429 and more.json()["error"] == "too_many_requests_in_flight", more.text[:200]
        with MemoryClient.http(f"{running_server.url}/mcp", token=VICTIM, retries=0) as victim:  # others are served
            assert victim.stats() is not None
        for reader in unread:
            reader.close()
        assert running_server.process.poll() is None


def test_viewer_exports_a_tenant_never_reads_count_against_its_requests_in_flight(
    tmp_path: Path, embedder: LocalEmbedder
) -> None:
    """The viewer's pages carry no token, so ``/ui/export.json`` went past the bound: its namespace is its cookie's."""
    store = tmp_path / "store"
    with MemoryEngine(store=store, embedder=embedder, llm=False, max_content_bytes=2_000_000) as filling:
        huge = " ".join(f"w{i}" for i in range(200_000)) + "."  # 1.5 MB: four fill more than a socket buffers
        filling.store_memories([{"content": huge}] * 4, namespace="mallory", apply_filter=False, dedup=False)
    limits = {"HINDSIGHT_MAX_REQUESTS_IN_FLIGHT_PER_NAMESPACE": str(IN_FLIGHT)}
    with (
        http_server_process(store, tokens={MALLORY: "mallory", VICTIM: "victim"}, env=limits) as running_server,
        httpx.Client(base_url=running_server.url) as browser,
    ):
        assert post_sign_in(browser, MALLORY).status_code == 303
        cookie = "; ".join(f"{name}={value}" for name, value in browser.cookies.items())
        port = int(running_server.url.rsplit(":", 1)[1])
        unread = []
        for _ in range(IN_FLIGHT):
            reader = socket.socket()
            reader.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
            reader.connect(("127.0.0.1", port))
            reader.sendall(
                f"GET /ui/export.json HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nCookie: {cookie}\r\n\r\n".encode()
            )
            assert reader.recv(12) == b"HTTP/1.1 200"  # being answered, and never read further
            unread.append(reader)
        more = browser.get("/ui/export.json")
        assert more.status_code == 429 and more.json()["error"] == "too_many_requests_in_flight", more.text[:200]
        with MemoryClient.http(f"{running_server.url}/mcp", token=VICTIM, retries=0) as victim:  # others are served
            assert victim.stats() is not None
        for reader in unread:
            reader.close()
        assert running_server.process.poll() is None


def sdk_without_the_session_table(into: Path) -> Path:
    """A copy of the MCP SDK that keeps its sessions under another name, as another version might."""
    shutil.copytree(Path(mcp.__file__).parent, into / "mcp", ignore=shutil.ignore_patterns("__pycache__"))
    manager = into / "mcp" / "server" / "streamable_http_manager.py"
    manager.write_text(manager.read_text().replace("_server_instances", "_sessions_by_id"))
    return into


def test_without_the_sdks_session_table_sessions_are_bounded_and_freed(tmp_path: Path) -> None:
    """Without it the server still bounds sessions; idle ones the SDK ended counted for ever, locking the tenant out."""
    sdk = sdk_without_the_session_table(tmp_path / "sdk")
    limits = {"HINDSIGHT_MAX_SESSIONS_PER_NAMESPACE": "2", "HINDSIGHT_SESSION_IDLE_SECONDS": "10"}
    for session in stateful_server(tmp_path / "store", PYTHONPATH=f"{sdk}{os.pathsep}{REPO}", **limits):
        opened = [open_session(session.url, MALLORY) for _ in range(3)]
        assert [answer.status_code for answer in opened] == [200, 200, 429]  # bounded all the same
        assert in_session(session.url, MALLORY, opened[0].headers["mcp-session-id"], "DELETE").status_code == 200
        assert open_session(session.url, MALLORY).status_code == 200  # a deleted session frees its place

        time.sleep(11)  # every session has been idle past the SDK's timeout: it has ended them
        assert in_session(session.url, MALLORY, opened[1].headers["mcp-session-id"]).status_code == 404
        assert [open_session(session.url, MALLORY).status_code for _ in range(2)] == [200, 200]
        assert open_session(session.url, MALLORY).status_code == 429
        assert session.process.poll() is None
