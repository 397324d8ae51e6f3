"""Peers side by side (`hindsight bench peers`): same LoCoMo data, same MiniLM model, one run.

Hindsight (tuned and with its defaults), LangChain's and LlamaIndex's vector memories, mem0
and engram-search each store every turn and answer every question asking for 10 items; how
each system is driven (its memory API, its store) is ``peer_systems``'s (engram's is
``engram_peer``'s). This module runs them side by side and scores them all the same way
(``locomo_scoring``); its table and plot are ``peers_report``'s.

Peers get the text a user would hand them: "(session date) Speaker: text". Latency is the
wall time of the retrieval call (query embedding included), with the systems asked in
turn for each question so they share the machine's load; mem0's is measured inside the
runner around ``Memory.search``, so the hop between processes is not counted, while its
query's embedding request over loopback HTTP is (the row's ``query_embedding_p50_ms``).
Tokens are those of the text the call returns, counted with the engine's counter.
"""

from __future__ import annotations

import contextlib
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

from ..core.config import load_settings
from ..core.embedding.factory import build_embedder
from ..core.embedding.protocol import Embedder
from ..core.engine import MemoryEngine
from ..processes import chroma_server
from .embedding_server import EmbeddingServer
from .engram_peer import EngramSystem
from .locomo import CONTEXT_BUDGET, LOCOMO_WEIGHTS
from .locomo_data import Conversation, load_directory
from .locomo_scoring import evidence_scores, mean, reciprocal_rank
from .mem0_peer import Mem0Runner, Mem0Unavailable, RunnerError, ensure_venv
from .peer_systems import (
    TOP_K,
    HindsightSystem,
    LangChainSystem,
    LlamaIndexSystem,
    Mem0System,
    PeerFailed,
    PeerSystem,
)
from .scale import percentile


class _Tally:
    """Per-system scores and latencies, filled question by question."""

    def __init__(self) -> None:
        self.r5: list[float] = []
        self.r10: list[float] = []
        self.all10: list[float] = []
        self.rr: list[float] = []
        self.tokens: list[int] = []
        self.latencies: list[float] = []
        self.ingest_seconds = 0.0

    def add(
        self, ranked: Sequence[str], context: str, evidence: Sequence[str], ms: float, count: Callable[[str], int]
    ) -> None:
        """Score one answer: evidence recall@5/@10, all found, reciprocal rank, tokens and latency."""
        self.latencies.append(ms)
        self.r5.append(evidence_scores(ranked, evidence, 5)[0])
        recall, found = evidence_scores(ranked, evidence, TOP_K)
        self.r10.append(recall)
        self.all10.append(float(found))
        self.rr.append(reciprocal_rank(ranked[:TOP_K], evidence))
        self.tokens.append(count(context))

    def summary(self, name: str) -> dict[str, Any]:
        """The system's row of the peers table: means, p50/p99 latency and ingest time."""

        def rounded(values: Sequence[float]) -> float:
            return round(mean(values), 4)

        return {
            "name": name,
            "status": "ok",
            "questions": len(self.r10),
            "recall@5": rounded(self.r5),
            "recall@10": rounded(self.r10),
            "all_found@10": rounded(self.all10),
            "mrr@10": rounded(self.rr),
            "context_tokens_mean": round(rounded(self.tokens), 1),
            "context_tokens_max": max(self.tokens, default=0),
            "latency_p50_ms": round(percentile(self.latencies, 50), 2),
            "latency_p99_ms": round(percentile(self.latencies, 99), 2),
            "ingest_seconds": round(self.ingest_seconds, 2),
        }


def evaluate_systems(
    systems: Sequence[PeerSystem], conversations: Sequence[Conversation], count: Callable[[str], int]
) -> list[dict[str, Any]]:
    """Load every system, then ask each question of every system in turn.

    Interleaving (with the order rotated per question) means every system's latency is
    measured under the same machine load, which matters on a shared CI runner. A system
    that measures its own retrieval call (``ask_timed``: mem0, whose call runs in another
    process) reports that time; the others are timed around ``ask``. A system that raises
    ``PeerFailed`` is dropped from then on and its row says why.
    """
    if not systems:
        return []
    tallies = [_Tally() for _ in systems]
    failed: dict[int, str] = {}
    asked = 0
    for index, conv in enumerate(conversations):
        for n, (system, tally) in enumerate(zip(systems, tallies)):
            if n in failed:
                continue
            started = time.perf_counter()
            try:
                system.load(conv, index)
            except PeerFailed as exc:
                failed[n] = f"failed loading conversation {index}: {exc}"
            tally.ingest_seconds += time.perf_counter() - started
        for q in conv.questions:
            order = [n for n in range(len(systems)) if n not in failed]
            shift = asked % len(systems)
            for n in [n for n in order if n >= shift] + [n for n in order if n < shift]:
                try:
                    ranked, context, ms = _timed_ask(systems[n], q.question)
                except PeerFailed as exc:
                    failed[n] = f"failed after {len(tallies[n].r10)} questions: {exc}"
                    continue
                tallies[n].add(ranked, context, q.evidence, ms, count)
            asked += 1
    rows = []
    for n, (system, tally) in enumerate(zip(systems, tallies)):
        if n in failed:
            rows.append({"name": system.name, "status": "failed", "reason": failed[n]})
        else:
            rows.append({**tally.summary(system.name), **getattr(system, "details", {})})
    return rows


def _timed_ask(system: PeerSystem, question: str) -> tuple[list[str], str, float]:
    """The system's answer and its retrieval time in ms (its own measurement when it has one)."""
    own = getattr(system, "ask_timed", None)
    if own is not None:
        ranked, context, ms = own(question)
        return ranked, context, ms
    started = time.perf_counter()
    ranked, context = system.ask(question)
    return ranked, context, (time.perf_counter() - started) * 1000


CHROMA_MODES = ("embedded", "server")
"""Where the Chroma-backed systems keep their collections (``run_peers``'s ``chroma``)."""
PEER_KEYS = ("hindsight", "hindsight-defaults", "langchain", "llamaindex", "mem0", "engram")
"""The systems ``run_peers`` can run, by the name ``only`` (``--only``) takes."""


def run_peers(
    data: Path,
    *,
    embedder: Embedder | None = None,
    progress: Callable[[str], None] | None = None,
    only: Sequence[str] | None = None,
    mem0_venv: Path | None = None,
    chroma: str = "embedded",
) -> dict[str, Any]:
    """Every system on the same conversations with one shared embedding model; unavailable peers say why.

    ``chroma`` is where the Chroma-backed systems (hindsight, LangChain, LlamaIndex) keep their
    collections: ``"embedded"`` (one ``PersistentClient``) or ``"server"`` (one ``chroma run``
    on a loopback port, each system on an ``HttpClient``), as a shared deployment runs them.
    mem0 and engram-search keep their own stores in both.

    The model is ``embedder``, else the configured one (``HINDSIGHT_EMBEDDING_MODEL``), so a
    multilingual run compares every system on multilingual vectors.

    ``mem0_venv`` is mem0's virtual environment (``mem0_peer.default_venv()`` when None),
    created on first use; when it cannot be, the mem0 row says why and the rest still run.
    """
    unknown = sorted(set(only or ()) - set(PEER_KEYS))
    if unknown:
        raise ValueError(f"unknown peer(s) {', '.join(unknown)}; choose from {', '.join(PEER_KEYS)}")
    if chroma not in CHROMA_MODES:
        raise ValueError(f"chroma must be one of {', '.join(CHROMA_MODES)}, not {chroma!r}")
    conversations, _ = load_directory(data)
    embedder = embedder or build_embedder(load_settings())
    embedder.embed(["warm up the model"])
    say = progress or (lambda _msg: None)
    peers: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="hindsight-peers-") as tmp, contextlib.ExitStack() as stack:
        where = _chroma(chroma, Path(tmp), stack)
        engine = MemoryEngine(**where, embedder=embedder, llm=False)
        count = engine.tokens.count
        client = _peers_client(Path(tmp) / "peers", where.get("chroma_url"))

        def mem0() -> PeerSystem:
            python = ensure_venv(mem0_venv, progress=say)
            server = stack.enter_context(EmbeddingServer(embedder))
            runner = stack.enter_context(Mem0Runner(python, workdir=Path(tmp) / "mem0"))
            try:
                hello = runner.request("hello", timeout=300)
            except RunnerError as exc:
                raise Mem0Unavailable(f"mem0 does not start in {python.parent.parent}: {exc}") from exc
            return Mem0System(runner, server, Path(tmp) / "mem0", hello)

        factories: list[tuple[str, Callable[[], PeerSystem]]] = [
            (
                "hindsight",
                lambda: HindsightSystem(
                    engine,
                    weights=LOCOMO_WEIGHTS,
                    budget=CONTEXT_BUDGET,
                    name="hindsight (LoCoMo weights, 450-token budget)",
                ),
            ),
            # Its own engine over the same Chroma client: the store is shared (no second ingest),
            # the query-vector cache is not, so neither setting gets the other's cached queries.
            (
                "hindsight-defaults",
                lambda: HindsightSystem(
                    MemoryEngine(**where, embedder=embedder, llm=False, chroma_client=engine.chroma.client),
                    weights=None,
                    budget=None,
                    name="hindsight (default weights and budget)",
                ),
            ),
            ("langchain", lambda: LangChainSystem(client, embedder)),
            ("llamaindex", lambda: LlamaIndexSystem(client, embedder)),
            ("mem0", mem0),
            ("engram", lambda: EngramSystem(embedder)),
        ]
        assert [key for key, _ in factories] == list(PEER_KEYS)
        systems: list[PeerSystem] = []
        for key, factory in factories:
            if only and key not in only:
                continue
            try:
                systems.append(factory())
            except ImportError as exc:
                peers.append({"name": key, "status": "not run", "reason": f"not installed: {exc}"})
            except Mem0Unavailable as exc:
                peers.append({"name": Mem0System.name, "status": "not run", "reason": str(exc)})
        say("running " + ", ".join(s.name for s in systems) + " side by side…")
        peers[:0] = evaluate_systems(systems, conversations, count)
        for p in peers:
            if p["status"] == "ok":
                say(
                    f"  {p['name']}: recall@10 {p['recall@10']:.3f}, "
                    f"{p['context_tokens_mean']:.0f} tokens, p50 {p['latency_p50_ms']} ms"
                )
        engine.chroma.flush()
    return {
        "benchmark": "peers",
        "data": str(data),
        "questions": sum(len(c.questions) for c in conversations),
        "top_k": TOP_K,
        "embedding_model": embedder.name,
        "chroma": chroma,
        "peers": peers,
    }


def _chroma(mode: str, tmp: Path, stack: contextlib.ExitStack) -> dict[str, Any]:
    """Where hindsight's engine keeps its store, as ``MemoryEngine`` arguments; starts the server in server mode."""
    if mode == "embedded":
        return {"store": tmp / "hindsight"}
    return {"chroma_url": stack.enter_context(chroma_server(tmp / "server")).url}


def _peers_client(path: Path, url: str | None) -> Any:
    """The peers' Chroma client as their users open it: Chroma's defaults, telemetry off."""
    import chromadb

    settings = chromadb.Settings(anonymized_telemetry=False)
    if url is None:
        return chromadb.PersistentClient(path=str(path), settings=settings)
    parsed = urlparse(url)
    return chromadb.HttpClient(host=parsed.hostname or "127.0.0.1", port=parsed.port or 8000, settings=settings)
