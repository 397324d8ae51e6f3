"""A forgotten text leaves the copies upkeep made of it (``write/forgotten_copies.py``), as Chroma holds them.

Upkeep keeps a memory's text beyond its own record: the original the periodic merge absorbed
(history), a consolidated memory's members and text, an episodic summary of compressed turns.
Forgetting the memory must reach each of them: nothing left there is recalled, listed or
consolidated again.
"""

from __future__ import annotations

from hindsight_integrations import MemoryEngine, Status
from hindsight_integrations.core.clock import ManualClock
from hindsight_integrations.core.storage.namespace_store import NamespaceStore

NS = "u1"


def _stored(handle: NamespaceStore, memory_id: str) -> tuple[dict, str]:
    """The metadata and document Chroma holds for ``memory_id``."""
    got = handle.collection.get(ids=[memory_id], include=["metadatas", "documents"])
    return got["metadatas"][0], got["documents"][0]


def test_the_original_upkeep_merged_into_a_forgotten_memory_is_forgotten_with_it(
    timed: MemoryEngine, clock: ManualClock
) -> None:
    """Merged away, the original is history in its own words: listed, and recalled with ``include_history``."""
    kept = timed.store("The staging server is called hera-2.", namespace=NS, session_id="a", importance=0.8)
    survivor = kept.stored[0]
    clock.advance(hours=1)
    original = timed.store_memories(
        [{"content": "The staging server is called hera-2", "session_id": "b"}], namespace=NS, dedup=False
    ).stored[0]
    (merge,) = timed.merge_repeats(NS)
    assert (merge.survivor, merge.merged) == (survivor.id, original.id)
    handle = timed.chroma.namespace(NS)
    assert _stored(handle, original.id)[0]["status"] == "superseded"

    timed.forget(survivor.id, namespace=NS)

    metadata, _ = _stored(handle, original.id)
    assert metadata["status"] == "deleted"  # a soft delete, as the survivor's own
    assert timed.list(namespace=NS, include_history=True) == []
    assert timed.recall("staging server hera-2", namespace=NS, include_history=True).hits == []
    assert timed.get(survivor.id, namespace=NS).sources[0]["memory_id"] == original.id  # nothing lost
    timed.unforget(survivor.id, namespace=NS)
    assert timed.get(original.id, namespace=NS).status is Status.DELETED  # unforget brings back the memory alone
    split = timed.unmerge(survivor.id, namespace=NS)  # rebuilt from the survivor's sources, under a new id
    assert split.status is Status.ACTIVE and split.content == "The staging server is called hera-2"
