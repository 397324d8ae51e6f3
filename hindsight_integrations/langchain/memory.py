"""``HindsightMemory``: the classic LangChain ``BaseMemory`` (``AgentExecutor(memory=...)``, chains).

Classic chains call ``load_memory_variables`` before the run and ``save_context`` after
it. We answer the first with two variables — the session's working window (the live
conversation, so a restarted process resumes it) and the long-term memories recalled for
the current input, formatted as the fenced, dated context block (``core/recall/context.py``) —
and turn the second into two ``record_turn`` calls through the MCP client, so the write
filter, extraction and compression happen server-side exactly as for every other MCP
client (docs/architecture.md, "Writing").
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, cast

from langchain_classic.base_memory import BaseMemory
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, get_buffer_string
from pydantic import ConfigDict, Field, PrivateAttr, model_validator

from ..core.errors import InvalidInputError
from ..core.model.records import MemoryRecord, Role
from ..core.model.results import RecallResult
from ..core.recall.context import format_context, pack_within_budget
from ..mcp.refusals import query_tail, skip_refused_text
from ..mcp.resolve import ClientPool, require_session, resolve_namespace
from ._connection import SharedConnection


def turn_message(record: MemoryRecord) -> BaseMessage:
    """A working-memory turn as the chat message a prompt expects."""
    if record.role is Role.ASSISTANT:
        return AIMessage(content=record.content, id=record.id)
    if record.role is Role.USER:
        return HumanMessage(content=record.content, id=record.id)
    # Tool results and system notes have no tool_call_id to pair with here, so they are
    # shown as system context rather than as a ToolMessage a provider would reject.
    prefix = "Tool result: " if record.role is Role.TOOL else ""
    return SystemMessage(content=prefix + record.content, id=record.id)


def message_text(value: Any) -> str:
    """Text of a chain input/output, which may be a string, a message or a list of messages."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, BaseMessage):
        return value.text
    if isinstance(value, Sequence) and all(isinstance(m, BaseMessage) for m in value):
        return "\n".join(m.text for m in value if m.text)
    return str(value)


def message_name(value: Any) -> str | None:
    """Who wrote a chain input/output: the ``name`` of a message (of the last named one in a list), else None."""
    if isinstance(value, BaseMessage):
        return value.name or None
    if isinstance(value, Sequence) and not isinstance(value, str):
        names = [m.name for m in value if isinstance(m, BaseMessage) and m.name]
        return names[-1] if names else None
    return None


def long_term_context(result: RecallResult, window: Sequence[MemoryRecord], token_budget: int | None = None) -> str:
    """The recalled block, minus memories distilled from turns the prompt already shows verbatim.

    Packed into ``token_budget`` as the server packs its own block (whole memories, then trimmed
    to the sentences that match the query): the hits are whole memories, and formatting them
    as they are would overrun the budget the server's block kept to.
    """
    shown = {t.id for t in window}
    records = [
        h.record for h in result.hits if not (h.record.source.message_ids and set(h.record.source.message_ids) <= shown)
    ]
    return format_context(pack_within_budget(records, token_budget, query=result.query))


class HindsightMemory(SharedConnection, BaseMemory):
    """Working window + recalled long-term memories for classic chains and ``AgentExecutor``.

    ``HindsightMemory(namespace="u1", session_id="s1")`` reads the store configured by the
    environment (``HINDSIGHT_STORE``, ``HINDSIGHT_CHROMA_URL`` or an MCP server via
    ``HINDSIGHT_MCP_URL`` / ``HINDSIGHT_MCP_COMMAND``; with none, ``./.hindsight`` as for
    ``MemoryEngine()``); pass ``client=`` or ``engine=`` to choose explicitly. ``clear()``
    ends the conversation's working memory only: what the user taught stays in long-term
    memory, which is the point of having it.
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    namespace: str | None = Field(None, description="The user; falls back to HINDSIGHT_NAMESPACE.")
    session_id: str | None = Field(None, description="The conversation whose turns are recorded.")
    client: Any = Field(None, exclude=True, description="A MemoryClient for this namespace.")
    engine: Any = Field(None, exclude=True, description="A MemoryEngine to serve in-process.")
    memory_key: str = "chat_history"
    long_term_key: str = "long_term_memory"
    return_messages: bool = Field(True, description="chat_history as messages (True) or one string (False).")
    input_key: str | None = None
    output_key: str | None = None
    human_prefix: str = "Human"
    ai_prefix: str = "AI"
    top_k: int = Field(5, ge=1)
    min_score: float | None = Field(None, ge=0, le=1)
    token_budget: int | None = Field(
        500, ge=1, description="Cap on the injected long-term block (≤ 500 tokens is typical)."
    )

    _pool: ClientPool = PrivateAttr()

    @model_validator(mode="after")
    def _configured(self) -> HindsightMemory:
        # Fail at construction, not on the first turn: a memory without a user or session
        # would either mix users or lose the conversation.
        self.namespace = resolve_namespace(self.namespace, "HindsightMemory")
        self.session_id = require_session(self.session_id, "HindsightMemory")
        self._pool = ClientPool(self.client, self.engine, owner="HindsightMemory")
        return self

    @property
    def memory_client(self) -> Any:
        """The MemoryClient in use (resolved on first use, so construction never blocks on I/O)."""
        # The validator has replaced a missing namespace with the resolved one (or raised).
        return self._pool.get(cast(str, self.namespace))

    async def _aclient(self) -> Any:
        """``memory_client`` for the async methods: a first use is resolved off the event loop (``ClientPool.aget``)."""
        return await self._pool.aget(cast(str, self.namespace))

    @property
    def memory_variables(self) -> list[str]:
        """``BaseMemory.memory_variables``: the two keys the prompt must have placeholders for.

        ``memory_key`` holds the working window, ``long_term_key`` the recalled block ('' when
        nothing was recalled), so a prompt template can place them separately.
        """
        return [self.memory_key, self.long_term_key]

    # -- reading ------------------------------------------------------------------------------
    def _input(self, inputs: dict[str, Any]) -> Any:
        """The user's input: ``input_key``, else the one prompt input that is not ours, else None (no input).

        Raises ``ValueError`` naming the inputs when there are several and ``input_key`` is unset.
        """
        if self.input_key:
            return inputs.get(self.input_key)
        keys = sorted(set(inputs).difference([*self.memory_variables, "stop"]))  # "stop" is no prompt input
        if len(keys) > 1:
            raise ValueError(f"HindsightMemory: several inputs {keys}; set input_key= to say which is the user's input")
        return inputs[keys[0]] if keys else None

    def _query(self, inputs: dict[str, Any]) -> str:
        """The user's input text ('' when there is none, e.g. ``load_memory_variables({})``)."""
        return message_text(self._input(inputs)).strip()

    def _variables(self, window: list[MemoryRecord], recalled: RecallResult | None) -> dict[str, Any]:
        messages = [turn_message(r) for r in window]
        history: Any = (
            messages
            if self.return_messages
            else get_buffer_string(messages, human_prefix=self.human_prefix, ai_prefix=self.ai_prefix)
        )
        context = long_term_context(recalled, window, self.token_budget) if recalled is not None else ""
        return {self.memory_key: history, self.long_term_key: context}

    def load_memory_variables(self, inputs: dict[str, Any]) -> dict[str, Any]:
        """``BaseMemory.load_memory_variables``: the working window and the recalled memories.

        Unlike LangChain's buffer memories, the window is read from the server's working
        memory (so another process, or this one after a restart, sees the same conversation),
        and the long-term block is recalled for the current input; an empty input skips
        recall and leaves the block empty.
        """
        client = self.memory_client
        window = client.working_memory(self.session_id)
        query = self._query(inputs)
        recalled = (
            client.recall(query_tail(query), top_k=self.top_k, min_score=self.min_score, token_budget=self.token_budget)
            if query
            else None
        )
        return self._variables(window, recalled)

    async def aload_memory_variables(self, inputs: dict[str, Any]) -> dict[str, Any]:
        """Async ``load_memory_variables``: same variables, through the client's async calls."""
        client = await self._aclient()
        window = await client.aworking_memory(self.session_id)
        query = self._query(inputs)
        recalled = (
            await client.arecall(
                query_tail(query), top_k=self.top_k, min_score=self.min_score, token_budget=self.token_budget
            )
            if query
            else None
        )
        return self._variables(window, recalled)

    # -- writing ------------------------------------------------------------------------------
    def _turns(self, inputs: dict[str, Any], outputs: dict[str, Any]) -> list[tuple[str, str, str | None]]:
        """(text, role, speaker) of the user's input and the chain's answer, leaving out empty ones.

        The speaker is the ``name`` of a message given as the input or output (None for text).
        """
        said = self._query(inputs)
        if self.output_key:
            out_key = self.output_key
        elif len(outputs) == 1:
            out_key = next(iter(outputs))
        elif "output" in outputs:
            out_key = "output"
        else:
            raise ValueError(
                f"HindsightMemory: several outputs {sorted(outputs)}; set output_key= to say which is the answer"
            )
        answer = message_text(outputs.get(out_key)).strip()
        asker = message_name(self._input(inputs))
        answerer = message_name(outputs.get(out_key))
        return [
            (text, role, name) for text, role, name in ((said, "user", asker), (answer, "assistant", answerer)) if text
        ]

    def save_context(self, inputs: dict[str, Any], outputs: dict[str, Any]) -> None:
        """``BaseMemory.save_context``: record the input and the answer as turns, through MCP.

        Nothing is kept in this object: each text becomes a ``record_turn`` call, and the
        server's write filter and extraction decide what also becomes long-term memory.
        Raises ``ValueError`` when the chain has several outputs and ``output_key`` is unset.
        """
        client = self.memory_client
        for text, role, name in self._turns(inputs, outputs):
            try:
                client.record_turn(text, session_id=self.session_id, role=role, speaker=name)
            except InvalidInputError as exc:  # a text over the size limit: the chain goes on without it
                skip_refused_text(exc, f"{role} turn")

    async def asave_context(self, inputs: dict[str, Any], outputs: dict[str, Any]) -> None:
        """Async ``save_context``: the same turns, through ``arecord_turn``."""
        client = await self._aclient()
        for text, role, name in self._turns(inputs, outputs):
            try:
                await client.arecord_turn(text, session_id=self.session_id, role=role, speaker=name)
            except InvalidInputError as exc:
                skip_refused_text(exc, f"{role} turn")

    def clear(self) -> None:
        """End this session's working memory; long-term memories are kept."""
        self.memory_client.clear_working(self.session_id)

    async def aclear(self) -> None:
        """Async ``clear``: ends this session's working memory; long-term memories are kept."""
        await (await self._aclient()).aclear_working(self.session_id)


__all__ = ["HindsightMemory", "long_term_context", "message_text", "turn_message"]
