"""How records are laid out in Chroma (layout 2), and that layout-1 stores keep working."""

from __future__ import annotations

import json
from datetime import UTC, datetime

from hindsight_integrations import MemoryEngine, Status
from hindsight_integrations.core.model.records import PACKED_KEY, Kind, MemoryRecord, Role, Source, Tier, to_epoch
from hindsight_integrations.core.storage.indexing import body_text

# What a layout-2 record may hold as separate Chroma keys (besides m.<key> user metadata).
SEPARATE = {
    "tier",
    "kind",
    "status",
    "importance",
    "occurred_at",
    "updated_at",
    "valid_until",
    "expires_at",
    "session_id",
    "agent_id",
    "slot",
    "request_id",
    "access_count",
    "last_accessed_at",
    PACKED_KEY,
}


def _raw(engine: MemoryEngine, namespace: str, memory_id: str) -> tuple[str | None, dict]:
    got = engine.chroma.namespace(namespace).collection.get(ids=[memory_id], include=["documents", "metadatas"])
    return got["documents"][0], got["metadatas"][0]


def _legacy_metadata(record: MemoryRecord) -> dict:
    """What version 1 wrote: every field its own key (content went in the document)."""
    return {k: v for k, v in record.flat_fields().items() if k != "content"}


def _every_field_set() -> MemoryRecord:
    moment = datetime(2026, 3, 14, 9, 26, 53, tzinfo=UTC)
    return MemoryRecord(
        namespace="ns",
        agent_id="agent-7",
        session_id="s-1",
        tier=Tier.SEMANTIC,
        kind=Kind.PREFERENCE,
        role=Role.ASSISTANT,
        content="Prefers tea — 绿茶 — over coffee.",
        summary="tea over coffee",
        context="Earlier turn: what do you drink?",
        entities=["tea", "coffee"],
        slot="user:drink",
        importance=0.8,
        token_count=9,
        occurred_at=moment,
        created_at=moment,
        updated_at=moment,
        valid_from=moment,
        valid_until=moment.replace(year=2027),
        expires_at=moment.replace(year=2028),
        last_accessed_at=moment,
        access_count=4,
        source=Source(session_id="s-1", message_ids=["m1", "m2"], memory_ids=["x"], origin="import"),
        status=Status.SUPERSEDED,
        superseded_by="other-id",
        request_id="req-1",
        metadata={"project": "apollo", "score": 3, "nested": {"a": [1, 2]}},
        embedding_model="minilm",
        embedding_dim=384,
    )


def test_every_field_survives_the_stored_layout() -> None:
    record = _every_field_set()
    meta = record.to_metadata()
    assert set(meta) - SEPARATE == {"m.project", "m.score"}
    assert json.loads(meta[PACKED_KEY])["content"] == record.content
    assert MemoryRecord.from_chroma(record.id, None, meta) == record


def test_layout_1_metadata_still_reads_as_the_same_record() -> None:
    record = _every_field_set()
    assert MemoryRecord.from_chroma(record.id, record.content, _legacy_metadata(record)) == record


def test_new_memories_keep_content_out_of_chroma_documents(engine: MemoryEngine) -> None:
    stored = engine.store(
        "Our staging cluster runs on Kubernetes 1.29.", namespace="lay", session_id="s9", metadata={"team": "infra"}
    ).stored[0]
    document, meta = _raw(engine, "lay", stored.id)
    assert document is None
    assert set(meta) - SEPARATE == {"m.team"}
    assert "access_count" not in meta and "last_accessed_at" not in meta  # never recalled: packed
    assert engine.get(stored.id, namespace="lay") == stored
    assert (
        engine.recall("staging cluster Kubernetes", namespace="lay", filters={"metadata": {"team": "infra"}})
        .hits[0]
        .record.id
        == stored.id
    )


def test_a_layout_1_store_is_recalled_and_rewritten_on_update(store_path, embedder) -> None:
    writer = MemoryEngine(store=store_path, embedder=embedder, llm=False)
    writer.store("The office wifi password rotates every Monday.", namespace="old")  # creates the collections
    moment = datetime(2026, 11, 2, 8, 0, tzinfo=UTC)  # whole seconds: epoch floats keep them exactly
    legacy = MemoryRecord(
        namespace="old",
        content="The backup job for invoices runs nightly at 02:00 UTC.",
        entities=["invoices"],
        slot="project:backup",
        occurred_at=moment,
        created_at=moment,
        updated_at=moment,
        valid_from=moment,
    )
    vector = embedder.embed([legacy.content])[0]
    writer.chroma.namespace("old").collection.add(
        ids=[legacy.id], documents=[legacy.content], metadatas=[_legacy_metadata(legacy)], embeddings=[vector]
    )

    reader = MemoryEngine(store=store_path, embedder=embedder, llm=False)  # loads its indexes from Chroma
    assert reader.get(legacy.id, namespace="old") == legacy
    hit = reader.recall("when does the invoices backup run", namespace="old", top_k=1).hits[0].record
    assert hit.model_copy(update={"access_count": 0, "last_accessed_at": None}) == legacy  # a hit counts its own recall
    assert reader.recall("02:00 UTC", namespace="old", top_k=1).hits[0].record.id == legacy.id  # lexical side

    updated = reader.update(legacy.id, namespace="old", content="The invoices backup now runs hourly.")
    _, meta = _raw(reader, "old", legacy.id)
    assert set(meta) - SEPARATE == set()  # the layout-1 keys are gone, slot included (the new text sets none)
    assert json.loads(meta[PACKED_KEY])["content"] == "The invoices backup now runs hourly."
    assert reader.get(legacy.id, namespace="old") == updated
    assert (
        reader.recall("how often does the invoices backup run", namespace="old", top_k=1).hits[0].record.content
        == updated.content
    )


def test_a_slot_cleared_by_an_edit_no_longer_supersedes(engine: MemoryEngine) -> None:
    moved = engine.store("I live in Berlin.", namespace="slots").stored[0]
    assert moved.slot == "user:location"
    engine.update(moved.id, namespace="slots", content="I enjoy hiking in the Alps every summer.")
    engine.store("I live in Paris now.", namespace="slots")
    assert engine.get(moved.id, namespace="slots").status is Status.ACTIVE
    assert "slot" not in _raw(engine, "slots", moved.id)[1]


def test_access_counts_survive_the_recorder_and_later_edits(engine: MemoryEngine) -> None:
    stored = engine.store("The release train leaves every second Thursday.", namespace="acc").stored[0]
    engine.recall("when does the release train leave", namespace="acc", top_k=1)
    engine.chroma.flush()
    assert _raw(engine, "acc", stored.id)[1]["access_count"] == 1  # written as its own key
    after_recall = engine.get(stored.id, namespace="acc")
    assert after_recall.access_count == 1 and after_recall.last_accessed_at is not None
    engine.update(stored.id, namespace="acc", importance=0.9)
    edited = engine.get(stored.id, namespace="acc")
    assert (edited.access_count, edited.last_accessed_at, edited.importance) == (1, after_recall.last_accessed_at, 0.9)


EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def test_a_memory_at_the_epoch_keeps_its_time(engine: MemoryEngine) -> None:
    """1970-01-01T00:00:00Z is stored as 0: read back, filtered on and indexed with its date, never as "unset"."""
    stored = engine.store(
        "The first clock ticked in Greenwich.", namespace="epoch", occurred_at="1970-01-01T00:00:00Z", kind="event"
    ).stored[0]
    assert engine.get(stored.id, namespace="epoch").occurred_at == EPOCH
    around = {"since": "1969-12-31T00:00:00Z", "until": "1970-01-02T00:00:00Z"}
    hits = engine.recall("when did the first clock tick", namespace="epoch", filters=around).hits
    assert [(h.record.id, h.record.occurred_at) for h in hits] == [(stored.id, EPOCH)]
    assert body_text(stored.flat_fields()).startswith("On 1 January 1970, ")  # dated like any other memory


def test_an_expiry_or_validity_end_at_the_epoch_is_not_never(engine: MemoryEngine) -> None:
    export = {
        "format": "hindsight-export",
        "records": [
            {
                "content": "The coupon code SPRING70 works at the till.",
                "occurred_at": "1969-12-01T00:00:00Z",
                "expires_at": "1970-01-01T00:00:00Z",
                "valid_until": "1970-01-01T00:00:00Z",
            }
        ],
    }
    engine.import_data(export, namespace="epoch")
    (record,) = engine.list(namespace="epoch", include_history=True)
    assert (record.expires_at, record.valid_until) == (EPOCH, EPOCH)
    assert engine.recall("coupon code SPRING70", namespace="epoch").hits == []  # expired long ago
    # the store's latest date, what "last week" in a question is read against, is its 1969 memory's
    assert engine.chroma.namespace("epoch").facts.latest_occurred == to_epoch(record.occurred_at)
