"""HTTP mode: bearer tokens → namespaces, 401s, /health, /metrics, statelessness, clients dying mid-call."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import textwrap
import uuid
from collections.abc import Iterator

import httpx
import pytest

from hindsight_integrations.core.errors import ConfigurationError
from hindsight_integrations.mcp import (
    MemoryAuthError,
    MemoryClient,
    MemoryNamespaceError,
    MemoryServerUnavailableError,
    MemoryToolNotFoundError,
)
from hindsight_integrations.mcp.body_guard import BodyGuard
from hindsight_integrations.mcp.errors import MemoryToolError, MemoryToolInputError

from .mcp_support import MCP_HEADERS, REPO, free_port, http_server
from .viewer_support import post_sign_in

pytestmark = pytest.mark.server
ALICE, BOB = "alice-token-0001-5d8f2a7c9e1b3f46", "bob-token-00002-a9c4e1f7b3d52861"


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with http_server(tmp_path_factory.mktemp("http"), tokens={ALICE: "alice", BOB: "bob"}) as url:
        yield url


@pytest.fixture(scope="module")
def alice(base: str) -> Iterator[MemoryClient]:
    with MemoryClient.http(f"{base}/mcp", token=ALICE) as client:
        yield client


@pytest.fixture(scope="module")
def bob(base: str) -> Iterator[MemoryClient]:
    with MemoryClient.http(f"{base}/mcp", token=BOB) as client:
        yield client


def rpc(method: str, params: dict | None = None) -> dict:
    return {"jsonrpc": "2.0", "id": 1, "method": method, "params": params or {}}


def test_health_needs_no_token(base: str) -> None:
    response = httpx.get(f"{base}/health")
    assert response.status_code == 200 and response.json()["status"] == "ok" and response.json()["auth"] is True


@pytest.mark.parametrize(
    "headers",
    [{}, {"Authorization": "Bearer not-a-real-token"}, {"Authorization": f"Basic {ALICE}"}],
    ids=["none", "wrong", "not-bearer"],
)
def test_requests_without_a_valid_token_get_401(base: str, headers: dict) -> None:
    response = httpx.post(f"{base}/mcp", json=rpc("tools/list"), headers={**MCP_HEADERS, **headers})
    assert response.status_code == 401 and "bearer token" in response.json()["message"]
    assert response.headers["www-authenticate"].startswith("Bearer")


def test_client_with_a_wrong_token_gets_a_clear_auth_error(base: str) -> None:
    with (
        MemoryClient.http(f"{base}/mcp", token="wrong-token-123", retries=2) as client,
        pytest.raises(MemoryAuthError) as err,
    ):
        client.recall("anything")
    assert "401" in str(err.value) and base in str(err.value)
    assert str(err.value).startswith("memory server refused the connection")  # it answered: not "unavailable"


def test_each_token_announces_its_namespace_and_a_client_for_another_user_is_refused(base: str) -> None:
    with MemoryClient.http(f"{base}/mcp", token=BOB) as bob:
        assert bob.namespace is None  # not known before the server says
        assert bob.connect().namespace == "bob"
    content = f"I prefer aisle seats (ref {uuid.uuid4().hex[:8]})"
    with (
        MemoryClient.http(f"{base}/mcp", token=BOB, namespace="alice", retries=2) as wrong,
        pytest.raises(MemoryNamespaceError) as err,
    ):
        wrong.store(content)
    assert "'bob'" in str(err.value) and "'alice'" in str(err.value)
    assert str(err.value).startswith("memory server refused the namespace")
    with MemoryClient.http(f"{base}/mcp", token=BOB, namespace="bob") as bob:
        assert not [r for r in bob.list(limit=1000) if r.content == content]  # refused before anything was sent


def test_a_token_never_reads_or_writes_another_namespace(alice: MemoryClient, bob: MemoryClient) -> None:
    secret = f"Alice's locker code is {uuid.uuid4().hex[:6]}"
    (alice_id,) = alice.store(secret, kind="fact").ids
    assert alice.stats().namespace == "alice" and bob.stats().namespace == "bob"
    assert all(secret != h.record.content for h in bob.recall("locker code", top_k=50).hits)
    assert all(r.id != alice_id for r in bob.list(limit=1000))
    assert alice_id not in bob.dump()
    with pytest.raises(MemoryToolNotFoundError):
        bob.forget(alice_id)
    with pytest.raises(MemoryToolNotFoundError):
        bob.update(alice_id, content="overwritten by bob")
    assert alice.recall("locker code", top_k=3).hits[0].record.content == secret


def test_maintain_memory_keeps_only_the_tokens_namespace(alice: MemoryClient, bob: MemoryClient) -> None:
    (alice_id,) = alice.store(f"Alice's old locker was number {uuid.uuid4().hex[:4]}", importance=0.1).ids
    seen = bob.maintain(dry_run=True)
    assert seen.namespace == "bob"
    assert all(alice_id not in ids for step in seen.steps for ids in step.ids.values())
    with pytest.raises(MemoryToolInputError) as err:
        bob.call_tool("maintain_memory", {"namespace": "alice"})  # a caller cannot name another namespace
    assert err.value.field == "namespace" and "unknown argument" in str(err.value)
    assert alice.maintain().namespace == "alice" and alice.stats().total >= 1


def test_stateless_http_serves_requests_without_a_session(base: str) -> None:
    """Any replica can answer any request: no initialize handshake or session id is needed."""
    response = httpx.post(
        f"{base}/mcp",
        json=rpc("tools/call", {"name": "memory_stats", "arguments": {}}),
        headers={**MCP_HEADERS, "Authorization": f"Bearer {BOB}"},
    )
    assert response.status_code == 200 and "mcp-session-id" not in response.headers
    assert response.json()["result"]["structuredContent"]["namespace"] == "bob"


def test_malformed_bodies_get_an_error_and_the_server_keeps_serving(base: str, alice: MemoryClient) -> None:
    auth = {**MCP_HEADERS, "Authorization": f"Bearer {ALICE}"}
    for body in (
        b"\xff\xfe not utf-8",
        b"{not json",
        b'{"jsonrpc": "2.0", "id": 1, "method": "tools/call", '
        b'"params": {"name": "store_memory", "arguments": {"content": "\\ud800"}}}',
    ):
        response = httpx.post(f"{base}/mcp", content=body, headers=auth)
        assert response.status_code in (200, 400)
        payload = response.json()
        assert "error" in payload or payload["result"]["isError"]
    assert alice.stats().namespace == "alice"


def test_metrics_count_tool_calls_by_outcome(base: str, alice: MemoryClient) -> None:
    alice.recall("anything at all")
    with pytest.raises(MemoryToolNotFoundError):
        alice.forget("missing-id")
    assert httpx.get(f"{base}/metrics").status_code == 401  # per-tenant usage is not public
    assert httpx.get(f"{base}/metrics", headers={"Authorization": "Bearer wrong-token"}).status_code == 401
    text = httpx.get(f"{base}/metrics", headers={"Authorization": f"Bearer {BOB}"}).text
    assert 'hindsight_mcp_tool_calls_total{outcome="ok",tool="retrieve_memory"}' in text
    assert 'hindsight_mcp_tool_calls_total{outcome="not_found",tool="forget_memory"}' in text
    assert "hindsight_recall_latency_seconds_bucket" in text


def test_metrics_labels_and_logs_never_carry_caller_text(base: str, alice: MemoryClient) -> None:
    """An unknown tool named by the caller is counted as ``unknown``; 1 MB names do not grow the page."""
    auth = {"Authorization": f"Bearer {ALICE}"}
    before = len(httpx.get(f"{base}/metrics", headers=auth).text)
    for n in range(5):
        with pytest.raises(MemoryToolError):
            alice.call_tool(f"leak-alice-secret-{n}-" + "x" * 200_000, {})
    text = httpx.get(f"{base}/metrics", headers=auth).text
    assert "leak-alice-secret" not in text
    assert 'tool="unknown"' in text
    assert len(text) < before + 5_000


def test_a_client_killed_mid_call_loses_nothing_acknowledged(base: str, alice: MemoryClient) -> None:
    """A writer process is SIGKILLed while storing; every id it saw acknowledged must be stored."""
    tag = uuid.uuid4().hex[:8]
    script = textwrap.dedent(f"""
        import sys
        from hindsight_integrations.mcp import MemoryClient
        client = MemoryClient.http({base + "/mcp"!r}, token={ALICE!r})
        for n in range(1000):
            text = "Batch {tag} fact number %d: the user owns plant %d" % (n, n)
            result = client.store(text, request_id="{tag}-%d" % n)
            print(result.ids[0], flush=True)
    """)
    proc = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True, cwd=REPO)
    acknowledged = [proc.stdout.readline().strip() for _ in range(5)]
    proc.kill()
    proc.wait()
    stored = {r.id for r in alice.list(limit=1000)}
    assert acknowledged and set(acknowledged) <= stored
    # A retry of whatever was in flight, with its request_id, never duplicates.
    before = alice.stats().total
    first = alice.store(f"Batch {tag} fact number 5: the user owns plant 5", request_id=f"{tag}-5")
    again = alice.store(f"Batch {tag} fact number 5: the user owns plant 5", request_id=f"{tag}-5")
    # (A near-duplicate is merged into an existing memory, so "replayed" may be false; the ids and count still hold.)
    assert again.ids == first.ids
    assert alice.stats().total <= before + 1
    assert httpx.get(f"{base}/health").status_code == 200


def test_unreachable_server_is_a_clear_error_naming_transport_and_target() -> None:
    url = f"http://127.0.0.1:{free_port()}/mcp"
    with (
        MemoryClient.http(url, retries=1, backoff=0.01, connect_timeout=10) as client,
        pytest.raises(MemoryServerUnavailableError) as err,
    ):
        client.stats()
    assert err.value.transport == "http" and err.value.target == url and url in str(err.value)


def test_unreadable_bodies_get_400_and_oversized_ones_413_at_once(base: str, alice: MemoryClient) -> None:
    auth = {**MCP_HEADERS, "Authorization": f"Bearer {ALICE}"}
    deep = b'{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": ' + b"[" * 100_000 + b"]" * 100_000 + b"}"
    for body, needle in ((deep, "nested"), (b'{"a": "\xff\xfe"}', "UTF-8")):
        response = httpx.post(f"{base}/mcp", content=body, headers=auth)
        assert response.status_code == 400 and needle in response.json()["error"]["message"]
    huge = httpx.post(f"{base}/mcp", content=b"x" * (5 * 1024 * 1024), headers=auth, timeout=30)
    assert huge.status_code == 413
    # The client refuses such a call itself instead of waiting for its timeout.
    batch = [{"content": f"fact {n}: " + "y" * 30_000} for n in range(200)]
    with pytest.raises(MemoryToolInputError, match="send fewer memories per call"):
        alice.store(batch)
    assert alice.stats().namespace == "alice"  # still serving


def test_a_number_longer_than_python_reads_is_a_400_not_a_500(base: str, alice: MemoryClient) -> None:
    # A bare JSON number of 5,000 digits made the SDK's json.loads raise: HTTP 500, a traceback logged.
    auth = {**MCP_HEADERS, "Authorization": f"Bearer {ALICE}"}
    call = '{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "retrieve_memory", "arguments": '
    body = call + '{"query": "tea", "top_k": ' + "9" * 5000 + "}}}"
    response = httpx.post(f"{base}/mcp", content=body, headers=auth)
    assert response.status_code == 400, response.text
    assert "digits" in response.json()["error"]["message"] and "as a string" in response.json()["error"]["message"]
    as_text = call + '{"query": "' + "9" * 5000 + '"}}}'  # the same digits inside a string are a question
    assert httpx.post(f"{base}/mcp", content=as_text, headers=auth).status_code == 200
    assert alice.stats().namespace == "alice"


@pytest.mark.timeout(3, func_only=True)  # ~10 ms here; the scan of before took ~8 s, the server's loop blocked
def test_the_scan_for_long_numbers_reads_a_body_of_long_digit_runs_once() -> None:
    """A 4 MB body of 4,300-digit runs (each one digit short of the limit) was rescanned from every digit."""
    guard = BodyGuard(None)  # type: ignore[arg-type]  # only its check of a body is called
    runs = ("1" * (sys.get_int_max_str_digits() or 4300) + ",") * 900
    assert guard._problem(("[" + runs + "1]").encode()) is None
    assert "digits" in (guard._problem(("[" + runs + "11" + runs + "]").encode()) or "")


def test_nan_or_an_infinity_in_a_request_is_refused_not_read_as_not_given(base: str, alice: MemoryClient) -> None:
    # They arrived at the tool as null: update_memory(importance=NaN) said "updated" and changed nothing.
    auth = {**MCP_HEADERS, "Authorization": f"Bearer {ALICE}"}
    memory_id = alice.store("The boiler is serviced every October.", apply_filter=False).stored[0].id
    assert alice.update(memory_id, importance=0.3).importance == 0.3
    for number in ("NaN", "Infinity", "-Infinity", "1e999"):
        call = {"name": "update_memory", "arguments": {"id": memory_id, "importance": "NUMBER"}}
        body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": call})
        response = httpx.post(f"{base}/mcp", content=body.replace('"NUMBER"', number), headers=auth)
        assert response.status_code == 400, response.text
        assert "finite number" in response.json()["error"]["message"]
    assert [r.importance for r in alice.list(limit=1000) if r.id == memory_id] == [0.3]
    assert alice.store("NaN bread and Infinity pool, 1e999 times over.", apply_filter=False).stored  # text stays text


def test_an_adapter_handed_another_users_client_is_refused_before_anything_is_sent(base: str) -> None:
    """A client whose token decides its namespace cannot tell it before its first call; the adapter claims it."""
    from hindsight_integrations.langchain import HindsightMemory
    from hindsight_integrations.mcp.resolve import resolve_client

    marker = uuid.uuid4().hex[:8]
    with MemoryClient.http(f"{base}/mcp", token=BOB, retries=2) as bobs:
        assert bobs.namespace is None
        memory = HindsightMemory(namespace="alice", session_id=f"chat-{marker}", client=bobs)
        with pytest.raises(MemoryNamespaceError, match=r"'bob'.*'alice'"):
            memory.save_context({"input": f"My locker code is {marker}."}, {"output": "Noted."})
        assert bobs.namespace == "alice"  # claimed for the adapter's user on its first use
        with pytest.raises(MemoryNamespaceError):
            memory.load_memory_variables({"input": "What is my locker code?"})
        with pytest.raises(ConfigurationError, match="serves namespace 'alice'"):
            resolve_client(bobs, namespace="carol")  # claimed once, for one user
    with MemoryClient.http(f"{base}/mcp", token=BOB) as bob:
        assert not [r for r in bob.list(limit=1000) if marker in r.content]


RATE = 2
"""Requests a minute per namespace of ``limited``: the allowance is 2, and one more comes back after 30 s."""


@pytest.fixture(scope="module")
def limited(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    env = {"HINDSIGHT_RATE_LIMIT": str(RATE), "HINDSIGHT_UPKEEP_INTERVAL_SECONDS": "0"}
    with http_server(tmp_path_factory.mktemp("limited"), tokens={ALICE: "alice", BOB: "bob"}, env=env) as url:
        yield url


def post_rpc(base: str, token: str, method: str, params: dict) -> dict:
    response = httpx.post(
        f"{base}/mcp", json=rpc(method, params), headers={**MCP_HEADERS, "Authorization": f"Bearer {token}"}
    )
    assert response.status_code == 200, response.text
    return response.json()


def assert_rate_limited(answer: httpx.Response) -> None:
    assert answer.status_code == 429 and int(answer.headers["Retry-After"]) >= 1, (answer.status_code, answer.text)
    assert answer.json()["error"] == "rate_limited" and "retry in" in answer.json()["message"]


def test_resource_reads_and_debug_routes_count_against_the_namespaces_rate_limit(limited: str) -> None:
    """A tenant past its limit must not go on reading every record through ``hindsight://stats`` or ``/debug``."""
    for _ in range(RATE):
        assert "result" in post_rpc(limited, ALICE, "resources/read", {"uri": "hindsight://stats"})
    stats = post_rpc(limited, ALICE, "tools/call", {"name": "memory_stats", "arguments": {}})["result"]
    assert stats["isError"] and stats["structuredContent"]["error"]["type"] == "rate_limited"
    refused = post_rpc(limited, ALICE, "resources/read", {"uri": "hindsight://stats"})["error"]
    assert refused["data"]["type"] == "rate_limited" and refused["data"]["retry_after"] > 0, refused
    assert "rate limit for namespace 'alice'" in refused["message"]
    alice = {"Authorization": f"Bearer {ALICE}"}
    assert_rate_limited(httpx.get(f"{limited}/debug/memories", headers=alice))
    assert_rate_limited(httpx.get(f"{limited}/debug/dump", headers=alice))

    bob = {"Authorization": f"Bearer {BOB}"}  # another namespace has its own allowance, which /debug spends too
    assert httpx.get(f"{limited}/debug/memories", headers=bob).status_code == 200
    assert httpx.get(f"{limited}/debug/dump", headers=bob).status_code == 200
    assert_rate_limited(httpx.get(f"{limited}/debug/memories", headers=bob))
    assert "error" in post_rpc(limited, BOB, "resources/read", {"uri": "hindsight://stats"})
    metrics = httpx.get(f"{limited}/metrics", headers=bob).text
    assert float(re.search(r"^hindsight_mcp_rate_limited_total (\S+)$", metrics, re.M).group(1)) >= 6  # type: ignore[union-attr]


def test_the_viewer_has_an_allowance_of_its_own_and_a_429_page_past_it(limited: str) -> None:
    """The person can look while their agent is held back; a script driving the viewer is held back too."""
    for _ in range(RATE + 1):
        spent = post_rpc(limited, ALICE, "tools/call", {"name": "memory_stats", "arguments": {}})["result"]
    assert spent["structuredContent"]["error"]["type"] == "rate_limited"  # the agent is held back
    with httpx.Client(base_url=limited) as browser:
        assert post_sign_in(browser, ALICE).status_code == 303  # signing in is not counted
        pages = [browser.get(path) for path in ("/ui", "/ui/sessions", "/ui/review")]
    assert [p.status_code for p in pages[:RATE]] == [200] * RATE
    refused = pages[RATE]
    assert refused.status_code == 429 and int(refused.headers["Retry-After"]) >= 1
    assert "Too many requests" in refused.text and 'id="namespace">alice<' in refused.text
