"""The default path on LoCoMo: turns written as a user writes them, recalled with the defaults.

``hindsight bench locomo`` reports these rows next to the tuned configuration (see
``locomo.py``), so the README's headline is the figure a user gets:

* **record_turn**: one ``record_turn`` call per turn through ``MemoryClient.in_process``, the
  call the LangChain and LlamaIndex memories make: the turn's own text, the conversation's
  session as ``session_id``, the session date as ``occurred_at``, the speaker's name as
  ``speaker`` (what ``HumanMessage(name=...)`` carries) and the turn id in ``metadata``. Both
  speakers are people, so every turn is a ``user`` turn.
* **store_memory**: one ``store_memory`` call per turn with the tool's defaults (write filter,
  dedup and supersede on), content "Speaker: text" as a person noting a conversation writes
  it, the session date and the turn id in ``metadata``.
* **record_turn over stdio**: the first path through a spawned ``python -m
  hindsight_integrations.mcp`` server, one call per turn: its ingest rate is the figure the
  issue tracker asks for (turns/s), and its recall must equal the in-process row's.
* **store_memory_batch**: a chat history imported, ``store_memory`` with 100 turns per call in
  conversation order, each item as the one-call row writes it; it should recall what one call
  per turn recalls.
* **export_import**: a memory moved: the turns written as the ``record_turn`` row writes them into
  another namespace, exported without vectors (``MemoryEngine.export``, what ``hindsight export
  --no-embeddings`` writes, and what a store of another model gets) and imported into this one,
  where every record is embedded again from its text and context; it should recall what the
  namespace it came from recalls. Its ingest time counts the writes, the export and the import.
* **record_turn_reranked**: the ``record_turn`` row on an engine with the second stage on
  (``HINDSIGHT_RERANK=cross-encoder``, ``core/recall/rerank.py``): the opt-in beside the default,
  not among the rows run unless asked for (~0.55 s a question).

Every row is recalled with ``retrieve_memory`` defaults except ``top_k`` (10, as the metric
needs): default weights, no token budget unless the engine's default sets one. A memory is
scored by the ``dia_id`` in its metadata, which the default path must carry from the turn.
"""

from __future__ import annotations

import os
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ..core.engine import MemoryEngine
from ..core.progress import ProgressCallback, prefixed, report
from ..mcp.client import MemoryClient
from .locomo_data import Conversation, Turn
from .locomo_scoring import dia_ids, evidence_scores, per_category, reciprocal_rank, summarise
from .settling import rebuilt

MODES = (
    "record_turn",
    "store_memory",
    "record_turn_stdio",
    "store_memory_batch",
    "export_import",
    "record_turn_reranked",
)
ROW_NAMES = {
    "record_turn": "default path: record_turn (in-process MCP client, as the adapters write)",
    "store_memory": "default path: MCP store_memory with defaults",
    "record_turn_stdio": "default path: record_turn through MCP over stdio (one call per turn)",
    "store_memory_batch": "history import: MCP store_memory, batches of 100 turns in order",
    "export_import": "moved: record_turn into another namespace, exported without vectors, imported here",
    "record_turn_reranked": "opt-in: record_turn, recalled with HINDSIGHT_RERANK=cross-encoder",
}
IMPORT_BATCH = 100


def session_id(conversation: Conversation, turn: Turn) -> str:
    """The conversation's session a turn belongs to, as an application would name it."""
    return f"{conversation.name}-session-{turn.session}"


def write_turns(client: MemoryClient, conversation: Conversation, steps: ProgressCallback | None = None) -> None:
    """One ``record_turn`` per turn, as the adapters call it (see the module docstring); ``steps`` counts them."""
    for written, turn in enumerate(conversation.turns):
        report(steps, "writing turns", written, len(conversation.turns))
        record_turn(client, conversation, turn)
    report(steps, "writing turns", len(conversation.turns), len(conversation.turns))


def record_turn(client: MemoryClient, conversation: Conversation, turn: Turn) -> None:
    """The turn's ``record_turn``: its text, session, date, speaker and ``dia_id``, as the adapters write a message."""
    client.record_turn(
        turn.text,
        session_id=session_id(conversation, turn),
        role="user",
        occurred_at=turn.when,
        metadata={"dia_id": turn.dia_id},
        speaker=turn.speaker,
    )


def store_turns(client: MemoryClient, conversation: Conversation, steps: ProgressCallback | None = None) -> None:
    """One ``store_memory`` per turn with the tool's defaults; ``steps`` counts them."""
    for written, turn in enumerate(conversation.turns):
        report(steps, "writing turns", written, len(conversation.turns))
        client.store(
            turn.content,
            occurred_at=turn.when,
            session_id=session_id(conversation, turn),
            metadata={"dia_id": turn.dia_id},
        )
    report(steps, "writing turns", len(conversation.turns), len(conversation.turns))


def import_turns(client: MemoryClient, conversation: Conversation, steps: ProgressCallback | None = None) -> None:
    """``store_memory`` with ``IMPORT_BATCH`` turns per call, in conversation order: how a chat history is imported."""
    turns = conversation.turns
    for start in range(0, len(turns), IMPORT_BATCH):
        report(steps, "writing turns", start, len(turns))
        batch = turns[start : start + IMPORT_BATCH]
        client.store(
            [
                {
                    "content": turn.content,
                    "occurred_at": turn.when.isoformat(),
                    "session_id": session_id(conversation, turn),
                    "metadata": {"dia_id": turn.dia_id},
                }
                for turn in batch
            ]
        )
    report(steps, "writing turns", len(turns), len(turns))


def export_and_import(client: MemoryClient, conversation: Conversation, steps: ProgressCallback | None = None) -> None:
    """``write_turns`` into a namespace beside the client's, exported without vectors and imported into the client's."""
    engine, namespace = client.engine, client.namespace
    if engine is None or namespace is None:
        raise ValueError("the export_import row needs an in-process client bound to a namespace")
    source = f"{namespace}-source"
    engine.drop_namespace(source)
    with MemoryClient.in_process(engine, namespace=source) as writer:
        write_turns(writer, conversation, steps)
    engine.import_data(engine.export(namespace=source, include_embeddings=False), namespace=namespace)
    engine.drop_namespace(source)


WRITERS: dict[str, Callable[[MemoryClient, Conversation, ProgressCallback | None], None]] = {
    "record_turn": write_turns,
    "record_turn_reranked": write_turns,
    "store_memory": store_turns,
    "record_turn_stdio": write_turns,
    "store_memory_batch": import_turns,
    "export_import": export_and_import,
}


def ask(
    client: MemoryClient, conversation: Conversation, *, top_k: int, steps: ProgressCallback | None = None
) -> list[dict[str, Any]]:
    """Every question through ``retrieve_memory`` with its defaults (``top_k`` aside); one row each."""
    rows = []
    for asked, q in enumerate(conversation.questions):
        report(steps, "asking questions", asked, len(conversation.questions))
        started = time.perf_counter()
        result = client.recall(q.question, top_k=top_k)
        recall_ms = (time.perf_counter() - started) * 1000
        ranked = dia_ids(result.records)
        r10, all10 = evidence_scores(ranked, q.evidence, top_k)
        rows.append(
            {
                "conversation": conversation.name,
                "category": q.category,
                "recall@5": evidence_scores(ranked, q.evidence, 5)[0],
                "recall@10": r10,
                "recall@20": r10,  # one call of top_k; kept so ``summarise`` reads every row alike
                "all@10": all10,
                "rr": reciprocal_rank(ranked, q.evidence),
                "tokens@10": result.tokens,
                "recall_ms": recall_ms,
                "reranked": any(h.cross_encoder is not None for h in result.hits),
            }
        )
    report(steps, "asking questions", len(conversation.questions), len(conversation.questions))
    return rows


# Questions about nothing a LoCoMo conversation holds: with the relevance floor, each should
# recall nothing (``off_topic_empty``). Written for this benchmark, never tuned on beyond
# choosing the floor's default (docs/architecture.md, "Recall").
OFF_TOPIC = (
    "What is the boiling point of mercury?",
    "Who won the 1998 football World Cup?",
    "How do I configure TLS in nginx?",
    "What is the capital of Peru?",
    "Explain the difference between TCP and UDP.",
    "How many moons does Jupiter have?",
    "What's a good recipe for sourdough bread?",
    "Which Python version added the walrus operator?",
    "What is the GDP of Japan?",
    "How do I reset my router password?",
    "What is the half-life of carbon-14?",
    "Translate 'good morning' into German.",
    "Who wrote the Brothers Karamazov?",
    "What is Kubernetes' default pod eviction timeout?",
    "How far is the Moon from Earth?",
    "What is the syntax of a SQL left join?",
    "Which planet has the longest day?",
    "How do I compile a Rust project in release mode?",
    "What's the exchange rate between yen and euro?",
    "What are the symptoms of scurvy?",
)


def off_topic_empty(client: MemoryClient) -> int:
    """How many ``OFF_TOPIC`` questions recall nothing (with ``retrieve_memory``'s defaults)."""
    return sum(not client.recall(q, top_k=10).records for q in OFF_TOPIC)


def _stdio_client(store: Path, namespace: str) -> MemoryClient:
    env = {
        "HINDSIGHT_STORE": str(store),
        "HINDSIGHT_USE_LLM": "false",
        "HF_HUB_OFFLINE": "1",
        "TOKENIZERS_PARALLELISM": "false",
    }
    return MemoryClient.stdio(env=env, namespace=namespace, errlog=open(os.devnull, "w"))


def run_mode(
    mode: str,
    engine: MemoryEngine,
    conversations: Sequence[Conversation],
    *,
    top_k: int = 10,
    progress: Callable[[str], None] | None = None,
    steps: ProgressCallback | None = None,
) -> dict[str, Any]:
    """Write every conversation into its own namespace through ``mode``, ask its questions, score.

    ``progress`` gets a line per conversation scored; ``steps`` counts turns written and questions asked.
    """
    rows: list[dict[str, Any]] = []
    ingest_seconds = 0.0
    turns = empty = asked = 0
    reranked: MemoryEngine | None = None
    with tempfile.TemporaryDirectory(prefix="hindsight-default-") as tmp:
        for n, conv in enumerate(conversations):
            conv_steps = prefixed(steps, f"{mode}: {conv.name}")
            namespace = f"default-{mode.replace('_', '-')}-{n:03d}"
            if mode == "record_turn_stdio":
                client = _stdio_client(Path(tmp) / "store", namespace)
            elif mode == "record_turn_reranked":
                reranked = reranked or MemoryEngine(store=Path(tmp) / "reranked", llm=False, rerank="cross-encoder")
                client = MemoryClient.in_process(reranked, namespace=namespace)
            else:
                engine.drop_namespace(namespace)
                client = MemoryClient.in_process(engine, namespace=namespace)
            with client:
                client.stats()  # connect (and, over stdio, load the model) before the clock starts
                started = time.perf_counter()
                WRITERS[mode](client, conv, conv_steps)
                # Context vectors are embedded behind the writes and a recall waits for them, so the
                # clock stops when a recall returns; it returns (and so touches) nothing.
                client.recall("ingest done", top_k=1, min_score=1.0)
                ingest_seconds += time.perf_counter() - started
                turns += len(conv.turns)
                if client.engine is not None:
                    rebuilt(client.engine.chroma.namespace(namespace))
                conv_rows = ask(client, conv, top_k=top_k, steps=conv_steps)
                empty += off_topic_empty(client)
                asked += len(OFF_TOPIC)
            rows.extend(conv_rows)
            if progress:
                progress(f"{ROW_NAMES[mode]}: {conv.name} scored ({len(conv.turns)} turns)")
        if reranked is not None:  # its store goes with the temporary directory: nothing left to write there
            reranked.close()
    out: dict[str, Any] = {"name": ROW_NAMES[mode], "mode": mode, **summarise(rows)}
    for key in ("recall@20", "last_n_recall"):
        out.pop(key, None)
    out["ingest_turns_per_second"] = round(turns / ingest_seconds, 1) if ingest_seconds else 0.0
    out["ingest_seconds"] = round(ingest_seconds, 2)
    out["recall_ms_p50"] = round(float(np.percentile([r["recall_ms"] for r in rows], 50)), 1) if rows else 0.0
    out["reranked_recalls"] = sum(r["reranked"] for r in rows)
    out["off_topic_empty"] = empty
    out["off_topic_asked"] = asked
    out["per_category"] = {
        number: {"name": c["name"], "questions": c["questions"], "recall@10": c["recall@10"]}
        for number, c in per_category(rows).items()
    }
    return out


def run_default_path(
    engine: MemoryEngine,
    conversations: Sequence[Conversation],
    *,
    modes: Sequence[str] = MODES,
    top_k: int = 10,
    progress: Callable[[str], None] | None = None,
    steps: ProgressCallback | None = None,
) -> list[dict[str, Any]]:
    """The default-path rows, one per mode (see the module docstring); ``progress`` and ``steps`` as ``run_mode``'s."""
    unknown = sorted(set(modes) - set(MODES))
    if unknown:
        raise ValueError(f"unknown default-path mode(s) {', '.join(unknown)}; choose from {', '.join(MODES)}")
    return [run_mode(mode, engine, conversations, top_k=top_k, progress=progress, steps=steps) for mode in modes]


__all__ = [
    "IMPORT_BATCH",
    "MODES",
    "ROW_NAMES",
    "export_and_import",
    "import_turns",
    "record_turn",
    "run_default_path",
    "run_mode",
    "session_id",
    "store_turns",
    "write_turns",
]
