"""Attacks on the viewer and on authentication, over real HTTP (security issue #24, findings 5–8).

Each test plays the attacker with httpx against a real ``--transport http`` server (or the real
``hindsight ui`` command) and then checks, through the bearer API, that nothing was changed, that
the victim's session still works, that another tenant is still served and that the server is
up. What only a browser can show (its own ``Origin`` and cookies) is in
``test_security_viewer_browser.py``.

- 5, cross-site request forgery: a post from another origin, even another port of the same host,
  or without the form's CSRF token, is refused (403) and forgets nothing.
- 6, forced sign-in and sign-out: neither works from elsewhere; a real sign-out revokes the
  session on every replica sharing the store (two processes on one ``chroma run``).
- 7, guessing: wrong bearer tokens and wrong sign-ins from one address are throttled (429 +
  ``Retry-After``), logged without the token, and nobody else is slowed; weak tokens are refused
  at start-up.
- 8, DNS rebinding: without tokens, every route refuses a foreign ``Host`` (421).

Client source addresses other than 127.0.0.1 (127.0.0.2–4, all loopback on Linux) stand for
other clients, so one attacker's throttle is seen not to touch anyone else.
"""

from __future__ import annotations

import json
import subprocess
import sys
import uuid
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from hindsight_integrations.core.config import Settings
from hindsight_integrations.core.errors import ConfigurationError
from hindsight_integrations.core.storage.revocations import RevokedSessions
from hindsight_integrations.core.storage.store import open_client
from hindsight_integrations.mcp import MemoryClient
from hindsight_integrations.mcp.auth import validate_token_map
from hindsight_integrations.mcp.throttle import AuthFailures
from hindsight_integrations.mcp.viewer import COOKIE, PRE_COOKIE
from hindsight_integrations.processes import chroma_server, free_port, postgres_binaries, postgres_server

from .mcp_support import INITIALIZE, MCP_HEADERS, REPO, SERVER_CMD, http_server, server_env
from .viewer_support import ALICE, BOB, csrf_of, local_viewer, post_sign_in, remember, status_of

pytestmark = pytest.mark.server

LIMIT = 5  # the test server's HINDSIGHT_AUTH_FAILURE_LIMIT
WINDOW = 600  # its HINDSIGHT_AUTH_FAILURE_WINDOW_SECONDS: long enough that no failure expires mid-test
CLI = [sys.executable, "-m", "hindsight_integrations.cli"]
FOREIGN = "attacker.example"


@dataclass(frozen=True)
class Server:
    base: str
    log: Path

    def security_events(self) -> list[dict[str, Any]]:
        """The server's ``security`` log lines so far."""
        lines = [json.loads(line) for line in self.log.read_text().splitlines() if line.startswith("{")]
        return [line for line in lines if line.get("security")]


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """A server with tokens for alice and bob, a throttle of LIMIT failures per WINDOW seconds."""
    root = tmp_path_factory.mktemp("security")
    log = root / "server.log"
    env = {"HINDSIGHT_AUTH_FAILURE_LIMIT": str(LIMIT), "HINDSIGHT_AUTH_FAILURE_WINDOW_SECONDS": str(WINDOW)}
    with http_server(root / "store", tokens={ALICE: "alice", BOB: "bob"}, log_path=log, env=env) as base:
        yield Server(base, log)


def from_address(base: str, address: str) -> httpx.Client:
    """A client whose connections leave from ``address`` (another loopback address: another client)."""
    return httpx.Client(base_url=base, transport=httpx.HTTPTransport(local_address=address))


@contextmanager
def victim(base: str, token: str) -> Iterator[httpx.Client]:
    """A browser-like client signed in to the viewer with ``token`` through its form."""
    with httpx.Client(base_url=base) as client:
        response = post_sign_in(client, token)
        assert response.status_code == 303 and response.headers["location"] == "/ui", response.text
        yield client


def signed_in_namespace(client: httpx.Client) -> str | None:
    """The namespace the viewer shows this client, or None when it is sent to the sign-in form."""
    page = client.get("/ui")
    if page.status_code == 303:
        assert page.headers["location"] == "/ui/signin"
        return None
    assert page.status_code == 200, page.text
    return page.text.split('id="namespace">', 1)[1].split("<", 1)[0]


def other_tenant_is_served(base: str) -> None:
    """Bob's tools answer, in bob's namespace only, and the server is up."""
    assert httpx.get(f"{base}/health").json()["status"] == "ok"
    with MemoryClient.http(f"{base}/mcp", token=BOB) as bob:
        assert bob.stats().namespace == "bob" and bob.namespace == "bob"


# -- 5: cross-site request forgery ---------------------------------------------------------------


@pytest.mark.parametrize(
    "headers",
    [
        {"Origin": "http://127.0.0.1:1", "Sec-Fetch-Site": "same-site"},  # another port of the same host
        {"Origin": "http://127.0.0.1:1"},  # a client that sends Origin only
        {"Sec-Fetch-Site": "same-site"},  # ... or Sec-Fetch-Site only
        {"Origin": "http://sub.localhost:8765", "Sec-Fetch-Site": "same-site"},  # a sibling subdomain
        {"Origin": f"http://{FOREIGN}", "Sec-Fetch-Site": "cross-site"},
        {"Origin": "null"},  # a sandboxed frame or a data: page
    ],
    ids=["other-port", "origin-only", "fetch-site-only", "sibling", "cross-site", "null-origin"],
)
def test_a_post_from_another_origin_is_refused_even_with_the_right_csrf_token(
    server: Server, headers: dict[str, str]
) -> None:
    memory = remember(server.base, ALICE, f"My bike lock code is {uuid.uuid4().hex[:6]}.")
    with victim(server.base, ALICE) as browser:
        csrf = csrf_of(browser.get(f"/ui/memory/{memory}").text)
        response = browser.post(f"/ui/memory/{memory}/forget", data={"csrf": csrf}, headers=headers)
        assert status_of(server.base, ALICE, memory) == "active"
        assert response.status_code == 403 and 'id="refused"' in response.text
        assert "Nothing was changed" in response.text
        assert signed_in_namespace(browser) == "alice"
    other_tenant_is_served(server.base)


def test_a_post_without_the_forms_csrf_token_is_refused(server: Server) -> None:
    memory = remember(server.base, ALICE, "My locker at the gym is number 114.")
    with victim(server.base, ALICE) as browser, victim(server.base, BOB) as bob:
        bobs_token = csrf_of(bob.get("/ui").text)
        for data in ({}, {"csrf": ""}, {"csrf": "0" * 40}, {"csrf": bobs_token}):  # none, empty, made up, another's
            response = browser.post(f"/ui/memory/{memory}/forget", data=data)
            assert status_of(server.base, ALICE, memory) == "active", data
            assert response.status_code == 403 and "CSRF token" in response.text, data
        same_origin = {"Origin": server.base, "Sec-Fetch-Site": "same-origin"}
        csrf = csrf_of(browser.get("/ui").text)
        done = browser.post(f"/ui/memory/{memory}/forget", data={"csrf": csrf}, headers=same_origin)
        assert done.status_code == 303 and status_of(server.base, ALICE, memory) == "deleted"
        restored = browser.post(f"/ui/memory/{memory}/restore", data={"csrf": csrf})  # no headers: the token suffices
        assert restored.status_code == 303 and status_of(server.base, ALICE, memory) == "active"
    path = f"/ui/memory/{memory}/forget"
    refused = [e for e in server.security_events() if e["event"] == "viewer_post_refused" and e["path"] == path]
    assert len(refused) == 4 and all("CSRF token" in e["reason"] and e["client"] == "127.0.0.1" for e in refused)
    other_tenant_is_served(server.base)


# -- 6: forced sign-in and sign-out --------------------------------------------------------------


def test_another_sites_form_cannot_sign_the_browser_in_to_the_attackers_namespace(server: Server) -> None:
    with victim(server.base, ALICE) as browser, httpx.Client(base_url=server.base) as attacker:
        # The attacker fetches a sign-in form of his own: a CSRF token bound to *his* pre-session cookie.
        attackers_form = csrf_of(attacker.get("/ui/signin").text)
        for data, headers in (
            ({"token": BOB}, {}),
            ({"token": BOB, "csrf": attackers_form}, {}),
            ({"token": BOB, "csrf": attackers_form}, {"Origin": "http://127.0.0.1:1", "Sec-Fetch-Site": "same-site"}),
        ):
            response = browser.post("/ui/signin", data=data, headers=headers)
            assert signed_in_namespace(browser) == "alice", (data, headers)
            assert response.status_code == 403 and COOKIE not in response.cookies, (data, headers)
    with httpx.Client(base_url=server.base) as fresh:  # a browser not signed in at all fares no better
        fresh.get("/ui/signin")
        assert fresh.cookies.get(PRE_COOKIE)
        response = fresh.post("/ui/signin", data={"token": BOB, "csrf": attackers_form})
        assert signed_in_namespace(fresh) is None and response.status_code == 403
    other_tenant_is_served(server.base)


def test_another_sites_form_cannot_sign_the_browser_out(server: Server) -> None:
    with victim(server.base, ALICE) as browser:
        csrf = csrf_of(browser.get("/ui").text)
        for data, headers in (
            ({}, {}),
            ({"csrf": csrf}, {"Origin": "http://127.0.0.1:1", "Sec-Fetch-Site": "same-site"}),
            ({"csrf": csrf}, {"Origin": f"http://{FOREIGN}", "Sec-Fetch-Site": "cross-site"}),
        ):
            response = browser.post("/ui/signout", data=data, headers=headers)
            assert "max-age=0" not in response.headers.get("set-cookie", "").lower(), (data, headers)
            assert signed_in_namespace(browser) == "alice", (data, headers)
            assert response.status_code == 403 and 'id="refused"' in response.text, (data, headers)
        cookie = browser.cookies[COOKIE]
        out = browser.post("/ui/signout", data={"csrf": csrf}, headers={"Sec-Fetch-Site": "same-origin"})
        assert out.status_code == 303 and out.headers["location"] == "/ui/signin"
    kept = httpx.get(f"{server.base}/ui", cookies={COOKIE: cookie})  # a browser that kept the cookie anyway
    assert kept.status_code == 303 and kept.headers["location"] == "/ui/signin"
    other_tenant_is_served(server.base)


@pytest.mark.slow
@pytest.mark.timeout(600)
@pytest.mark.skipif(postgres_binaries() is None, reason="two writing replicas need PostgreSQL (HINDSIGHT_LOCK_URL)")
def test_a_sign_out_on_one_replica_is_refused_by_another_sharing_the_store(tmp_path: Path) -> None:
    """Two server processes on one ``chroma run``: stateless, so sign-ins and CSRF tokens cross; so does a sign-out.

    Both replicas write (a forget on B, a sign-out on A), so they share a lock database, as replicas must.
    """
    tokens = {ALICE: "alice", BOB: "bob"}
    env = {
        "HINDSIGHT_LEXICAL_SYNC_SECONDS": "0",
        "HINDSIGHT_UPKEEP_INTERVAL_SECONDS": "0",
        "HINDSIGHT_SESSION_REVOCATION_CACHE_SECONDS": "0",  # each request asks the store (no waiting in the test)
    }
    with ExitStack() as stack:
        env["HINDSIGHT_CHROMA_URL"] = stack.enter_context(chroma_server(tmp_path / "chroma")).url
        env["HINDSIGHT_LOCK_URL"] = stack.enter_context(postgres_server())
        a = stack.enter_context(http_server(tmp_path / "unused-a", tokens=tokens, env=env))
        b = stack.enter_context(http_server(tmp_path / "unused-b", tokens=tokens, env=env))
        memory = remember(a, ALICE, "The spare house key is under the blue flower pot.")
        browser = stack.enter_context(victim(a, ALICE))
        cookie = browser.cookies[COOKIE]
        csrf = csrf_of(browser.get(f"/ui/memory/{memory}").text)
        on_b = stack.enter_context(httpx.Client(base_url=b, cookies={COOKIE: cookie}))
        assert signed_in_namespace(on_b) == "alice"
        assert on_b.post(f"/ui/memory/{memory}/forget", data={"csrf": csrf}).status_code == 303  # A's token on B
        assert on_b.post(f"/ui/memory/{memory}/restore", data={"csrf": csrf}).status_code == 303
        bob = stack.enter_context(victim(b, BOB))

        assert browser.post("/ui/signout", data={"csrf": csrf}).status_code == 303

        assert signed_in_namespace(on_b) is None
        replayed = httpx.get(f"{a}/ui", cookies={COOKIE: cookie})
        assert replayed.status_code == 303 and replayed.headers["location"] == "/ui/signin"
        refused = on_b.post(f"/ui/memory/{memory}/forget", data={"csrf": csrf})
        assert refused.status_code == 303 and refused.headers["location"] == "/ui/signin"
        assert status_of(b, ALICE, memory) == "active"
        assert signed_in_namespace(bob) == "bob"  # another tenant's session is untouched
        assert signed_in_namespace(stack.enter_context(victim(b, ALICE))) == "alice"  # and alice may sign in again


def test_a_revocation_is_seen_by_another_replica_once_its_cache_has_expired(tmp_path: Path) -> None:
    """``RevokedSessions`` on one embedded store, two instances standing for two replicas, on a test clock."""
    now = [1_000_000.0]
    client = open_client(path=tmp_path / "store")
    first = RevokedSessions(lambda: client, cache_seconds=2.0, clock=lambda: now[0])
    second = RevokedSessions(lambda: client, cache_seconds=2.0, clock=lambda: now[0])
    assert not second.is_revoked("session-1")  # checked: live, remembered for 2 s
    first.revoke("session-1", expires_at=now[0] + 3600)
    assert first.is_revoked("session-1")  # at once where it was signed out
    now[0] += 1.0
    assert not second.is_revoked("session-1")  # the other replica trusts what it saw 1 s ago
    now[0] += 1.5
    assert second.is_revoked("session-1")  # and asks again once that is 2 s old
    assert not second.is_revoked("session-2")
    third = RevokedSessions(lambda: client, cache_seconds=0.0, clock=lambda: now[0])
    assert third.is_revoked("session-1") and not third.is_revoked("session-2")


# -- 7: guessing tokens ----------------------------------------------------------------------------


def _no_token_in(text: str, *tokens: str) -> None:
    for token in tokens:
        secret = token.removeprefix("wrong-")
        assert secret[:8] not in text, "a presented token (or its prefix) reached the log"


def test_wrong_bearer_tokens_are_throttled_for_that_address_only_and_logged_without_them(server: Server) -> None:
    attacker_address = "127.0.0.3"
    guesses = [f"wrong-{uuid.uuid4().hex}" for _ in range(LIMIT + 2)]
    requests = [("POST", "/mcp"), ("GET", "/debug/dump"), ("GET", "/metrics"), ("GET", "/debug/memories")]
    with from_address(server.base, attacker_address) as attacker:
        for n, guess in enumerate(guesses[:LIMIT]):
            method, path = requests[n % len(requests)]
            headers = {**MCP_HEADERS, "Authorization": f"Bearer {guess}"}
            response = attacker.request(method, path, headers=headers, json=INITIALIZE if method == "POST" else None)
            assert response.status_code == 401, (n, path, response.text)
        throttled = attacker.get("/debug/dump", headers={"Authorization": f"Bearer {guesses[LIMIT]}"})
        assert throttled.status_code == 429 and 1 <= int(throttled.headers["retry-after"]) <= WINDOW
        assert "retry" in throttled.json()["message"]
        right_guess = attacker.get("/debug/dump", headers={"Authorization": f"Bearer {ALICE}"})
        assert right_guess.status_code == 429  # while throttled even a right guess learns nothing
    with from_address(server.base, "127.0.0.2") as someone_else:
        dump = someone_else.get("/debug/dump", headers={"Authorization": f"Bearer {ALICE}"})
        assert dump.status_code == 200
        assert someone_else.get("/metrics", headers={"Authorization": f"Bearer {BOB}"}).status_code == 200
    other_tenant_is_served(server.base)  # from 127.0.0.1

    events = [e for e in server.security_events() if e["client"] == attacker_address]
    failures = [e for e in events if e["event"] == "auth_failure"]
    assert [e["count"] for e in failures] == list(range(1, LIMIT + 1))
    assert {e["reason"] for e in failures} == {"invalid bearer token"}
    assert {e["path"] for e in failures} == {path for _, path in requests}
    throttles = [e for e in events if e["event"] == "auth_throttled"]
    assert len(throttles) == 2 and all(e["count"] == LIMIT and int(e["retry_after"]) >= 1 for e in throttles)
    assert all(e["level"] == "warning" and e["logger"] == "hindsight.mcp" for e in events)
    log = server.log.read_text()
    _no_token_in(log, *guesses, ALICE, BOB)


def test_wrong_sign_ins_are_throttled_with_wrong_bearer_tokens_and_logged_without_them(server: Server) -> None:
    attacker_address = "127.0.0.4"
    guesses = [f"wrong-{uuid.uuid4().hex}" for _ in range(LIMIT)]
    with from_address(server.base, attacker_address) as attacker:
        for guess in guesses[: LIMIT - 1]:
            response = post_sign_in(attacker, guess)
            assert response.status_code == 401 and "not valid" in response.text
        bearer = attacker.get("/metrics", headers={"Authorization": f"Bearer {guesses[-1]}"})
        assert bearer.status_code == 401  # the LIMIT-th failure, counted with the sign-ins
        throttled = post_sign_in(attacker, ALICE)  # even the right token, from this address, for now
        assert throttled.status_code == 429 and 1 <= int(throttled.headers["retry-after"]) <= WINDOW
        assert "Too many failed sign-ins" in throttled.text and COOKIE not in throttled.cookies
    with victim(server.base, ALICE) as browser:  # another address signs in at once
        assert signed_in_namespace(browser) == "alice"
    with from_address(server.base, "127.0.0.2") as someone_else:
        response = post_sign_in(someone_else, BOB)
        assert response.status_code == 303 and someone_else.cookies.get(COOKIE)
    other_tenant_is_served(server.base)

    events = [e for e in server.security_events() if e["client"] == attacker_address]
    sign_ins = [e for e in events if e["event"] == "auth_failure" and e["path"] == "/ui/signin"]
    assert [e["count"] for e in sign_ins] == list(range(1, LIMIT))
    assert {e["reason"] for e in sign_ins} == {"wrong sign-in token"}
    assert [e["event"] for e in events][-1] == "auth_throttled" and events[-1]["path"] == "/ui/signin"
    _no_token_in(server.log.read_text(), *guesses, ALICE, BOB)


def test_the_throttle_cools_down_and_keeps_clients_apart() -> None:
    """``AuthFailures`` on a test clock: the window slides, other addresses are not counted, memory is bounded."""
    now = [0.0]
    failures = AuthFailures(3, 10.0, max_clients=4, clock=lambda: now[0])
    for _ in range(3):
        assert failures.retry_after("10.0.0.1") == 0
        failures.record("10.0.0.1")
        now[0] += 1.0
    assert failures.retry_after("10.0.0.1") == pytest.approx(7.0)  # the first failure leaves the window at t=10
    assert failures.retry_after("10.0.0.2") == 0
    now[0] = 10.5
    assert failures.retry_after("10.0.0.1") == 0 and failures.failures("10.0.0.1") == 2
    assert failures.record("10.0.0.1") == 3 and failures.retry_after("10.0.0.1") == pytest.approx(0.5)
    for n in range(10):  # many other addresses: the table stays bounded
        failures.record(f"10.0.1.{n}")
    assert failures.failures("10.0.0.1") == 0 and len(failures._failures) == 4


def test_weak_tokens_stop_the_server_at_start_up_and_say_how_to_make_one(tmp_path: Path) -> None:
    for weak in ("short-token-123", "ab" * 20, "0123456789" * 2):
        port = free_port()
        env = server_env(tmp_path / "store", HINDSIGHT_TOKENS=f"{weak}=alice")
        out = subprocess.run(
            [*SERVER_CMD, "--transport", "http", "--port", str(port)],
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
            cwd=REPO,
        )
        assert out.returncode == 2, out.stderr
        assert "hindsight token" in out.stderr and "secrets.token_urlsafe(32)" in out.stderr
        assert "namespace 'alice'" in out.stderr and weak not in out.stderr
    with pytest.raises(ConfigurationError, match="at least 10"):
        validate_token_map({"a1" * 20: "alice"})
    made = [subprocess.run([*CLI, "token"], capture_output=True, text=True, check=True).stdout.strip() for _ in "ab"]
    assert made[0] != made[1] and validate_token_map({made[0]: "alice", made[1]: "bob"})


def test_the_new_settings_are_checked_at_start_up(tmp_path: Path) -> None:
    for name, value, expected in (
        ("HINDSIGHT_ALLOWED_HOSTS", "https://memory.example.com/", "not a host name"),
        ("HINDSIGHT_AUTH_FAILURE_LIMIT", "0", "greater than or equal to 1"),
        ("HINDSIGHT_AUTH_FAILURE_WINDOW_SECONDS", "-1", "greater than 0"),
        ("HINDSIGHT_SESSION_REVOCATION_CACHE_SECONDS", "lots", "valid number"),
    ):
        env = server_env(tmp_path / "store", **{name: value})
        out = subprocess.run(
            [*SERVER_CMD, "--transport", "http", "--port", str(free_port())],
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
            cwd=REPO,
        )
        assert out.returncode == 2 and name in out.stderr and expected in out.stderr, (name, out.stderr)
    assert Settings(allowed_hosts="Memory.Example.com, [::1]:8443,proxy:*").allowed_hosts == [
        "memory.example.com",
        "[::1]:8443",
        "proxy:*",
    ]


# -- 8: DNS rebinding --------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def local_ui(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, str]]:
    """``hindsight ui`` (no tokens) on a free port, with one memory; yields (base URL, memory id)."""
    with local_viewer(tmp_path_factory.mktemp("local-ui") / "store") as base:
        yield base, remember(base, None, "My passport number is X1234567.")


LOCAL_ROUTES = [
    ("GET", "/ui"),
    ("GET", "/ui/signin"),
    ("GET", "/ui/export.json"),
    ("GET", "/ui/review"),
    ("GET", "/ui/sessions"),
    ("GET", "/ui/memory/{id}"),
    ("POST", "/ui/memory/{id}/forget"),
    ("POST", "/ui/signout"),
    ("GET", "/debug/dump"),
    ("GET", "/debug/memories"),
    ("GET", "/health"),
    ("GET", "/metrics"),
    ("POST", "/mcp"),
]


@pytest.mark.parametrize(("method", "path"), LOCAL_ROUTES, ids=[f"{m} {p}" for m, p in LOCAL_ROUTES])
def test_without_tokens_every_route_refuses_a_foreign_host(local_ui: tuple[str, str], method: str, path: str) -> None:
    base, memory = local_ui
    url = base + path.format(id=memory)
    body: dict[str, Any] = {"json": INITIALIZE} if path == "/mcp" else {}
    for host in (FOREIGN, f"{FOREIGN}:{base.rsplit(':', 1)[1]}", f"127.0.0.1.{FOREIGN}", "localhost.attacker.example"):
        refused = httpx.request(method, url, headers={**MCP_HEADERS, "Host": host}, **body)
        assert refused.status_code == 421, (host, refused.status_code, refused.text[:200])
        assert "X1234567" not in refused.text and "HINDSIGHT_ALLOWED_HOSTS" in refused.text
    assert status_of(base, None, memory) == "active"
    if method == "GET":  # the server's own names are answered (/ui/signin redirects to /ui: nobody signs in here)
        for host in (base.removeprefix("http://"), f"localhost:{base.rsplit(':', 1)[1]}"):
            assert httpx.request(method, url, headers={"Host": host}).status_code in (200, 303), host


def test_without_tokens_a_post_from_another_origin_forgets_nothing(local_ui: tuple[str, str]) -> None:
    """No sign-in to forge here: the Origin check and the CSRF token (of a pre-session cookie) are the defence."""
    base, memory = local_ui
    with httpx.Client(base_url=base) as page_user:
        csrf = csrf_of(page_user.get(f"/ui/memory/{memory}").text)
        assert page_user.cookies.get(PRE_COOKIE)
        for data, headers in (
            ({}, {}),
            ({"csrf": csrf}, {"Origin": "http://localhost:1", "Sec-Fetch-Site": "cross-site"}),
            ({"csrf": csrf}, {"Origin": "http://127.0.0.1:1", "Sec-Fetch-Site": "same-site"}),
        ):
            response = page_user.post(f"/ui/memory/{memory}/forget", data=data, headers=headers)
            assert status_of(base, None, memory) == "active", (data, headers)
            assert response.status_code == 403, (data, headers)
        with httpx.Client(base_url=base) as stranger:  # a form elsewhere has no cookie of this browser
            refused = stranger.post(f"/ui/memory/{memory}/forget", data={"csrf": csrf})
            assert status_of(base, None, memory) == "active" and refused.status_code == 403
        own = page_user.post(f"/ui/memory/{memory}/forget", data={"csrf": csrf}, headers={"Origin": base})
        assert own.status_code == 303 and status_of(base, None, memory) == "deleted"
        assert page_user.post(f"/ui/memory/{memory}/restore", data={"csrf": csrf}).status_code == 303
    assert status_of(base, None, memory) == "active"


def test_a_server_with_tokens_on_loopback_refuses_a_foreign_host_too(server: Server) -> None:
    for method, path in (("GET", "/ui/signin"), ("GET", "/health"), ("POST", "/mcp")):
        body: dict[str, Any] = {"json": INITIALIZE} if path == "/mcp" else {}
        headers = {**MCP_HEADERS, "Host": FOREIGN, "Authorization": f"Bearer {ALICE}"}
        assert httpx.request(method, server.base + path, headers=headers, **body).status_code == 421, path
    other_tenant_is_served(server.base)


def test_allowed_hosts_admits_a_reverse_proxys_name_on_every_route(tmp_path: Path) -> None:
    env = {"HINDSIGHT_ALLOWED_HOSTS": "memory.example.test"}
    with http_server(tmp_path / "store", tokens={ALICE: "alice", BOB: "bob"}, env=env) as base:
        named = {"Host": "memory.example.test"}
        assert httpx.get(f"{base}/ui/signin", headers=named).status_code == 200
        assert httpx.get(f"{base}/health", headers={"Host": "memory.example.test:443"}).status_code == 200
        mcp = httpx.post(
            f"{base}/mcp",
            headers={
                **MCP_HEADERS,
                **named,
                "Authorization": f"Bearer {ALICE}",
                "Origin": "https://memory.example.test",
            },
            json=INITIALIZE,
        )
        assert mcp.status_code == 200, mcp.text  # the MCP SDK's own check got the same list
        assert httpx.get(f"{base}/health", headers={"Host": FOREIGN}).status_code == 421
        with MemoryClient.http(f"{base}/mcp", token=BOB) as bob:  # loopback names keep working (probes, tools)
            assert bob.stats().namespace == "bob"
