"""The MCP tool contract, run identically over the three transports of ``MemoryClient``.

One server per transport for the whole module (a spawned server costs seconds to load the
embedding model); each test uses its own session ids / contents so tests do not depend on
one another's data.
"""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import Iterator

import pytest

from hindsight_integrations import InvalidInputError, MemoryEngine, MemoryNotFoundError, RecallResult, StoreResult
from hindsight_integrations.core.model.records import Kind, MemoryRecord, Status
from hindsight_integrations.mcp import (
    MAX_BATCH,
    MemoryClient,
    MemoryToolError,
    MemoryToolInputError,
    MemoryToolNotFoundError,
)

from .mcp_support import http_server

TOOLS = {
    "store_memory",
    "retrieve_memory",
    "compress_memory",
    "consolidate_memory",
    "update_memory",
    "forget_memory",
    "review_memory",
    "list_memories",
    "memory_stats",
    "dump_memory",
    "maintain_memory",
    "record_turn",
    "get_working_memory",
    "clear_working_memory",
}
TOKEN = "contract-token-0001-7e3b9d5f1a2c8e46"


@pytest.fixture(
    scope="module",
    params=[
        "in-process",
        pytest.param("stdio", marks=pytest.mark.server),
        pytest.param("http", marks=pytest.mark.server),
    ],
)
def client(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory, embedder
) -> Iterator[MemoryClient]:
    store = tmp_path_factory.mktemp(f"store-{request.param}")
    if request.param == "in-process":
        engine = MemoryEngine(store=store, embedder=embedder, llm=False)
        with MemoryClient.in_process(engine, namespace="contract") as c:
            yield c
    elif request.param == "stdio":
        env = {"HINDSIGHT_STORE": str(store), "HF_HUB_OFFLINE": "1", "HINDSIGHT_LOG_LEVEL": "WARNING"}
        with MemoryClient.stdio(env=env, namespace="contract", timeout=60) as c:
            c.connect()
            yield c
    else:
        with (
            http_server(store, tokens={TOKEN: "contract"}) as base,
            MemoryClient.http(f"{base}/mcp", token=TOKEN, timeout=60) as c,
        ):
            yield c


def unique(text: str) -> str:
    return f"{text} (ref {uuid.uuid4().hex[:8]})"


def test_all_tools_are_listed(client: MemoryClient) -> None:
    assert set(client.list_tools()) == TOOLS


def test_store_then_retrieve_returns_records_and_a_dated_context(client: MemoryClient) -> None:
    content = unique("I prefer answers in metric units, never imperial")
    stored = client.store(content, kind="preference", importance=0.9, metadata={"topic": "units"})
    assert isinstance(stored, StoreResult) and len(stored.ids) == 1 and not stored.skipped
    assert stored.stored[0].kind is Kind.PREFERENCE and stored.stored[0].metadata["topic"] == "units"

    raw = client.call_tool("retrieve_memory", {"query": "which units does the user prefer?", "top_k": 3})
    assert set(raw) >= {"memories", "context", "tokens"}
    first = raw["memories"][0]
    assert set(first) >= {"id", "content", "score", "tier", "kind", "occurred_at", "metadata"}
    assert first["id"] == stored.ids[0] and first["tier"] == "semantic"
    assert content in raw["context"] and stored.stored[0].occurred_at.date().isoformat() in raw["context"]
    assert raw["tokens"] > 0

    result = client.recall("which units does the user prefer?", top_k=3)
    assert isinstance(result, RecallResult)
    assert result.hits[0].record.id == stored.ids[0] and isinstance(result.hits[0].record, MemoryRecord)


def test_model_mistakes_are_coerced(client: MemoryClient) -> None:
    content = unique("My home office is in Porto")
    data = client.call_tool(
        "store_memory", {"content": content, "importance": "0.8", "kind": "Fact", "metadata": '{"src": "chat"}'}
    )
    (record,) = data["stored"]
    assert record["importance"] == 0.8 and record["kind"] == "fact" and record["metadata"]["src"] == "chat"
    batch = client.call_tool(
        "store_memory",
        {"memories": json.dumps([{"content": unique("My sister lives in Oslo")}, unique("I drive a blue Volvo")])},
    )
    assert len(batch["ids"]) == 2
    found = client.call_tool(
        "retrieve_memory",
        {"query": "where is the home office", "top_k": "3", "filters": '{"kinds": "fact"}', "include_history": "false"},
    )
    assert any(m["content"] == content for m in found["memories"])
    assert all(m["kind"] == "fact" for m in found["memories"])


def test_batch_store_reports_what_was_filtered_and_why(client: MemoryClient) -> None:
    keep = unique("The project deadline is the 3rd of June")
    result = client.store([{"content": "thanks!"}, {"content": keep, "kind": "event"}])
    assert [r.content for r in result.stored] == [keep]
    assert len(result.skipped) == 1 and result.skipped[0].index == 0 and result.skipped[0].reason


def test_what_store_memory_skips_is_not_said_to_be_kept(client: MemoryClient) -> None:
    """A bare question skipped by ``store_memory`` was "kept as a conversation turn only": nothing was kept.

    The reason now says what the text is; only ``record_turn`` keeps it, as the turn it records.
    """
    question = "Which framework do I like?"
    stored = client.call_tool("store_memory", {"content": question})
    reason = "question or request: not a fact to remember"
    assert stored["ids"] == [] and [s["reason"] for s in stored["skipped"]] == [reason]
    traceback = 'Traceback (most recent call last):\n  File "app.py", line 3, in <module>\nValueError: invalid literal'
    errors = client.call_tool("store_memory", {"content": traceback})
    assert [s["reason"] for s in errors["skipped"]] == ["error output: not a fact to remember"]
    assert not any(r.content in (question, traceback) for r in client.list())
    session = unique("s")
    turn = client.record_turn(question, session_id=session)
    assert [s.reason for s in turn.stored.skipped] == [reason]
    assert [t.content for t in client.working_memory(session)] == [question]  # the turn is what is kept


def test_apply_filter_false_keeps_text_the_write_filter_drops(client: MemoryClient) -> None:
    assert client.store("ok thanks").skipped  # small talk: the default filter drops it
    kept = client.store("ok thanks", apply_filter=False)
    assert [r.content for r in kept.stored] == ["ok thanks"] and not kept.skipped
    raw = client.call_tool("store_memory", {"content": "ok thanks", "apply_filter": "False ", "dedup": "false"})
    assert [r["content"] for r in raw["stored"]] == ["ok thanks"] and raw["ids"] != kept.ids


async def test_dedup_false_stores_a_near_duplicate_as_its_own_memory(client: MemoryClient) -> None:
    base = unique("I keep my road bike in the garage next to the freezer")
    first = client.store(base, kind="fact")
    folded = client.store(base + ".", kind="fact")
    assert folded.merged == first.ids  # the default folds a near-duplicate into the existing memory
    separate = await client.astore(base + "!", kind="fact", dedup=False)
    assert not separate.merged and separate.ids[0] not in first.ids
    assert sorted(r.id for r in client.list(limit=1000) if r.content.startswith(base)) == sorted(
        first.ids + separate.ids
    )


def test_supersede_false_leaves_the_older_value_current(client: MemoryClient) -> None:
    old = client.store(unique("My favourite colour is teal"), kind="preference")
    new = client.store(unique("My favourite colour is green"), kind="preference")
    assert new.superseded == old.ids  # the default: a changed value outdates the old one
    kept = client.call_tool(
        "store_memory", {"content": unique("My favourite colour is amber"), "kind": "preference", "supersede": "false"}
    )
    assert kept["superseded"] == []
    current = {r.id for r in client.list(limit=1000, filters={"kinds": ["preference"]})}
    assert set(new.ids) | set(kept["ids"]) <= current and not set(old.ids) & current


def test_the_client_knows_the_namespace_the_server_announced(client: MemoryClient) -> None:
    client.connect()
    assert client.namespace == "contract"


def test_request_id_makes_writes_idempotent(client: MemoryClient) -> None:
    request_id = str(uuid.uuid4())
    items = [{"content": unique("I am allergic to peanuts")}, {"content": unique("I work night shifts")}]
    first = client.store(items, request_id=request_id)
    again = client.store(items, request_id=request_id)
    assert again.replayed and sorted(again.ids) == sorted(first.ids)
    matching = [r for r in client.list(limit=1000) if r.request_id == request_id]
    assert len(matching) == 2
    with pytest.raises(MemoryToolInputError) as err:
        client.store([{"content": unique("something else entirely")}], request_id=request_id)
    assert err.value.field == "request_id" and "different content" in err.value.message
    assert isinstance(err.value, InvalidInputError)


BAD_CALLS = [
    pytest.param("no_such_tool", {}, None, "unknown tool", id="unknown-tool"),
    pytest.param("retrieve_memory", {}, "query", "Field required", id="missing-required"),
    pytest.param("retrieve_memory", {"query": "x", "top_k": "three"}, "top_k", "valid integer", id="uncoercible-type"),
    pytest.param("retrieve_memory", {"query": "x", "top_k": {"n": 3}}, "top_k", "valid integer", id="object-for-int"),
    pytest.param(
        "retrieve_memory",
        {"query": "x", "filters": {"colour": "red"}},
        "filters.colour",
        "Extra inputs",
        id="unknown-filter",
    ),
    pytest.param("retrieve_memory", {"query": "x", "k": 3}, "k", "unknown argument", id="unknown-argument"),
    pytest.param("store_memory", {"content": "x" * (1 << 20)}, "content", "limit is 32768", id="1MB-content"),
    pytest.param(
        "store_memory",
        {"memories": [{"content": f"fact number {i}"} for i in range(10_000)]},
        "memories",
        f"limit is {MAX_BATCH}",
        id="10k-batch",
    ),
    pytest.param("store_memory", {"content": "\x00\x01\x02 \x7f"}, "content", "empty", id="only-control-chars"),
    pytest.param(
        "store_memory",
        {"content": "call me later", "ttl_seconds": -5},
        "ttl_seconds",
        "greater than 0",
        id="negative-ttl",
    ),
    pytest.param(
        "store_memory",
        {"content": "I like tea", "importance": 7},
        "importance",
        "less than or equal to 1",
        id="importance-out-of-range",
    ),
    pytest.param("store_memory", {"content": "a", "memories": ["b"]}, "content", "not both", id="content-and-memories"),
    pytest.param(
        "store_memory", {"memories": [{"content": "ok"}, {"text": "wrong key"}]}, "memories[1]", "", id="bad-batch-item"
    ),
    pytest.param(
        "store_memory",
        {"memories": [{"content": "The build uses Gradle 8."}], "session_id": "chat-7", "ttl_seconds": 60},
        "session_id",
        "inside each item",
        id="single-memory-field-beside-a-batch",
    ),
    pytest.param("update_memory", {"id": "no-such-id", "importance": 0.5}, None, "no memory", id="update-unknown-id"),
    pytest.param("maintain_memory", {"dry_run": "perhaps"}, "dry_run", "valid boolean", id="maintain-bad-flag"),
    pytest.param("maintain_memory", {"dry_run": [True]}, "dry_run", "valid boolean", id="maintain-list-flag"),
    pytest.param(
        "maintain_memory", {"namespace": "someone-else"}, "namespace", "unknown argument", id="maintain-other-namespace"
    ),
]


@pytest.mark.parametrize(("tool", "arguments", "field", "message"), BAD_CALLS)
def test_bad_input_is_a_readable_tool_error_and_the_server_keeps_serving(
    client: MemoryClient, tool: str, arguments: dict, field: str | None, message: str
) -> None:
    with pytest.raises(MemoryToolError) as err:
        client.call_tool(tool, arguments)
    assert message in err.value.message
    if field is not None:
        assert (err.value.field or "").startswith(field)
    assert isinstance(client.stats().total, int)  # still serving


def test_content_that_is_not_text_is_named_once(client: MemoryClient) -> None:
    # It read "must be a string, got int (got 5)": the server added the value to a message that said it.
    with pytest.raises(MemoryToolError) as err:
        client.call_tool("store_memory", {"memories": [{"content": 5}]})
    assert err.value.field == "memories[0].content"
    assert err.value.message.endswith("memories[0].content: must be a string, got int")


def test_invalid_utf8_is_refused_before_it_reaches_the_transport(client: MemoryClient) -> None:
    with pytest.raises(InvalidInputError) as err:
        client.store("broken \ud800 surrogate")
    assert "UTF-8" in str(err.value)
    assert client.list_tools()  # the connection survived


def test_control_characters_are_stripped_from_stored_content(client: MemoryClient) -> None:
    result = client.store(unique("My flight leaves at\x00 9am on\x07 Friday"))
    assert "\x00" not in result.stored[0].content and "\x07" not in result.stored[0].content


def test_update_forget_list_stats_and_dump(client: MemoryClient) -> None:
    content = unique("My favourite editor is vim")
    (memory_id,) = client.store(content, kind="preference").ids
    updated = client.update(memory_id, content=content.replace("vim", "helix"), importance=0.95)
    assert "helix" in updated.content and updated.importance == 0.95
    assert any(r.id == memory_id for r in client.list(filters={"kinds": ["preference"]}, limit=1000))
    forgotten = client.forget(memory_id)
    assert forgotten.status is Status.DELETED
    assert all(r.id != memory_id for r in client.list(limit=1000))
    assert all(h.record.id != memory_id for h in client.recall("favourite editor", top_k=10).hits)
    stats = client.stats()
    assert stats.namespace == "contract" and stats.by_status.get("deleted", 0) >= 1
    dump = client.dump()
    assert "namespace contract" in dump and memory_id[:8] in dump
    with pytest.raises(MemoryToolNotFoundError) as err:
        client.forget(str(uuid.uuid4()))
    assert isinstance(err.value, MemoryNotFoundError)


def test_turns_working_memory_compression_and_clear(client: MemoryClient) -> None:
    session = f"s-{uuid.uuid4().hex[:8]}"
    first = client.record_turn("I'm planning a trip to Japan in April and I hate crowded places", session_id=session)
    assert first.turn.session_id == session and first.turn.tier.value == "working"
    client.record_turn("Noted, I will suggest quiet places.", session_id=session, role="assistant")
    for n in range(6):
        client.record_turn(
            f"Message {n} about temples, trains and ryokans in Kyoto and Nara",
            session_id=session,
            role="user" if n % 2 else "assistant",
        )
    window = client.working_memory(session)
    assert window[0].id == first.turn.id and len(window) == 8
    compression = client.compress(session, threshold_tokens=30)
    assert (
        compression is not None and compression.archived_ids and set(compression.archived_ids) <= {t.id for t in window}
    )
    # The user's turns are long-term memories already and the assistant's say nothing worth
    # keeping, so the archived groups need no summary (compression.py).
    assert compression.summaries == []
    assert len(client.working_memory(session)) < 8
    assert client.compress(session, threshold_tokens=100_000) is None
    client.record_turn("One more thing: I prefer trains to buses", session_id=session)
    live = len(client.working_memory(session))
    assert live >= 1 and client.clear_working(session) == live
    assert client.working_memory(session) == []


def test_maintain_memory_runs_the_upkeep_of_the_callers_namespace(client: MemoryClient) -> None:
    client.store(unique("The staging database is called kestrel"))
    preview = client.maintain(dry_run=True)
    assert preview.namespace == "contract" and preview.dry_run and preview.ok
    assert [step.step for step in preview.steps] == ["compress", "consolidate", "maintain"]
    done = client.maintain()
    assert done.namespace == "contract" and not done.dry_run and done.ok
    assert done.count("archived") == done.count("evicted") == 0  # nothing is stale yet: nothing moved
    coerced = client.call_tool("maintain_memory", {"dry_run": "TRUE "})  # as a model may write it
    assert coerced["dry_run"] is True and coerced["namespace"] == "contract"


async def test_async_api_and_sync_api_inside_a_running_loop(client: MemoryClient) -> None:
    content = unique("My cat is called Miso")
    stored = await client.astore(content)
    # LangChain calls sync methods from code that runs inside an event loop: must not deadlock.
    assert client.recall("what is my cat called", top_k=3).hits
    hits = await asyncio.gather(*(client.arecall("what is my cat called", top_k=3) for _ in range(4)))
    assert all(h.hits[0].record.id == stored.ids[0] for h in hits)
