"""engram-search as a peer of ``hindsight bench peers``: its hybrid retrieval pipeline, on our MiniLM.

engram-search (``ENGRAM_SPEC``, the ``[engram]`` extra) ranks conversational memories with
``engram.retrieval.pipeline.RetrievalPipeline.search``: a dense ranking by cosine, a BM25
ranking, and boost rankings for capitalised names and quoted phrases in the question (and for
"N days ago" phrases when a question date is given), fused by reciprocal rank fusion (k=60),
then optionally re-ranked by a cross-encoder. That call is the one engram's own LoCoMo
benchmark makes (``benchmarks/locomo_bench.py``, "hybrid" mode): its documents are held in
memory with their vectors and handed to every search. engram's stored path (``FaissBackend``
behind its server and MCP tools) ranks differently (dense top-3k, then 0.6 cosine + 0.4
BM25, cosine floor 0.45) and has no name, quote or time signal, so it is not the one measured.

Two of engram's defaults are changed, both because they would download a model from the
Hugging Face hub at run time (machines running the benchmark may have no network) and
because every peer must rank with the same model:

* the embedder is hindsight's all-MiniLM-L6-v2, the very instance every other peer uses,
  behind engram's embedder interface (``MiniLMForEngram``), instead of engram's default
  bge-large-en-v1.5; MiniLM takes no query prefix, as engram's own ``minilm`` entry says;
* the cross-encoder re-ranker (bge-reranker-v2-m3) is off (``use_reranker=False``, as in
  engram's "hybrid" mode, which its README's LoCoMo figure is for).

Nothing of engram imports sentence-transformers or torch on this path: its ``Embedder`` is
never built. Each turn is one ``Document`` (text ``peer_text(turn)``, its dia_id, speaker and
date in the metadata), so evidence is scored per turn as for every peer. No peer is given the
question's date, so engram's time boost never fires; its name and quote boosts do.
"""

from __future__ import annotations

import importlib.metadata
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..core.embedding.protocol import Embedder, embed_documents
from .locomo_data import Conversation
from .peer_systems import TOP_K, PeerFailed, peer_text

ENGRAM_VERSION = "0.1.7"
ENGRAM_SPEC = f"engram-search=={ENGRAM_VERSION}"
EXTRA = "engram"


class MiniLMForEngram:
    """hindsight's embedder behind the two calls engram's pipeline makes of its ``Embedder``.

    engram expects unit-length numpy vectors (its dense ranking is a dot product); ours are
    normalised already, and are normalised again here so that another configured model
    cannot silently turn the ranking into an unnormalised one.
    """

    def __init__(self, embedder: Embedder) -> None:
        self.embedder = embedder
        self.dimension = embedder.dimension

    @staticmethod
    def _unit(vectors: Sequence[Sequence[float]]) -> np.ndarray:
        matrix = np.asarray(vectors, dtype=np.float32)
        norms = np.linalg.norm(matrix, axis=-1, keepdims=True)
        return matrix / np.where(norms > 0, norms, 1.0)

    def encode_documents(self, texts: list[str], batch_size: int = 64) -> np.ndarray:
        """One row per text (a model's document prefix applied, if it has one), as engram's ``Embedder`` does."""
        return self._unit(embed_documents(self.embedder, texts)).reshape(len(texts), -1)

    def encode_query(self, text: str) -> np.ndarray:
        """The query's vector: the same call the other peers' queries go through."""
        return self._unit(self.embedder.embed([text]))[0]


class EngramSystem:
    """engram-search's ``RetrievalPipeline`` over one conversation's turns, MiniLM vectors, no re-ranker.

    ``load`` embeds every turn once (``encode_documents``) into engram ``Document``s;
    ``ask`` is ``RetrievalPipeline.search(question, documents, top_k=10)``, timed around the
    call like the other in-process peers, so the query's embedding, the BM25 index engram
    rebuilds over the documents for each search, and the fusion are all counted.
    """

    name = "engram-search (hybrid RRF, our MiniLM, no re-rank)"

    def __init__(self, embedder: Embedder) -> None:
        try:
            from engram.backends.base import Document
            from engram.retrieval.pipeline import RetrievalPipeline
        except ImportError as exc:
            raise ImportError(
                f"{exc}; engram-search is an optional extra: pip install 'hindsight-integrations[{EXTRA}]'"
            ) from exc
        self.document_class: Any = Document
        self.encoder = MiniLMForEngram(embedder)
        self.pipeline: Any = RetrievalPipeline(embedder=self.encoder, reranker=None, use_reranker=False)
        self.documents: list[Any] = []
        self.version = importlib.metadata.version("engram-search")
        self.returned: list[int] = []

    @property
    def details(self) -> dict[str, Any]:
        """Extra fields for engram's row: its version and what was changed from its defaults, and why."""
        return {
            "engram-search": self.version,
            "retrieval": "RetrievalPipeline.search: dense + BM25 + name/quote boosts, reciprocal rank fusion",
            "embedding": "hindsight's all-MiniLM-L6-v2 (engram's default bge-large would need a hub download)",
            "reranker": "off (its cross-encoder would need a hub download; engram's 'hybrid' mode)",
            "time_boost": "inactive: no peer is given the question's date",
            "items_returned_mean": round(sum(self.returned) / len(self.returned), 2) if self.returned else None,
        }

    def load(self, conversation: Conversation, index: int) -> None:
        """One engram ``Document`` per turn, its vector from MiniLM; the id is unique even if dia_ids repeat."""
        texts = [peer_text(turn) for turn in conversation.turns]
        try:
            vectors = self.encoder.encode_documents(texts) if texts else np.empty((0, self.encoder.dimension))
            self.documents = [
                self.document_class(
                    id=f"c{index:03d}-t{n:05d}",
                    text=text,
                    embedding=vector.tolist(),  # engram's Document holds a list, as its own benchmark fills it
                    metadata={
                        "dia_id": turn.dia_id,
                        "speaker": turn.speaker,
                        "timestamp": turn.when.date().isoformat(),
                        "session_id": f"session_{turn.session}",
                    },
                )
                for n, (turn, text, vector) in enumerate(zip(conversation.turns, texts, vectors))
            ]
        except Exception as exc:  # any failure of the library becomes the row's reason; the other peers run
            raise PeerFailed(f"{type(exc).__name__}: {exc}") from exc

    def ask(self, question: str) -> tuple[list[str], str]:
        """``RetrievalPipeline.search`` with ``top_k=10``: the hits' turn ids in engram's order and their text."""
        try:
            hits = self.pipeline.search(question, self.documents, top_k=TOP_K)
        except Exception as exc:  # any failure of the library becomes the row's reason; the other peers run
            raise PeerFailed(f"{type(exc).__name__}: {exc}") from exc
        self.returned.append(len(hits))
        return [str((hit.metadata or {}).get("dia_id", "")) for hit in hits], "\n".join(hit.text for hit in hits)


__all__ = ["ENGRAM_SPEC", "ENGRAM_VERSION", "EngramSystem", "MiniLMForEngram"]
