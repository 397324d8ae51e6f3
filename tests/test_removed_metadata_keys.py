"""A metadata key a memory no longer has stops matching metadata filters, in Chroma and in memory.

Scalar user metadata is mirrored as ``m.<key>`` Chroma keys for ``where`` filters, and Chroma merges
the metadata of an update into what it holds. A rewrite used to set to None only the keys it knew,
so a key removed from a memory (set to null by an edit, no longer scalar, dropped by an import or by
the engine itself, as ``summary_id``) stayed in Chroma: the memory read back without it, yet a list
or recall filtered on the old value still found it, ``$ne`` missed it, and so did a process that
built its indexes from Chroma afterwards.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from hindsight_integrations import MemoryEngine, MemoryRecord
from hindsight_integrations.core.embedding.local import LocalEmbedder
from hindsight_integrations.mcp import MemoryClient

NS = "u1"
TEXT = "The user keeps a red bicycle in the garage."
QUESTION = "Where is the bicycle kept?"
SECRET = "My bank PIN is 4417 and my mother's maiden name is Okonkwo."
REMOVED = {"color": "red", "wheels": 2}  # set to null, and replaced by a list: neither is a scalar any more


def _mirrored(engine: MemoryEngine, memory_id: str) -> dict[str, Any]:
    """The ``m.<key>`` keys Chroma holds for ``memory_id``: what its ``where`` filters read."""
    got = engine.chroma.namespace(NS).collection.get(ids=[memory_id], include=["metadatas"])
    return {key: value for key, value in got["metadatas"][0].items() if key.startswith("m.")}


def _found(engine: MemoryEngine, metadata: dict[str, Any]) -> tuple[list[str], list[str]]:
    """The ids a list and a recall filtered on ``metadata`` return."""
    filters = {"metadata": metadata}
    listed = [r.id for r in engine.list(namespace=NS, filters=filters)]
    recalled = [h.record.id for h in engine.recall(QUESTION, namespace=NS, filters=filters).hits]
    return listed, recalled


def _assert_removed_keys_match_nothing(engine: MemoryEngine, memory: MemoryRecord) -> None:
    assert _mirrored(engine, memory.id) == {"m.shed": "garage"}
    for removed in ({"color": "red"}, {"wheels": 2}, {"color": {"$in": ["red", "blue"]}}):
        assert _found(engine, removed) == ([], []), removed
    assert _found(engine, {"color": {"$ne": "red"}}) == ([memory.id], [memory.id])
    assert _found(engine, {"shed": "garage"}) == ([memory.id], [memory.id])  # the key it kept still matches


def test_an_edit_removing_metadata_keys_leaves_no_filter_matching_them(
    store_path: Path, embedder: LocalEmbedder
) -> None:
    engine = MemoryEngine(store=store_path, embedder=embedder, llm=False)
    memory = engine.store(TEXT, namespace=NS, metadata={**REMOVED, "shed": "garage"}).stored[0]
    assert _found(engine, {"color": "red"}) == ([memory.id], [memory.id])

    edited = engine.update(memory.id, namespace=NS, metadata={"color": None, "wheels": [2, 3]})

    kept = {"wheels": [2, 3], "shed": "garage"}  # a key set to None is removed, as Chroma's own update does
    assert edited.metadata == engine.get(memory.id, namespace=NS).metadata == kept
    assert engine.export(namespace=NS)["records"][0]["metadata"] == kept
    _assert_removed_keys_match_nothing(engine, memory)
    engine.close()
    reopened = MemoryEngine(store=store_path, embedder=embedder, llm=False)  # indexes built from Chroma
    _assert_removed_keys_match_nothing(reopened, memory)
    reopened.close()


def test_the_update_memory_tool_removing_a_key_leaves_no_filter_matching_it(engine: MemoryEngine) -> None:
    with MemoryClient.in_process(engine, namespace=NS) as client:
        memory = client.store({"content": TEXT, "metadata": {**REMOVED, "shed": "garage"}}).stored[0]

        edited = client.update(memory.id, metadata={"color": None, "wheels": [2, 3]})

        for record in (edited, client.list()[0]):  # the caller's keys: hindsight's own start with _
            callers = {key: value for key, value in record.metadata.items() if not key.startswith("_")}
            assert callers == {"wheels": [2, 3], "shed": "garage"}

        for removed in ({"color": "red"}, {"wheels": 2}, {"color": {"$in": ["red"]}}):
            assert client.list(filters={"metadata": removed}) == [], removed
            assert client.recall(QUESTION, filters={"metadata": removed}).hits == [], removed
        assert [r.id for r in client.list(filters={"metadata": {"color": {"$ne": "red"}}})] == [memory.id]
    assert {"m.color", "m.wheels"}.isdisjoint(_mirrored(engine, memory.id))


def test_an_import_over_a_memory_drops_the_keys_the_imported_one_lacks(engine: MemoryEngine) -> None:
    memory = engine.store(TEXT, namespace=NS, metadata={"shed": "garage"}).stored[0]
    exported = engine.export(namespace=NS)
    engine.update(memory.id, namespace=NS, metadata=REMOVED)
    assert _found(engine, {"color": "red"}) == ([memory.id], [memory.id])

    assert engine.import_data(exported, namespace=NS) == 1  # the memory as it was, over the edited one

    assert engine.get(memory.id, namespace=NS).metadata == {"shed": "garage"}
    _assert_removed_keys_match_nothing(engine, memory)


def test_turns_unlinked_from_a_forgotten_summary_no_longer_match_a_filter_on_it(engine: MemoryEngine) -> None:
    """A turn said only in the window is forgotten: its summary tells nothing else, and goes too."""
    quiet = engine.record_turn(SECRET, session_id="s1", namespace=NS, extract=False, compress=False).turn
    for text in ("I moved to Lisbon last spring with my two cats.", "I work as a nurse on weekdays.", "Sounds good."):
        engine.record_turn(text, session_id="s1", namespace=NS, compress=False)
    result = engine.compress(session_id="s1", namespace=NS, threshold_tokens=1)
    assert result is not None and len(result.summaries) == 1
    linked = {"tiers": ["working"], "statuses": ["archived"], "metadata": {"summary_id": result.summaries[0].id}}
    assert sorted(r.id for r in engine.list(namespace=NS, filters=linked)) == sorted(result.archived_ids)

    engine.forget(quiet.id, namespace=NS)

    stayed = [turn for turn in result.archived_ids if turn != quiet.id]
    assert stayed and all("summary_id" not in engine.get(turn, namespace=NS).metadata for turn in stayed)
    assert engine.list(namespace=NS, filters=linked) == []
    assert all("m.summary_id" not in _mirrored(engine, turn) for turn in stayed)
