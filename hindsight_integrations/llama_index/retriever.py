"""``HindsightRetriever``: recalled memories as LlamaIndex nodes.

Use it anywhere LlamaIndex takes a retriever (``RetrieverQueryEngine``,
``ContextChatEngine``, a ``QueryFusionRetriever``...). Each hit becomes a ``TextNode``
whose id is the memory id (so a node can be traced, updated or forgotten) and whose
metadata carries the memory's tier, kind, dates and provenance. Only the date and kind
are shown to the LLM; the rest stays out of prompts and embeddings.

A copy of the retriever shares its client; a pickled one (LlamaIndex's ``PickleSerializer``
pickles what JSON cannot hold) keeps where its memories live and reconnects there when
loaded, or refuses with what to do: never to the environment's store instead.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from llama_index.core.base.base_retriever import BaseRetriever
from llama_index.core.callbacks import CallbackManager
from llama_index.core.schema import NodeWithScore, QueryBundle, TextNode

from .._copying import deepcopy_sharing
from ..core.model.limits import MAX_TOKENS
from ..core.model.results import RecallHit
from ..mcp.address import client_address, picklable_address
from ..mcp.refusals import query_tail
from ..mcp.resolve import address_of_older_save, reconnect, resolve_client, resolve_namespace
from ._recall import RecallOptions

if TYPE_CHECKING:
    from ..core.engine import MemoryEngine
    from ..core.model.results import RecallResult
    from ..mcp.client import MemoryClient

# Metadata the LLM sees next to the memory text; everything else is for the application.
_LLM_VISIBLE = ("occurred_at", "kind")


def hit_to_node(hit: RecallHit) -> NodeWithScore:
    """One recalled memory as a scored node with the memory's metadata."""
    r = hit.record
    metadata: dict[str, Any] = {
        "memory_id": r.id,
        "namespace": r.namespace,
        "tier": r.tier.value,
        "kind": r.kind.value,
        "role": r.role.value,
        "status": r.status.value,
        "importance": r.importance,
        "occurred_at": r.occurred_at.isoformat(),
        "created_at": r.created_at.isoformat(),
        "updated_at": r.updated_at.isoformat(),
        "valid_from": r.valid_from.isoformat(),
        "valid_until": r.valid_until.isoformat() if r.valid_until else None,
        "expires_at": r.expires_at.isoformat() if r.expires_at else None,
        "session_id": r.session_id,
        "agent_id": r.agent_id,
        "entities": list(r.entities),
        "source": r.source.model_dump(mode="json", exclude_defaults=True),
        "superseded_by": r.superseded_by,
        "access_count": r.access_count,
        "relevance": hit.relevance,
        "similarity": hit.similarity,
        "metadata": {k: v for k, v in r.metadata.items() if not k.startswith("_")},
    }
    hidden = [k for k in metadata if k not in _LLM_VISIBLE]
    node = TextNode(
        id_=r.id,
        text=r.content,
        metadata=metadata,
        excluded_llm_metadata_keys=hidden,
        excluded_embed_metadata_keys=list(metadata),
    )
    return NodeWithScore(node=node, score=hit.score)


class HindsightRetriever(BaseRetriever):
    """Retrieve a user's long-term memories as ``NodeWithScore`` (hybrid recall: docs/architecture.md, "Recall").

    ``score`` is Hindsight's fused score (similarity, recency, importance, access); the
    relevance part alone is in ``metadata["relevance"]`` and the cosine similarity (what
    ``min_score`` compares) in ``metadata["similarity"]``. ``session_id`` narrows recall to
    one conversation's memories. ``token_budget`` caps the tokens of the nodes returned; by
    default there is none, so ``top_k`` nodes come back when that many match (recall's own
    default, 450 tokens, is sized for a prompt's context block, not for a retriever's nodes).
    """

    def __init__(
        self,
        namespace: str | None = None,
        *,
        client: MemoryClient | None = None,
        engine: MemoryEngine | None = None,
        top_k: int = 5,
        min_score: float | None = None,
        token_budget: int | None = None,
        filters: dict[str, Any] | None = None,
        include_history: bool = False,
        session_id: str | None = None,
        callback_manager: CallbackManager | None = None,
        verbose: bool = False,
    ) -> None:
        if session_id is not None:
            filters = {**(filters or {}), "session_id": session_id}
        # Validated here so a bad argument fails when the retriever is built, not mid-query.
        self.options = RecallOptions(
            top_k=top_k,
            min_score=min_score,
            token_budget=MAX_TOKENS if token_budget is None else token_budget,
            filters=filters,
            include_history=include_history,
        )
        self.namespace = resolve_namespace(namespace, "HindsightRetriever", client)
        self._client = resolve_client(client, namespace=self.namespace, engine=engine)
        super().__init__(callback_manager=callback_manager, verbose=verbose)

    @property
    def client(self) -> MemoryClient:
        """The MCP client this retriever recalls through."""
        return self._client

    def __deepcopy__(self, memo: dict[int, Any]) -> HindsightRetriever:
        """A copy on the same client: a connection is not state to duplicate."""
        return deepcopy_sharing(self, memo, self._client)

    def __getstate__(self) -> dict[str, Any]:
        """The settings and where the memories live, instead of the client (a connection)."""
        state = {name: value for name, value in self.__dict__.items() if name != "_client"}
        state["store_address"] = picklable_address(client_address(self._client), "HindsightRetriever")
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        address = state.pop("store_address", None) or address_of_older_save("HindsightRetriever")
        self.__dict__.update(state)
        self._client = reconnect(address, self.namespace, "HindsightRetriever")

    @staticmethod
    def _nodes(result: RecallResult) -> list[NodeWithScore]:
        return [hit_to_node(h) for h in result.hits]

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        """``BaseRetriever._retrieve``: recall through MCP for the query text, one node per memory.

        The query's own embedding, if any, is not used: the server embeds the text with the
        model its memories were stored with. A long query (a chat engine passes the user's
        whole message, maybe a pasted log) is recalled for its end (``query_tail``), as the
        LangChain retriever does, rather than refused for its size.
        """
        return self._nodes(self._client.recall(query_tail(query_bundle.query_str), **self.options.call_kwargs()))

    async def _aretrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        """``BaseRetriever._aretrieve``: ``_retrieve`` through the client's ``arecall``."""
        return self._nodes(await self._client.arecall(query_tail(query_bundle.query_str), **self.options.call_kwargs()))


__all__ = ["HindsightRetriever", "hit_to_node"]
