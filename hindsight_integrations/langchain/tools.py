"""``memory_tools``: ``remember`` / ``recall`` / ``forget`` tools an agent calls on its own.

The middleware and the classic memory decide *for* the model what to recall; these tools
let the model decide, which is what it needs when the user says "remember that ..." or
asks about something the automatic recall did not surface. Descriptions tell the model
when to call each one. Mistakes never crash the run: bad arguments and memory errors come
back to the model as the tool's answer (a ``ToolMessage`` with status "error"), so it can
correct itself and continue.
"""

from __future__ import annotations

from typing import Any, Literal

from langchain_core.tools import BaseTool, StructuredTool, ToolException
from pydantic import BaseModel, Field

from ..core.errors import HindsightError
from ..core.model.results import RecallResult, StoreResult
from ..core.recall.context import memory_line
from ..mcp.resolve import ClientPool, resolve_namespace

REMEMBER = "remember"
RECALL = "recall"
FORGET = "forget"
MEMORY_TOOL_NAMES = frozenset({REMEMBER, RECALL, FORGET})
"""Names of these tools; the middleware does not re-record their results as turns."""

REMEMBER_DESCRIPTION = (
    "Save one fact about the user or the task to long-term memory so it is available in future "
    "conversations. Use it when the user states a preference, a constraint, a correction, a decision "
    "or personal/project context worth keeping (e.g. 'I'm vegetarian', 'the deadline is Friday'), or "
    "explicitly asks you to remember something. Write the fact as one short, self-contained sentence "
    "in the third person ('User prefers concise answers'). Do not save greetings, small talk or "
    "things only relevant to this turn."
)
RECALL_DESCRIPTION = (
    "Search long-term memory for what the user told you before (preferences, facts, earlier "
    "decisions). Use it when the answer may depend on past conversations and the memories already "
    "shown to you do not cover it, or when the user asks what you remember. Returns dated memories "
    "with their ids, most relevant first."
)
FORGET_DESCRIPTION = (
    "Forget one long-term memory by its id (from a previous `recall` result). Use it only when the "
    "user asks you to forget something or a memory is clearly wrong. The memory stops being recalled."
)


# The argument schemas carry no class docstrings on purpose: pydantic would put them in the
# JSON schema sent to the model, next to the tool descriptions above.
class RememberInput(BaseModel):
    content: str = Field(..., min_length=1, description="The fact to remember, one self-contained sentence.")
    kind: Literal["preference", "fact", "context", "correction", "event"] | None = Field(
        None, description="What sort of memory this is; inferred when omitted."
    )
    importance: float | None = Field(None, ge=0, le=1, description="0-1, how much this matters; inferred when omitted.")


class RecallInput(BaseModel):
    query: str = Field(..., min_length=1, description="What to look for, in natural language.")
    top_k: int = Field(5, ge=1, le=20, description="How many memories to return at most.")


class ForgetInput(BaseModel):
    memory_id: str = Field(..., min_length=1, description="The id shown in brackets by `recall`.")


def _stored_text(result: StoreResult) -> str:
    """The tool's answer to ``remember``: what was stored or merged, with ids, or why nothing was."""
    if result.stored:
        merged = set(result.merged)
        return "\n".join(
            f"{'Updated existing' if r.id in merged else 'Remembered'} [{r.id}]: {r.content}" for r in result.stored
        )
    reasons = "; ".join(s.reason for s in result.skipped) or "nothing to store"
    return f"Not stored: {reasons}."


def _recalled_text(result: RecallResult) -> str:
    """The tool's answer to ``recall``: dated memory lines with the ids ``forget`` takes."""
    if not result.hits:
        return f"No memories found for {result.query!r}."
    return "\n".join(f"{memory_line(h.record)} [id: {h.record.id}]" for h in result.hits)


def _validation_message(exc: Exception) -> str:
    """Name every bad argument, so the model can fix its call instead of guessing."""
    errors = getattr(exc, "errors", None)
    if not callable(errors):
        return f"Invalid arguments: {exc}. Fix them and call the tool again."
    problems = "; ".join(f"{'.'.join(str(p) for p in e['loc']) or 'arguments'}: {e['msg']}" for e in errors())
    return f"Invalid arguments: {problems}. Fix them and call the tool again."


def memory_tools(
    namespace: str | None = None,
    *,
    session_id: str | None = None,
    client: Any = None,
    engine: Any = None,
    include_forget: bool = True,
) -> list[BaseTool]:
    """The memory tools for one user (``namespace``), optionally tagged with the ``session_id``."""
    ns = resolve_namespace(namespace, "memory_tools")
    pool = ClientPool(client, engine)

    def remember_args(content: str, kind: str | None, importance: float | None) -> dict[str, Any]:
        item: dict[str, Any] = {"content": content}
        item.update(
            {
                k: v
                for k, v in {"kind": kind, "importance": importance, "session_id": session_id}.items()
                if v is not None
            }
        )
        return item

    def remember(content: str, kind: str | None = None, importance: float | None = None) -> str:
        try:
            return _stored_text(pool.get(ns).store([remember_args(content, kind, importance)]))
        except HindsightError as exc:
            raise ToolException(str(exc)) from exc

    async def aremember(content: str, kind: str | None = None, importance: float | None = None) -> str:
        try:
            return _stored_text(await (await pool.aget(ns)).astore([remember_args(content, kind, importance)]))
        except HindsightError as exc:
            raise ToolException(str(exc)) from exc

    def recall(query: str, top_k: int = 5) -> str:
        try:
            return _recalled_text(pool.get(ns).recall(query, top_k=top_k))
        except HindsightError as exc:
            raise ToolException(str(exc)) from exc

    async def arecall(query: str, top_k: int = 5) -> str:
        try:
            return _recalled_text(await (await pool.aget(ns)).arecall(query, top_k=top_k))
        except HindsightError as exc:
            raise ToolException(str(exc)) from exc

    def forget(memory_id: str) -> str:
        try:
            record = pool.get(ns).forget(memory_id)
        except HindsightError as exc:
            raise ToolException(str(exc)) from exc
        return f"Forgot [{record.id}]: {record.content}"

    async def aforget(memory_id: str) -> str:
        try:
            record = await (await pool.aget(ns)).aforget(memory_id)
        except HindsightError as exc:
            raise ToolException(str(exc)) from exc
        return f"Forgot [{record.id}]: {record.content}"

    # handle_tool_error / handle_validation_error turn failures into the tool's answer, so a
    # model that sends bad arguments reads what was wrong instead of ending the run.
    common: dict[str, Any] = {"handle_tool_error": True, "handle_validation_error": _validation_message}
    tools: list[BaseTool] = [
        StructuredTool.from_function(
            remember,
            coroutine=aremember,
            name=REMEMBER,
            description=REMEMBER_DESCRIPTION,
            args_schema=RememberInput,
            **common,
        ),
        StructuredTool.from_function(
            recall, coroutine=arecall, name=RECALL, description=RECALL_DESCRIPTION, args_schema=RecallInput, **common
        ),
    ]
    if include_forget:
        tools.append(
            StructuredTool.from_function(
                forget,
                coroutine=aforget,
                name=FORGET,
                description=FORGET_DESCRIPTION,
                args_schema=ForgetInput,
                **common,
            )
        )
    return tools


__all__ = ["FORGET", "MEMORY_TOOL_NAMES", "RECALL", "REMEMBER", "memory_tools"]
