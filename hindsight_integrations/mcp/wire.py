"""What a tool call sends: each tool's declaration (name, description, hints) and its arguments model.

Both sides import these models, so a tool is declared once. An arguments model names a tool's
parameters with the descriptions a model reads, and carries the tool's own description and
behaviour hints; the server generates the tool's signature and listing from it, the client
builds its calls with it. The client does not validate, so a mistake comes back from the
server as a tool error naming the field, whatever the transport. What a tool answers is in
``answers``.
"""

from __future__ import annotations

import math
from datetime import datetime
from typing import Annotated, Any, ClassVar

from mcp.types import ToolAnnotations
from pydantic import BaseModel, ConfigDict, Field

from ..core.errors import InvalidInputError
from ..core.model.inputs import MAX_TTL_SECONDS, Flag, JsonObject, Lower, MemoryInput, MemoryItem
from ..core.model.limits import MAX_OFFSET, MAX_TOKENS, Identifier, Metadata
from ..core.model.records import Kind, Role
from ..core.recall.filters import RecallFilters

MAX_BATCH = 1000
"""Largest ``memories`` batch one ``store_memory`` call accepts; larger batches must be split."""

READ = ToolAnnotations(readOnlyHint=True, openWorldHint=False)
WRITE = ToolAnnotations(readOnlyHint=False, destructiveHint=False, idempotentHint=False, openWorldHint=False)
IDEMPOTENT_WRITE = ToolAnnotations(readOnlyHint=False, destructiveHint=False, idempotentHint=True, openWorldHint=False)


class ToolArgs(BaseModel):
    """One tool: its name (``tool``), what a model reads of it, and its arguments.

    ``description`` and ``hints`` are what the server lists for the tool; the fields are its
    parameters. The client builds arguments with ``model_construct`` (names and types checked
    by mypy, values left for the server to judge) and sends ``wire()``; the server validates them.
    """

    model_config = ConfigDict(extra="forbid")

    tool: ClassVar[str]
    description: ClassVar[str]
    hints: ClassVar[ToolAnnotations]

    def wire(self) -> dict[str, Any]:
        """The arguments to send: the fields given, except None and values equal to the default.

        The server applies its default for a parameter left out, and a server that predates a
        parameter still serves calls that leave it at its default.
        """
        out = {}
        for name, field in type(self).model_fields.items():
            value = getattr(self, name, None)
            if name not in self.model_fields_set or value is None:
                continue
            if not field.is_required() and field.default_factory is None and value == field.default:
                continue
            if isinstance(value, float) and not math.isfinite(value):
                # JSON has no NaN or infinity: the transport would send null, i.e. "not given".
                raise InvalidInputError(name, f"must be a finite number, got {value}")
            out[name] = value
        return out


SINGLE_MEMORY_DESCRIPTIONS = {
    "content": "One memory to store (use this or `memories`): the text to remember, self-contained (max 32 KB).",
}
"""Descriptions of ``store_memory``'s single-memory parameters that differ from ``MemoryItem``'s.

Those parameters are ``MemoryItem``'s fields (all optional there, since ``memories`` may be
given instead); the server generates them, so only what reads differently is written here.
"""


class StoreMemoryArgs(ToolArgs):
    """``store_memory``'s own arguments; its single-memory parameters are ``MemoryItem``'s fields."""

    tool: ClassVar[str] = "store_memory"
    description: ClassVar[str] = (
        'Save durable information about the user for future conversations: preferences ("I prefer metric units"), '
        "facts about them or their work, corrections of earlier facts, decisions and plans. Write each memory as a "
        "self-contained sentence. Do NOT store greetings, thanks or small talk (they are filtered out and reported as "
        f"skipped). Give one memory with `content`, or several at once with `memories` (max {MAX_BATCH} per call). "
        "Pass a `request_id` you generate: retrying with the same request_id never stores twice. "
        "Returns the stored ids, and any items not stored with the reason. Leave `apply_filter`, `dedup` and "
        "`supersede` at their defaults unless the user explicitly asked you to remember this exact text."
    )
    hints: ClassVar[ToolAnnotations] = IDEMPOTENT_WRITE

    memories: list[MemoryItem] | None = Field(
        None,
        description=f"A batch of memories (max {MAX_BATCH}); each needs `content` and carries its own other fields.",
    )
    request_id: Identifier | None = Field(None, description="Idempotency key for this call (e.g. a UUID).")
    apply_filter: Flag = Field(
        True,
        description=(
            "Drop small talk and other text not worth remembering (default true). Set apply_filter=false only when "
            "the user explicitly asked you to remember this exact text."
        ),
    )
    dedup: Flag = Field(
        True,
        description=(
            "Merge a memory that nearly repeats an existing one into it (default true). Set dedup=false only when "
            "the user wants a separate memory even though a similar one exists."
        ),
    )
    supersede: Flag = Field(
        True,
        description=(
            "Mark an older memory about the same thing as outdated when this one changes it, e.g. a new address "
            "(default true). Set supersede=false only when the user wants both kept as current."
        ),
    )


def batch_item(item: Any) -> Any:
    """A ``memories`` item as sent: a model's fields that differ from the defaults, a dict or string as given."""
    if isinstance(item, MemoryItem):
        if isinstance(item, MemoryInput) and item.source is not None:
            raise InvalidInputError("source", "provenance (`source`) is set by the server and cannot be sent over MCP")
        # Python values: prepare_arguments makes them JSON after checking their text
        data = item.model_dump(exclude_none=True, exclude_defaults=True)
        data.setdefault("content", item.content)
        return data
    if isinstance(item, BaseModel):
        return item.model_dump(exclude_none=True)
    return item


def filters_value(filters: RecallFilters | dict[str, Any] | None) -> Any:
    """``filters`` as sent: a ``RecallFilters`` without its unset (None) fields, a dict as given."""
    if isinstance(filters, RecallFilters):
        return filters.model_dump(exclude_none=True)  # made JSON by prepare_arguments, after checking its text
    return filters


class RetrieveMemoryArgs(ToolArgs):
    """Arguments of ``retrieve_memory``."""

    tool: ClassVar[str] = "retrieve_memory"
    description: ClassVar[str] = (
        "Look up what you know about the user from earlier conversations. Call it before answering whenever the "
        "answer could depend on their preferences, history, projects or past decisions, and when they ask "
        '"do you remember…". Phrase `query` as the question you need answered. Returns the best memories (with id, '
        "score, tier, kind, date) and `context`: a dated block ready to use in your answer."
    )
    hints: ClassVar[ToolAnnotations] = READ

    query: str = Field(..., description="What you want to know, in natural language.")
    top_k: int | None = Field(None, ge=1, le=10_000, description="How many memories at most (default 5).")
    min_score: float | None = Field(None, description="Drop memories less relevant than this (0-1).")
    filters: RecallFilters | None = Field(
        None,
        description="Narrow by session_id, kinds, tiers, since/until, min_importance, metadata "
        '(a key\'s value, {"$in": [texts]} for any of several, or {"$ne": value} for any other or none).',
    )
    token_budget: int | None = Field(
        None,
        ge=1,
        le=MAX_TOKENS,
        description="Fit the context block into this many tokens (default 450, HINDSIGHT_DEFAULT_TOKEN_BUDGET).",
    )
    include_history: Flag = Field(False, description="Also return superseded (outdated) memories, marked as such.")
    weights: Annotated[dict[str, float | None] | None, JsonObject] = Field(
        None,
        max_length=32,
        description="Ranking weights by name (similarity, recency, importance, access, dense, lexical, ...); "
        "leave out for the tuned defaults.",
    )
    touch: Flag = Field(
        True,
        description="Count the returned memories as used, which ranks them a little higher later (default true). "
        "Set touch=false only to look without using them.",
    )


class RecordTurnArgs(ToolArgs):
    """Arguments of ``record_turn``."""

    tool: ClassVar[str] = "record_turn"
    description: ClassVar[str] = (
        "Append one conversation turn to the session's working memory. Durable facts in it are remembered "
        "long-term automatically, and old turns are summarised when the window grows too long. "
        "Used by agent frameworks after each message; returns the turn id, what was remembered and any compression."
    )
    hints: ClassVar[ToolAnnotations] = WRITE

    content: str = Field(..., description="The message text.")
    session_id: Identifier = Field(..., description="The conversation id.")
    role: Annotated[Role, Lower] = Field(Role.USER, description="user, assistant, tool or system.")
    occurred_at: datetime | None = Field(None, description="ISO 8601 time of the message; default now.")
    metadata: Annotated[Metadata | None, JsonObject] = Field(
        None,
        description="Free-form JSON attached to the turn and to what is remembered from it (e.g. a message id). "
        "Keys starting with _ are reserved.",
    )
    speaker: str | None = Field(
        None, description="Who wrote the message (a name); remembered as an entity, so questions naming them match."
    )


class GetWorkingMemoryArgs(ToolArgs):
    """Arguments of ``get_working_memory``."""

    tool: ClassVar[str] = "get_working_memory"
    description: ClassVar[str] = (
        "The live (not yet summarised) turns of a conversation, oldest first. Use to rebuild a chat history."
    )
    hints: ClassVar[ToolAnnotations] = READ

    session_id: Identifier = Field(..., description="The conversation id.")


class ClearWorkingMemoryArgs(GetWorkingMemoryArgs):
    """Arguments of ``clear_working_memory`` (the same as ``get_working_memory``'s)."""

    tool: ClassVar[str] = "clear_working_memory"
    description: ClassVar[str] = (
        "Forget a conversation's live turns (e.g. the user starts over). Long-term memories are kept."
    )
    hints: ClassVar[ToolAnnotations] = IDEMPOTENT_WRITE


class CompressMemoryArgs(ToolArgs):
    """Arguments of ``compress_memory``."""

    tool: ClassVar[str] = "compress_memory"
    description: ClassVar[str] = (
        "Summarise the oldest turns of a long conversation into compact episodic memories, freeing context. "
        "Call when the conversation is getting long; raw turns are archived, not deleted."
    )
    hints: ClassVar[ToolAnnotations] = IDEMPOTENT_WRITE

    session_id: Identifier = Field(..., description="The conversation to compress.")
    threshold_tokens: int | None = Field(
        None, ge=1, le=MAX_TOKENS, description="Compress until the live window is under this many tokens."
    )
    force: Flag = Field(False, description="Compress at least one group even if under the threshold.")


class ConsolidateMemoryArgs(ToolArgs):
    """Arguments of ``consolidate_memory``."""

    tool: ClassVar[str] = "consolidate_memory"
    description: ClassVar[str] = (
        "Tidy long-term memory: merge duplicate memories, and distil facts and preferences the user stated "
        "several times, in different conversations, into one lasting (semantic) memory that names its sources. "
        "Sources are kept, not deleted; running it again adds nothing. Upkeep, not for every turn; "
        "dry_run=true only reports what it would do."
    )
    hints: ClassVar[ToolAnnotations] = IDEMPOTENT_WRITE

    dry_run: Flag = Field(False, description="Report what would be merged and consolidated; change nothing.")


class UpdateMemoryArgs(ToolArgs):
    """Arguments of ``update_memory``: the id and the fields to change (None: unchanged)."""

    tool: ClassVar[str] = "update_memory"
    description: ClassVar[str] = (
        "Correct or adjust an existing memory by id (from retrieve_memory or list_memories). Only given fields change."
    )
    hints: ClassVar[ToolAnnotations] = IDEMPOTENT_WRITE

    id: Identifier = Field(..., description="The memory id.")
    content: str | None = Field(None, description="New text (re-indexed).")
    importance: float | None = Field(None, ge=0, le=1, description="New importance 0-1.")
    kind: Annotated[Kind | None, Lower] = Field(None, description="New kind.")
    metadata: Annotated[Metadata | None, JsonObject] = Field(
        None,
        description="Keys merged into the memory's metadata; a key set to null is removed "
        "(keys starting with _ are reserved).",
    )
    ttl_seconds: int | None = Field(
        None, gt=0, le=MAX_TTL_SECONDS, description="Expire this many seconds from now (at most 100 years)."
    )


class ForgetMemoryArgs(ToolArgs):
    """Arguments of ``forget_memory``."""

    tool: ClassVar[str] = "forget_memory"
    description: ClassVar[str] = (
        "Forget a memory by id when the user asks you to, or it is wrong. "
        "It stops being recalled (soft delete, kept for audit)."
    )
    hints: ClassVar[ToolAnnotations] = IDEMPOTENT_WRITE

    id: Identifier = Field(..., description="The memory id.")


class ReviewMemoryArgs(ToolArgs):
    """Arguments of ``review_memory``."""

    tool: ClassVar[str] = "review_memory"
    description: ClassVar[str] = (
        "Accept or reject a quarantined memory: a low-trust statement (tool output, web text, another "
        "agent) that contradicts an important memory. Only when the user has confirmed which is right."
    )
    hints: ClassVar[ToolAnnotations] = IDEMPOTENT_WRITE

    id: Identifier = Field(
        ..., description="The quarantined memory's id (list_memories with include_history shows them)."
    )
    accept: Flag = Field(
        ..., description="true applies it (the memory it contradicts becomes history); false rejects it."
    )


class ListMemoriesArgs(ToolArgs):
    """Arguments of ``list_memories``."""

    tool: ClassVar[str] = "list_memories"
    description: ClassVar[str] = (
        "List stored memories newest first, optionally filtered (kinds, tiers, session_id, since/until). "
        "For browsing, not for answering questions: use retrieve_memory for that."
    )
    hints: ClassVar[ToolAnnotations] = READ

    filters: RecallFilters | None = Field(None, description="Same filters as retrieve_memory.")
    include_history: Flag = Field(False, description="Include superseded memories.")
    limit: int = Field(20, ge=1, le=1000, description="Page size (1-1000).")
    offset: int = Field(0, ge=0, le=MAX_OFFSET, description="Skip this many (paging).")


class MemoryStatsArgs(ToolArgs):
    """``memory_stats`` takes no arguments."""

    tool: ClassVar[str] = "memory_stats"
    description: ClassVar[str] = (
        "Counts of stored memories by tier, kind and status, token total and sessions. For diagnostics."
    )
    hints: ClassVar[ToolAnnotations] = READ


class MaintainMemoryArgs(ToolArgs):
    """Arguments of ``maintain_memory``."""

    tool: ClassVar[str] = "maintain_memory"
    description: ClassVar[str] = (
        "Tidy this user's memory now: summarise conversations whose live window grew past its limit, merge "
        "repeated memories and distil facts said in several sessions into lasting ones (this may call the "
        "server's LLM), lower the weight of memories not recalled for 30 days, and move stale unimportant ones "
        "(and any over the tier limits) to cold storage, from where they can be restored; preferences and "
        "corrections are never moved. An HTTP server also does this on a schedule, so call it only when the "
        "user asks to clean up or tidy their memory, or with dry_run=true to preview what would change. "
        "Returns what each step did, with ids."
    )
    hints: ClassVar[ToolAnnotations] = IDEMPOTENT_WRITE

    dry_run: Flag = Field(
        False, description="true: only report what upkeep would do (which memories, how many); change nothing."
    )


class DumpMemoryArgs(ToolArgs):
    """Arguments of ``dump_memory``."""

    tool: ClassVar[str] = "dump_memory"
    description: ClassVar[str] = (
        "A human-readable listing of everything in memory (tiers, status, dates, provenance), for debugging."
    )
    hints: ClassVar[ToolAnnotations] = READ

    include_history: Flag = Field(True, description="Include superseded, archived and forgotten memories.")
