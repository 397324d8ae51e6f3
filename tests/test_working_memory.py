"""Working memory: token-bounded window, compression at the threshold, persistence."""

from __future__ import annotations

import subprocess
import sys
import threading
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from hindsight_integrations import InvalidInputError, Kind, MemoryEngine, Status, Tier


def _talk(engine: MemoryEngine, session: str, n: int, start: datetime | None = None, *, extract: bool = True) -> None:
    start = start or datetime(2024, 3, 1, 9, 0, tzinfo=UTC)
    for i in range(n):
        role = "user" if i % 2 == 0 else "assistant"
        text = (
            f"Step {i}: we configured the ingestion worker {i} to read from queue orders-{i} "
            f"and write batches of {10 * i} rows."
            if role == "user"
            else f"Noted step {i}; worker {i} reads orders-{i}."
        )
        engine.record_turn(
            text,
            session_id=session,
            role=role,
            namespace="u1",
            occurred_at=start + timedelta(minutes=i),
            compress=False,
            extract=extract,
        )


def test_window_is_ordered_and_persists_across_processes(engine: MemoryEngine, store_path: Path) -> None:
    _talk(engine, "s1", 4)
    window = engine.working_window(session_id="s1", namespace="u1")
    assert [t.content.split(":")[0] for t in window] == [
        "Step 0",
        "Noted step 1; worker 1 reads orders-1.",
        "Step 2",
        "Noted step 3; worker 3 reads orders-3.",
    ]
    assert all(t.tier is Tier.WORKING and t.kind is Kind.TURN for t in window)
    code = (
        "import sys; from hindsight_integrations import MemoryEngine;"
        "e = MemoryEngine(store=sys.argv[1], llm=False);"
        "print(len(e.working_window(session_id='s1', namespace='u1')))"
    )
    out = subprocess.run([sys.executable, "-c", code, str(store_path)], capture_output=True, text=True, timeout=180)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip().splitlines()[-1] == "4"


def test_compression_happens_at_the_threshold(engine: MemoryEngine) -> None:
    _talk(engine, "s1", 10, extract=False)  # nothing remembered: the summary is the turns' only trace
    window = engine.working_window(session_id="s1", namespace="u1")
    total = sum(t.token_count for t in window)
    assert (
        engine.compress(session_id="s1", namespace="u1", threshold_tokens=total) is None
    )  # at the threshold: nothing to do
    result = engine.compress(session_id="s1", namespace="u1", threshold_tokens=total - 1)
    assert result is not None and result.summaries
    assert result.tokens_before == total
    # folded well under the threshold, not just under it: the next turn does not compress again
    assert result.tokens_after <= (total - 1) * engine.settings.compress_target
    summary = result.summaries[0]
    assert summary.tier is Tier.EPISODIC and summary.kind is Kind.SUMMARY
    assert summary.source.message_ids == result.archived_ids[: len(summary.source.message_ids)]
    assert "orders-0" in summary.content  # extractive: key facts of the oldest turns survive
    live = engine.working_window(session_id="s1", namespace="u1")
    assert len(live) == 10 - len(result.archived_ids)
    archived = engine.get(result.archived_ids[0], namespace="u1")
    assert archived.status is Status.ARCHIVED and archived.metadata["summary_id"] == summary.id
    assert engine.recall("which queue does worker 0 read", namespace="u1", top_k=3).hits


def test_a_summary_holds_only_what_no_memory_holds(engine: MemoryEngine) -> None:
    """Remembered turns stay out of summaries: a copy there would keep a value its memory's correction replaced."""
    _talk(engine, "s1", 6)  # each user turn is remembered on its own; the assistant's acknowledgements are not
    engine.record_turn(
        "We decided to shard the orders table by shop id.",
        session_id="s1",
        namespace="u1",
        extract=False,
        occurred_at=datetime(2024, 3, 1, 9, 30, tzinfo=UTC),
    )
    _talk(engine, "s1", 6, start=datetime(2024, 3, 1, 10, 0, tzinfo=UTC))
    result = engine.compress(session_id="s1", namespace="u1", threshold_tokens=1)
    assert result is not None and len(result.archived_ids) == 11  # all but the two newest turns
    (summary,) = result.summaries  # only the group with the unremembered decision gets one
    assert "shard the orders table" in summary.content
    assert "orders-0" not in summary.content and "Step" not in summary.content
    memories = engine.list(namespace="u1", filters={"tiers": ["episodic", "semantic"]}, limit=100)
    remembered = {turn_id for m in memories for turn_id in m.source.message_ids if m.kind is not Kind.SUMMARY}
    for turn_id in result.archived_ids:
        turn = engine.get(turn_id, namespace="u1")
        assert turn.status is Status.ARCHIVED
        assert turn_id in remembered or turn.metadata.get("summary_id") == summary.id or turn.role.value == "assistant"
    assert engine.recall("which queue does worker 0 read", namespace="u1", top_k=3).hits


def test_record_turn_compresses_automatically(store_path: Path, embedder) -> None:
    engine = MemoryEngine(store=store_path, embedder=embedder, llm=False, context_window_tokens=400, compress_ratio=0.4)
    assert engine.settings.compress_threshold_tokens == 160
    compressed = []
    for i in range(12):
        result = engine.record_turn(
            f"Requirement {i}: the export job must finish before {i + 1} am and keep {i * 3} days of logs.",
            session_id="s1",
            namespace="u1",
        )
        if result.compression:
            compressed.append(result.compression)
        assert sum(t.token_count for t in engine.working_window(session_id="s1", namespace="u1")) <= 160 or i < 2
    assert compressed, "the window passed 40% of the context window and was never compressed"


def test_record_turn_applies_the_write_filter(engine: MemoryEngine) -> None:
    hello = engine.record_turn("hello!", session_id="s1", namespace="u1")
    assert hello.stored.stored == [] and hello.turn.tier is Tier.WORKING
    fact = engine.record_turn("I prefer tabs over spaces in every Go file.", session_id="s1", namespace="u1")
    assert fact.stored.stored[0].kind is Kind.PREFERENCE
    assert fact.stored.stored[0].source.message_ids == [fact.turn.id]


def test_clear_working_keeps_long_term(engine: MemoryEngine) -> None:
    engine.record_turn("My preferred cloud is GCP for all new services.", session_id="s1", namespace="u1")
    assert engine.clear_working(session_id="s1", namespace="u1") == 1
    assert engine.working_window(session_id="s1", namespace="u1") == []
    assert engine.recall("which cloud do I prefer", namespace="u1").hits


def test_sessions_do_not_share_windows(engine: MemoryEngine) -> None:
    _talk(engine, "a", 2)
    _talk(engine, "b", 3)
    assert len(engine.working_window(session_id="a", namespace="u1")) == 2
    assert len(engine.working_window(session_id="b", namespace="u1")) == 3


def test_turn_memory_gets_neighbours_speaker_and_metadata(engine: MemoryEngine) -> None:
    when = datetime(2023, 5, 8, 13, 56, tzinfo=UTC)
    lines = [
        ("Maya", "I adopted a greyhound called Pepper last weekend, she is lovely."),
        ("Tom", "Congratulations! How is the new dog settling in at your place?"),
        ("Maya", "She loves running on the beach near our house every morning."),
    ]
    results = [
        engine.record_turn(
            text,
            session_id="s1",
            namespace="u1",
            occurred_at=when + timedelta(minutes=n),
            metadata={"message_id": f"m{n}"},
            speaker=speaker,
        )
        for n, (speaker, text) in enumerate(lines)
    ]
    last = results[-1]
    assert last.turn.content == lines[2][1]  # the window keeps the user's text as written
    assert last.turn.entities == ["Maya"]
    (memory,) = last.stored.stored
    assert memory.content == "Maya: " + lines[2][1]
    assert memory.entities == ["Maya"]
    assert memory.metadata["message_id"] == "m2"
    assert memory.source.message_ids == [last.turn.id]
    assert memory.context == f"Maya: {lines[0][1]} Tom: {lines[1][1]}"
    assert results[0].stored.stored[0].context is None  # the first turn has no neighbours
    hits = engine.recall("Where does Maya's dog like to run?", namespace="u1", top_k=1)
    assert hits.records[0].metadata["message_id"] == "m2"


def test_record_turn_embeds_the_turn_text_once(engine: MemoryEngine, monkeypatch) -> None:
    """One model run in the write; the memory's context vector follows in the background."""
    engine.record_turn("We moved the staging database to Postgres 16 last week.", session_id="s1", namespace="u1")
    handle = engine.chroma.namespace("u1")
    assert handle.wait_for_context()
    calls: list[tuple[str, str, list[str]]] = []

    def counting(method: str):  # type: ignore[no-untyped-def]
        real = getattr(engine.embedder, method)

        def count(batch: list[str], **kwargs):  # type: ignore[no-untyped-def]
            calls.append((method, threading.current_thread().name, list(batch)))
            return real(batch, **kwargs)

        return count

    for method in ("embed_array", "embed_index_array"):  # writes store int8 vectors, see embedding/onnx/quantize.py
        monkeypatch.setattr(engine.embedder, method, counting(method))
    result = engine.record_turn(
        "The production database runs Postgres 15 on three replicas.", session_id="s1", namespace="u1", speaker="Ana"
    )
    assert result.stored.stored  # remembered as a long-term memory
    assert handle.wait_for_context(timeout=30)
    in_write = [texts for _, thread, texts in calls if thread == threading.current_thread().name]
    behind = [(m, t) for m, thread, texts in calls if thread == "hindsight-context-vectors" for t in texts]
    assert len(in_write) == 1 and len(in_write[0]) == 1  # one vector for the turn and its memory
    assert "Postgres 15" in in_write[0][0] and "\n" not in in_write[0][0]
    assert len(behind) == 1 and behind[0][1].startswith("We moved the staging database")  # the framed text
    assert all(method == "embed_index_array" for method, _, _ in calls)  # by the int8 copy (embedding/onnx/quantize.py)
    memory = result.stored.stored[0]
    assert memory.id in handle.context_vectors([memory.id])


def test_a_turn_and_the_memory_made_from_it_are_one_write(engine: MemoryEngine, monkeypatch) -> None:
    """One Chroma ``add`` per turn: both land, or neither does; a dropped turn is still written."""
    handle = engine.chroma.namespace("u1")
    writes: list[list[str]] = []
    add = handle.add

    def counted(records, *args, **kwargs):
        writes.append([r.tier.value for r in records])
        return add(records, *args, **kwargs)

    monkeypatch.setattr(handle, "add", counted)
    kept = engine.record_turn("I moved to Lisbon last month.", session_id="s", namespace="u1", compress=False)
    dropped = engine.record_turn("thanks!", session_id="s", namespace="u1", compress=False)
    assert writes == [["working", kept.stored.stored[0].tier.value], ["working"]]
    assert not dropped.stored.stored and dropped.stored.skipped
    assert [t.content for t in engine.working_window(session_id="s", namespace="u1")] == [
        "I moved to Lisbon last month.",
        "thanks!",
    ]


def test_a_window_asked_of_a_namespace_never_written_is_empty_and_creates_nothing(engine: MemoryEngine) -> None:
    """Reading a window (``get_working_memory``, the session resource), clearing or compressing it is no first write."""
    engine.record_turn("I keep my bike in the shed", session_id="s1", namespace="u1")
    assert engine.working_window(session_id="s1", namespace="u1-typo") == []
    assert engine.clear_working(session_id="s1", namespace="u1-typo") == 0
    assert engine.compress(session_id="s1", namespace="u1-typo", force=True) is None
    assert engine.namespaces() == ["u1"]
    with pytest.raises(InvalidInputError) as err:
        engine.working_window(session_id=" ", namespace="u1-typo")
    assert err.value.field == "session_id"
    assert [t.content for t in engine.working_window(session_id="s1", namespace="u1")] == ["I keep my bike in the shed"]
