"""``HindsightMiddleware``: long-term memory for langchain 1.x ``create_agent``.

Before each model call the memories recalled for the latest user message are appended to
the system message *of that call only* (``request.override``): they are not written into
the agent state, so they never pile up in the checkpointed conversation or get recorded
back as if the user had said them. A turn's first model call counts as its use of them (access
counts), not every call of its tool loop. After the agent finishes, the run's turn (the user's
message, tool results, the final answer: what the thread gained since the middleware last
recorded it, a private state key) is recorded through the MCP client, where the write
filter and extraction decide what becomes long-term memory.

Without a ``namespace``, the user comes from the run — ``context=`` (``user_id``/``namespace``)
or ``config["configurable"]`` — so one agent serves many users. A middleware given a
``namespace`` serves that user only, as the memory tools given the same one do: a run naming
another user is refused (a ``user_id`` set for other code must not move its memories), never
silently redirected. The session comes from the run (``session_id``/``thread_id``), else the
constructor's ``session_id``, then the run's thread id. A run that names no session at all (a
plain ``agent.invoke`` without a checkpointer) is recorded into a session of the middleware's
own, one per middleware, so the simplest ``create_agent`` works and its runs still form one
conversation.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Awaitable, Callable, Mapping
from typing import Annotated, Any, NotRequired

from langchain.agents.middleware import AgentMiddleware, AgentState, ModelRequest, ModelResponse
from langchain.agents.middleware.types import PrivateStateAttr
from langchain_core.messages import AIMessage, AnyMessage, HumanMessage, SystemMessage, ToolMessage
from langgraph.runtime import Runtime
from pydantic import BaseModel, ConfigDict, Field

from ..core.config import validate_namespace
from ..core.errors import ConfigurationError, InvalidInputError
from ..core.model.limits import MAX_TOKENS
from ..core.model.results import RecallResult
from ..mcp.refusals import query_tail, skip_refused_text, without_touch
from ..mcp.resolve import ClientPool
from .tools import MEMORY_TOOL_NAMES

_USER_KEYS = ("namespace", "user_id")
_SESSION_KEYS = ("session_id", "thread_id")


def _lookup(source: Any, keys: tuple[str, ...]) -> str | None:
    """First non-empty ``keys`` entry of a dict-like or attribute-bearing run context."""
    if source is None:
        return None
    for key in keys:
        value = source.get(key) if isinstance(source, Mapping) else getattr(source, key, None)
        if value not in (None, ""):
            return str(value)
    return None


def _configurable() -> Mapping[str, Any]:
    """The run's ``config["configurable"]``, or ``{}`` outside a LangGraph run."""
    try:
        from langgraph.config import get_config

        return get_config().get("configurable") or {}
    except RuntimeError:  # called outside a runnable context (e.g. a unit test calling a hook)
        return {}


def _last_human_index(messages: list[AnyMessage]) -> int | None:
    """Where the current turn starts: the newest ``HumanMessage`` (None when there is none)."""
    for index in range(len(messages) - 1, -1, -1):
        if isinstance(messages[index], HumanMessage):
            return index
    return None


def _run_start(messages: list[AnyMessage], recorded: str | None) -> int | None:
    """Where the messages to record start: after the last one recorded (``recorded``, its id), else at the newest
    ``HumanMessage`` (None when there is none)."""
    if recorded is not None:
        for index in range(len(messages) - 1, -1, -1):
            if messages[index].id == recorded:
                return index + 1
    return _last_human_index(messages)


def _with_memories(system: SystemMessage | None, context: str) -> SystemMessage:
    """A copy of the system message with the recalled block appended (as a text block for list content)."""
    if system is None:
        return SystemMessage(content=context)
    if isinstance(system.content, str):
        return SystemMessage(content=f"{system.content}\n\n{context}" if system.content else context)
    return SystemMessage(content=[*system.content, {"type": "text", "text": context}])


class _RecallSettings(BaseModel):
    """The middleware's recall arguments, checked when it is built: a wrong one would fail every model call."""

    model_config = ConfigDict(title="HindsightMiddleware")

    top_k: int = Field(ge=1, le=10_000)
    min_score: float | None = Field(ge=0, le=1)
    token_budget: int | None = Field(ge=1, le=MAX_TOKENS)


class HindsightState(AgentState[Any]):
    """The agent state with the id of the last message the middleware recorded (kept by a checkpointer).

    A run that adds no user message (``agent.invoke({"messages": []}, config)`` or ``invoke(None)`` on
    a thread, to continue it) would otherwise record the thread's last user message a second time.
    """

    hindsight_recorded: NotRequired[Annotated[str | None, PrivateStateAttr]]


class HindsightMiddleware(AgentMiddleware[HindsightState, Any]):
    """Recall before the model call, record after the agent run.

    ``create_agent(model, tools, middleware=[HindsightMiddleware(namespace="u1")])``, then
    ``agent.invoke({...})``: turns go to the run's thread (``config={"configurable":
    {"thread_id": "s1"}}``) when it has one, else to ``default_session_id``. Leave
    ``namespace`` out to serve the user each run names (``user_id``). Pass
    ``client=`` (a MemoryClient) or ``engine=`` to choose the store explicitly; otherwise
    the environment decides (see ``HindsightMemory``).
    """

    state_schema = HindsightState

    def __init__(
        self,
        namespace: str | None = None,
        *,
        session_id: str | None = None,
        client: Any = None,
        engine: Any = None,
        top_k: int = 5,
        min_score: float | None = None,
        token_budget: int | None = 500,
        record_turns: bool = True,
    ) -> None:
        super().__init__()
        self.namespace = validate_namespace(namespace) if namespace is not None else None
        self.session_id = session_id
        self.default_session_id = f"agent-{uuid.uuid4().hex[:16]}"
        """Where runs that name no session are recorded: this middleware's own conversation."""
        recall = _RecallSettings(top_k=top_k, min_score=min_score, token_budget=token_budget)
        self.top_k = recall.top_k
        self.min_score = recall.min_score
        self.token_budget = recall.token_budget
        self.record_turns = record_turns
        self._pool = ClientPool(client, engine)
        self.tools = []

    # -- who is this run for ------------------------------------------------------------------
    def scope(self, runtime: Runtime[Any] | None) -> tuple[str, str]:
        """(namespace, session_id) of the current run.

        The namespace is the constructor's, else the run's user (context, then config), else
        ``HINDSIGHT_NAMESPACE``; a run naming a user other than the constructor's is refused.
        The session: run context, config, constructor, the run's thread id, ``default_session_id``.
        """
        context = getattr(runtime, "context", None)
        configurable = _configurable()
        user = _lookup(context, _USER_KEYS) or _lookup(configurable, _USER_KEYS)
        if self.namespace is not None and user is not None and user != self.namespace:
            raise ConfigurationError(
                f"HindsightMiddleware(namespace={self.namespace!r}) serves that user only, but this run names "
                f"user {user!r} (namespace or user_id in its context or config['configurable']): leave namespace= "
                "out to use the user each run names, or run it without another user"
            )
        namespace = self.namespace or user or os.environ.get("HINDSIGHT_NAMESPACE") or None
        if namespace is None:
            raise ConfigurationError(
                "HindsightMiddleware does not know whose memories to use: pass namespace=... to it, "
                "or give the run a user via context (user_id) or config={'configurable': {'user_id': ...}}"
            )
        info = getattr(runtime, "execution_info", None)
        session = (
            _lookup(context, _SESSION_KEYS)
            or _lookup(configurable, _SESSION_KEYS)
            or self.session_id
            or _lookup(info, ("thread_id",))
            or self.default_session_id
        )
        return validate_namespace(namespace), session

    def before_agent(self, state: AgentState, runtime: Runtime[Any]) -> dict[str, Any] | None:
        """``AgentMiddleware.before_agent``: check the run names a user up front.

        Changes no state; it raises ``ConfigurationError`` so a misconfigured agent fails
        before any model tokens are spent rather than after the answer.
        """
        self.scope(runtime)
        return None

    async def abefore_agent(self, state: AgentState, runtime: Runtime[Any]) -> dict[str, Any] | None:
        """Async ``before_agent``: the same check, which does no I/O."""
        return self.before_agent(state, runtime)

    # -- recall before each model call --------------------------------------------------------
    def _recall_args(self, request: ModelRequest) -> dict[str, Any]:
        """``recall`` arguments; only the turn's first model call counts an access to what it recalls.

        A tool loop calls the model again after each tool result, recalling the same memories for
        the same user message: counted each time, a memory would weigh more in later rankings for
        every tool the turn happened to call, though the turn used it once.
        """
        args: dict[str, Any] = {"top_k": self.top_k, "min_score": self.min_score, "token_budget": self.token_budget}
        if _last_human_index(request.messages) != len(request.messages) - 1:
            args["touch"] = False
        return args

    @staticmethod
    def _query(request: ModelRequest) -> str:
        """The recall query: the text of the latest user message ('' skips recall)."""
        index = _last_human_index(request.messages)
        return query_tail(request.messages[index].text) if index is not None else ""

    @staticmethod
    def _inject(request: ModelRequest, result: RecallResult) -> ModelRequest:
        """The request with the recalled block in its system message, or unchanged when nothing was recalled."""
        if not result.context:
            return request
        return request.override(system_message=_with_memories(request.system_message, result.context))

    def wrap_model_call(self, request: ModelRequest, handler: Callable[[ModelRequest], ModelResponse]) -> ModelResponse:
        """``AgentMiddleware.wrap_model_call``: recall for the latest user message into this call's system message.

        The memories go into an overridden request only, never into the agent state, so
        they are not checkpointed or recorded back as turns.
        """
        query = self._query(request)
        if query:
            namespace, _ = self.scope(request.runtime)
            client, args = self._pool.get(namespace), self._recall_args(request)
            try:
                result = client.recall(query, **args)
            except InvalidInputError as exc:
                result = client.recall(query, **without_touch(exc, args))
            request = self._inject(request, result)
        return handler(request)

    async def awrap_model_call(
        self, request: ModelRequest, handler: Callable[[ModelRequest], Awaitable[ModelResponse]]
    ) -> ModelResponse:
        """Async ``wrap_model_call``: the same injection, recalling through ``arecall``."""
        query = self._query(request)
        if query:
            namespace, _ = self.scope(request.runtime)
            client, args = await self._pool.aget(namespace), self._recall_args(request)
            try:
                result = await client.arecall(query, **args)
            except InvalidInputError as exc:
                result = await client.arecall(query, **without_touch(exc, args))
            request = self._inject(request, result)
        return await handler(request)

    # -- record after the run -----------------------------------------------------------------
    @staticmethod
    def turns(messages: list[AnyMessage], recorded: str | None = None) -> list[tuple[str, str]]:
        """(text, role) to record for this run: its user messages, tool results, the final answer.

        The run's messages are those after ``recorded`` (the id of the last message recorded
        before, kept in the state), else from the newest user message. Results of the memory
        tools are skipped: they are memories already, and recording them as turns would store
        each recalled memory a second time.
        """
        return [(text, role) for text, role, _ in HindsightMiddleware.named_turns(messages, recorded)]

    @staticmethod
    def named_turns(messages: list[AnyMessage], recorded: str | None = None) -> list[tuple[str, str, str | None]]:
        """``turns`` with each message's ``name`` (who wrote it; None for tool results), the turn's speaker."""
        start = _run_start(messages, recorded)
        if start is None or start >= len(messages):
            return []
        out: list[tuple[str, str, str | None]] = []
        for message in messages[start:]:
            text = message.text.strip()
            if not text:
                continue
            if isinstance(message, HumanMessage):
                out.append((text, "user", message.name or None))
            elif isinstance(message, ToolMessage) and message.name not in MEMORY_TOOL_NAMES:
                out.append((text, "tool", None))
        final = messages[-1]
        if isinstance(final, AIMessage) and not final.tool_calls and final.text.strip():
            out.append((final.text.strip(), "assistant", final.name or None))
        return out

    def _to_record(
        self, state: HindsightState, runtime: Runtime[Any]
    ) -> tuple[str, str, list[tuple[str, str, str | None]]]:
        """The namespace, the session and the turns ``after_agent`` records."""
        namespace, session = self.scope(runtime)
        return namespace, session, self.named_turns(state["messages"], state.get("hindsight_recorded"))

    @staticmethod
    def _recorded(state: HindsightState) -> dict[str, Any] | None:
        """The state update naming the last message recorded, so the next run on the thread starts after it."""
        messages = state["messages"]
        return {"hindsight_recorded": messages[-1].id} if messages and messages[-1].id else None

    def after_agent(self, state: HindsightState, runtime: Runtime[Any]) -> dict[str, Any] | None:
        """``AgentMiddleware.after_agent``: record the run's turns (see ``turns``) through MCP.

        Updates only its own private state key; with ``record_turns=False`` it does nothing.
        """
        if not self.record_turns:
            return None
        namespace, session, turns = self._to_record(state, runtime)
        client = self._pool.get(namespace)
        for text, role, name in turns:
            try:
                client.record_turn(text, session_id=session, role=role, speaker=name)
            except InvalidInputError as exc:  # a text over the size limit: the answer is given, the rest recorded
                skip_refused_text(exc, f"{role} turn")
        return self._recorded(state)

    async def aafter_agent(self, state: HindsightState, runtime: Runtime[Any]) -> dict[str, Any] | None:
        """Async ``after_agent``: the same turns, recorded through ``arecord_turn``."""
        if not self.record_turns:
            return None
        namespace, session, turns = self._to_record(state, runtime)
        client = await self._pool.aget(namespace)
        for text, role, name in turns:
            try:
                await client.arecord_turn(text, session_id=session, role=role, speaker=name)
            except InvalidInputError as exc:
                skip_refused_text(exc, f"{role} turn")
        return self._recorded(state)


__all__ = ["HindsightMiddleware", "HindsightState"]
