"""The viewer's pages, the debug endpoints and the MCP resources over a real HTTP server.

What a browser cannot show quickly is checked here with plain HTTP: the token never lands in
a URL or cookie, no page leaks data before sign-in, one namespace never sees another's
memories, and memory text is escaped. Resources are read through the MCP SDK's own client.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path

import httpx
import pytest
from mcp import ClientSession
from mcp.client.streamable_http import streamablehttp_client
from mcp.shared.exceptions import McpError

from hindsight_integrations.core.model.limits import MAX_PAGE
from hindsight_integrations.core.model.records import MemoryRecord
from hindsight_integrations.mcp import viewer_pages as pages
from hindsight_integrations.mcp.routes import page_of_everything
from hindsight_integrations.mcp.viewer import COOKIE

from .mcp_support import http_server
from .viewer_support import ALICE, BOB, SCRIPT_TEXT, SESSION, Seeded, csrf_of, post_sign_in, seeded_server, status_of

pytestmark = pytest.mark.server


@pytest.fixture(scope="module")
def seeded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Seeded]:
    with seeded_server(tmp_path_factory.mktemp("viewer")) as server:
        yield server


@contextmanager
def signed_in(seeded: Seeded, token: str) -> Iterator[httpx.Client]:
    """A browser-like client (cookies, redirects followed) signed in with ``token``."""
    with httpx.Client(base_url=seeded.base, follow_redirects=True) as client:
        response = post_sign_in(client, token)
        assert response.status_code == 303 and response.headers["location"] == "/ui", response.text
        yield client


@pytest.mark.parametrize(
    "path", ["/ui", "/ui/review", "/ui/sessions", f"/ui/sessions/{SESSION}", "/ui/export.json", "/ui/memory/x"]
)
def test_without_a_session_every_page_is_the_sign_in_form_and_never_data(seeded: Seeded, path: str) -> None:
    response = httpx.get(f"{seeded.base}{path}", follow_redirects=True)
    assert response.status_code == 200 and response.url.path == "/ui/signin"
    assert 'id="sign-in"' in response.text and "Berlin" not in response.text and "peanuts" not in response.text
    with_bearer_only = httpx.get(f"{seeded.base}{path}", headers={"Authorization": f"Bearer {ALICE}"})
    assert with_bearer_only.status_code == 303  # the viewer signs in by form, not by a header a page cannot send


def test_a_wrong_token_gets_the_form_again_and_no_cookie(seeded: Seeded) -> None:
    with httpx.Client(base_url=seeded.base) as client:
        response = post_sign_in(client, "not-a-token-at-all")
    assert response.status_code == 401 and "not valid" in response.text and COOKIE not in response.cookies


def test_sign_in_sets_an_httponly_session_cookie_that_is_not_the_token(seeded: Seeded) -> None:
    with httpx.Client(base_url=seeded.base) as client:
        response = post_sign_in(client, ALICE)
    assert response.status_code == 303 and response.headers["location"] == "/ui"
    cookie = response.headers["set-cookie"]
    assert "httponly" in cookie.lower() and "samesite=strict" in cookie.lower() and ALICE not in cookie
    assert ALICE not in response.headers["location"]


def test_the_list_shows_tier_kind_status_importance_and_escapes_html(seeded: Seeded) -> None:
    with signed_in(seeded, ALICE) as client:
        text = client.get("/ui").text
    assert "I moved to Munich last month." in text and "Dentist appointment" in text
    assert SCRIPT_TEXT not in text and "&lt;script&gt;document.title=&quot;pwned&quot;&lt;/script&gt;" in text
    assert 'data-label="Tier">semantic' in text or 'data-label="Tier">episodic' in text
    assert "Bob" not in text


def test_filters_narrow_the_list(seeded: Seeded) -> None:
    with signed_in(seeded, ALICE) as client:
        events = client.get("/ui", params={"kind": "event"}).text
        held = client.get("/ui", params={"status": "quarantined"}).text
        late = client.get("/ui", params={"since": "2025-04-20", "until": "2025-05-10"}).text
        important = client.get("/ui", params={"min_importance": "0.95"}).text
        bad = client.get("/ui", params={"since": "yesterday"})
    assert "Dentist" in events and "Munich" not in events
    assert "no longer allergic" in held and "Dentist" not in held
    assert "Dentist" in late and "Berlin" not in late
    assert "I am allergic to peanuts." in important and "Dentist" not in important
    assert bad.status_code == 400 and "YYYY-MM-DD" in bad.text


def test_search_shows_each_hits_score_parts(seeded: Seeded) -> None:
    with signed_in(seeded, ALICE) as client:
        text = client.get("/ui", params={"q": "where does the user live?"}).text
    assert 'id="hits"' in text and "Munich" in text
    for part in ("Score", "Relevance", "Similarity", "Lexical", "Recency"):
        assert f'data-label="{part}"' in text


def test_a_memory_page_shows_history_both_ways(seeded: Seeded) -> None:
    with signed_in(seeded, ALICE) as client:
        new = client.get(f"/ui/memory/{seeded.new_city}").text
        old = client.get(f"/ui/memory/{seeded.old_city}").text
    assert 'class="supersedes"' in new and "I live in Berlin." in new and seeded.old_city in new
    assert 'id="superseded-by"' in old and "I moved to Munich" in old and "superseded" in old


def test_another_namespaces_token_sees_none_of_it(seeded: Seeded) -> None:
    with signed_in(seeded, BOB) as client:
        listing = client.get("/ui").text
        alien = client.get(f"/ui/memory/{seeded.new_city}")
        forget = client.post(f"/ui/memory/{seeded.new_city}/forget", data={"csrf": csrf_of(listing)})
        export = client.get("/ui/export.json").json()
        sessions = client.get("/ui/sessions").text
    assert "locker code" in listing and "Munich" not in listing and "peanuts" not in listing
    assert alien.status_code == 404 and "Munich" not in alien.text
    assert forget.status_code == 404
    assert export["namespace"] == "bob" and all("Munich" not in m["content"] for m in export["records"])
    assert SESSION not in sessions


def test_forget_and_restore(seeded: Seeded) -> None:
    with signed_in(seeded, ALICE) as client:
        csrf = csrf_of(client.get(f"/ui/memory/{seeded.dentist}").text)
        forgotten = client.post(f"/ui/memory/{seeded.dentist}/forget", data={"csrf": csrf})
        assert forgotten.url.path == f"/ui/memory/{seeded.dentist}" and "Forgotten" in forgotten.text
        assert "Dentist" not in client.get("/ui").text
        restored = client.post(f"/ui/memory/{seeded.dentist}/restore", data={"csrf": csrf})
        assert "Restored" in restored.text and 'id="forget"' in restored.text
        assert "Dentist" in client.get("/ui").text


def test_a_compressed_turn_offers_its_summary_and_no_restore_that_would_do_nothing(seeded: Seeded) -> None:
    """It is archived but not in cold storage: ``restore`` skips it, so the page must not promise one."""
    with signed_in(seeded, ALICE) as client:
        page = client.get(f"/ui/memory/{seeded.compressed_turn}").text
        assert 'class="badge status-archived"' in page and "Restore" not in page and 'id="restore"' not in page
        assert 'id="archived-in-place"' in page and f'href="/ui/memory/{seeded.summary}"' in page
        pressed = client.post(f"/ui/memory/{seeded.compressed_turn}/restore", data={"csrf": csrf_of(page)})
    assert pressed.status_code == 400 and "not in cold storage: nothing restored" in pressed.text
    assert "Restored" not in pressed.text and status_of(seeded.base, ALICE, seeded.compressed_turn) == "archived"


def test_a_memory_in_cold_storage_offers_its_restore() -> None:
    turn = MemoryRecord.model_validate(
        {"namespace": "alice", "content": "Which neighbourhood is best for food?", "status": "archived"}
    )
    assert 'id="restore"' in pages.memory_actions(turn, "csrf-token", in_cold_storage=True)
    assert 'id="restore"' not in pages.memory_actions(turn, "csrf-token", in_cold_storage=False)


def test_export_is_the_namespaces_json(seeded: Seeded) -> None:
    with signed_in(seeded, ALICE) as client:
        response = client.get("/ui/export.json")
    assert "attachment" in response.headers["content-disposition"]
    data = response.json()
    contents = {m["content"] for m in data["records"]}
    assert data["namespace"] == "alice" and "I live in Berlin." in contents and SCRIPT_TEXT in contents


def test_session_page_shows_the_window_and_the_compression_summary(seeded: Seeded) -> None:
    with signed_in(seeded, ALICE) as client:
        listing = client.get("/ui/sessions").text
        text = client.get(f"/ui/sessions/{SESSION}").text
    assert SESSION in listing
    assert 'id="window"' in text and "by car to Sintra or by train" in text
    assert 'class="box summary"' in text and "replaced" in text


def test_sign_out_ends_the_session(seeded: Seeded) -> None:
    with signed_in(seeded, ALICE) as client:
        cookie = client.cookies[COOKIE]
        signed_out = client.post("/ui/signout", data={"csrf": csrf_of(client.get("/ui").text)})
        assert signed_out.url.path == "/ui/signin"
        again = httpx.get(f"{seeded.base}/ui", cookies={COOKIE: cookie})
    assert again.status_code == 303 and again.headers["location"] == "/ui/signin"


def test_a_session_is_honoured_by_another_replica_with_the_same_tokens(seeded: Seeded, tmp_path: Path) -> None:
    with signed_in(seeded, BOB) as client:
        cookie = client.cookies[COOKIE]
    with http_server(tmp_path / "replica", tokens={ALICE: "alice", BOB: "bob"}) as replica:
        page = httpx.get(f"{replica}/ui", cookies={COOKIE: cookie})
    assert page.status_code == 200 and 'id="namespace">bob<' in page.text


def test_a_tampered_or_foreign_cookie_is_refused(seeded: Seeded, tmp_path: Path) -> None:
    with signed_in(seeded, BOB) as client:
        cookie = client.cookies[COOKIE]
    fingerprint, expires, nonce, signature = cookie.split(".")
    forged = f"{fingerprint}.{int(expires) + 10**6}.{nonce}.{signature}"
    assert httpx.get(f"{seeded.base}/ui", cookies={COOKIE: forged}).status_code == 303
    with http_server(tmp_path / "other", tokens={"carol-viewer-token-7c1e5a9f3b2d8046": "carol"}) as other:
        assert httpx.get(f"{other}/ui", cookies={COOKIE: cookie}).status_code == 303


def test_debug_endpoints_need_the_bearer_token_and_keep_to_its_namespace(seeded: Seeded) -> None:
    assert httpx.get(f"{seeded.base}/debug/dump").status_code == 401
    assert httpx.get(f"{seeded.base}/debug/memories").status_code == 401
    alice = {"Authorization": f"Bearer {ALICE}"}
    dump = httpx.get(f"{seeded.base}/debug/dump", headers=alice).text
    assert "Munich" in dump and "Berlin" in dump and "locker" not in dump
    first = httpx.get(f"{seeded.base}/debug/memories", params={"limit": 2}, headers=alice).json()
    assert first["namespace"] == "alice" and len(first["memories"]) == 2 and first["next_offset"] == 2
    seen = [m["id"] for m in first["memories"]]
    offset = first["next_offset"]
    while offset is not None:
        page = httpx.get(f"{seeded.base}/debug/memories", params={"limit": 2, "offset": offset}, headers=alice).json()
        seen += [m["id"] for m in page["memories"]]
        offset = page["next_offset"]
    assert len(seen) == len(set(seen)) and {seeded.old_city, seeded.held_allergy, seeded.scripted} <= set(seen)
    assert seeded.bob_secret not in seen


@pytest.mark.parametrize("limit", ["0", "-1", "10001", "many"])
def test_debug_memories_refuses_a_page_size_outside_1_to_max_page_naming_it(seeded: Seeded, limit: str) -> None:
    alice = {"Authorization": f"Bearer {ALICE}"}
    answer = httpx.get(f"{seeded.base}/debug/memories", params={"limit": limit}, headers=alice)
    assert answer.status_code == 400 and answer.json()["error"] == "invalid_input", answer.text
    message = answer.json()["message"]
    assert message.startswith("limit:") and (f"got {limit}" in message or f"got {limit!r}" in message), message
    assert f"between 1 and {MAX_PAGE}" in message or "whole number" in message


def test_debug_memories_serves_the_largest_page_it_documents(seeded: Seeded) -> None:
    alice = {"Authorization": f"Bearer {ALICE}"}
    answer = httpx.get(f"{seeded.base}/debug/memories", params={"limit": str(MAX_PAGE)}, headers=alice)
    assert answer.status_code == 200, answer.text
    page = answer.json()
    assert (
        page["limit"] == MAX_PAGE
        and page["next_offset"] is None
        and seeded.old_city in {m["id"] for m in page["memories"]}
    )


class PagedEngine:
    """As much of ``MemoryEngine.list`` as paging needs: ``records`` ids, at most ``MAX_PAGE`` per call."""

    def __init__(self, records: int) -> None:
        self.ids = [f"m{n}" for n in range(records)]
        self.calls: list[tuple[int, int]] = []

    def list(self, *, limit: int, offset: int, **_: object) -> list[str]:
        assert 1 <= limit <= MAX_PAGE
        self.calls.append((limit, offset))
        return self.ids[offset : offset + limit]


@pytest.mark.parametrize(("records", "more"), [(MAX_PAGE, False), (MAX_PAGE + 1, True)])
def test_a_page_of_max_page_memories_says_whether_more_follow(records: int, more: bool) -> None:
    engine = PagedEngine(records)
    page, follows = page_of_everything(engine, "alice", MAX_PAGE, 0)  # type: ignore[arg-type]
    assert len(page) == MAX_PAGE and follows is more
    last, following = page_of_everything(engine, "alice", MAX_PAGE, MAX_PAGE)  # type: ignore[arg-type]
    assert len(last) == records - MAX_PAGE and following is False


@asynccontextmanager
async def mcp_session(seeded: Seeded, token: str) -> AsyncIterator[ClientSession]:
    """The MCP SDK's own client over streamable HTTP with ``token``."""
    headers = {"Authorization": f"Bearer {token}"}
    async with (
        streamablehttp_client(f"{seeded.base}/mcp", headers=headers) as (read, write, _),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        yield session


async def test_resources_are_listed_and_read_through_the_mcp_client(seeded: Seeded) -> None:
    async with mcp_session(seeded, ALICE) as session:
        listed = {str(r.uri) for r in (await session.list_resources()).resources}
        templates = {t.uriTemplate for t in (await session.list_resource_templates()).resourceTemplates}
        stats = json.loads((await session.read_resource("hindsight://stats")).contents[0].text)  # type: ignore[union-attr]
        memory = json.loads(
            (await session.read_resource(f"hindsight://memory/{seeded.old_city}")).contents[0].text  # type: ignore[union-attr]
        )
        window = json.loads(
            (await session.read_resource(f"hindsight://session/{SESSION}/working")).contents[0].text  # type: ignore[union-attr]
        )
    assert listed == {"hindsight://stats"}
    assert templates == {"hindsight://memory/{memory_id}", "hindsight://session/{session_id}/working"}
    assert stats["namespace"] == "alice" and stats["by_status"]["quarantined"] == 1
    assert memory["status"] == "superseded" and memory["superseded_by"] == seeded.new_city
    assert window["session_id"] == SESSION and any("Sintra" in t["content"] for t in window["turns"])


async def test_a_resource_of_another_namespace_is_not_found(seeded: Seeded) -> None:
    async with mcp_session(seeded, BOB) as session:
        with pytest.raises(McpError) as err:
            await session.read_resource(f"hindsight://memory/{seeded.old_city}")
        stats = json.loads((await session.read_resource("hindsight://stats")).contents[0].text)  # type: ignore[union-attr]
    assert "not found" in str(err.value).lower() or "no memory" in str(err.value).lower()
    assert stats["namespace"] == "bob" and stats["total"] == 1
