"""The wire format, without a server: answers keep today's JSON shape and read back as the engine's
own result types; tool parameters are generated from the shared argument models."""

from __future__ import annotations

import types
from datetime import UTC, datetime
from typing import Any

import anyio
import pytest

from hindsight_integrations.core.config import Settings
from hindsight_integrations.core.model.inputs import MemoryInput, MemoryItem
from hindsight_integrations.core.model.records import Kind, MemoryRecord, Role, Source, Status, Tier
from hindsight_integrations.core.model.results import (
    CompressionResult,
    RecallHit,
    RecallResult,
    SkippedMemory,
    StoreResult,
    TurnResult,
)
from hindsight_integrations.mcp import answers, wire
from hindsight_integrations.mcp.server import build_server

T = datetime(2024, 5, 4, 10, 0, tzinfo=UTC)


def record(n: int, **fields: Any) -> MemoryRecord:
    return MemoryRecord(
        id=f"id-{n}",
        namespace="ns",
        content=f"memory number {n}",
        occurred_at=T,
        created_at=T,
        updated_at=T,
        valid_from=T,
        source=Source(origin="mcp"),
        metadata={"n": n},
        **fields,
    )


STORE = StoreResult(
    stored=[record(1, kind=Kind.PREFERENCE, tier=Tier.SEMANTIC), record(2)],
    skipped=[SkippedMemory(index=2, content="thanks!", reason="small talk")],
    superseded=["old-1"],
    merged=["id-2"],
)
RECALL = RecallResult(
    query="what does the user like?",
    hits=[
        RecallHit(record=record(3), score=0.9, relevance=0.8, similarity=0.7, lexical=0.2, recency=0.1),
        RecallHit(record=record(4, status=Status.SUPERSEDED), score=0.5, relevance=0.4),
    ],
    context="[2024-05-04] memory number 3",
    tokens=12,
)
COMPRESSION = CompressionResult(
    summaries=[record(5, kind=Kind.SUMMARY)], archived_ids=["a", "b"], tokens_before=900, tokens_after=300
)


def test_store_result_keeps_its_json_shape_and_round_trips() -> None:
    data = answers.StoreOut(**dict(STORE), request_id="req-1").model_dump(mode="json")
    assert data == {
        "ids": ["id-1", "id-2"],
        "stored": [r.public_dict() for r in STORE.stored],
        "skipped": [{"index": 2, "content": "thanks!", "reason": "small talk"}],
        "superseded": ["old-1"],
        "merged": ["id-2"],
        "quarantined": [],
        "replayed": False,
        "request_id": "req-1",
    }
    assert list(data) == ["ids", "stored", "skipped", "superseded", "merged", "quarantined", "replayed", "request_id"]
    assert StoreResult.model_validate(data) == STORE  # what the client reads: the engine's own type
    # An older server's answer without the later keys still reads.
    assert StoreResult.model_validate({"stored": data["stored"], "skipped": []}).ids == ["id-1", "id-2"]


def test_recall_memories_are_records_with_their_score_fields_beside() -> None:
    data = answers.RecallOut.model_validate(RECALL, from_attributes=True).model_dump(mode="json")
    assert list(data) == ["query", "memories", "context", "tokens"]
    first = data["memories"][0]
    assert first == {
        **RECALL.hits[0].record.public_dict(),
        "score": 0.9,
        "relevance": 0.8,
        "similarity": 0.7,
        "lexical": 0.2,
        "recency": 0.1,
    }
    read = answers.RecallOut.model_validate(data).engine_result()
    assert read == RECALL and type(read) is RecallResult
    # the re-ranker's logit travels beside the others when it ran (HINDSIGHT_RERANK), and reads back
    reranked = RECALL.model_copy(update={"hits": [RECALL.hits[0].model_copy(update={"cross_encoder": 1.5})]})
    sent = answers.RecallOut.model_validate(reranked, from_attributes=True).model_dump(mode="json")
    assert sent["memories"][0]["cross_encoder"] == 1.5
    assert answers.RecallOut.model_validate(sent).engine_result() == reranked


def test_turn_and_compression_results_round_trip() -> None:
    turn = TurnResult(turn=record(6, tier=Tier.WORKING, kind=Kind.TURN), stored=STORE, compression=COMPRESSION)
    data = answers.TurnOut.model_validate(turn, from_attributes=True).model_dump(mode="json")
    assert data["turn_id"] == "id-6" and data["stored"]["request_id"] is None
    assert data["compression"] == COMPRESSION.model_dump(mode="json")
    assert list(data) == ["turn_id", "turn", "stored", "compression"]
    assert list(data["stored"]) == [
        "ids",
        "stored",
        "skipped",
        "superseded",
        "merged",
        "quarantined",
        "replayed",
        "request_id",
    ]
    assert TurnResult.model_validate(data) == turn
    compressed = answers.CompressOut(session_id="s1", compressed=False, compression=None).model_dump(mode="json")
    assert compressed == {"session_id": "s1", "compressed": False, "compression": None}


def test_arguments_leave_out_none_and_defaults() -> None:
    args = wire.ListMemoriesArgs.model_construct(filters=None, include_history=False, limit=20, offset=40)
    assert args.wire() == {"offset": 40}
    store = wire.StoreMemoryArgs.model_construct(request_id="r", apply_filter=True, dedup=False, supersede=True)
    assert store.wire() == {"request_id": "r", "dedup": False}
    assert wire.RetrieveMemoryArgs.model_construct(query="q", top_k=3).wire() == {"query": "q", "top_k": 3}


def test_batch_items_are_sent_without_defaults_and_without_provenance() -> None:
    assert wire.batch_item(MemoryItem(content="x", kind=Kind.FACT)) == {"content": "x", "kind": "fact"}
    assert wire.batch_item("plain text") == "plain text"
    with pytest.raises(ValueError, match="source"):
        wire.batch_item(MemoryInput(content="x", source=Source(origin="import")))


def test_memory_items_are_lenient_where_models_are_sloppy() -> None:
    item = MemoryItem.model_validate('{"content": "I like tea", "kind": "PREFERENCE", "metadata": "{\\"a\\": 1}"}')
    assert item.kind is Kind.PREFERENCE and item.metadata == {"a": 1}
    assert MemoryItem.model_validate("just text").content == "just text"
    assert MemoryItem.model_validate({"content": "x", "role": " Assistant"}).role is Role.ASSISTANT
    with pytest.raises(ValueError, match="colour"):
        MemoryItem.model_validate({"content": "x", "colour": "red"})


# -- the generated tool parameters ------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def server():
    """A server on a stand-in engine: listing tools and refusing arguments never reach the engine."""
    return build_server(types.SimpleNamespace(settings=Settings(namespace="wire")))


def tools_of(server) -> dict[str, Any]:
    async def listed() -> Any:
        return await server.list_tools()

    return {t.name: t for t in anyio.run(listed)}


def test_store_memory_parameters_are_the_batch_item_fields_plus_its_own(server) -> None:
    schema = tools_of(server)["store_memory"].inputSchema
    own = {"request_id", "memories", "apply_filter", "dedup", "supersede"}
    assert set(wire.StoreMemoryArgs.model_fields) == own
    assert set(schema["properties"]) == set(MemoryItem.model_fields) | own
    assert not schema.get("required")  # `content` or `memories`: the tool checks that one is given
    item = schema["$defs"]["MemoryItem"]
    assert set(item["properties"]) == set(MemoryItem.model_fields) and item["required"] == ["content"]
    for name, field in MemoryItem.model_fields.items():
        expected = wire.SINGLE_MEMORY_DESCRIPTIONS.get(name, field.description)
        assert schema["properties"][name]["description"] == expected


def test_every_other_tool_has_exactly_its_argument_model_fields(server) -> None:
    tools = tools_of(server)
    models = [m for m in vars(wire).values() if isinstance(m, type) and issubclass(m, wire.ToolArgs)]
    named = {m.tool: m for m in models if m is not wire.ToolArgs and m is not wire.StoreMemoryArgs}
    assert set(named) | {"store_memory"} == set(tools)
    for name, model in named.items():
        schema = tools[name].inputSchema
        assert set(schema["properties"]) == set(model.model_fields), name
        assert set(schema.get("required", [])) == {n for n, f in model.model_fields.items() if f.is_required()}


def validated(server, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """The arguments as the server's generated signature validates them (before the engine is called)."""
    metadata = server._tool_manager.get_tool(tool).fn_metadata
    return metadata.arg_model.model_validate(metadata.pre_parse_json(arguments)).model_dump_one_level()


def test_the_coercions_models_need_still_apply(server) -> None:
    single = validated(
        server,
        "store_memory",
        {"content": "x", "kind": "PREFERENCE", "apply_filter": "False ", "metadata": '{"a": 1}', "importance": "0.5"},
    )
    assert single["kind"] is Kind.PREFERENCE and single["apply_filter"] is False
    assert single["metadata"] == {"a": 1} and single["importance"] == 0.5
    batch = validated(server, "store_memory", {"memories": '["bare text", {"content": "y", "tier": "Semantic"}]'})
    assert [m.content for m in batch["memories"]] == ["bare text", "y"] and batch["memories"][1].tier is Tier.SEMANTIC
    recall = validated(server, "retrieve_memory", {"query": "q", "top_k": "3", "include_history": "false"})
    assert recall["top_k"] == 3 and recall["include_history"] is False


def test_unknown_arguments_are_refused_by_name(server) -> None:
    async def call() -> Any:
        return await server.call_tool("store_memory", {"content": "x", "colour": "red"})

    result = anyio.run(call)
    assert result.isError and result.structuredContent["error"]["field"] == "colour"
    assert "unknown argument 'colour'" in result.structuredContent["error"]["message"]
