"""Writing: filter, importance, dedup, conflicts, TTL, update, soft delete, export/import."""

from __future__ import annotations

import json
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from hindsight_integrations import EmbeddingModelMismatchError, Kind, MemoryEngine, Role, Status, Tier
from hindsight_integrations.core.clock import ManualClock
from hindsight_integrations.core.embedding.chroma_function import ChromaFunctionEmbedder
from hindsight_integrations.core.embedding.local import LocalEmbedder
from hindsight_integrations.core.model.records import MemoryRecord
from hindsight_integrations.core.write.admission import assess
from hindsight_integrations.core.write.repeats import reinforce


@pytest.mark.parametrize("text", ["hi", "Hello!", "ok thanks", "Thanks!", "好的", "谢谢", "sure", "lol"])
def test_chit_chat_is_not_stored(engine: MemoryEngine, text: str) -> None:
    result = engine.store(text, namespace="u1")
    assert result.stored == [] and result.skipped and result.skipped[0].reason


@pytest.mark.parametrize(
    ("text", "kind", "importance"),
    [
        ("I prefer concise answers with code examples.", Kind.PREFERENCE, 0.9),
        ("Actually, the service runs on PostgreSQL, not MySQL.", Kind.CORRECTION, 0.9),
        ("The budget for the launch must stay under 5000 euros.", Kind.CONTEXT, 0.9),
        ("We're building a checkout service and the database is MySQL.", Kind.CONTEXT, 0.8),
        ("I have a dentist appointment tomorrow at 9am.", Kind.EVENT, 0.7),
    ],
)
def test_rules_keep_what_matters(text: str, kind: Kind, importance: float) -> None:
    decision = assess(text, Role.USER)
    assert decision.remember and decision.kind is kind and decision.importance == importance


def test_tool_results_are_selective_and_thoughts_never_stored() -> None:
    assert assess("Config saved: max_connections=200, port 5432", Role.TOOL).importance == 0.8
    assert not assess("The weather in Paris is 18°C and sunny", Role.TOOL).remember
    assert not assess("Thought: I should look up the user's database first", Role.ASSISTANT).remember
    assert not assess("Sure, happy to help with that!", Role.ASSISTANT).remember


def test_preferences_go_to_semantic_tier(engine: MemoryEngine) -> None:
    record = engine.store("Please always answer in British English.", namespace="u1").stored[0]
    assert record.tier is Tier.SEMANTIC and record.kind is Kind.PREFERENCE


def test_near_duplicate_reinforces_instead_of_adding(engine: MemoryEngine) -> None:
    first = engine.store("I prefer dark mode in every editor I use.", namespace="u1").stored[0]
    second = engine.store("I prefer dark mode in every editor that I use.", namespace="u1")
    assert second.merged == [first.id]
    assert second.stored[0].id == first.id
    assert len(engine.list(namespace="u1")) == 1
    kept = engine.get(first.id, namespace="u1")
    assert kept.content == "I prefer dark mode in every editor I use."  # a repeat never rewrites the memory
    assert [s["content"] for s in kept.sources] == ["I prefer dark mode in every editor that I use."]


def test_correction_supersedes_and_history_is_kept(engine: MemoryEngine) -> None:
    old = engine.store("Our project database is MySQL 8.", namespace="u1").stored[0]
    new = engine.store("Correction: the project actually uses PostgreSQL, not MySQL.", namespace="u1")
    assert new.superseded == [old.id]
    archived = engine.get(old.id, namespace="u1")
    assert archived.status is Status.SUPERSEDED
    assert archived.valid_until is not None and archived.superseded_by == new.stored[0].id
    current = engine.recall("which database does the project use", namespace="u1", top_k=5)
    assert [h.record.id for h in current.hits] == [new.stored[0].id]
    history = engine.recall("which database does the project use", namespace="u1", top_k=5, include_history=True)
    assert {h.record.id for h in history.hits} == {old.id, new.stored[0].id}
    assert "[superseded on" in history.context


def test_different_attributes_do_not_conflict(engine: MemoryEngine) -> None:
    engine.store("I like red sports cars.", namespace="u1")
    result = engine.store("I hate red clothes, never suggest them.", namespace="u1")
    assert result.superseded == []
    assert all(r.status is Status.ACTIVE for r in engine.list(namespace="u1"))


def test_location_change_supersedes(engine: MemoryEngine) -> None:
    engine.store("I live in Beijing near the university.", namespace="u1")
    result = engine.store("I moved to Shanghai last month.", namespace="u1")
    assert len(result.superseded) == 1


def test_ttl_expiry_hides_but_keeps(store_path: Path, embedder: LocalEmbedder) -> None:
    clock = ManualClock()
    engine = MemoryEngine(store=store_path, embedder=embedder, llm=False, clock=clock)
    record = engine.store("The staging password rotates at the end of today.", namespace="u1", ttl_seconds=1).stored[0]
    assert record.expires_at is not None
    assert engine.recall("staging password", namespace="u1").hits
    clock.advance(seconds=2)
    assert engine.recall("staging password", namespace="u1").hits == []
    assert engine.get(record.id, namespace="u1").content.startswith("The staging password")
    assert engine.recall("staging password", namespace="u1", include_history=True).hits


def test_time_bound_event_gets_expiry(engine: MemoryEngine) -> None:
    record = engine.store("I have a meeting with the design team tomorrow at 10am.", namespace="u1").stored[0]
    assert record.kind is Kind.EVENT
    assert record.expires_at - record.occurred_at == timedelta(days=3)


def test_unfiltered_writes_keep_what_the_caller_said(engine: MemoryEngine) -> None:
    # With kind and importance given and no filtering asked for, the write filter is not run
    # (bulk imports); what the caller left out is still classified by it.
    given, turn, unclassified = engine.store_memories(
        [
            {"content": "I have a meeting with the design team tomorrow at 10am.", "kind": "fact", "importance": 0.3},
            {"content": "I have a meeting with the design team tomorrow at 11am.", "kind": "turn", "importance": 0.3},
            {"content": "I have a meeting with the design team tomorrow at noon.", "importance": 0.3},
        ],
        namespace="u1",
        apply_filter=False,
        dedup=False,
    ).stored
    assert (given.kind, given.importance, given.expires_at, given.tier) == (Kind.FACT, 0.3, None, Tier.EPISODIC)
    assert turn.kind is Kind.EVENT  # a turn the filter would remember is kept as what it is
    assert unclassified.kind is Kind.EVENT and unclassified.expires_at is not None


def test_update_reembeds_and_reindexes(engine: MemoryEngine) -> None:
    record = engine.store("The release train leaves every second Tuesday.", namespace="u1").stored[0]
    engine.update(
        record.id,
        namespace="u1",
        content="The release train leaves every Thursday at noon, code XR-55.",
        importance=0.95,
    )
    updated = engine.get(record.id, namespace="u1")
    assert updated.importance == 0.95 and "Thursday" in updated.content
    assert engine.recall("XR-55", namespace="u1").hits[0].record.id == record.id


def test_request_id_makes_writes_idempotent(engine: MemoryEngine) -> None:
    first = engine.store("Deploys happen from the main branch only.", namespace="u1", request_id="req-1")
    again = engine.store("Deploys happen from the main branch only.", namespace="u1", request_id="req-1")
    assert again.replayed and again.ids == first.ids
    assert len(engine.list(namespace="u1")) == 1
    with pytest.raises(ValueError, match="request_id"):
        engine.store("Something else entirely about deploys.", namespace="u1", request_id="req-1")


def test_a_repeat_later_in_a_batch_never_updates_a_memory_before_it_was_created(engine: MemoryEngine) -> None:
    # A batch's items are stamped a microsecond apart, in order; the repeat merged at the batch's first
    # stamp, so the memory the third item made was updated a microsecond before it was created.
    said = ["I use vim keybindings", "My cat is called Miso", "I am allergic to peanuts.", "I am allergic to peanuts."]
    result = engine.store_memories(said, namespace="u1")
    (merged_id,) = result.merged
    merged = engine.get(merged_id, namespace="u1")
    assert merged.updated_at >= merged.created_at
    assert datetime.fromisoformat(merged.sources[0]["merged_at"]) >= merged.created_at
    assert all(m.updated_at >= m.created_at for m in engine.list(namespace="u1"))


def test_a_repeat_dated_before_its_memory_was_created_is_merged_at_the_creation() -> None:
    """A clock that stepped back, or a memory imported from a clock ahead, leaves ``updated_at`` at ``created_at``."""
    created = datetime(2024, 3, 1, 9, 0, tzinfo=UTC)
    existing = MemoryRecord(namespace="u1", content="I am allergic to peanuts.", created_at=created, updated_at=created)
    earlier = created - timedelta(seconds=5)
    repeat = MemoryRecord(namespace="u1", content="I am allergic to peanuts.", created_at=earlier, updated_at=earlier)
    reinforced = reinforce(existing, repeat, earlier)
    assert reinforced.updated_at == reinforced.last_accessed_at == created
    assert reinforced.sources[0]["merged_at"] == created.isoformat()


def test_a_retried_write_that_repeated_a_memory_reinforces_it_once(engine: MemoryEngine) -> None:
    """A store whose items all merged into stored memories wrote no record carrying its request id: a retry
    (``MemoryClient`` retries a timed-out store by itself) must still find it and merge nothing twice."""
    kept = engine.store("I am allergic to peanuts.", namespace="u1").stored[0]
    batch = ["I am allergic to peanuts.", "I am allergic to peanuts."]
    first = engine.store_memories(batch, namespace="u1", request_id="req-2")
    again = engine.store_memories(batch, namespace="u1", request_id="req-2")
    assert again.ids == first.ids == [kept.id, kept.id] and again.merged == first.merged and again.replayed
    record = engine.get(kept.id, namespace="u1")
    assert len(record.sources) == 2 and record.access_count == 2
    with pytest.raises(ValueError, match="request_id"):
        engine.store("I am allergic to peanuts!", namespace="u1", request_id="req-2")
    assert len(engine.get(kept.id, namespace="u1").sources) == 2


def test_a_replayed_batch_answers_every_item_in_input_order(engine: MemoryEngine) -> None:
    """An item that merged into a stored memory is in the replay too, where it was: ``ids`` are in input order."""
    kept = engine.store("I am allergic to peanuts.", namespace="u1").stored[0]
    batch = ["I work night shifts at the hospital.", "I am allergic to peanuts.", "My sister lives in Leeds."]
    first = engine.store_memories(batch, namespace="u1", request_id="req-3")
    again = engine.store_memories(batch, namespace="u1", request_id="req-3")
    assert first.ids[1] == kept.id and first.merged == [kept.id]
    assert again.replayed and again.ids == first.ids and again.merged == first.merged
    assert len(engine.get(kept.id, namespace="u1").sources) == 1


def test_export_import_round_trip_loses_nothing(engine: MemoryEngine, tmp_path: Path, embedder) -> None:
    engine.store("Our project database is MySQL 8.", namespace="u1", metadata={"k": 1})
    engine.store("Correction: the project actually uses PostgreSQL, not MySQL.", namespace="u1")
    wifi = engine.store("The office wifi is called Hive-5G.", namespace="u1", ttl_seconds=3600).stored[0]
    engine.forget(wifi.id, namespace="u1")
    data = engine.export(namespace="u1")
    copy = MemoryEngine(store=tmp_path / "copy", embedder=embedder, llm=False)
    assert copy.import_data(json.loads(json.dumps(data)), namespace="u2") == len(data["records"])
    again = copy.export(namespace="u2")
    vectors = ("embedding", "window_embedding")

    def strip(d: dict) -> list[dict]:
        return sorted(
            ({k: v for k, v in r.items() if k not in ("namespace", *vectors)} for r in d["records"]),
            key=lambda r: r["id"],
        )

    assert strip(again) == strip(data)
    # Chroma re-normalises every vector it stores for cosine search, in float32: a stored vector
    # can come back a few ulps (~1e-8) away from the one written, on the first write or a later one.
    before, after = ({r["id"]: r for r in d["records"]} for d in (data, again))
    for memory_id, record in before.items():
        for key in vectors:
            if record.get(key) is not None:
                assert after[memory_id][key] == pytest.approx(record[key], abs=1e-6)


def test_archived_memories_travel_with_their_export_and_restore_where_they_land(
    timed: MemoryEngine, clock: ManualClock, tmp_path: Path, embedder
) -> None:
    """Export carries the cold storage (``cold_records``); import puts it into the new namespace's, for restore."""
    stale = timed.store("The old staging host was called zeus-1.", namespace="u1", importance=0.2).stored[0]
    timed.store("I prefer concise answers.", namespace="u1", kind="preference")
    clock.advance(days=100)
    assert timed.maintain(namespace="u1").archived == [stale.id]
    data = json.loads(json.dumps(timed.export(namespace="u1")))
    assert [r["id"] for r in data["cold_records"]] == [stale.id] and stale.id not in {r["id"] for r in data["records"]}
    assert data["cold_records"][0]["status"] == "archived" and data["cold_records"][0]["embedding"]

    copy = MemoryEngine(store=tmp_path / "copy", embedder=embedder, llm=False, clock=clock)
    assert copy.import_data(data, namespace="u2") == 2  # one in Chroma, one in cold storage
    assert copy.archived_ids(namespace="u2") == [stale.id] and copy.stats(namespace="u2").total == 1
    again = copy.export(namespace="u2")["cold_records"][0]
    assert {k: v for k, v in again.items() if k != "namespace"} == {
        k: v for k, v in data["cold_records"][0].items() if k != "namespace"
    }  # vectors of the same model kept as they were
    assert copy.restore(namespace="u2") == 1
    assert copy.recall("zeus-1", namespace="u2", top_k=1).hits[0].record.id == stale.id

    without = timed.export(namespace="u1", include_embeddings=False)
    assert "embedding" not in without["cold_records"][0]
    other = MemoryEngine(store=tmp_path / "other", embedder=ChromaFunctionEmbedder(_HashEmbedding()), llm=False)
    other.import_data(timed.export(namespace="u1"), namespace="u1")  # another model: restore embeds it again
    assert other.restore(namespace="u1") == 1
    assert other.get(stale.id, namespace="u1").embedding_model == "char-hash-32"

    older = {k: v for k, v in data.items() if k != "cold_records"}  # an export written before cold records
    assert copy.import_data(older, namespace="u3") == 1 and copy.archived_ids(namespace="u3") == []


def test_reading_a_namespace_never_written_creates_nothing(engine: MemoryEngine) -> None:
    """stats, dump, export, archived_ids, maintain and restore of a mistyped name leave the store as it was."""
    engine.store("The staging server is called atlas-7.", namespace="alice")
    assert engine.stats(namespace="alce").total == 0
    assert "0 memories" in engine.dump(namespace="alce")
    assert engine.export(namespace="alce")["records"] == [] and engine.archived_ids(namespace="alce") == []
    assert engine.maintain(namespace="alce").archived == [] and engine.restore(namespace="alce") == 0
    assert engine.namespaces() == ["alice"]
    assert MemoryEngine(store=engine.settings.store, embedder=engine.embedder, llm=False).namespaces() == ["alice"]


def test_every_kind_of_record_the_engine_writes_imports_within_the_bounds(
    timed: MemoryEngine, clock: ManualClock, tmp_path: Path, embedder
) -> None:
    """Import holds records to the write path's bounds; what the engine itself wrote passes them, its own keys too."""
    ns = "u1"
    timed.store("I live in Beijing.", namespace=ns, request_id="req-1")
    timed.store("I live in Shanghai now.", namespace=ns)  # supersedes Beijing
    timed.store("My blood type is O negative.", namespace=ns, importance=0.95)
    timed.store("My blood type is A positive.", namespace=ns, trusted=False)  # quarantined for review
    for session in ("s1", "s2"):
        timed.store_memories([{"content": "The standup is at 9:30.", "session_id": session}], namespace=ns, dedup=False)
        clock.advance(days=1)
    for day in range(4):
        timed.store(f"Swam {40 - day} lengths at the pool tonight.", namespace=ns, kind="event", session_id=f"d{day}")
        clock.advance(days=1)
    for i in range(8):
        timed.record_turn(f"Turn {i}: the budget line {i} of the Osaka office", session_id="s3", namespace=ns)
    timed.compress(session_id="s3", namespace=ns, force=True)
    timed.consolidate(namespace=ns)
    timed.store("The old staging host was called zeus-1.", namespace=ns, importance=0.2)
    clock.advance(days=100)
    timed.maintain(namespace=ns)  # decays some, archives the staging host
    data = json.loads(json.dumps(timed.export(namespace=ns)))
    own = {k for r in data["records"] + data["cold_records"] for k in r["metadata"] if k.startswith("_")}
    assert own == {"_request_hash", "_supersedes", "_merged_into", "_habit", "_decayed_at", "_stated_importance"}
    statuses = {r["status"] for r in data["records"]}
    assert {"active", "superseded", "quarantined", "archived"} <= statuses and data["cold_records"]

    copy = MemoryEngine(store=tmp_path / "copy", embedder=embedder, llm=False, clock=clock)
    assert copy.import_data(data, namespace="u2") == len(data["records"]) + len(data["cold_records"])
    assert copy.maintain(namespace="u2", now=clock.now() + timedelta(days=40)).namespace == "u2"


class _HashEmbedding:
    """A second, genuinely different embedding function (character-hash vectors)."""

    def __call__(self, input):
        out = []
        for text in input:
            v = [0.0] * 32
            for ch in text:
                v[ord(ch) % 32] += 1.0
            n = sum(x * x for x in v) ** 0.5 or 1.0
            out.append([x / n for x in v])
        return out

    def name(self) -> str:
        return "char-hash-32"


def test_mismatched_embedding_model_is_refused(engine: MemoryEngine, store_path: Path) -> None:
    engine.store("The CI runs on GitHub Actions with 4 runners.", namespace="u1")
    other = MemoryEngine(store=store_path, embedding_function=_HashEmbedding(), llm=False)
    with pytest.raises(EmbeddingModelMismatchError) as err:
        other.recall("CI", namespace="u1")
    assert "all-MiniLM-L6-v2" in str(err.value) and "char-hash-32" in str(err.value)
    assert engine.recall("which CI do we use", namespace="u1").hits  # the original still works


def test_import_reembeds_when_the_model_differs(engine: MemoryEngine, tmp_path: Path) -> None:
    engine.store("The CI runs on GitHub Actions with 4 runners.", namespace="u1")
    data = engine.export(namespace="u1")
    other = MemoryEngine(store=tmp_path / "other", embedder=ChromaFunctionEmbedder(_HashEmbedding()), llm=False)
    other.import_data(data, namespace="u1")
    record = other.recall("GitHub Actions runners", namespace="u1").hits[0].record
    assert record.embedding_model == "char-hash-32" and record.embedding_dim == 32


def test_fact_stored_in_one_process_is_recalled_in_another(store_path: Path) -> None:
    script = (
        "import sys, json; from hindsight_integrations import MemoryEngine;"
        "e = MemoryEngine(store=sys.argv[1], llm=False);"
        "cmd = sys.argv[2]\n"
        "if cmd == 'write': print(e.store('My cat is called Miso and she is 4 years old.', namespace='u1').ids[0])\n"
        "else: print(json.dumps([h.record.content for h in e.recall('what is my cat called', namespace='u1').hits]))"
    )
    env_python = sys.executable
    written = subprocess.run(
        [env_python, "-c", script, str(store_path), "write"], capture_output=True, text=True, timeout=180
    )
    assert written.returncode == 0, written.stderr
    read = subprocess.run(
        [env_python, "-c", script, str(store_path), "read"], capture_output=True, text=True, timeout=180
    )
    assert read.returncode == 0, read.stderr
    assert "My cat is called Miso and she is 4 years old." in json.loads(read.stdout.strip().splitlines()[-1])


def test_other_writers_reach_the_lexical_index(engine: MemoryEngine, store_path: Path, embedder) -> None:
    engine.store("Warm-up memory so the namespace is open.", namespace="u1", apply_filter=False)
    engine.recall("warm", namespace="u1")
    writer = MemoryEngine(store=store_path, embedder=embedder, llm=False)
    writer.store("Ticket ZX-9912 tracks the flaky login test.", namespace="u1")
    engine.chroma.namespace("u1").sync_indexes(force=True)
    assert any(h.record.content.startswith("Ticket ZX-9912") for h in engine.recall("ZX-9912", namespace="u1").hits)


def test_occurred_at_is_kept_for_imported_conversations(engine: MemoryEngine) -> None:
    when = datetime(2023, 5, 8, 13, 56, tzinfo=UTC)
    record = engine.store(
        "Caroline went to the LGBTQ support group yesterday.", namespace="u1", occurred_at=when, apply_filter=False
    ).stored[0]
    assert engine.get(record.id, namespace="u1").occurred_at == when
