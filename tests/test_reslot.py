"""A store an older version wrote: its slots are read again by the current rules when a namespace opens."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

from hindsight_integrations import MemoryEngine
from hindsight_integrations.core.clock import ManualClock
from hindsight_integrations.core.embedding.local import LocalEmbedder
from hindsight_integrations.core.model.records import Kind
from hindsight_integrations.core.storage.store import COLLECTION_PREFIX
from hindsight_integrations.mcp import MemoryClient


def _store(engine: MemoryEngine, clock: ManualClock, *texts: str) -> list[str]:
    ids = []
    with MemoryClient.in_process(engine, namespace="u") as client:
        for n, text in enumerate(texts):
            clock.set(clock.now() + timedelta(weeks=4))
            ids += [m.id for m in client.store(text, session_id=f"s{n}", occurred_at=clock.now()).stored]
    return ids


def _as_an_older_version_left_it(engine: MemoryEngine, slots: dict[str, str], *, marked: bool = False) -> None:
    """The slots those rules gave, and (unless ``marked``) no record of which rules read them."""
    handle = engine.chroma.namespace("u")
    handle.collection.update(ids=list(slots), metadatas=[{"slot": slot} for slot in slots.values()])
    collection = engine.chroma.client.get_collection(COLLECTION_PREFIX + "u", embedding_function=None)
    if not marked:
        collection.modify(metadata={k: v for k, v in (collection.metadata or {}).items() if k != "slot_rules"})
    engine.close()


def test_slots_an_older_version_gave_are_read_again_so_a_new_value_updates(
    store_path: Path, embedder: LocalEmbedder, clock: ManualClock
) -> None:
    """Before the rules told a part of a project apart, "Our backend is written in Go." was user:backend."""
    engine = MemoryEngine(store=store_path, embedder=embedder, llm=False, clock=clock)
    go, typescript = _store(engine, clock, "Our backend is written in Go.", "Our frontend is written in TypeScript.")
    _as_an_older_version_left_it(engine, {go: "user:backend", typescript: "project:language"})
    engine = MemoryEngine(store=store_path, embedder=embedder, llm=False, clock=clock)
    try:
        assert engine.get(go, namespace="u").slot == "project:language of backend"
        assert engine.get(typescript, namespace="u").slot == "project:language of frontend"
        _store(engine, clock, "Our backend is now written in Rust.")
        current = sorted(m.content for m in engine.list(namespace="u"))
        assert current == ["Our backend is now written in Rust.", "Our frontend is written in TypeScript."]
    finally:
        engine.close()


def test_a_correction_keeps_the_slot_it_took_and_a_namespace_read_by_these_rules_is_left_alone(
    store_path: Path, embedder: LocalEmbedder, clock: ManualClock
) -> None:
    engine = MemoryEngine(store=store_path, embedder=embedder, llm=False, clock=clock)
    phone, correction = _store(engine, clock, "My phone number is 555-0100.", "Actually it's 555-0199.")
    corrected = engine.get(correction, namespace="u")
    assert (corrected.kind, corrected.slot) == (Kind.CORRECTION, "user:phone")  # taken from the phone number
    _as_an_older_version_left_it(engine, {phone: "user:phone"})
    engine = MemoryEngine(store=store_path, embedder=embedder, llm=False, clock=clock)
    assert engine.get(correction, namespace="u").slot == "user:phone"
    _as_an_older_version_left_it(engine, {phone: "user:mobile"}, marked=True)  # read by these rules: not again
    engine = MemoryEngine(store=store_path, embedder=embedder, llm=False, clock=clock)
    try:
        assert engine.get(phone, namespace="u").slot == "user:mobile"
    finally:
        engine.close()


def test_an_older_versions_export_comes_in_with_the_slots_of_these_rules(engine: MemoryEngine) -> None:
    stored = engine.store("Our backend is written in Go.", namespace="a").stored[0]
    data = engine.export(namespace="a", include_embeddings=False)
    data["records"][0]["slot"] = "user:backend"  # as the rules before the backend's language gave it
    engine.import_data(data, namespace="b")
    assert engine.get(stored.id, namespace="b").slot == "project:language of backend"
