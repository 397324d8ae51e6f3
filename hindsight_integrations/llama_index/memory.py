"""``HindsightChatMemory``: a LlamaIndex ``BaseMemory`` backed by Hindsight.

Drop it in wherever LlamaIndex takes ``memory=``: ``SimpleChatEngine``,
``ContextChatEngine``, ``CondensePlusContextChatEngine`` and the workflow agents
(``FunctionAgent`` / ``ReActAgent`` ``.run(memory=...)``). All of them only call the
``BaseMemory`` interface (``put``/``aput``, ``put_messages``, ``set``, ``get(input=...)``,
``get_all``, ``reset``), so no subclass of the newer ``Memory`` class is needed.

* ``put`` records each message as a turn of the session's working memory through the MCP
  client; the server's write filter and extraction decide what also becomes a long-term
  memory, and it compresses the window when it grows past its threshold.
* ``get`` returns the working window (so a restarted process resumes the conversation) with
  one system message in front holding the long-term memories recalled for the current
  input, in the dated context-block format (``core/recall/context.py``).
* ``reset`` clears the session's working memory only; what was learned stays.

Saved with the agent's ``Context`` (``to_dict`` / ``from_dict``) or pickled, the memory keeps
``store_address``, where its memories live, and the restored memory reconnects there (the
same engine when restored in the same process) or refuses with what to do: never to the
environment's store instead.
"""

from __future__ import annotations

import logging
import uuid
from typing import TYPE_CHECKING, Any, Literal

from llama_index.core.base.llms.types import ChatMessage, MessageRole, TextBlock
from llama_index.core.bridge.pydantic import Field, PrivateAttr, field_validator
from llama_index.core.memory.types import BaseMemory

from ..core.errors import InvalidInputError
from ..core.model.records import MemoryRecord, Role
from ..core.redaction import describe_error
from ..mcp.address import StoreAddress
from ..mcp.refusals import SHORTENED_BYTES, query_tail, rejected_text, shortened, skip_refused_text, without_touch
from ._connected import ConnectedComponent
from ._messages import (
    CONTEXT_FLAG,
    SNAPSHOT_KEY,
    hindsight_role,
    is_injected_context,
    latest_user_text,
    message_text,
    sanitize_history,
    snapshot,
    turn_text,
    turn_to_message,
    without_injected_context,
)
from ._recall import DEFAULT_TOKEN_BUDGET, RecallOptions, check_filters, context_of, select_hits

if TYPE_CHECKING:
    from ..core.engine import MemoryEngine
    from ..core.model.results import RecallResult
    from ..mcp.client import MemoryClient

log = logging.getLogger("hindsight.llama_index")

# Recall over-fetches this many extra hits so that dropping the ones distilled from live
# turns still leaves ``top_k`` to choose from.
_OVERFETCH = 5


class HindsightChatMemory(ConnectedComponent, BaseMemory):
    """Chat memory for LlamaIndex chat engines and agents: working window + recalled memories.

    ``namespace`` is the user whose memories are read and written; ``session_id`` names the
    conversation whose working window is replayed (a random one when omitted, like
    LlamaIndex's own ``Memory``; pass a stable id to resume a conversation after a restart).
    """

    namespace: str | None = Field(
        None, description="the user; None uses the client's, else HINDSIGHT_NAMESPACE, else an error"
    )
    session_id: str = Field(default_factory=lambda: str(uuid.uuid4()), description="the conversation")
    top_k: int = Field(5, ge=1, description="long-term memories injected at most")
    min_score: float | None = Field(
        None, ge=0, le=1, description="minimum similarity of an injected memory to the query"
    )
    token_budget: int | None = Field(DEFAULT_TOKEN_BUDGET, gt=0, description="tokens the injected memories may use")
    filters: dict[str, Any] | None = Field(
        None, description="recall filters (tiers, kinds, since, min_importance, ...)"
    )
    include_history: bool = Field(False, description="also inject superseded memories, marked as such")
    insert_method: Literal["system", "user"] = Field(
        "system",
        description=(
            "'system': a system message before the conversation; 'user': prepended to the latest user "
            "message (for ReActAgent without a system_prompt, which drops a leading system message)"
        ),
    )

    store_address: StoreAddress | None = Field(
        None,
        description=(
            "where the memories live; set by the memory from its client, and saved with it so that a restored "
            "memory (Context.from_dict, pickle) reconnects to the same store"
        ),
    )

    _client: Any = PrivateAttr(default=None)
    _counted: tuple[str, str] | None = PrivateAttr(default=None)

    @field_validator("filters")
    @classmethod
    def _filters(cls, value: dict[str, Any] | None) -> dict[str, Any] | None:
        return check_filters(value)

    def __init__(self, *, client: MemoryClient | None = None, engine: MemoryEngine | None = None, **data: Any) -> None:
        super().__init__(**data)
        self._connect(client, engine, "HindsightChatMemory")

    @field_validator("session_id")
    @classmethod
    def _session_id(cls, value: str) -> str:
        if not isinstance(value, str) or not value.strip():
            raise ValueError("session_id must be a non-empty string")
        return value

    @classmethod
    def class_name(cls) -> str:
        """LlamaIndex's serialisation name for this class (``BaseComponent.class_name``)."""
        return "HindsightChatMemory"

    @classmethod
    def from_defaults(
        cls,
        namespace: str | None = None,
        session_id: str | None = None,
        *,
        client: MemoryClient | None = None,
        engine: MemoryEngine | None = None,
        chat_history: list[ChatMessage] | None = None,
        **kwargs: Any,
    ) -> HindsightChatMemory:
        """``BaseMemory.from_defaults``: build a chat memory; ``chat_history`` (optional) replaces the session's window.

        Unlike ``ChatMemoryBuffer.from_defaults`` there is no ``llm`` or ``token_limit``: the
        window is kept within budget by server-side compression, not by a tokenizer here.
        """
        if session_id is not None:
            kwargs["session_id"] = session_id
        memory = cls(namespace=namespace, client=client, engine=engine, **kwargs)
        if chat_history:
            memory.set(chat_history)
        return memory

    @property
    def client(self) -> MemoryClient:
        """The MCP client this memory writes through."""
        return self._client

    @property
    def recall_options(self) -> RecallOptions:
        """This memory's recall fields as one validated ``RecallOptions`` (shared with the memory block)."""
        return RecallOptions.of(self)

    # -- writing ------------------------------------------------------------------------------
    def _turn(self, message: ChatMessage) -> dict[str, Any] | None:
        """Arguments of ``record_turn`` for a message, or None when there is nothing to record."""
        if is_injected_context(message):
            return None  # our own recalled block, handed back by a caller: never re-learn it
        message = without_injected_context(message)
        text = turn_text(message)
        if not text:
            log.info("skipping a %s message with no text to remember", message.role)
            return None
        data = snapshot(message)
        role = hindsight_role(message)
        name = message.additional_kwargs.get("name") if role is not Role.TOOL else None  # a tool's is no speaker
        return {
            "content": text,
            "session_id": self.session_id,
            "role": role.value,
            "metadata": {SNAPSHOT_KEY: data} if data else None,
            "speaker": name if isinstance(name, str) and name.strip() else None,
        }

    def put(self, message: ChatMessage) -> None:
        """``BaseMemory.put``: record one message as a turn of the session, through MCP.

        The write filter, extraction and compression run server-side. Our own injected
        context and messages without text are skipped. A message over the server's size limit
        is recorded shortened to its beginning and end (``_next_try``), since the window is
        what the model is shown; one the server refuses outright (text empty once cleaned) is
        logged and dropped so the chat goes on.
        """
        turn = self._turn(message)
        while turn is not None:
            try:
                self._client.record_turn(**turn)
                return
            except InvalidInputError as exc:
                turn = _next_try(turn, exc)
                if turn is None:
                    skip_refused_text(exc)

    async def aput(self, message: ChatMessage) -> None:
        """``BaseMemory.aput``: ``put`` through the client's ``arecord_turn``."""
        turn = self._turn(message)
        while turn is not None:
            try:
                await self._client.arecord_turn(**turn)
                return
            except InvalidInputError as exc:
                turn = _next_try(turn, exc)
                if turn is None:
                    skip_refused_text(exc)

    def put_messages(self, messages: list[ChatMessage]) -> None:
        """``BaseMemory.put_messages``: ``put`` each message in order, one ``record_turn`` each."""
        for message in messages:
            self.put(message)

    async def aput_messages(self, messages: list[ChatMessage]) -> None:
        """``BaseMemory.aput_messages``: ``aput`` each message in order."""
        for message in messages:
            await self.aput(message)

    def _to_append(self, window: list[MemoryRecord], messages: list[ChatMessage]) -> tuple[bool, list[ChatMessage]]:
        """Whether ``set`` must clear the window first, and which messages it must record.

        When the new history merely extends the stored window (a chat engine handing back
        the history it got from us), only the tail is recorded: re-recording the rest would
        re-embed it and churn the window for nothing.
        """
        live = [without_injected_context(m) for m in messages if not is_injected_context(m)]
        wanted = [m for m in live if turn_text(m)]
        stored = [(r.role.value, r.content.strip()) for r in window]
        given = [(hindsight_role(m).value, turn_text(m).strip()) for m in wanted]
        if stored and stored == given[: len(stored)]:
            return False, wanted[len(stored) :]
        return bool(window), wanted

    def set(self, messages: list[ChatMessage]) -> None:
        """``BaseMemory.set``: make ``messages`` the session's working window (long-term memory is kept).

        A history that extends the stored window only has its new tail recorded; any other
        history clears the window and is recorded whole.
        """
        clear, todo = self._to_append(self._client.working_memory(self.session_id), messages)
        if clear:
            self._client.clear_working(self.session_id)
        self.put_messages(todo)

    async def aset(self, messages: list[ChatMessage]) -> None:
        """``BaseMemory.aset``: ``set`` through the client's async calls."""
        clear, todo = self._to_append(await self._client.aworking_memory(self.session_id), messages)
        if clear:
            await self._client.aclear_working(self.session_id)
        await self.aput_messages(todo)

    def reset(self) -> None:
        """``BaseMemory.reset``: clear this session's working memory; long-term memories are untouched."""
        self._client.clear_working(self.session_id)

    async def areset(self) -> None:
        """``BaseMemory.areset``: ``reset`` through ``aclear_working``."""
        await self._client.aclear_working(self.session_id)

    # -- reading ------------------------------------------------------------------------------
    @staticmethod
    def _history(window: list[MemoryRecord]) -> list[ChatMessage]:
        """The window's turns as chat messages, minus tool results whose call was compressed away."""
        return sanitize_history([turn_to_message(r) for r in window])

    def get_all(self) -> list[ChatMessage]:
        """``BaseMemory.get_all``: the session's working window as chat messages, without recalled memories."""
        return self._history(self._client.working_memory(self.session_id))

    async def aget_all(self) -> list[ChatMessage]:
        """``BaseMemory.aget_all``: ``get_all`` through ``aworking_memory``."""
        return self._history(await self._client.aworking_memory(self.session_id))

    @staticmethod
    def _query(input: Any, history: list[ChatMessage]) -> str:
        """The recall query: ``input`` when given, else the latest user message of the window."""
        if isinstance(input, ChatMessage):
            text = message_text(input)
        elif isinstance(input, str) and input.strip():
            text = input
        else:
            text = latest_user_text(history)
        # The end of a long message is what the user is asking now; recall needs no more.
        return query_tail(text)

    def _assemble(
        self, window: list[MemoryRecord], history: list[ChatMessage], result: RecallResult | None
    ) -> list[ChatMessage]:
        """The history with the recalled block in a leading system message (or the latest user message)."""
        if result is None:
            return history
        selected = select_hits(
            result.hits,
            self.recall_options,
            query=result.query,
            exclude_turn_ids={r.id for r in window},
            exclude_texts={r.content.strip() for r in window},
        )
        context = context_of(selected)
        if not context:
            return history
        if self.insert_method == "user":
            for i in range(len(history) - 1, -1, -1):
                if history[i].role == MessageRole.USER:
                    original = history[i]
                    merged = original.model_copy(
                        update={"blocks": [TextBlock(text=context + "\n\n"), *original.blocks]}
                    )
                    return [*history[:i], merged, *history[i + 1 :]]
        block = ChatMessage(role=MessageRole.SYSTEM, content=context, additional_kwargs={CONTEXT_FLAG: True})
        return [block, *history]

    def _recall_args(self, window: list[MemoryRecord], query: str, cap: int | None) -> dict[str, Any]:
        """``recall`` arguments; only the first recall for the user's latest message counts an access.

        A workflow agent reads its memory at every step of a turn and once more to finish it:
        counted each time, a memory would weigh more in later rankings for every step the turn
        took, though the turn used it once. The turn is the window's latest user message.
        """
        args = self.recall_options.call_kwargs(_OVERFETCH, cap)
        turn = (next((r.id for r in reversed(window) if r.role is Role.USER), ""), query)
        if turn == self._counted:
            args["touch"] = False
        self._counted = turn
        return args

    def get(self, input: str | None = None, **kwargs: Any) -> list[ChatMessage]:
        """``BaseMemory.get``: the working window plus the long-term memories recalled for ``input``.

        ``input`` defaults to the latest user message of the window (agents call ``aget()``
        right after putting the user's message). Extra keyword arguments that chat engines
        pass (``initial_token_count``) are accepted and ignored: the window is already kept
        within budget by server-side compression.
        """
        window = self._client.working_memory(self.session_id)
        history = self._history(window)
        query = self._query(input, history)
        result = None
        if query:
            try:
                args = self._recall_args(window, query, self._client.max_top_k())
                try:
                    result = self._client.recall(query, **args)
                except InvalidInputError as exc:
                    result = self._client.recall(query, **without_touch(exc, args))
            except InvalidInputError as exc:
                if not rejected_text(exc, "query"):
                    raise
                log.warning("recall skipped: %s", describe_error(exc))
        return self._assemble(window, history, result)

    async def aget(self, input: str | None = None, **kwargs: Any) -> list[ChatMessage]:
        """``BaseMemory.aget``: ``get`` through the client's async calls (what the workflow agents call)."""
        window = await self._client.aworking_memory(self.session_id)
        history = self._history(window)
        query = self._query(input, history)
        result = None
        if query:
            try:
                args = self._recall_args(window, query, await self._client.amax_top_k())
                try:
                    result = await self._client.arecall(query, **args)
                except InvalidInputError as exc:
                    result = await self._client.arecall(query, **without_touch(exc, args))
            except InvalidInputError as exc:
                if not rejected_text(exc, "query"):
                    raise
                log.warning("recall skipped: %s", describe_error(exc))
        return self._assemble(window, history, result)


_SMALLEST_SHORTENED = 1024  # below this, shortening a refused text keeps too little to be worth recording


def _next_try(turn: dict[str, Any], refused: InvalidInputError) -> dict[str, Any] | None:
    """What to record after the server refused ``turn``, or None when nothing smaller would be taken.

    Tool-call details over the metadata limit (arguments of more than ~8 KB) are dropped: the
    turn keeps its text, which replays as a plain message. A text over the size limit is
    shortened to its beginning and end, first to ``SHORTENED_BYTES``, then by half while the
    server (whose limit may be set lower) still refuses it.
    """
    if turn.get("metadata") and rejected_text(refused, "metadata"):
        log.info(
            "the tool-call details of a %s turn are over the metadata limit; recording its text only", turn["role"]
        )
        return {**turn, "metadata": None}
    if not rejected_text(refused, "content"):
        return None
    size = len(turn["content"].encode())
    room = min(SHORTENED_BYTES, size // 2)
    if room < _SMALLEST_SHORTENED:
        return None
    log.warning(
        "a %s message of %d bytes is over the memory server's size limit (%s); recording its beginning and end",
        turn["role"],
        size,
        describe_error(refused),
    )
    return {**turn, "content": shortened(turn["content"], room)}


__all__ = ["HindsightChatMemory"]
