"""The HNSW graph behind a namespace finds what lies behind small talk said again and again.

Hundreds of near-identical vectors ("Thanks!", "Noted.") fill the neighbour lists of Chroma's
graph with each other. Six phrases repeated between 600 facts are enough: built and searched
at 100 or less, the graph misses some facts even when the query is the fact's own vector.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from hindsight_integrations import MemoryEngine
from hindsight_integrations.core.model.records import MemoryRecord
from hindsight_integrations.core.storage.store import COLLECTION_PREFIX, CONTEXT_PREFIX

_ROOT = Path(__file__).resolve().parents[1]


def chat_vectors() -> tuple[np.ndarray, np.ndarray]:
    """600 facts in 20 topics and 6 phrases of small talk (the same on every run, so the same graph)."""
    rng = np.random.default_rng(0)
    centres = rng.normal(size=(20, 384))
    facts = (centres[rng.integers(0, 20, 600)] + 0.6 * rng.normal(size=(600, 384))).astype(np.float32)
    return facts, rng.normal(size=(6, 384)).astype(np.float32)


def fill(add: Callable[..., Any], namespace: str) -> None:
    """One fact, then one phrase of small talk, one record at a time, as a chat writes them."""
    facts, small_talk = chat_vectors()
    for n, fact in enumerate(facts):
        for memory_id, vector in ((f"fact{n}", fact), (f"talk{n}", small_talk[n % 6])):
            record = MemoryRecord(id=memory_id, namespace=namespace, content=memory_id)
            add(ids=[memory_id], embeddings=[vector.tolist()], metadatas=[record.to_metadata()])


def found(nearest: Callable[[list[float]], list[str]]) -> int:
    """Of every fifth fact (120), how many are among the 16 nearest to the fact's own vector."""
    facts, _ = chat_vectors()
    return sum(f"fact{n}" in nearest(facts[n].tolist()) for n in range(0, len(facts), 5))


def test_a_new_namespace_finds_every_fact_behind_repeated_small_talk(engine: MemoryEngine) -> None:
    handle = engine.chroma.namespace("chat", create=True)
    fill(handle.collection.add, "chat")
    assert found(lambda v: [i for i, _ in handle.query(v, n=16, where=None)]) == 120
    for collection in (handle.collection, handle.context_collection):
        assert collection.configuration["hnsw"]["ef_search"] == 200


def test_a_namespace_made_with_chromas_defaults_searches_deeper_once_opened(store_path: Path, embedder) -> None:
    # Made as an older version made its collections (searched 64 deep, synced every 1000), in a
    # process of its own: a process reads a collection's search depth when it first loads it.
    older = f"""
import chromadb
from tests.test_vector_index import fill, found
client = chromadb.PersistentClient(path={str(store_path)!r})
hnsw = {{"space": "cosine", "ef_search": 64, "sync_threshold": 1000}}
client.create_collection({CONTEXT_PREFIX + "old"!r}, embedding_function=None, configuration={{"hnsw": hnsw}})
old = client.create_collection({COLLECTION_PREFIX + "old"!r}, embedding_function=None, configuration={{"hnsw": hnsw}})
fill(old.add, "old")
print(found(lambda v: old.query(query_embeddings=[v], n_results=16)["ids"][0]))
"""
    run = subprocess.run([sys.executable, "-c", older], cwd=_ROOT, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    assert int(run.stdout.split()[-1]) < 120  # the miss guarded against here is real at 64

    handle = MemoryEngine(store=store_path, embedder=embedder, llm=False).chroma.namespace("old")
    assert found(lambda v: [i for i, _ in handle.query(v, n=16, where=None)]) == 120
    hnsw = handle.collection.configuration["hnsw"]
    assert (hnsw["ef_search"], hnsw["sync_threshold"]) == (200, 100)
