"""Bounds hold whatever form a value arrives in and whichever way it comes (issue #24, findings 1 and 11a).

Finding 1: the filter bounds were checked only when a filter arrived as a dict; over MCP it
arrives as a parsed ``RecallFilters``, so 1,000 metadata keys gave ``internal_error`` from
Chroma ("Expression tree is too large") and 10,000 killed the HTTP server (a segfault in
Chroma's Rust bindings), every tenant with it. Finding 11a: a lone surrogate in a nested key
made the client raise ``UnicodeEncodeError`` instead of an input error.

The attack runs over real HTTP against ``hindsight serve --transport http`` with two tenants;
the other checks run on the engine (dicts, JSON strings and model instances alike), on the
client, on the stdio server and on the viewer's debug endpoint.
"""

from __future__ import annotations

import json
import math
import subprocess
import sys
import textwrap
import threading
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import pytest

from hindsight_integrations import MemoryEngine
from hindsight_integrations.core.errors import InvalidInputError
from hindsight_integrations.core.model.inputs import MemoryInput, MemoryItem
from hindsight_integrations.core.model.limits import MAX_MEMORY_ID_CHARS, MAX_METADATA_KEYS, MAX_OFFSET, MAX_TOKENS
from hindsight_integrations.core.model.records import Kind, Status, Tier
from hindsight_integrations.core.recall.filters import (
    MAX_WHERE_CONDITIONS,
    MAX_WHERE_DEPTH,
    MAX_WHERE_LIST,
    RecallFilters,
    bounded_where,
)
from hindsight_integrations.mcp import MemoryClient
from hindsight_integrations.mcp.errors import MemoryToolError, MemoryToolInputError
from hindsight_integrations.processes import LocalServer

from .mcp_support import MCP_HEADERS, http_server_process
from .viewer_support import post_sign_in

MALLORY = "mallory-token-3f9c2a7e5b1d4c8a9e0f6b2d"  # the attacking tenant
VICTIM = "victim-token-8d1e4b7a2c9f5e3d6a0b4c7e"  # everyone else on the server
LONE = "\ud800"  # an unpaired surrogate: a valid Python string, not encodable as UTF-8


def many_keys(count: int) -> dict[str, str]:
    return {f"k{n}": "v" for n in range(count)}


# -- over real HTTP: one tenant cannot take the server down ----------------------------------------


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalServer]:
    store = tmp_path_factory.mktemp("bounds-http")
    with http_server_process(store, tokens={MALLORY: "mallory", VICTIM: "victim"}) as running:
        yield running


@pytest.fixture(scope="module")
def mallory(server: LocalServer) -> Iterator[MemoryClient]:
    with MemoryClient.http(f"{server.url}/mcp", token=MALLORY, retries=0, timeout=120) as client:
        # a namespace with memories, so the attack's filter would reach Chroma
        client.store("The garden gets sun in the morning.", apply_filter=False)
        yield client


@pytest.fixture(scope="module")
def victim(server: LocalServer) -> Iterator[MemoryClient]:
    with MemoryClient.http(f"{server.url}/mcp", token=VICTIM, retries=0, timeout=120) as client:
        client.store("I keep my bicycle in the garden shed.", apply_filter=False)
        yield client


def assert_alive(server: LocalServer, victim: MemoryClient) -> None:
    """The process has not exited, answers /health, and the other tenant still recalls and stores."""
    assert server.process.poll() is None, f"the server exited with {server.process.returncode}"
    assert httpx.get(f"{server.url}/health", timeout=30).status_code == 200
    assert any("bicycle" in h.record.content for h in victim.recall("where is my bicycle?").hits)
    assert victim.store(f"My bicycle has a red bell ({uuid.uuid4().hex[:8]}).", apply_filter=False, dedup=False).stored


def attack(tool: str, keys: int, *, as_json_text: bool = False) -> dict[str, Any]:
    filters: Any = {"metadata": many_keys(keys)}
    arguments: dict[str, Any] = {"filters": json.dumps(filters) if as_json_text else filters}
    if tool == "retrieve_memory":
        arguments["query"] = "garden"
    return arguments


@pytest.mark.server
@pytest.mark.timeout(600)
@pytest.mark.parametrize("keys", [10_000, 1_000])
@pytest.mark.parametrize("tool", ["retrieve_memory", "list_memories"])
def test_a_filter_with_thousands_of_metadata_keys_is_refused_and_the_server_lives(
    server: LocalServer, mallory: MemoryClient, victim: MemoryClient, tool: str, keys: int
) -> None:
    with pytest.raises(MemoryToolInputError) as refused:
        mallory.call_tool(tool, attack(tool, keys))
    assert refused.value.error_type == "invalid_input"
    assert refused.value.field == "filters.metadata"
    assert f"has {keys} keys; the limit is {MAX_METADATA_KEYS}" in refused.value.message
    assert_alive(server, victim)


@pytest.mark.server
@pytest.mark.timeout(600)
def test_the_attack_as_json_text_or_a_raw_request_is_refused_too(
    server: LocalServer, mallory: MemoryClient, victim: MemoryClient
) -> None:
    """FastMCP parses a filter sent as a JSON string; a raw JSON-RPC request skips the client altogether."""
    with pytest.raises(MemoryToolInputError) as refused:
        mallory.call_tool("list_memories", attack("list_memories", 10_000, as_json_text=True))
    assert refused.value.field == "filters.metadata" and str(MAX_METADATA_KEYS) in refused.value.message
    body = {
        "jsonrpc": "2.0",
        "id": 7,
        "method": "tools/call",
        "params": {"name": "retrieve_memory", "arguments": attack("retrieve_memory", 10_000)},
    }
    answer = httpx.post(
        f"{server.url}/mcp", json=body, headers={**MCP_HEADERS, "Authorization": f"Bearer {MALLORY}"}, timeout=120
    )
    assert answer.status_code == 200
    error = answer.json()["result"]["structuredContent"]["error"]
    assert error["type"] == "invalid_input" and error["field"] == "filters.metadata"
    assert f"the limit is {MAX_METADATA_KEYS}" in error["message"]
    assert_alive(server, victim)


@pytest.mark.server
@pytest.mark.timeout(600)
def test_the_other_tenant_is_served_while_the_attack_runs(
    server: LocalServer, mallory: MemoryClient, victim: MemoryClient
) -> None:
    refusals: list[str] = []
    failures: list[BaseException] = []

    def keep_attacking() -> None:
        for n in range(6):
            tool = ("retrieve_memory", "list_memories")[n % 2]
            try:
                mallory.call_tool(tool, attack(tool, 10_000))
            except MemoryToolInputError as exc:
                refusals.append(exc.field)
            except BaseException as exc:  # anything else is the failure this test looks for
                failures.append(exc)

    attackers = [threading.Thread(target=keep_attacking) for _ in range(2)]
    for thread in attackers:
        thread.start()
    served = 0
    while any(t.is_alive() for t in attackers):
        assert victim.recall("where is my bicycle?").hits
        note = f"Bicycle check {served} ({uuid.uuid4().hex[:8]}): the tyres are pumped."
        assert victim.store(note, apply_filter=False, dedup=False).stored
        served += 1
    for thread in attackers:
        thread.join()
    assert not failures, failures
    assert refusals == ["filters.metadata"] * 12
    assert served >= 1
    assert_alive(server, victim)


@pytest.mark.server
@pytest.mark.timeout(600)
def test_debug_memories_refuses_paging_past_its_bounds(server: LocalServer, victim: MemoryClient) -> None:
    auth = {"Authorization": f"Bearer {VICTIM}"}
    for query, field in (({"offset": str(10**15)}, "offset"), ({"limit": str(10**6)}, "limit")):
        answer = httpx.get(f"{server.url}/debug/memories", params=query, headers=auth, timeout=60)
        assert answer.status_code == 400, answer.text
        assert answer.json()["error"] == "invalid_input" and field in answer.json()["message"]
    page = httpx.get(f"{server.url}/debug/memories", params={"limit": "5"}, headers=auth, timeout=60)
    assert page.status_code == 200 and page.json()["namespace"] == "victim"
    assert_alive(server, victim)


@pytest.mark.server
@pytest.mark.timeout(600)
def test_viewer_pages_refuse_arguments_past_their_bounds(server: LocalServer, victim: MemoryClient) -> None:
    with httpx.Client(base_url=server.url, follow_redirects=True, timeout=60) as browser:
        assert post_sign_in(browser, VICTIM).status_code == 303
        for path, params, needle in (
            ("/ui", {"offset": str(10**15)}, "offset"),
            ("/ui", {"q": "x" * 40_000}, "HINDSIGHT_MAX_CONTENT_BYTES"),
            (f"/ui/sessions/{'s' * 1000}", {}, "HINDSIGHT_MAX_ID_CHARS"),
            (f"/ui/memory/{'m' * 1000}", {}, "the limit is 200"),
        ):
            page = browser.get(path, params=params)
            assert page.status_code == 400, (path, page.status_code)
            assert needle in page.text
        assert browser.get("/ui").status_code == 200
    assert_alive(server, victim)


@pytest.mark.server
@pytest.mark.timeout(600)
def test_the_stdio_server_refuses_the_attack_and_keeps_serving(tmp_path: Path) -> None:
    env = {"HINDSIGHT_STORE": str(tmp_path / "store"), "HF_HUB_OFFLINE": "1", "HINDSIGHT_LOG_LEVEL": "WARNING"}
    with MemoryClient.stdio(env=env, namespace="solo", timeout=120, retries=0) as client:
        client.store("The garden gets sun in the morning.", apply_filter=False)
        for tool in ("list_memories", "retrieve_memory"):
            with pytest.raises(MemoryToolInputError) as refused:
                client.call_tool(tool, attack(tool, 10_000))
            assert refused.value.field == "filters.metadata"
        assert client.recall("garden sun").hits


# -- the engine: every bound, whatever form the value arrives in ------------------------------------


def filter_forms(data: dict[str, Any]) -> list[Any]:
    """``data`` as a dict, as JSON text, and as a ``RecallFilters`` built without validation."""
    return [data, json.dumps(data), RecallFilters.model_construct(**data)]


FILTER_BOUNDS = [
    ({"metadata": many_keys(10_000)}, "filters.metadata", f"the limit is {MAX_METADATA_KEYS}"),
    ({"metadata": many_keys(1_000)}, "filters.metadata", f"the limit is {MAX_METADATA_KEYS}"),
    ({"metadata": {"blob": "x" * 20_000}}, "filters", "HINDSIGHT_MAX_FILTER_BYTES"),
    ({"metadata": {"key": {"$in": [str(n) for n in range(3000)]}}}, "filters", "HINDSIGHT_MAX_FILTER_BYTES"),
    ({"metadata": {"key": {"$in": ["x"] * 1025}}}, "filters", "the limit is 1024"),
    ({"session_id": "s" * 1000}, "filters.session_id", "HINDSIGHT_MAX_ID_CHARS"),
    ({"agent_id": "a" * 1000}, "filters.agent_id", "HINDSIGHT_MAX_ID_CHARS"),
    ({"metadata": {"score": math.nan}}, "filters.metadata", "finite"),
    ({"metadata": {"k": LONE}}, "filters.metadata", "UTF-8"),
    ({"metadata": {LONE: "v"}}, "filters.metadata", "UTF-8"),
    ({"session_id": f"s{LONE}"}, "filters.session_id", "UTF-8"),
]


@pytest.mark.timeout(300)
@pytest.mark.parametrize(("data", "field", "needle"), FILTER_BOUNDS)
def test_filters_are_bounded_as_dicts_json_text_and_model_instances(
    engine: MemoryEngine, data: dict[str, Any], field: str, needle: str
) -> None:
    engine.store_memories([{"content": "The garden gets sun in the morning."}], namespace="u1")
    for form in filter_forms(data):
        for call in (
            lambda form=form: engine.recall("garden", namespace="u1", filters=form),
            lambda form=form: engine.list(namespace="u1", filters=form),
        ):
            with pytest.raises(InvalidInputError) as refused:
                call()
            assert refused.value.field == field, (type(form).__name__, refused.value)
            assert needle in refused.value.message
    assert engine.recall("garden sun", namespace="u1").hits  # still serving


def test_a_filter_within_the_configured_limits_built_as_a_model_is_checked_against_them(
    store_path: Path, embedder: Any
) -> None:
    """A ``RecallFilters`` built normally is not yet held to a server's settings: the engine holds it to them."""
    strict = MemoryEngine(store=store_path, embedder=embedder, llm=False, max_id_chars=10, max_filter_bytes=100)
    strict.store_memories([{"content": "The garden gets sun in the morning."}], namespace="u1")
    for filters, field in (
        (RecallFilters(session_id="s" * 11), "filters.session_id"),
        (RecallFilters(metadata={"note": "n" * 200}), "filters"),
    ):
        with pytest.raises(InvalidInputError) as refused:
            strict.list(namespace="u1", filters=filters)
        assert refused.value.field == field
    assert strict.list(namespace="u1", filters=RecallFilters(session_id="s" * 10)) == []


def test_a_filter_model_cannot_even_be_built_with_too_many_metadata_keys() -> None:
    with pytest.raises(ValueError, match=f"has 1000 keys; the limit is {MAX_METADATA_KEYS}"):
        RecallFilters(metadata=many_keys(1000))
    with pytest.raises(ValueError, match="UTF-8"):
        RecallFilters(metadata={LONE: "v"})
    assert RecallFilters(tiers=["episodic"] * 500).tiers == [Tier.EPISODIC]  # one clause value per member


def memory_forms(item: dict[str, Any]) -> list[Any]:
    """``item`` as a dict (metadata also as JSON text), and as ``MemoryItem``/``MemoryInput`` built unvalidated."""
    forms = [item, MemoryItem.model_construct(**item), MemoryInput.model_construct(**item)]
    if "metadata" in item:
        forms.append({**item, "metadata": json.dumps(item["metadata"])})
    return forms


MEMORY_BOUNDS = [
    ({"content": "x" * 40_000}, "content", "HINDSIGHT_MAX_CONTENT_BYTES"),
    ({"content": "fact", "metadata": {"blob": "x" * 20_000}}, "metadata", "HINDSIGHT_MAX_METADATA_BYTES"),
    ({"content": "fact", "metadata": many_keys(1000)}, "metadata", f"the limit is {MAX_METADATA_KEYS}"),
    ({"content": "fact", "metadata": {"a": {"b": {"c": {"d": {"e": {"f": {"g": {"h": 1}}}}}}}}}, "metadata", "deep"),
    ({"content": "fact", "session_id": "s" * 1000}, "session_id", "HINDSIGHT_MAX_ID_CHARS"),
    ({"content": "fact", "agent_id": "a" * 1000}, "agent_id", "HINDSIGHT_MAX_ID_CHARS"),
    ({"content": "fact", "entities": [f"e{n}" for n in range(500)]}, "entities", "HINDSIGHT_MAX_ENTITIES"),
    ({"content": "fact", "entities": ["e" * 5000]}, "entities", "the limit is 200"),
    ({"content": "fact", "ttl_seconds": 10**15}, "ttl_seconds", "at most"),
]


@pytest.mark.parametrize(("item", "field", "needle"), MEMORY_BOUNDS)
def test_memories_are_bounded_as_dicts_json_text_and_model_instances(
    engine: MemoryEngine, item: dict[str, Any], field: str, needle: str
) -> None:
    for form in memory_forms(item):
        with pytest.raises(InvalidInputError) as refused:
            engine.store_memories([{"content": "a good fact about the garden"}, form], namespace="u1")
        assert refused.value.field.startswith(f"memories[1].{field}"), (type(form).__name__, refused.value)
        assert needle in refused.value.message
    assert engine.list(namespace="u1") == []  # nothing of any refused batch was written


def test_a_memory_instance_is_validated_again_and_left_as_it_was(engine: MemoryEngine) -> None:
    item = MemoryInput(content="  The shed\x07 key hangs by the door.  ", metadata={"room": "hall"})
    stored = engine.store_memories([item], namespace="u1", apply_filter=False).stored[0]
    assert stored.content == "The shed key hangs by the door." and stored.metadata["room"] == "hall"
    assert item.content == "  The shed\x07 key hangs by the door.  "  # the caller's object is not changed


@pytest.mark.parametrize(
    ("kwargs", "field", "needle"),
    [
        ({"metadata": {"blob": "x" * 20_000}}, "metadata", "HINDSIGHT_MAX_METADATA_BYTES"),
        ({"metadata": many_keys(1000)}, "metadata", f"the limit is {MAX_METADATA_KEYS}"),
        ({"metadata": {"a": [{LONE: 1}]}}, "metadata", "UTF-8"),
        ({"content": "x" * 40_000}, "content", "HINDSIGHT_MAX_CONTENT_BYTES"),
        ({"ttl_seconds": 10**15}, "ttl_seconds", "between"),
    ],
)
def test_update_arguments_are_bounded(engine: MemoryEngine, kwargs: dict[str, Any], field: str, needle: str) -> None:
    record = engine.store("The nightly backup runs at 02:00 UTC.", namespace="u1").stored[0]
    with pytest.raises(InvalidInputError) as refused:
        engine.update(record.id, namespace="u1", **kwargs)
    assert refused.value.field == field and needle in refused.value.message
    assert engine.get(record.id, namespace="u1").content == "The nightly backup runs at 02:00 UTC."


def test_memory_and_request_ids_are_bounded(store_path: Path, embedder: Any) -> None:
    """Memory ids have a fixed bound (ours are 36-character UUIDs); request ids the configured one."""
    engine = MemoryEngine(store=store_path, embedder=embedder, llm=False, max_id_chars=40)
    record = engine.store("The nightly backup runs at 02:00 UTC.", namespace="u1").stored[0]
    too_long = "i" * (MAX_MEMORY_ID_CHARS + 1)
    for call in (
        lambda: engine.get(too_long, namespace="u1"),
        lambda: engine.forget(too_long, namespace="u1"),
        lambda: engine.update(too_long, namespace="u1", importance=0.5),
        lambda: engine.review(too_long, accept=True, namespace="u1"),
        lambda: engine.get(f"id-{LONE}", namespace="u1"),
    ):
        with pytest.raises(InvalidInputError) as refused:
            call()
        assert refused.value.field == "id"
    with pytest.raises(InvalidInputError, match="HINDSIGHT_MAX_ID_CHARS") as refused:
        engine.store("The deploy window is Friday.", namespace="u1", request_id="r" * 41)
    assert refused.value.field == "request_id"
    assert engine.get(record.id, namespace="u1").id == record.id


@pytest.mark.parametrize(
    ("call", "field"),
    [
        (lambda e: e.recall("garden", namespace="u1", top_k=10**15), "top_k"),
        (lambda e: e.recall("garden", namespace="u1", token_budget=10**15), "token_budget"),
        (lambda e: e.recall("garden", namespace="u1", candidates=10**12), "candidates"),
        (lambda e: e.list(namespace="u1", limit=10**12), "limit"),
        (lambda e: e.list(namespace="u1", offset=10**15), "offset"),
        (lambda e: e.compress(session_id="s1", namespace="u1", threshold_tokens=10**15), "threshold_tokens"),
    ],
)
def test_counts_and_sizes_are_bounded(engine: MemoryEngine, call: Any, field: str) -> None:
    """A huge number cannot make the engine allocate or search without bound."""
    engine.record_turn("The garden gets sun in the morning.", session_id="s1", namespace="u1")
    with pytest.raises(InvalidInputError) as refused:
        call(engine)
    assert refused.value.field == field
    assert engine.recall("garden", namespace="u1", token_budget=MAX_TOKENS).hits is not None
    assert engine.list(namespace="u1", offset=MAX_OFFSET) == []


# -- the last check before Chroma -------------------------------------------------------------------


def test_the_largest_filter_a_caller_may_send_compiles_to_a_where_chroma_answers(engine: MemoryEngine) -> None:
    engine.store_memories([{"content": "The garden gets sun in the morning.", "metadata": {"k0": "v"}}], namespace="u1")
    widest = RecallFilters(
        session_id="s",
        agent_id="a",
        tiers=list(Tier),
        kinds=list(Kind),
        statuses=list(Status),
        since="2020-01-01T00:00:00Z",
        until="2030-01-01T00:00:00Z",
        min_importance=0.0,
        metadata=many_keys(MAX_METADATA_KEYS),
    )
    for include_history in (False, True):
        clauses = widest.clauses(include_history=include_history, now=datetime.now(UTC))
        assert len(clauses) < MAX_WHERE_CONDITIONS
        assert engine.list(namespace="u1", filters=widest, include_history=include_history) == []
        assert engine.recall("garden", namespace="u1", filters=widest, include_history=include_history).hits == []


@pytest.mark.parametrize(
    ("where", "needle"),
    [
        ({"$and": [{f"m.k{n}": "v"} for n in range(MAX_WHERE_CONDITIONS + 1)]}, f"the limit is {MAX_WHERE_CONDITIONS}"),
        ({"$or": [{f"m.k{n}": "v"} for n in range(10_000)]}, f"the limit is {MAX_WHERE_CONDITIONS}"),
        ({"tier": {"$in": [f"t{n}" for n in range(MAX_WHERE_LIST + 1)]}}, f"the limit is {MAX_WHERE_LIST}"),
        ({"m.k": "x" * 300_000}, "bytes"),
    ],
)
def test_a_where_too_large_for_chroma_is_refused(where: dict[str, Any], needle: str) -> None:
    with pytest.raises(InvalidInputError, match=needle) as refused:
        bounded_where(where)
    assert refused.value.field == "filters"


def test_a_where_nested_too_deep_is_refused() -> None:
    where: dict[str, Any] = {"tier": "episodic"}
    for _ in range(MAX_WHERE_DEPTH):
        where = {"$and": [where, {"tier": "episodic"}]}
    assert bounded_where(where) is where
    with pytest.raises(InvalidInputError, match="nested more than"):
        bounded_where({"$and": [where, {"tier": "episodic"}]})


def test_no_internal_path_hands_chroma_an_oversized_where(engine: MemoryEngine) -> None:
    """The store refuses it itself (2,000 clauses: an error in Chroma, not yet a crash, should this regress)."""
    engine.store_memories([{"content": "The garden gets sun in the morning."}], namespace="u1")
    handle = engine.chroma.namespace("u1", create=False)
    assert handle is not None
    where = {"$and": [{f"m.k{n}": "v"} for n in range(2000)]}
    with pytest.raises(InvalidInputError, match=f"the limit is {MAX_WHERE_CONDITIONS}"):
        handle.find(where)
    with pytest.raises(InvalidInputError, match=f"the limit is {MAX_WHERE_CONDITIONS}"):
        handle.query(engine.embedder.embed(["garden"])[0], n=5, where=where)


@pytest.mark.timeout(300)
def test_the_where_cap_sits_well_below_what_chroma_fails_on(tmp_path: Path) -> None:
    """Measured in a subprocess (Chroma may crash): the cap's size works, ~1,000 clauses fail.

    chromadb 1.5.9 refused an ``$and`` of 985 clauses ("Expression tree is too large") and
    crashed the process with a segfault at about 8,200 (measured once, not repeated here).
    """
    probe = textwrap.dedent(
        f"""
        import sys, chromadb
        client = chromadb.PersistentClient(path=sys.argv[1])
        collection = client.get_or_create_collection("probe")
        collection.add(ids=["a"], embeddings=[[0.1, 0.2, 0.3]], metadatas=[{{"m.k0": "v"}}])
        for count in ({MAX_WHERE_CONDITIONS}, 1000):
            where = {{"$and": [{{f"m.k{{n}}": "v"}} for n in range(count)]}}
            try:
                collection.get(where=where)
                print(count, "ok")
            except Exception as exc:
                print(count, "error", type(exc).__name__, str(exc)[:200])
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", probe, str(tmp_path / "chroma")], capture_output=True, text=True, timeout=240
    )
    assert done.returncode == 0, done.stderr[-2000:]
    lines = dict(line.split(" ", 1) for line in done.stdout.splitlines())
    assert lines[str(MAX_WHERE_CONDITIONS)] == "ok"
    assert lines["1000"].startswith("error"), lines["1000"]


# -- text that is not valid UTF-8: a readable error, from the client and the engine ---------------


@pytest.fixture
def client(engine: MemoryEngine) -> Iterator[MemoryClient]:
    with MemoryClient.in_process(engine, namespace="u1", retries=0) as opened:
        yield opened


@pytest.mark.parametrize(
    ("tool", "arguments", "field"),
    [
        ("get_working_memory", {"session_id": {LONE: None}}, "session_id"),  # the case fuzzing found
        ("store_memory", {"content": "fact", "metadata": {"a": {"b": [LONE]}}}, "metadata"),
        ("store_memory", {"content": "fact", "metadata": {"a": {LONE: 1}}}, "metadata"),
        ("retrieve_memory", {"query": "q", "filters": {"metadata": {LONE: "x"}}}, "filters"),
        ("list_memories", {"filters": RecallFilters.model_construct(session_id=f"s{LONE}")}, "filters"),
        ("record_turn", {"content": "hi", "session_id": "s1", "speaker": LONE}, "speaker"),
    ],
)
def test_the_client_refuses_text_that_is_not_utf8_with_its_input_error(
    client: MemoryClient, engine: MemoryEngine, tool: str, arguments: dict[str, Any], field: str
) -> None:
    with pytest.raises(MemoryToolInputError) as refused:
        client.call_tool(tool, arguments)
    assert refused.value.field == field and "UTF-8" in refused.value.message
    assert refused.value.error_type == "invalid_input"
    assert LONE not in str(refused.value)  # the message itself can be sent and printed
    assert client.stats().namespace == "u1"  # the connection survived


def test_the_client_api_methods_refuse_it_too(client: MemoryClient) -> None:
    for call, field in (
        (lambda: client.store("fact", metadata={"a": {LONE: 1}}), "metadata"),
        (lambda: client.recall("q", filters={"metadata": {"k": LONE}}), "filters"),
        (lambda: client.list(filters=RecallFilters.model_construct(metadata={LONE: "x"})), "filters"),
        (lambda: client.working_memory(LONE), "session_id"),
    ):
        with pytest.raises(MemoryToolInputError) as refused:
            call()
        assert refused.value.field == field and "UTF-8" in refused.value.message


@pytest.mark.parametrize(
    ("call", "field"),
    [
        (lambda e: e.store_memories([{"content": "fact", "metadata": {"a": {LONE: 1}}}], namespace="u1"), "metadata"),
        (lambda e: e.store_memories([{"content": "fact", "metadata": {"a": [1, LONE]}}], namespace="u1"), "metadata"),
        (lambda e: e.store_memories([{"content": "fact", "entities": [LONE]}], namespace="u1"), "entities"),
        (lambda e: e.store_memories([{"content": "fact", "session_id": LONE}], namespace="u1"), "session_id"),
        (lambda e: e.store_memories([MemoryItem.model_construct(content=f"fa{LONE}ct")], namespace="u1"), "content"),
        (lambda e: e.recall("q", namespace="u1", filters={"metadata": {LONE: "x"}}), "filters.metadata"),
        (
            lambda e: e.list(namespace="u1", filters=RecallFilters.model_construct(session_id=LONE)),
            "filters.session_id",
        ),
        (lambda e: e.record_turn("hello", session_id="s1", namespace="u1", speaker=LONE), "speaker"),
        (lambda e: e.record_turn("hello", session_id="s1", namespace="u1", metadata={LONE: 1}), "metadata"),
        (lambda e: e.working_window(session_id=f"s{LONE}", namespace="u1"), "session_id"),
    ],
)
def test_the_engine_refuses_text_that_is_not_utf8_naming_the_field(engine: MemoryEngine, call: Any, field: str) -> None:
    engine.store_memories([{"content": "The garden gets sun in the morning."}], namespace="u1")
    with pytest.raises(InvalidInputError) as refused:
        call(engine)
    assert refused.value.field == field and "UTF-8" in refused.value.message
    assert LONE not in str(refused.value)


def test_an_argument_model_checks_text_at_the_mcp_boundary() -> None:
    """What FastMCP validates (no engine settings) still refuses unpaired surrogates and too many keys."""
    from hindsight_integrations.mcp import wire

    for model, data, field in (
        (wire.RecordTurnArgs, {"content": "hi", "session_id": "s1", "metadata": {"a": {LONE: 1}}}, "metadata"),
        (wire.GetWorkingMemoryArgs, {"session_id": f"s{LONE}"}, "session_id"),
        (wire.UpdateMemoryArgs, {"id": "x", "metadata": many_keys(1000)}, "metadata"),
        (wire.ListMemoriesArgs, {"filters": {"metadata": many_keys(1000)}}, "filters"),
        (wire.ListMemoriesArgs, {"offset": 10**15}, "offset"),
        (wire.RetrieveMemoryArgs, {"query": "q", "token_budget": 10**15}, "token_budget"),
    ):
        with pytest.raises(ValueError) as refused:
            model.model_validate(data)
        assert field in str(refused.value)


def test_an_oversized_filter_is_refused_even_where_nothing_is_stored_yet(client: MemoryClient) -> None:
    with pytest.raises(MemoryToolError) as refused:
        client.call_tool("list_memories", {"filters": {"metadata": many_keys(10_000)}})
    assert refused.value.error_type == "invalid_input"
