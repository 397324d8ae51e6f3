"""Progress of long operations: what the engine reports through a ``ProgressCallback`` (``core/progress.py``)."""

from __future__ import annotations

from collections import defaultdict
from itertools import pairwise
from pathlib import Path

import pytest

from hindsight_integrations import MemoryEngine
from hindsight_integrations.core.embeddings import LocalEmbedder

MEMORIES = 520  # past one report interval (500), two embedding chunks (256) and one write chunk (500)


class Recorder:
    """A ``ProgressCallback`` that keeps every call, to check what an operation reported."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, int, int]] = []

    def __call__(self, stage: str, done: int, total: int) -> None:
        self.calls.append((stage, done, total))

    def stages(self) -> list[str]:
        """Stage names in the order they first appeared."""
        return list(dict.fromkeys(stage for stage, _, _ in self.calls))

    def counts(self) -> dict[str, list[tuple[int, int]]]:
        by_stage: dict[str, list[tuple[int, int]]] = defaultdict(list)
        for stage, done, total in self.calls:
            by_stage[stage].append((done, total))
        return by_stage

    def assert_well_formed(self) -> None:
        """Each stage starts at 0, never goes back, and ends at its total (the protocol's promise)."""
        for stage, counts in self.counts().items():
            assert counts[0][0] == 0, stage
            assert all(a[0] <= b[0] for a, b in pairwise(counts)), (stage, counts)
            assert all(done <= total for done, total in counts), (stage, counts)
            assert counts[-1][0] == counts[-1][1], (stage, counts)


@pytest.fixture(scope="module")
def filled(tmp_path_factory: pytest.TempPathFactory, embedder: LocalEmbedder) -> tuple[Path, MemoryEngine]:
    """A store whose namespace "big" holds MEMORIES memories, half of them with a context (tests write elsewhere)."""
    store = tmp_path_factory.mktemp("progress") / "store"
    engine = MemoryEngine(store=store, embedder=embedder, llm=False)
    items = [
        {
            "content": f"Service {i} listens on port {8000 + i} in region r{i % 7}.",
            "kind": "fact",
            "context": f"We were talking about service {i}." if i % 2 else None,
        }
        for i in range(MEMORIES)
    ]
    engine.store_memories(items, namespace="big", apply_filter=False, dedup=False)
    engine.chroma.flush_access()
    return store, engine


def test_export_reports_the_records_it_reads(filled: tuple[Path, MemoryEngine]) -> None:
    _, engine = filled
    progress = Recorder()
    data = engine.export(namespace="big", progress=progress)
    assert len(data["records"]) == MEMORIES
    assert progress.stages() == ["reading memories"]
    assert progress.counts()["reading memories"] == [(0, MEMORIES), (500, MEMORIES), (MEMORIES, MEMORIES)]
    progress.assert_well_formed()
    without_progress = engine.export(namespace="big")
    assert {**without_progress, "exported_at": None} == {**data, "exported_at": None}


def test_import_reports_checking_embedding_and_writing(filled: tuple[Path, MemoryEngine]) -> None:
    _, engine = filled
    without_vectors = engine.export(namespace="big", include_embeddings=False)
    progress = Recorder()
    assert engine.import_data(without_vectors, namespace="copy", progress=progress) == MEMORIES
    assert progress.stages() == ["checking memories", "embedding memories", "writing memories"]
    counts = progress.counts()
    assert counts["embedding memories"] == [(0, MEMORIES), (256, MEMORIES), (512, MEMORIES), (MEMORIES, MEMORIES)]
    assert counts["writing memories"] == [(0, MEMORIES), (500, MEMORIES), (MEMORIES, MEMORIES)]
    progress.assert_well_formed()
    assert engine.stats(namespace="copy").total == MEMORIES
    assert engine.recall("which port does service 17 listen on", namespace="copy").hits[0].record.content == (
        "Service 17 listens on port 8017 in region r3."
    )
    reused = Recorder()
    engine.import_data(engine.export(namespace="big"), namespace="again", progress=reused)
    assert reused.stages() == ["checking memories", "writing memories"]  # same model: the vectors are reused
