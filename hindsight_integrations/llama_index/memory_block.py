"""``HindsightMemoryBlock``: long-term memory as a block of LlamaIndex's ``Memory``.

LlamaIndex's ``Memory`` keeps recent messages in its own FIFO queue and, when the queue
passes its token limit, flushes the oldest messages to its memory blocks. This block is
the long-term side of that design:

* ``_aput`` receives the flushed messages and stores them through the MCP client; the
  server's write filter drops chit-chat and keeps preferences, facts and decisions.
* ``_aget`` recalls the memories relevant to the latest messages and returns them as the
  dated context block (``core/recall/context.py``), which ``Memory`` renders into its system message.
* ``atruncate`` gives up the lowest-scoring memories first when ``Memory`` needs the
  tokens back (only for blocks with ``priority`` > 0: priority 0 means never truncate).

Saved with LlamaIndex's serializers (``JsonSerializer`` rebuilds it from its fields) or pickled,
the block keeps ``store_address``, where its memories live, and the restored block reconnects
there (the same engine when restored in the same process) or refuses with what to do, as
``HindsightChatMemory`` does: never to the environment's store instead.
"""

from __future__ import annotations

import hashlib
import logging
from collections import OrderedDict
from typing import TYPE_CHECKING, Any

from llama_index.core.base.llms.types import ChatMessage, MessageRole
from llama_index.core.bridge.pydantic import Field, PrivateAttr, field_validator
from llama_index.core.memory.memory import BaseMemoryBlock

from ..core.errors import InvalidInputError
from ..core.language.tokens import estimate_tokens
from ..core.recall.context import CONTEXT_FOOTER, CONTEXT_HEADER
from ..core.redaction import describe_error
from ..mcp.address import StoreAddress
from ..mcp.refusals import MAX_QUERY_CHARS, rejected_text, without_touch
from ._connected import ConnectedComponent
from ._messages import hindsight_role, is_injected_context, latest_user_text, message_text
from ._recall import DEFAULT_TOKEN_BUDGET, RecallOptions, Selected, check_filters, context_of, select_hits

if TYPE_CHECKING:
    from ..core.engine import MemoryEngine
    from ..mcp.client import MemoryClient

log = logging.getLogger("hindsight.llama_index")

_REMEMBERED_CONTEXTS = 64  # recent block texts whose hits atruncate can rank


class HindsightMemoryBlock(ConnectedComponent, BaseMemoryBlock[str]):
    """Recall from and store into Hindsight as one block of ``llama_index.core.memory.Memory``."""

    name: str = Field("hindsight", description="the block's name in the memory template")
    description: str | None = Field(
        "Facts, preferences and decisions remembered from earlier conversations with this user.",
        description="what the block holds",
    )
    namespace: str | None = Field(
        None, description="the user; None uses the client's, else HINDSIGHT_NAMESPACE, else an error"
    )
    top_k: int = Field(5, ge=1, description="memories recalled at most")
    min_score: float | None = Field(
        None, ge=0, le=1, description="minimum similarity of a recalled memory to the query"
    )
    token_budget: int | None = Field(DEFAULT_TOKEN_BUDGET, gt=0, description="tokens the block may use")
    filters: dict[str, Any] | None = Field(
        None, description="recall filters (tiers, kinds, since, min_importance, ...)"
    )
    include_history: bool = Field(False, description="also recall superseded memories, marked as such")
    query_messages: int = Field(1, ge=1, description="how many of the latest messages form the recall query")
    store_address: StoreAddress | None = Field(
        None,
        description=(
            "where the memories live; set by the block from its client, and saved with it so that a restored "
            "block (JsonSerializer, pickle) reconnects to the same store"
        ),
    )

    _client: Any = PrivateAttr(default=None)
    _selected: OrderedDict[str, Selected] = PrivateAttr(default_factory=OrderedDict)
    _counted: tuple[str, ...] | None = PrivateAttr(default=None)

    @field_validator("filters")
    @classmethod
    def _filters(cls, value: dict[str, Any] | None) -> dict[str, Any] | None:
        return check_filters(value)

    def __init__(self, *, client: MemoryClient | None = None, engine: MemoryEngine | None = None, **data: Any) -> None:
        super().__init__(**data)
        self._connect(client, engine, "HindsightMemoryBlock")

    @property
    def client(self) -> MemoryClient:
        """The MCP client this block recalls and stores through."""
        return self._client

    @property
    def recall_options(self) -> RecallOptions:
        """This block's recall fields as one validated ``RecallOptions`` (shared with the chat memory)."""
        return RecallOptions.of(self)

    def _query(self, messages: list[ChatMessage]) -> str:
        """The recall query: the latest user message, or the last ``query_messages`` messages joined."""
        live = [m for m in messages if not is_injected_context(m)]
        if self.query_messages == 1:
            return latest_user_text(live)[-MAX_QUERY_CHARS:]
        texts = [message_text(m) for m in live[-self.query_messages :]]
        return "\n".join(t for t in texts if t)[-MAX_QUERY_CHARS:]

    async def _aget(self, messages: list[ChatMessage] | None = None, **block_kwargs: Any) -> str:
        """``BaseMemoryBlock._aget``: the memories relevant to the latest messages, as the dated context block.

                Returns '' when there is no query or nothing is recalled. The hits behind each block
                are remembered (the last 64), so ``atruncate`` can drop the lowest-scoring first. Only a turn's
        first recall counts an access to its memories (``_turn_of``).
        """
        query = self._query(messages or [])
        if not query:
            return ""
        args = self.recall_options.call_kwargs()
        turn = (str(block_kwargs.get("session_id")), query, *_turn_of(messages or []))
        if turn == self._counted:
            args["touch"] = False
        self._counted = turn
        try:
            try:
                result = await self._client.arecall(query, **args)
            except InvalidInputError as exc:
                result = await self._client.arecall(query, **without_touch(exc, args))
        except InvalidInputError as exc:
            if not rejected_text(exc, "query"):
                raise
            log.warning("recall skipped: %s", describe_error(exc))
            return ""
        selected = select_hits(result.hits, self.recall_options, query=query)
        context = context_of(selected)
        if context:
            self._selected[context] = selected
            while len(self._selected) > _REMEMBERED_CONTEXTS:
                self._selected.popitem(last=False)
        return context

    async def _aput(self, messages: list[ChatMessage]) -> None:
        """``BaseMemoryBlock._aput``: store the messages ``Memory`` flushed out of its queue, through MCP.

        Batches of at most 100 messages and 1 MB of text (what a server takes in one call), each
        with an idempotent request id (a retried flush stores nothing twice); the server's write
        filter picks what stays. If the server refuses one message's text its batch is retried
        one by one, so the other messages are still stored.
        """
        items: list[dict[str, Any]] = []
        for message in messages:
            if is_injected_context(message):
                continue
            text = message_text(message)
            if not text:
                log.info("skipping a flushed %s message with no text to remember", message.role)
                continue
            item: dict[str, Any] = {
                "content": text,
                "role": hindsight_role(message).value,
                "metadata": {"origin": "llama_index.memory_block"},
            }
            session_id = message.additional_kwargs.get("session_id")
            if isinstance(session_id, str) and session_id:
                item["session_id"] = session_id
            items.append(item)
        for batch in _batches(items):
            await self._store(batch)

    async def _store(self, items: list[dict[str, Any]]) -> None:
        """One batch of ``_aput``: as a whole, else one by one when a message's text is refused."""
        try:
            await self._client.astore(items, request_id=_request_id(items))
        except InvalidInputError as exc:
            if not rejected_text(exc, "content"):
                raise
            # One bad item (e.g. over the size limit) must not cost the others.
            log.warning(
                "storing %d flushed messages as a batch failed (%s); storing them one by one",
                len(items),
                describe_error(exc),
            )
            for item in items:
                try:
                    await self._client.astore([item], request_id=_request_id([item]))
                except InvalidInputError as item_exc:
                    if not rejected_text(item_exc, "content"):
                        raise
                    log.warning("flushed message not stored: %s", describe_error(item_exc))

    async def atruncate(self, content: str, tokens_to_truncate: int) -> str | None:
        """``BaseMemoryBlock.atruncate``: drop the lowest-scoring memories until ``tokens_to_truncate`` are freed.

        Returns None when nothing is left. A block this object did not build (its hits are
        unknown) loses its oldest lines instead.
        """
        if not content or tokens_to_truncate <= 0:
            return content or None
        selected = self._selected.get(content)
        if selected is None:
            return _drop_oldest_lines(content, tokens_to_truncate)
        kept = sorted(selected, key=lambda pair: pair[0].score, reverse=True)
        before = estimate_tokens(content)
        while kept:
            kept.pop()
            if before - estimate_tokens(context_of(kept)) >= tokens_to_truncate:
                break
        if not kept:
            return None
        shorter = context_of(kept)
        self._selected[shorter] = kept
        return shorter


def _turn_of(messages: list[ChatMessage]) -> tuple[str, str]:
    """What tells the user's latest turn apart: their latest message and the one before it.

    ``Memory`` asks the block at every step of an agent's turn and once more to finish it; only the
    first recall of a turn counts an access, or a memory would weigh more in later rankings for every
    step the turn took. The same question asked again follows another answer: a new turn.
    """
    live = [m for m in messages if not is_injected_context(m)]
    for index in range(len(live) - 1, -1, -1):
        if live[index].role == MessageRole.USER:
            return message_text(live[index]), message_text(live[index - 1]) if index else ""
    return "", ""


_BATCH_ITEMS = 100
_BATCH_BYTES = 1_000_000  # a quarter of a server's request limit, whatever the JSON escaping of the text


def _batches(items: list[dict[str, Any]]) -> list[list[dict[str, Any]]]:
    """``items`` in batches a server takes: ``_BATCH_ITEMS`` and ``_BATCH_BYTES`` of text at most (a long flush)."""
    batches: list[list[dict[str, Any]]] = []
    size = 0
    for item in items:
        length = len(item["content"].encode())
        if not batches or len(batches[-1]) >= _BATCH_ITEMS or size + length > _BATCH_BYTES:
            batches.append([])
            size = 0
        batches[-1].append(item)
        size += length
    return batches


def _request_id(items: list[dict[str, Any]]) -> str:
    """Same flushed messages → same id, so a retried flush never stores them twice."""
    digest = hashlib.sha256(repr([(i.get("session_id"), i["role"], i["content"]) for i in items]).encode()).hexdigest()
    return f"llama-index-block-{digest[:40]}"


def _drop_oldest_lines(content: str, tokens_to_truncate: int) -> str | None:
    """Truncate a block whose hits are unknown: memory lines go oldest first."""
    lines = content.split("\n")
    memory_lines = [line for line in lines if line.startswith("- (")]
    freed = 0
    while memory_lines and freed < tokens_to_truncate:
        freed += estimate_tokens(memory_lines.pop(0))
    if not memory_lines:
        return None
    return "\n".join([CONTEXT_HEADER, *memory_lines, CONTEXT_FOOTER])


__all__ = ["HindsightMemoryBlock"]
