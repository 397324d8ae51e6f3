"""Metadata keys starting with "_" are hindsight's own; a caller's are refused, on every write path.

``_supersedes`` names the memories a new one made history; a store interrupted between the two
writes is finished at the next start (``write/recovery.py``). Accepted from a caller, it made any
memory of the namespace history at the next start. ``_merged_into``, ``_habit`` and
``_stated_importance`` steer unmerging, habits and protection from updates the same way, and
``_request_hash`` a retried request's answer.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from hindsight_integrations import InvalidInputError, MemoryEngine
from hindsight_integrations.core.embedding.local import LocalEmbedder
from hindsight_integrations.core.model.records import Status
from hindsight_integrations.mcp import MemoryClient, MemoryToolInputError

VICTIM = "The quarterly report is due on the 14th of March."


def _engine(store_path: Path, embedder: LocalEmbedder) -> MemoryEngine:
    return MemoryEngine(store=store_path, embedder=embedder, llm=False)


@pytest.mark.parametrize("key", ["_supersedes", "_merged_into", "_habit", "_stated_importance", "_anything"])
def test_a_store_with_a_reserved_key_is_refused_and_nothing_changes_at_the_next_start(
    store_path: Path, embedder: LocalEmbedder, key: str
) -> None:
    engine = _engine(store_path, embedder)
    victim = engine.store(VICTIM, namespace="u1").stored[0]
    with pytest.raises(InvalidInputError) as refused:
        engine.store("Lunch with the design team on Friday.", namespace="u1", metadata={key: victim.id})
    assert refused.value.field.endswith("metadata")
    assert key in refused.value.message and "rename it" in refused.value.message
    assert [r.id for r in engine.list(namespace="u1", include_history=True)] == [victim.id]
    engine.chroma.flush()

    reopened = _engine(store_path, embedder)  # the next start finishes interrupted supersedes
    assert reopened.get(victim.id, namespace="u1").status is Status.ACTIVE
    assert victim.id in [h.record.id for h in reopened.recall("When is the quarterly report due?", namespace="u1").hits]


def test_other_keys_are_kept_as_given(engine: MemoryEngine) -> None:
    stored = engine.store(VICTIM, namespace="u1", metadata={"source": "email", "pri_ority": 2, "x_": True}).stored[0]
    assert stored.metadata == {"source": "email", "pri_ority": 2, "x_": True}
    nested = engine.store("Budget review next week.", namespace="u1", metadata={"raw": {"_id": "a1"}}).stored[0]
    assert nested.metadata == {"raw": {"_id": "a1"}}  # only hindsight's own top-level keys are reserved


def test_an_update_with_a_reserved_key_is_refused_and_the_memory_is_unchanged(engine: MemoryEngine) -> None:
    victim = engine.store(VICTIM, namespace="u1", metadata={"source": "email"}).stored[0]
    with pytest.raises(InvalidInputError, match="_merged_into"):
        engine.update(victim.id, namespace="u1", metadata={"_merged_into": "elsewhere"})
    assert engine.get(victim.id, namespace="u1").metadata == {"source": "email"}


def test_a_turn_with_a_reserved_key_is_refused(engine: MemoryEngine) -> None:
    with pytest.raises(InvalidInputError, match="_habit"):
        engine.record_turn("I swam 40 lengths tonight.", session_id="s1", namespace="u1", metadata={"_habit": 9})
    assert engine.list(namespace="u1", include_history=True) == []


def test_the_mcp_tools_refuse_it_and_keep_serving(engine: MemoryEngine) -> None:
    with MemoryClient.in_process(engine, namespace="u1") as client:
        victim = client.store(VICTIM).stored[0]
        for tool, arguments in [
            ("store_memory", {"memories": [{"content": "Call the bank.", "metadata": {"_supersedes": victim.id}}]}),
            ("update_memory", {"id": victim.id, "metadata": {"_stated_importance": 1.0}}),
            ("record_turn", {"content": "Hi there.", "session_id": "s1", "metadata": {"_habit": 2}}),
        ]:
            with pytest.raises(MemoryToolInputError) as refused:
                client.call_tool(tool, arguments)
            assert refused.value.error_type == "invalid_input", tool
            assert "metadata" in refused.value.field and "rename it" in refused.value.message, tool
        assert [h.record.id for h in client.recall("When is the quarterly report due?").hits] == [victim.id]
    assert "_stated_importance" not in engine.get(victim.id, namespace="u1").metadata
