"""A real HTTP server with two users' memories, for the viewer, debug and resource tests.

The memories are written through the server's own tools (``MemoryClient.http``), so the
viewer reads exactly what an agent wrote: a corrected fact (one memory superseded by the
other), a quarantined contradiction, a memory whose text is HTML with a script, and a
session whose oldest turns were compressed into a summary.
"""

from __future__ import annotations

import re
import shutil
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING

import httpx
import pytest

from hindsight_integrations.mcp import MemoryClient
from hindsight_integrations.processes import free_port, running

from .mcp_support import REPO, http_server, server_env

if TYPE_CHECKING:
    from selenium.webdriver.remote.webdriver import WebDriver

ALICE, BOB = "alice-viewer-token-5f2c9a7e1b3d4086", "bob-viewer-token-8e4a6c1f9d7b3025"
T0 = datetime(2025, 3, 3, 9, 0, tzinfo=UTC)
SCRIPT_TEXT = '<script>document.title="pwned"</script><b>bold</b> is how I like my notes'
SESSION = "trip-planning"


CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"
NEEDS_CHROMIUM = pytest.mark.skipif(
    not (Path(CHROMIUM).exists() and Path(CHROMEDRIVER).exists()),
    reason="needs Debian's chromium and chromium-driver (apt-get install chromium chromium-driver; "
    "scripts/setup installs them when run as root)",
)


def chromium(*arguments: str) -> WebDriver:
    """Headless Chromium through the system chromedriver (given by path: Selenium Manager is not used).

    ``arguments`` are extra command-line switches (``--host-resolver-rules=...``).
    """
    from selenium import webdriver
    from selenium.webdriver.chrome.options import Options
    from selenium.webdriver.chrome.service import Service

    options = Options()
    options.binary_location = CHROMIUM
    for arg in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu", "--window-size=1280,800"):
        options.add_argument(arg)
    for arg in arguments:
        options.add_argument(arg)
    return webdriver.Chrome(service=Service(executable_path=CHROMEDRIVER), options=options)


CSRF_FIELD = re.compile(r'<input type="hidden" name="csrf" value="([^"]+)">')


def csrf_of(html: str) -> str:
    """The CSRF token in a viewer page's forms (every form of one page carries the same one); "" if none.

    No assertion here: a page without one fails where its form is posted (403), and an attack
    test run against a viewer without CSRF tokens fails on what the attack did, not on this.
    """
    found = CSRF_FIELD.search(html)
    return found.group(1) if found else ""


def post_sign_in(client: httpx.Client, token: str) -> httpx.Response:
    """Sign ``client`` (which keeps cookies) in as a person would: fetch the form, post it with its CSRF token."""
    form = client.get("/ui/signin", follow_redirects=False)
    assert form.status_code == 200, form.text
    return client.post("/ui/signin", data={"token": token, "csrf": csrf_of(form.text)}, follow_redirects=False)


def remember(base: str, token: str | None, text: str) -> str:
    """Store ``text`` through the tools (in the token's namespace, or the server's own without one); its id."""
    with MemoryClient.http(f"{base}/mcp", token=token) as client:
        return client.store(text, apply_filter=False, dedup=False).ids[0]


def status_of(base: str, token: str | None, memory_id: str) -> str:
    """A memory's status, read through ``/debug/memories`` with the bearer token (not through the viewer)."""
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    page = httpx.get(f"{base}/debug/memories", params={"limit": 1000}, headers=headers).json()
    (found,) = [m["status"] for m in page["memories"] if m["id"] == memory_id]
    return str(found)


@dataclass(frozen=True)
class Seeded:
    """The running server and the ids of the memories the tests look for."""

    base: str
    old_city: str  # "I live in Berlin." — superseded by new_city
    new_city: str
    allergy: str  # important; held_allergy contradicts it
    held_allergy: str  # quarantined
    scripted: str  # content is HTML with a <script>
    dentist: str  # an event, for the kind and date filters
    compressed_turn: str  # a turn of SESSION compressed into summary: archived, yet still in the store
    summary: str
    bob_secret: str  # in Bob's namespace only


def _seed(base: str) -> Seeded:
    with MemoryClient.http(f"{base}/mcp", token=ALICE) as alice:
        old_city = alice.store("I live in Berlin.", occurred_at=T0.isoformat()).ids[0]
        moved = alice.store("I moved to Munich last month.", occurred_at=(T0 + timedelta(days=40)).isoformat())
        assert moved.superseded == [old_city], moved
        allergy = alice.store("I am allergic to peanuts.", importance=1.0, kind="preference").ids[0]
        held = alice.store("I am no longer allergic to peanuts.", trusted=False)
        assert held.quarantined == held.ids, held
        scripted = alice.store(SCRIPT_TEXT, apply_filter=False, kind="preference").ids[0]
        dentist = alice.store(
            "Dentist appointment with Dr. Weber on Friday at 3pm.",
            kind="event",
            importance=0.9,
            occurred_at=(T0 + timedelta(days=60)).isoformat(),
        ).ids[0]
        for i, line in enumerate(
            [
                "What is the weather like in Lisbon in May?",
                "Could you suggest a few day trips?",
                "How long is the train ride to Cascais?",
                "Which neighbourhood is best for food?",
                "Is it worth renting a car for Sintra?",
                "Should we go by car to Sintra or by train?",
            ]
        ):
            alice.record_turn(
                line,
                session_id=SESSION,
                occurred_at=(T0 + timedelta(days=70, minutes=i)).isoformat(),
            )
        compressed = alice.compress(SESSION, force=True)
        assert compressed is not None and compressed.summaries, compressed
    with MemoryClient.http(f"{base}/mcp", token=BOB) as bob:
        bob_secret = bob.store("Bob's locker code is 4711.", apply_filter=False).ids[0]
    return Seeded(
        base=base,
        old_city=old_city,
        new_city=moved.ids[0],
        allergy=allergy,
        held_allergy=held.ids[0],
        scripted=scripted,
        dentist=dentist,
        compressed_turn=compressed.archived_ids[0],
        summary=compressed.summaries[0].id,
        bob_secret=bob_secret,
    )


@contextmanager
def seeded_server(store: Path) -> Iterator[Seeded]:
    """A ``--transport http`` server with tokens for alice and bob, seeded through its tools."""
    with http_server(store, tokens={ALICE: "alice", BOB: "bob"}) as base:
        yield _seed(base)


@contextmanager
def local_viewer(store: Path) -> Iterator[str]:
    """The real ``hindsight ui --no-browser`` (no tokens: no sign-in) on a free port, namespace ``me``; its base URL."""
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    command = [sys.executable, "-m", "hindsight_integrations.cli", "--store", str(store), "--namespace", "me"]
    command += ["ui", "--no-browser", "--port", str(port)]
    with running(command, health_url=f"{base}/health", env=server_env(store), cwd=REPO):
        yield base
