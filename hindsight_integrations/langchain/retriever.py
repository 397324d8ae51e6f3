"""``HindsightRetriever``: recall as a LangChain ``BaseRetriever`` returning ``Document``s.

For RAG-style chains that already know how to stuff documents into a prompt. Each
document is one memory; its metadata carries what a caller needs to judge or cite it
(id, tier, kind, dates, score, provenance), so nothing about a memory is lost in the
translation.
"""

from __future__ import annotations

from typing import Any, cast

from langchain_core.callbacks import AsyncCallbackManagerForRetrieverRun, CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever
from pydantic import ConfigDict, Field, PrivateAttr, model_validator

from ..core.model.limits import MAX_TOKENS
from ..core.model.results import RecallHit, RecallResult
from ..mcp.refusals import query_tail
from ..mcp.resolve import ClientPool, resolve_namespace
from ._connection import SharedConnection


def hit_document(hit: RecallHit) -> Document:
    """One recalled memory as a Document; dates are ISO 8601 strings, absent ones omitted."""
    record = hit.record
    data = record.public_dict()
    metadata: dict[str, Any] = {
        "id": record.id,
        "namespace": record.namespace,
        "tier": data["tier"],
        "kind": data["kind"],
        "role": data["role"],
        "status": data["status"],
        "importance": record.importance,
        "score": hit.score,
        "relevance": hit.relevance,
        "occurred_at": data["occurred_at"],
        "created_at": data["created_at"],
        "updated_at": data["updated_at"],
        "source": data["source"],
        "entities": record.entities,
        "metadata": record.metadata,
    }
    for optional in ("session_id", "agent_id", "valid_until", "expires_at", "superseded_by", "summary"):
        if data.get(optional) is not None:
            metadata[optional] = data[optional]
    return Document(page_content=record.content, id=record.id, metadata=metadata)


class HindsightRetriever(SharedConnection, BaseRetriever):
    """Hybrid recall (vector + BM25 + recency + importance) over one user's memories.

    ``HindsightRetriever(namespace="u1", k=4)``; ``k``, ``filters`` and ``min_score`` can
    also be given per call: ``retriever.invoke("deadline?", k=2)``.
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    namespace: str | None = Field(None, description="The user; falls back to HINDSIGHT_NAMESPACE.")
    k: int = Field(4, ge=1, description="Number of documents to return.")
    min_score: float | None = Field(None, ge=0, le=1, description="Drop memories whose relevance is below this.")
    filters: dict[str, Any] | None = Field(
        None, description="RecallFilters as a dict: tiers, kinds, session_id, since, ..."
    )
    include_history: bool = Field(False, description="Also return superseded/expired memories.")
    client: Any = Field(None, exclude=True)
    engine: Any = Field(None, exclude=True)

    _pool: ClientPool = PrivateAttr()

    @model_validator(mode="after")
    def _configured(self) -> HindsightRetriever:
        self.namespace = resolve_namespace(self.namespace, "HindsightRetriever")
        self._pool = ClientPool(self.client, self.engine, owner="HindsightRetriever")
        return self

    @property
    def memory_client(self) -> Any:
        """The MemoryClient in use (resolved on first use, so construction never blocks on I/O)."""
        # The validator has replaced a missing namespace with the resolved one (or raised).
        return self._pool.get(cast(str, self.namespace))

    async def _aclient(self) -> Any:
        """``memory_client`` for the async methods: a first use is resolved off the event loop (``ClientPool.aget``)."""
        return await self._pool.aget(cast(str, self.namespace))

    def _args(self, k: int | None, filters: dict[str, Any] | None, min_score: float | None) -> dict[str, Any]:
        """``recall`` arguments: per-call values where given, else the retriever's own."""
        return {
            "top_k": k if k is not None else self.k,
            "min_score": min_score if min_score is not None else self.min_score,
            "filters": filters if filters is not None else self.filters,
            "include_history": self.include_history,
            "token_budget": MAX_TOKENS,  # documents, not a context block: no budget may cut ``k`` short
        }

    @staticmethod
    def _documents(result: RecallResult) -> list[Document]:
        return [hit_document(h) for h in result.hits]

    def _get_relevant_documents(
        self,
        query: str,
        *,
        run_manager: CallbackManagerForRetrieverRun,
        k: int | None = None,
        filters: dict[str, Any] | None = None,
        min_score: float | None = None,
    ) -> list[Document]:
        """``BaseRetriever._get_relevant_documents``: hybrid recall through MCP, one Document per memory.

        Also accepts ``k``, ``filters`` and ``min_score`` per call (``invoke(query, k=2)``),
        which override the retriever's fields for that call only.
        """
        return self._documents(self.memory_client.recall(query_tail(query), **self._args(k, filters, min_score)))

    async def _aget_relevant_documents(
        self,
        query: str,
        *,
        run_manager: AsyncCallbackManagerForRetrieverRun,
        k: int | None = None,
        filters: dict[str, Any] | None = None,
        min_score: float | None = None,
    ) -> list[Document]:
        """Async ``_get_relevant_documents``: the same recall through the client's ``arecall``."""
        return self._documents(
            await (await self._aclient()).arecall(query_tail(query), **self._args(k, filters, min_score))
        )


__all__ = ["HindsightRetriever", "hit_document"]
