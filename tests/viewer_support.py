"""A real HTTP server with two users' memories, for the viewer, debug and resource tests.

The memories are written through the server's own tools (``MemoryClient.http``), so the
viewer reads exactly what an agent wrote: a corrected fact (one memory superseded by the
other), a quarantined contradiction, a memory whose text is HTML with a script, and a
session whose oldest turns were compressed into a summary.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx

from hindsight_integrations.mcp import MemoryClient

from .mcp_support import http_server

ALICE, BOB = "alice-viewer-token-5f2c9a7e1b3d4086", "bob-viewer-token-8e4a6c1f9d7b3025"
T0 = datetime(2025, 3, 3, 9, 0, tzinfo=UTC)
SCRIPT_TEXT = '<script>document.title="pwned"</script><b>bold</b> is how I like my notes'
SESSION = "trip-planning"


CSRF_FIELD = re.compile(r'<input type="hidden" name="csrf" value="([^"]+)">')


def csrf_of(html: str) -> str:
    """The CSRF token in a viewer page's forms (every form of one page carries the same one)."""
    found = CSRF_FIELD.search(html)
    assert found, "the page has no form with a CSRF token"
    return found.group(1)


def post_sign_in(client: httpx.Client, token: str) -> httpx.Response:
    """Sign ``client`` (which keeps cookies) in as a person would: fetch the form, post it with its CSRF token."""
    form = client.get("/ui/signin", follow_redirects=False)
    assert form.status_code == 200, form.text
    return client.post("/ui/signin", data={"token": token, "csrf": csrf_of(form.text)}, follow_redirects=False)


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
        bob_secret=bob_secret,
    )


@contextmanager
def seeded_server(store: Path) -> Iterator[Seeded]:
    """A ``--transport http`` server with tokens for alice and bob, seeded through its tools."""
    with http_server(store, tokens={ALICE: "alice", BOB: "bob"}) as base:
        yield _seed(base)
