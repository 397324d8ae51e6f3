"""The memory systems ``hindsight bench peers`` compares, each driven through its own memory API.

Every system stores every turn of a conversation as one memory in a collection of its own
(Chroma for all but mem0, which keeps its default local Qdrant, and engram-search, which holds
a conversation's documents in memory as its own benchmark does), turn granularity so that
evidence ids can be scored the same way for everyone, then answers every question asking for
``TOP_K`` items (``PeerSystem``: ``load`` a conversation, ``ask`` a question):

* **hindsight**: ``MemoryEngine.recall(top_k=10, token_budget=450)`` with the LoCoMo
  weights, and once more with the default weights and budget (recall's defaults; it reuses
  the first setting's store, so its ingest time is ~0: the default *write* path is measured
  by ``hindsight bench locomo``'s default-path rows);
* **LangChain** ``VectorStoreRetrieverMemory`` (langchain_classic) over ``langchain_chroma.Chroma``:
  ``save_context`` per turn, ``load_memory_variables`` per question;
* **LlamaIndex** ``VectorMemoryBlock`` over ``ChromaVectorStore``: ``aput`` per turn (the
  call ``Memory`` makes when it flushes; left to ``Memory`` the flush would pack many turns
  into one node and turn-level evidence could not be scored), ``aget`` per question (the
  call ``Memory.aget`` makes for each block);
* **mem0** OSS (``mem0_peer.MEM0_SPEC``), which cannot be installed here (its protobuf<7
  pin clashes with chromadb's OpenTelemetry exporter), so the benchmark builds it a virtual
  environment of its own on first use (``--mem0-venv``, ``$HINDSIGHT_MEM0_VENV``, or
  ``mem0-venv`` in hindsight's cache directory; reused afterwards) and drives it through
  ``mem0_runner.py`` over JSON lines: one ``Memory`` per conversation, ``add(text,
  metadata={"dia_id": ...}, infer=False)`` per turn (one memory per turn, no LLM), and
  ``search(question, top_k=10)`` per question with mem0's defaults (local Qdrant, 0.1
  similarity threshold). A plain ``pip install mem0ai`` has neither spaCy nor fastembed, so
  mem0's entity boost and BM25 are off and it ranks by cosine alone (both extras would load
  models from the network at run time). Its embedder is mem0's ``openai`` provider pointed at
  ``embedding_server``: this process's MiniLM behind ``/v1/embeddings`` on 127.0.0.1. When the
  environment cannot be built (no package index), the mem0 row says why and the others run;
* **engram-search** (``engram_peer.EngramSystem``, the ``[engram]`` extra, in this
  environment: it adds only engram-search, faiss-cpu and rank-bm25 to what is installed):
  one engram ``Document`` per turn (its dia_id in the metadata), and
  ``RetrievalPipeline.search(question, documents, top_k=10)`` per question, the call engram's
  own LoCoMo benchmark makes: dense + BM25 + name/quote boosts fused by reciprocal rank
  fusion. Two defaults are changed, as the row's name says, because each would download a
  model from the hub: it ranks with this process's MiniLM instead of bge-large, and its
  cross-encoder re-ranker is off. No peer gets the question's date, so its time boost is idle.
  When engram-search is not installed, its row says how to install it and the others run.

A peer that fails mid-run (``PeerFailed``) is dropped with its reason.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any, Protocol

from ..core.embedding.protocol import Embedder, embed_documents
from ..core.engine import MemoryEngine
from ..core.recall.ranking import RecallWeights
from ..core.recall.stages import StageTimes, timing_stages
from .embedding_server import EmbeddingServer
from .locomo import ingest
from .locomo_data import Conversation, Turn
from .locomo_scoring import dia_ids
from .mem0_peer import Mem0Runner, RunnerError
from .scale import percentile

TOP_K = 10


class PeerFailed(Exception):
    """A peer broke during the run; its row says why and the other systems go on."""


def peer_text(turn: Turn) -> str:
    """The text a peer stores for a turn: dated, so it has the same information Hindsight gets."""
    return f"({turn.when.date().isoformat()}) {turn.speaker}: {turn.text}"


class PeerSystem(Protocol):
    """One memory system under test: ``load`` a conversation, then ``ask`` → (dia_ids, context)."""

    name: str

    def load(self, conversation: Conversation, index: int) -> None:
        """Store every turn of the ``index``-th conversation, in a collection of its own."""
        ...

    def ask(self, question: str) -> tuple[list[str], str]:
        """The turn ids of the items returned for ``question``, best first, and their text."""
        ...


class HindsightSystem:
    """Two settings can share one store: the second finds the namespace filled and reuses it."""

    def __init__(self, engine: MemoryEngine, *, weights: RecallWeights | None, budget: int | None, name: str) -> None:
        self.engine, self.weights, self.budget, self.name = engine, weights, budget, name
        self.namespace = ""
        self.stages = StageTimes()

    @property
    def details(self) -> dict[str, Any]:
        """What the row adds: where recall's time went, stage by stage (``core/recall/stages.py``)."""
        return {"stages_ms": self.stages.summary()}

    def load(self, conversation: Conversation, index: int) -> None:
        """Ingest the conversation into its namespace, unless another setting already filled it."""
        self.namespace = f"peers-{index:03d}"
        if self.engine.chroma.namespace(self.namespace).count() == len(conversation.turns):
            return
        self.engine.drop_namespace(self.namespace)
        ingest(self.engine, conversation, self.namespace)

    def ask(self, question: str) -> tuple[list[str], str]:
        """Recall with this setting's weights and budget; the turn ids in rank order and the context."""
        with timing_stages(self.stages):
            result = self.engine.recall(
                question,
                namespace=self.namespace,
                top_k=TOP_K,
                token_budget=self.budget,
                weights=self.weights,
                touch=False,
            )
        return dia_ids(result.records), result.context


class LangChainSystem:
    """LangChain's ``VectorStoreRetrieverMemory`` on ``langchain_chroma``, driven as a chain would drive it."""

    name = "LangChain VectorStoreRetrieverMemory"

    def __init__(self, client: Any, embedder: Embedder) -> None:
        from langchain_core.embeddings import Embeddings

        class MiniLMEmbeddings(Embeddings):
            """The same model instance the engine uses, behind LangChain's interface."""

            def embed_documents(self, texts: list[str]) -> list[list[float]]:
                return embed_documents(embedder, texts)

            def embed_query(self, text: str) -> list[float]:
                return embedder.embed([text])[0]

        self.client, self.embeddings = client, MiniLMEmbeddings()
        self.memory: Any = None
        self.lookup: dict[str, str] = {}

    def load(self, conversation: Conversation, index: int) -> None:
        """One ``save_context`` per turn into a fresh collection; remembers which text is which turn."""
        self.start(index)
        for turn in conversation.turns:
            self.save(turn)

    def start(self, index: int) -> None:
        """A fresh memory on collection ``lc-<index>``, as a chain starts one."""
        from langchain_chroma import Chroma
        from langchain_classic.memory import VectorStoreRetrieverMemory

        store = Chroma(collection_name=f"lc-{index:03d}", embedding_function=self.embeddings, client=self.client)
        self.memory = VectorStoreRetrieverMemory(
            retriever=store.as_retriever(search_kwargs={"k": TOP_K}),
            memory_key="history",
            input_key="input",
            return_docs=True,
        )
        self.lookup = {}

    def save(self, turn: Turn) -> None:
        """The turn's ``save_context``, as a chain saves each exchange."""
        self.memory.save_context({"input": peer_text(turn)}, {})
        self.lookup.setdefault(f"input: {peer_text(turn)}", turn.dia_id)

    def ask(self, question: str) -> tuple[list[str], str]:
        """``load_memory_variables`` for the question; the documents' turn ids and their joined text."""
        docs = self.memory.load_memory_variables({"input": question})["history"]
        return [self.lookup.get(d.page_content, "") for d in docs], "\n".join(d.page_content for d in docs)


class LlamaIndexSystem:
    """LlamaIndex's ``VectorMemoryBlock`` on ``ChromaVectorStore``, called as ``Memory`` calls its blocks."""

    name = "LlamaIndex VectorMemoryBlock"

    def __init__(self, client: Any, embedder: Embedder) -> None:
        from llama_index.core.bridge.pydantic import Field, PrivateAttr
        from llama_index.core.embeddings import BaseEmbedding
        from llama_index.core.postprocessor.types import BaseNodePostprocessor

        class MiniLMEmbedding(BaseEmbedding):
            """The same model instance the engine uses, behind LlamaIndex's interface."""

            _model: Any = PrivateAttr()

            def __init__(self, model: Embedder) -> None:
                super().__init__(model_name=model.name, embed_batch_size=64)
                self._model = model

            def _get_query_embedding(self, query: str) -> list[float]:
                return self._model.embed([query])[0]

            async def _aget_query_embedding(self, query: str) -> list[float]:
                return self._get_query_embedding(query)

            def _get_text_embedding(self, text: str) -> list[float]:
                return embed_documents(self._model, [text])[0]

            def _get_text_embeddings(self, texts: list[str]) -> list[list[float]]:
                return embed_documents(self._model, texts)

        class Recorder(BaseNodePostprocessor):
            """Pass-through postprocessor that notes the retrieved nodes' order (for scoring)."""

            seen: list[str] = Field(default_factory=list)

            def _postprocess_nodes(self, nodes: list[Any], query_bundle: Any = None) -> list[Any]:
                self.seen = [n.node.get_content() for n in nodes]
                return nodes

        self.client, self.embed_model, self.recorder = client, MiniLMEmbedding(embedder), Recorder()
        self.block: Any = None
        self.lookup: dict[str, str] = {}
        self.loop = asyncio.new_event_loop()

    def load(self, conversation: Conversation, index: int) -> None:
        """One ``aput`` per turn into a fresh collection (one node per turn, so evidence can be scored)."""
        from llama_index.core.llms import ChatMessage
        from llama_index.core.memory import VectorMemoryBlock
        from llama_index.vector_stores.chroma import ChromaVectorStore

        collection = self.client.get_or_create_collection(f"li-{index:03d}")
        self.block = VectorMemoryBlock(
            vector_store=ChromaVectorStore(chroma_collection=collection),
            embed_model=self.embed_model,
            similarity_top_k=TOP_K,
            node_postprocessors=[self.recorder],
        )
        self.lookup = {}
        for turn in conversation.turns:
            self.loop.run_until_complete(self.block.aput([ChatMessage(role="user", content=peer_text(turn))]))
            self.lookup.setdefault(f"<message role='user'>{peer_text(turn)}</message>", turn.dia_id)

    def ask(self, question: str) -> tuple[list[str], str]:
        """``aget`` for the question; the retrieved nodes' turn ids (via the recorder) and the block text."""
        from llama_index.core.llms import ChatMessage

        self.recorder.seen = []
        context = self.loop.run_until_complete(self.block.aget(messages=[ChatMessage(role="user", content=question)]))
        return [self.lookup.get(text, "") for text in self.recorder.seen], str(context)


class Mem0System:
    """mem0 OSS in its own virtual environment, through ``mem0_runner.py`` (see ``mem0_peer``).

    One ``Memory`` per conversation (its own local Qdrant collection and history database,
    as the other peers get their own Chroma collection); ``add(text, user_id=...,
    metadata={"dia_id": ...}, infer=False)`` per turn, so each turn is one memory and no LLM
    runs; ``search(question, top_k=10, filters={"user_id": ...})`` per question, with mem0's
    default threshold. Embeddings come from ``server`` (this process's MiniLM behind
    ``/v1/embeddings``) through mem0's ``openai`` embedder. The latency is the wall time of
    ``Memory.search`` measured inside the runner (``ask_timed``), so the JSON round trip to the
    runner is not counted; the query's embedding request to ``server`` is, as it is part of
    the search call (``query_embedding_p50_ms`` in the row says how much of it).
    """

    name = "mem0 OSS"

    def __init__(self, runner: Mem0Runner, server: EmbeddingServer, workdir: Path, hello: dict[str, Any]) -> None:
        self.runner, self.server, self.workdir = runner, server, workdir
        self.user_id = ""
        self.hello = hello
        self.embed_ms: list[float] = []
        self.returned: list[int] = []

    @property
    def details(self) -> dict[str, Any]:
        """Extra fields for mem0's row: versions, store, and how much of the latency is the query embedding."""
        return {
            "mem0ai": self.hello.get("mem0"),
            "qdrant-client": (self.hello.get("packages") or {}).get("qdrant-client"),
            "vector_store": "qdrant, local (mem0's default store)",
            "latency": "wall time of Memory.search, measured inside the runner",
            "query_embedding_p50_ms": round(percentile(self.embed_ms, 50), 2) if self.embed_ms else None,
            # mem0's default threshold (0.1 cosine) can return fewer than the 10 items asked for
            "items_returned_mean": round(sum(self.returned) / len(self.returned), 2) if self.returned else None,
        }

    def config(self, index: int) -> dict[str, Any]:
        """The mem0 config for conversation ``index``: local Qdrant, MiniLM over loopback, no LLM use."""
        dims = self.server.embedder.dimension
        loopback = {"api_key": self.server.api_key, "openai_base_url": self.server.base_url}
        return {
            "vector_store": {
                "provider": "qdrant",
                "config": {
                    "collection_name": f"mem0-{index:03d}",
                    "path": str(self.workdir / f"qdrant-{index:03d}"),
                    "embedding_model_dims": dims,
                },
            },
            "embedder": {
                "provider": "openai",
                "config": {"model": self.server.embedder.name, "embedding_dims": dims, **loopback},
            },
            # Built by Memory() but never called (infer=False); pointed at the loopback server
            # anyway, so a call could not leave the machine.
            "llm": {"provider": "openai", "config": loopback},
            "history_db_path": str(self.workdir / f"history-{index:03d}.db"),
        }

    def load(self, conversation: Conversation, index: int) -> None:
        """A fresh Memory for the conversation, one ``add(..., infer=False)`` per turn."""
        self.user_id = f"conv-{index:03d}"
        turns = [{"text": peer_text(t), "metadata": {"dia_id": t.dia_id}} for t in conversation.turns]
        try:
            reply = self.runner.request("load", config=self.config(index), user_id=self.user_id, turns=turns)
        except RunnerError as exc:
            raise PeerFailed(str(exc)) from exc
        if reply.get("stored") != len(turns):
            raise PeerFailed(f"mem0 stored {reply.get('stored')} of the {len(turns)} turns of conversation {index}")

    def ask_timed(self, question: str) -> tuple[list[str], str, float]:
        """``Memory.search``: the hits' turn ids in mem0's order, their joined text, and the call's ms."""
        try:
            reply = self.runner.request("search", query=question, top_k=TOP_K)
        except RunnerError as exc:
            raise PeerFailed(str(exc)) from exc
        hits = reply["results"]
        self.embed_ms.append(float(reply.get("embed_seconds", 0.0)) * 1000)
        self.returned.append(len(hits))
        ranked = [str((hit.get("metadata") or {}).get("dia_id", "")) for hit in hits]
        return ranked, "\n".join(str(hit.get("memory", "")) for hit in hits), float(reply["seconds"]) * 1000

    def ask(self, question: str) -> tuple[list[str], str]:
        """``ask_timed`` without the time."""
        ranked, context, _ms = self.ask_timed(question)
        return ranked, context


__all__ = [
    "TOP_K",
    "HindsightSystem",
    "LangChainSystem",
    "LlamaIndexSystem",
    "Mem0System",
    "PeerFailed",
    "PeerSystem",
    "peer_text",
]
