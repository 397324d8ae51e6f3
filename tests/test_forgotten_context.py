"""A forgotten text leaves the stored context of the memories said after it (``write/forgetting.py``).

Each memory of a conversation is stored with the session's preceding texts as its context, in its
record and in its context vector. Forgetting one (or clearing a window) must take its text out of
both, as Chroma holds them, and out of their archived copies in cold storage.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from hindsight_integrations import MemoryEngine, Status
from hindsight_integrations.core.embedding.local import LocalEmbedder
from hindsight_integrations.core.llm import LLMClient
from hindsight_integrations.core.storage.cold import COLD_VECTOR_KEYS
from hindsight_integrations.core.storage.indexing import framed_text
from hindsight_integrations.core.storage.namespace_store import NamespaceStore
from hindsight_integrations.core.write.forgetting import without_forms, without_sentences

from .openai_stub import OpenAIStub

SECRET = "My bank PIN is 4417 and my mother's maiden name is Okonkwo."
TRACES = ("bank PIN", "Okonkwo")  # words, never digits: a stored time or vector may hold "4417"


def _stored_text(handle: NamespaceStore, ids: list[str]) -> str:
    """Everything Chroma holds of ``ids`` but their vectors: metadata and documents, as one string."""
    got = handle.collection.get(ids=ids, include=["metadatas", "documents"])
    return json.dumps([got["metadatas"], got["documents"]], ensure_ascii=False)


def _framed_vector(engine: MemoryEngine, handle: NamespaceStore, memory_id: str) -> np.ndarray:
    """The context vector the write path makes of the record as Chroma holds it now."""
    record = engine.get(memory_id, namespace=handle.name)
    return engine._parts.embed_framed([framed_text(record.flat_fields()) or ""])[0]


def test_a_forgotten_memory_leaves_the_stored_context_of_those_said_after_it(engine: MemoryEngine) -> None:
    said = engine.store_memories(
        [
            {"content": SECRET, "session_id": "s1"},
            {"content": "I moved to Lisbon last spring.", "session_id": "s1"},
            {"content": "I work as a nurse at the city hospital.", "session_id": "s1"},
        ],
        namespace="u1",
    ).ids
    secret, later = said[0], said[1:]
    handle = engine.chroma.namespace("u1")
    handle.wait_for_context(30)
    assert all(trace in _stored_text(handle, later) for trace in TRACES)
    before = handle.context_vectors(later)
    found_before = {h.record.id for h in engine.recall("bank PIN maiden name", namespace="u1", touch=False).hits}
    assert found_before & set(later)  # by their context: BM25's second field and the context vectors

    engine.forget(secret, namespace="u1")
    handle.wait_for_context(30)

    assert not any(trace in _stored_text(handle, later) for trace in TRACES)
    assert [engine.get(i, namespace="u1").context for i in later] == [None, "I moved to Lisbon last spring."]
    after = handle.context_vectors(later)
    for memory_id in later:
        assert not np.allclose(before[memory_id], after[memory_id])
        assert np.allclose(after[memory_id], _framed_vector(engine, handle, memory_id), atol=1e-5)
    hits = engine.recall("bank PIN 4417 maiden name Okonkwo", namespace="u1", touch=False).hits
    assert not {h.record.id for h in hits} & set(later)
    exported = [r for r in engine.export(namespace="u1", include_embeddings=False)["records"] if r["id"] != secret]
    assert not any(trace in json.dumps(exported, ensure_ascii=False) for trace in TRACES)
    assert engine.get(secret, namespace="u1").content == SECRET  # a soft delete: its own record keeps it


def test_a_cleared_window_leaves_the_contexts_unless_a_memory_that_stays_holds_its_text(engine: MemoryEngine) -> None:
    """Many forgotten at once: a turn kept in the window only is gone from every context, a remembered one is not."""
    engine.record_turn(SECRET, session_id="s1", namespace="u1", speaker="Ana", extract=False)
    second = engine.record_turn("I moved to Lisbon last spring with my two cats.", session_id="s1", namespace="u1")
    third = engine.record_turn("I work as a nurse at the city hospital on weekdays.", session_id="s1", namespace="u1")
    memories = [second.stored.stored[0].id, third.stored.stored[0].id]
    handle = engine.chroma.namespace("u1")
    assert all(trace in _stored_text(handle, memories) for trace in TRACES)

    assert engine.clear_working(session_id="s1", namespace="u1") == 3
    handle.wait_for_context(30)

    assert not any(trace in _stored_text(handle, memories) for trace in TRACES)
    contexts = [engine.get(i, namespace="u1").context for i in memories]
    assert contexts == [None, "I moved to Lisbon last spring with my two cats."]  # the second is still a memory
    assert np.allclose(handle.context_vectors(memories)[memories[0]], _framed_vector(engine, handle, memories[0]))


def test_forgetting_rewrites_an_archived_context_in_cold_storage(timed: MemoryEngine, clock) -> None:
    said = timed.store_memories(
        [
            {"content": SECRET, "session_id": "s1", "importance": 0.9},
            {"content": "The old staging host was called zeus-1.", "session_id": "s1", "importance": 0.2},
        ],
        namespace="u1",
    ).ids
    clock.advance(days=100)
    assert timed.maintain(namespace="u1").archived == [said[1]]
    archived = timed.get(said[1], namespace="u1")
    assert archived.status is Status.ARCHIVED and archived.context == SECRET

    timed.forget(said[0], namespace="u1")

    assert timed.get(said[1], namespace="u1").context is None
    rows = timed._lanes.primary.backup.cold.rows("u1")
    held = json.dumps([{k: v for k, v in row.items() if k not in COLD_VECTOR_KEYS} for row in rows])
    assert len(rows) == 1 and not any(trace in held for trace in TRACES)
    assert rows[0]["window_embedding"] is None  # embedded again at restore, from the context it holds now
    assert timed.restore(namespace="u1", ids=[said[1]]) == 1
    restored = timed.get(said[1], namespace="u1")
    assert restored.status is Status.ACTIVE and restored.context is None
    assert timed.recall("staging host zeus-1", namespace="u1", top_k=1).hits[0].record.id == said[1]


def test_a_merged_repeat_keeps_no_forgotten_context_in_the_memory_it_was_merged_into(engine: MemoryEngine) -> None:
    first = engine.store("I live in Lisbon.", namespace="u1", session_id="s1").stored[0]
    secret = engine.store(SECRET, namespace="u1", session_id="s1").stored[0]
    again = engine.store("I live in Lisbon.", namespace="u1", session_id="s1")
    assert again.merged == [first.id] and SECRET in engine.get(first.id, namespace="u1").sources[0]["context"]
    engine.forget(secret.id, namespace="u1")
    merged = engine.get(first.id, namespace="u1")
    assert merged.sources[0]["context"] == "I live in Lisbon." and merged.sources[0]["content"] == "I live in Lisbon."
    assert not any(trace in _stored_text(engine.chroma.namespace("u1"), [first.id]) for trace in TRACES)


def test_only_a_text_standing_whole_in_a_context_leaves_it() -> None:
    context = "Bob: Yes, twice a week! Ana: Yes Ana: Do you run?"
    assert without_forms(context, {"Ana: Yes"}) == "Bob: Yes, twice a week! Ana: Do you run?"
    assert without_forms("Bob: Yes, twice a week!", {"Yes"}) == "Bob: Yes, twice a week!"  # part of a word
    assert without_forms(context, {"Ana: Do you run?"}) == "Bob: Yes, twice a week! Ana: Yes"
    assert without_forms("Ana: Yes", {"Ana: Yes"}) is None


def _stored_status(handle: NamespaceStore, memory_id: str) -> str:
    return handle.collection.get(ids=[memory_id], include=["metadatas"])["metadatas"][0]["status"]


def test_a_forgotten_memory_takes_its_turn_out_of_the_window_and_the_next_turns_context(engine: MemoryEngine) -> None:
    """The window is the model's recent history and the next memory's context: a forgotten turn left there came back."""
    engine.record_turn("I moved to Lisbon last spring with my two cats.", session_id="s1", namespace="u1")
    said = engine.record_turn(SECRET, session_id="s1", namespace="u1", speaker="Ana")
    turn, secret = said.turn, said.stored.stored[0]
    handle = engine.chroma.namespace("u1")

    engine.forget(secret.id, namespace="u1")

    assert _stored_status(handle, turn.id) == "deleted"
    window = engine.working_window(session_id="s1", namespace="u1")
    assert [t.content for t in window] == ["I moved to Lisbon last spring with my two cats."]
    after = engine.record_turn("I work as a nurse at the city hospital on weekdays.", session_id="s1", namespace="u1")
    handle.wait_for_context(30)
    new = after.stored.stored[0].id
    assert not any(trace in _stored_text(handle, [new]) for trace in TRACES)
    assert engine.get(new, namespace="u1").context == "I moved to Lisbon last spring with my two cats."


def test_a_turn_saying_a_forgotten_text_leaves_the_window_unless_a_memory_that_stays_says_it(
    engine: MemoryEngine,
) -> None:
    """A turn kept without a memory of its own (extract=False) goes with a memory stored with its words."""
    quiet = engine.record_turn(SECRET, session_id="s1", namespace="u1", speaker="Ana", extract=False).turn
    stored = engine.store(SECRET, namespace="u1", session_id="s1").stored[0]
    kept = engine.record_turn("I moved to Lisbon last spring.", session_id="s1", namespace="u1", speaker="Ana")
    second = engine.store("Ana: I moved to Lisbon last spring.", namespace="u1", session_id="s1", dedup=False)
    handle = engine.chroma.namespace("u1")

    engine.forget(stored.id, namespace="u1")
    engine.forget(second.stored[0].id, namespace="u1")  # the turn's own memory says it still

    assert _stored_status(handle, quiet.id) == "deleted"
    assert _stored_status(handle, kept.turn.id) == "active"
    assert [t.id for t in engine.working_window(session_id="s1", namespace="u1")] == [kept.turn.id]


def test_forgetting_one_memory_an_llm_extracted_takes_the_turn_and_leaves_the_other(
    store_path: Path, embedder: LocalEmbedder
) -> None:
    extracted = [
        {"should_remember": True, "memory_type": "fact", "content": text, "entities": ["Ana"], "importance": 0.9}
        for text in ("Ana's bank PIN is 4417.", "Ana moved to Lisbon last spring.")
    ]
    with OpenAIStub() as stub:
        llm = LLMClient(model="stub-model", base_url=stub.base_url, api_key="test", timeout=5, max_retries=0)
        engine = MemoryEngine(store=store_path, embedder=embedder, llm=llm)
        try:
            stub.script(json.dumps({"memories": extracted}))
            said = engine.record_turn(
                "My bank PIN is 4417, and I moved to Lisbon last spring.", session_id="s1", namespace="u1"
            )
            pin, lisbon = (m.id for m in said.stored.stored)
            handle = engine.chroma.namespace("u1")

            engine.forget(pin, namespace="u1")

            assert _stored_status(handle, said.turn.id) == "deleted"
            assert engine.working_window(session_id="s1", namespace="u1") == []
            assert _stored_status(handle, lisbon) == "active"
        finally:
            engine.close()


def test_a_repeat_merged_into_a_memory_of_another_session_loses_the_forgotten_context(engine: MemoryEngine) -> None:
    lisbon = engine.store("I live in Lisbon.", namespace="u1", session_id="s2").stored[0]
    secret = engine.store(SECRET, namespace="u1", session_id="s1").stored[0]
    again = engine.store("I live in Lisbon.", namespace="u1", session_id="s1")  # said in s1, kept in s2's memory
    assert again.merged == [lisbon.id] and engine.get(lisbon.id, namespace="u1").sources[0]["context"] == SECRET
    handle = engine.chroma.namespace("u1")

    engine.forget(secret.id, namespace="u1")

    assert not any(trace in _stored_text(handle, [lisbon.id]) for trace in TRACES)
    merged = engine.get(lisbon.id, namespace="u1")
    assert "context" not in merged.sources[0] and merged.sources[0]["session_id"] == "s1"
    assert merged.content == "I live in Lisbon." and merged.status is Status.ACTIVE


def test_forgetting_a_memory_cleans_the_session_its_merged_repeat_was_said_in(engine: MemoryEngine) -> None:
    """The repeat said in s3 is the forgotten memory's too: s3's later contexts and its turn lose it."""
    secret = engine.store(SECRET, namespace="u1", session_id="s4").stored[0]
    repeat = engine.record_turn(SECRET, session_id="s3", namespace="u1")
    assert repeat.stored.merged == [secret.id]
    later = engine.record_turn("I work as a nurse at the city hospital on weekdays.", session_id="s3", namespace="u1")
    said_later = later.stored.stored[0].id
    handle = engine.chroma.namespace("u1")
    handle.wait_for_context(30)
    assert all(trace in _stored_text(handle, [said_later]) for trace in TRACES)

    engine.forget(secret.id, namespace="u1")
    handle.wait_for_context(30)

    assert not any(trace in _stored_text(handle, [said_later]) for trace in TRACES)
    assert np.allclose(handle.context_vectors([said_later])[said_later], _framed_vector(engine, handle, said_later))
    assert _stored_status(handle, repeat.turn.id) == "deleted"
    assert [t.id for t in engine.working_window(session_id="s3", namespace="u1")] == [later.turn.id]
    after = engine.store("My sister lives in Porto.", namespace="u1", session_id="s3").stored[0]
    assert not any(trace in _stored_text(handle, [after.id]) for trace in TRACES)  # the settler's note of s3 too


def test_a_repeat_upkeep_merged_into_another_session_loses_the_forgotten_context_nested_too(
    timed: MemoryEngine, clock
) -> None:
    """Upkeep nests the merged memory's own repeats (with their contexts) in the entry it keeps."""
    host = "The staging server is called hera-2."
    secret = timed.store(SECRET, namespace="u1", session_id="s1").stored[0]
    said_after = timed.store(host, namespace="u1", session_id="s1", importance=0.3).stored[0]
    assert timed.store(host, namespace="u1", session_id="s1").merged == [said_after.id]
    clock.advance(hours=1)
    kept = timed.store_memories(
        [{"content": host.rstrip("."), "session_id": "s2", "importance": 0.9}], namespace="u1", dedup=False
    ).stored[0]
    (merge,) = timed.merge_repeats("u1")
    assert (merge.survivor, merge.merged) == (kept.id, said_after.id)
    handle = timed.chroma.namespace("u1")
    assert all(trace in _stored_text(handle, [kept.id]) for trace in TRACES)

    timed.forget(secret.id, namespace="u1")

    assert not any(trace in _stored_text(handle, [kept.id, said_after.id]) for trace in TRACES)
    nested = timed.get(kept.id, namespace="u1").sources[0]["sources"][0]
    assert nested["context"] == host and nested["session_id"] == "s1"


def test_a_forgotten_text_said_as_sentences_of_a_longer_line_leaves_it_and_the_rest_stays() -> None:
    assert without_sentences(f"Quick note. {SECRET} Keep it safe.", {SECRET}) == "Quick note. Keep it safe."
    assert without_sentences(f"Ana: Again: {SECRET} Bob: Ok.", {SECRET}) == "Ana: Again: Bob: Ok."
    assert without_sentences("Note: my PIN is 4417. Bye.", {"my PIN is 4417"}) == "Note: Bye."  # its own full stop
    assert without_sentences("好的。我的银行密码是4417。别告诉别人。", {"我的银行密码是4417。"}) == "好的。别告诉别人。"
    said_inside = "I told him my PIN is 4417 twice."
    assert without_sentences(said_inside, {"my PIN is 4417"}) == said_inside  # words of another sentence
    assert without_sentences(f" {SECRET} ", {SECRET}) is None


@pytest.mark.timeout(20)
def test_a_line_of_many_blank_lines_is_read_once_for_a_forgotten_sentence() -> None:
    """A sentence may start after each line break: a turn of 200,000 of them is no stall of the forget (nor a change).

    The pattern that looked for it read the blank lines ahead again from each of them: quadratic,
    1.5 s at 32,000 and past the timeout here, under the namespace's write lock. Each occurrence is now checked once.
    """
    blank_lines = "\n" * 200_000
    said = f"{blank_lines}Quick note. {SECRET} Keep it safe."
    assert without_sentences(said, {SECRET}) == "Quick note. Keep it safe."
    assert without_sentences(f"{blank_lines}x {SECRET}", {SECRET}) == f"{blank_lines}x {SECRET}"  # inside a sentence
    assert without_sentences(f"Quick note{blank_lines}{SECRET}", {SECRET}) == "Quick note"  # a line of its own


def test_a_turn_saying_a_forgotten_text_inside_a_longer_line_keeps_only_the_rest(engine: MemoryEngine) -> None:
    """Live in the window or compressed, the turn said more than the text: the rest stays, the text goes everywhere."""
    engine.record_turn("I moved to Lisbon last spring.", session_id="s1", namespace="u1", speaker="Ana")
    live = engine.record_turn(
        f"Quick note. {SECRET} Please keep it safe.", session_id="s1", namespace="u1", speaker="Ana", extract=False
    ).turn
    memory = engine.store(SECRET, namespace="u1", session_id="s1").stored[0]
    said = engine.record_turn(SECRET, session_id="s2", namespace="u1", speaker="Bo")  # remembered as "Bo: ..."
    compressed = engine.record_turn(
        f"Again: {SECRET} Do not share it.", session_id="s2", namespace="u1", speaker="Bo", extract=False
    ).turn
    for text in ("What should I cook tonight?", "Sounds good."):
        engine.record_turn(text, session_id="s2", namespace="u1", compress=False)
    (summary,) = engine.compress(session_id="s2", namespace="u1", threshold_tokens=1).summaries
    assert SECRET in summary.content
    handle = engine.chroma.namespace("u1")

    engine.forget(memory.id, namespace="u1")
    engine.forget(said.stored.stored[0].id, namespace="u1")

    assert engine.get(live.id, namespace="u1").content == "Quick note. Please keep it safe."
    assert _stored_status(handle, live.id) == "active"
    assert engine.get(compressed.id, namespace="u1").content == "Again: Do not share it."
    window = [t.content for t in engine.working_window(session_id="s1", namespace="u1")]
    assert window == ["I moved to Lisbon last spring.", "Quick note. Please keep it safe."]
    assert not any(trace in _stored_text(handle, [live.id, compressed.id, summary.id]) for trace in TRACES)
    after = engine.record_turn("I work as a nurse at the city hospital on weekdays.", session_id="s1", namespace="u1")
    context = engine.get(after.stored.stored[0].id, namespace="u1").context
    assert context == "Ana: I moved to Lisbon last spring. Ana: Quick note. Please keep it safe."
    assert engine.recall("bank PIN maiden name Okonkwo", namespace="u1").hits == []


def test_small_talk_forgotten_leaves_another_line_that_says_it_among_more(engine: MemoryEngine) -> None:
    """A cleared "Yes." takes the turns saying just that; a longer line with a "Yes." of its own keeps it."""
    engine.record_turn("Yes.", session_id="s1", namespace="u1", speaker="Ana", extract=False)
    other = engine.record_turn("Yes. I moved to Lisbon last spring.", session_id="s2", namespace="u1", speaker="Ana")
    engine.clear_working(session_id="s1", namespace="u1")
    assert engine.get(other.turn.id, namespace="u1").content == "Yes. I moved to Lisbon last spring."
