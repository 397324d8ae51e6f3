"""What travels between the MCP server and ``MemoryClient``: tool arguments and tool results.

Both sides import these models, so the shape is written once. An arguments model names a
tool's parameters with the descriptions a model reads (the server generates the tool's
signature from it, the client builds its calls with it); the client does not validate, so a
mistake comes back from the server as a tool error naming the field, whatever the transport.
A result model builds itself from the engine's result type (``from_result``, on the server),
dumps to the JSON the tool returns (``model_dump(mode="json")``) and turns back into the
engine's type (``to_result``, on the client), so an adapter sees the same objects in-process
and over the network. Records travel as ``MemoryRecord.public_dict()``.
"""

from __future__ import annotations

import math
from datetime import datetime
from typing import Annotated, Any, ClassVar

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, PlainSerializer

from ..core.errors import InvalidInputError
from ..core.model.inputs import MAX_TTL_SECONDS, Flag, JsonObject, Lower, MemoryInput, MemoryItem
from ..core.model.limits import MAX_OFFSET, MAX_TOKENS, Identifier, Metadata
from ..core.model.records import Kind, MemoryRecord, Role
from ..core.model.results import (
    CompressionResult,
    ConsolidationReport,
    NamespaceStats,
    RecallHit,
    RecallResult,
    SkippedMemory,
    StoreResult,
    TurnResult,
)
from ..core.recall.filters import RecallFilters
from ..core.upkeep.runner import UpkeepReport

MAX_BATCH = 1000
"""Largest ``memories`` batch one ``store_memory`` call accepts; larger batches must be split."""


# -- arguments ------------------------------------------------------------------------------------


class ToolArgs(BaseModel):
    """The arguments of one tool (``tool``): the server's parameters and what the client sends.

    The client builds them with ``model_construct`` (names and types checked by mypy, values
    left for the server to judge) and sends ``wire()``; the server validates them.
    """

    model_config = ConfigDict(extra="forbid")

    tool: ClassVar[str]

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

    memories: list[MemoryItem] | None = Field(
        None, description=f"A batch of memories (max {MAX_BATCH}); each needs `content`."
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

    query: str = Field(..., description="What you want to know, in natural language.")
    top_k: int | None = Field(None, ge=1, le=10_000, description="How many memories at most (default 5).")
    min_score: float | None = Field(None, description="Drop memories less relevant than this (0-1).")
    filters: RecallFilters | None = Field(
        None, description="Narrow by session_id, kinds, tiers, since/until, min_importance, metadata."
    )
    token_budget: int | None = Field(
        None,
        ge=1,
        le=MAX_TOKENS,
        description="Fit the context block into this many tokens (default 450, HINDSIGHT_DEFAULT_TOKEN_BUDGET).",
    )
    include_history: Flag = Field(False, description="Also return superseded (outdated) memories, marked as such.")


class RecordTurnArgs(ToolArgs):
    """Arguments of ``record_turn``."""

    tool: ClassVar[str] = "record_turn"

    content: str = Field(..., description="The message text.")
    session_id: Identifier = Field(..., description="The conversation id.")
    role: Annotated[Role, Lower] = Field(Role.USER, description="user, assistant, tool or system.")
    occurred_at: datetime | None = Field(None, description="ISO 8601 time of the message; default now.")
    metadata: Annotated[Metadata | None, JsonObject] = Field(
        None, description="Free-form JSON attached to the turn and to what is remembered from it (e.g. a message id)."
    )
    speaker: str | None = Field(
        None, description="Who wrote the message (a name); remembered as an entity, so questions naming them match."
    )


class GetWorkingMemoryArgs(ToolArgs):
    """Arguments of ``get_working_memory``."""

    tool: ClassVar[str] = "get_working_memory"

    session_id: Identifier = Field(..., description="The conversation id.")


class ClearWorkingMemoryArgs(GetWorkingMemoryArgs):
    """Arguments of ``clear_working_memory`` (the same as ``get_working_memory``'s)."""

    tool: ClassVar[str] = "clear_working_memory"


class CompressMemoryArgs(ToolArgs):
    """Arguments of ``compress_memory``."""

    tool: ClassVar[str] = "compress_memory"

    session_id: Identifier = Field(..., description="The conversation to compress.")
    threshold_tokens: int | None = Field(
        None, ge=1, le=MAX_TOKENS, description="Compress until the live window is under this many tokens."
    )
    force: Flag = Field(False, description="Compress at least one group even if under the threshold.")


class ConsolidateMemoryArgs(ToolArgs):
    """Arguments of ``consolidate_memory``."""

    tool: ClassVar[str] = "consolidate_memory"

    dry_run: Flag = Field(False, description="Report what would be merged and consolidated; change nothing.")


class UpdateMemoryArgs(ToolArgs):
    """Arguments of ``update_memory``: the id and the fields to change (None: unchanged)."""

    tool: ClassVar[str] = "update_memory"

    id: Identifier = Field(..., description="The memory id.")
    content: str | None = Field(None, description="New text (re-indexed).")
    importance: float | None = Field(None, ge=0, le=1, description="New importance 0-1.")
    kind: Annotated[Kind | None, Lower] = Field(None, description="New kind.")
    metadata: Annotated[Metadata | None, JsonObject] = Field(
        None, description="Keys merged into the memory's metadata."
    )
    ttl_seconds: int | None = Field(
        None, gt=0, le=MAX_TTL_SECONDS, description="Expire this many seconds from now (at most 100 years)."
    )


class ForgetMemoryArgs(ToolArgs):
    """Arguments of ``forget_memory``."""

    tool: ClassVar[str] = "forget_memory"

    id: Identifier = Field(..., description="The memory id.")


class ReviewMemoryArgs(ToolArgs):
    """Arguments of ``review_memory``."""

    tool: ClassVar[str] = "review_memory"

    id: Identifier = Field(
        ..., description="The quarantined memory's id (list_memories with include_history shows them)."
    )
    accept: Flag = Field(
        ..., description="true applies it (the memory it contradicts becomes history); false rejects it."
    )


class ListMemoriesArgs(ToolArgs):
    """Arguments of ``list_memories``."""

    tool: ClassVar[str] = "list_memories"

    filters: RecallFilters | None = Field(None, description="Same filters as retrieve_memory.")
    include_history: Flag = Field(False, description="Include superseded memories.")
    limit: int = Field(20, ge=1, le=1000, description="Page size (1-1000).")
    offset: int = Field(0, ge=0, le=MAX_OFFSET, description="Skip this many (paging).")


class MemoryStatsArgs(ToolArgs):
    """``memory_stats`` takes no arguments."""

    tool: ClassVar[str] = "memory_stats"


class MaintainMemoryArgs(ToolArgs):
    """Arguments of ``maintain_memory``."""

    tool: ClassVar[str] = "maintain_memory"

    dry_run: Flag = Field(
        False, description="true: only report what upkeep would do (which memories, how many); change nothing."
    )


class DumpMemoryArgs(ToolArgs):
    """Arguments of ``dump_memory``."""

    tool: ClassVar[str] = "dump_memory"

    include_history: Flag = Field(True, description="Include superseded, archived and forgotten memories.")


# -- results --------------------------------------------------------------------------------------


class ToolResult(BaseModel):
    """The structured content of a tool's answer; unknown keys are ignored, so a newer server still reads."""

    model_config = ConfigDict(extra="ignore")


class StoreOut(ToolResult):
    """``store_memory``'s answer (also nested in ``record_turn``'s)."""

    ids: list[str] = Field(default_factory=list)
    stored: list[MemoryRecord] = Field(default_factory=list)
    skipped: list[SkippedMemory] = Field(default_factory=list)
    superseded: list[str] = Field(default_factory=list)
    merged: list[str] = Field(default_factory=list)
    quarantined: list[str] = Field(default_factory=list)
    replayed: bool = False
    request_id: str | None = None

    @classmethod
    def from_result(cls, result: StoreResult, request_id: str | None = None) -> StoreOut:
        """The answer to a store that produced ``result`` under ``request_id``."""
        return cls(
            ids=result.ids,
            stored=result.stored,
            skipped=result.skipped,
            superseded=result.superseded,
            merged=result.merged,
            quarantined=result.quarantined,
            replayed=result.replayed,
            request_id=request_id,
        )

    def to_result(self) -> StoreResult:
        """The engine's ``StoreResult`` (``ids`` derive from ``stored``)."""
        return StoreResult(
            stored=self.stored,
            skipped=self.skipped,
            superseded=self.superseded,
            merged=self.merged,
            quarantined=self.quarantined,
            replayed=self.replayed,
        )


_SCORE_FIELDS = tuple(name for name in RecallHit.model_fields if name != "record")


def _flat_hit(hit: RecallHit) -> dict[str, Any]:
    """A hit as one object: the record's fields, then the score and its parts (whatever the engine reports)."""
    return {**hit.record.public_dict(), **hit.model_dump(mode="json", exclude={"record"})}


def _nested_hit(value: Any) -> Any:
    """A flat hit (as ``_flat_hit`` wrote it) back in ``RecallHit``'s shape."""
    if isinstance(value, dict) and "record" not in value:
        return {"record": value, **{k: value[k] for k in _SCORE_FIELDS if k in value}}
    return value


WireHit = Annotated[RecallHit, BeforeValidator(_nested_hit), PlainSerializer(_flat_hit)]
"""A ``RecallHit`` that travels flat: a record with ``score``, ``relevance``, ... beside its fields."""


class RecallOut(ToolResult):
    """``retrieve_memory``'s answer: the memories best first and the dated context block."""

    query: str
    memories: list[WireHit]
    context: str
    tokens: int

    @classmethod
    def from_result(cls, result: RecallResult) -> RecallOut:
        """The answer to a recall that produced ``result``."""
        return cls(query=result.query, memories=result.hits, context=result.context, tokens=result.tokens)

    def to_result(self) -> RecallResult:
        """The engine's ``RecallResult``."""
        return RecallResult(query=self.query, hits=self.memories, context=self.context, tokens=self.tokens)


class TurnOut(ToolResult):
    """``record_turn``'s answer: the turn, what was remembered from it, any compression it set off."""

    turn_id: str
    turn: MemoryRecord
    stored: StoreOut
    compression: CompressionResult | None = None

    @classmethod
    def from_result(cls, result: TurnResult) -> TurnOut:
        """The answer to a recorded turn."""
        return cls(
            turn_id=result.turn.id,
            turn=result.turn,
            stored=StoreOut.from_result(result.stored),
            compression=result.compression,
        )

    def to_result(self) -> TurnResult:
        """The engine's ``TurnResult``."""
        return TurnResult(turn=self.turn, stored=self.stored.to_result(), compression=self.compression)


class WorkingOut(ToolResult):
    """``get_working_memory``'s answer: a session's live turns, oldest first."""

    session_id: str
    turns: list[MemoryRecord]
    tokens: int

    @classmethod
    def from_result(cls, session_id: str, turns: list[MemoryRecord]) -> WorkingOut:
        """The answer for ``session_id``'s live ``turns``."""
        return cls(session_id=session_id, turns=turns, tokens=sum(t.token_count for t in turns))

    def to_result(self) -> list[MemoryRecord]:
        """The turns."""
        return self.turns


class ClearedOut(ToolResult):
    """``clear_working_memory``'s answer: how many live turns were forgotten."""

    session_id: str
    cleared: int

    def to_result(self) -> int:
        """The number of cleared turns."""
        return self.cleared


class CompressOut(ToolResult):
    """``compress_memory``'s answer; ``compression`` is None when the window was under the threshold."""

    session_id: str
    compressed: bool
    compression: CompressionResult | None

    @classmethod
    def from_result(cls, session_id: str, result: CompressionResult | None) -> CompressOut:
        """The answer to compressing ``session_id``."""
        return cls(session_id=session_id, compressed=result is not None, compression=result)

    def to_result(self) -> CompressionResult | None:
        """The engine's ``CompressionResult``, or None."""
        return self.compression


ConsolidateOut = ConsolidationReport
"""``consolidate_memory``'s answer is the engine's ``ConsolidationReport`` as it is."""


class MemoryOut(ToolResult):
    """``update_memory``'s answer: the memory as it is now."""

    memory: MemoryRecord

    def to_result(self) -> MemoryRecord:
        """The record."""
        return self.memory


class ForgottenOut(MemoryOut):
    """``forget_memory``'s answer: the memory, now marked deleted."""

    forgotten: bool = True


class ReviewOut(ToolResult):
    """``review_memory``'s answer: the records changed, the reviewed one first."""

    memories: list[MemoryRecord]

    def to_result(self) -> list[MemoryRecord]:
        """The records."""
        return self.memories


class ListOut(ToolResult):
    """``list_memories``'s answer: one page of records, newest first."""

    memories: list[MemoryRecord]
    count: int
    offset: int

    @classmethod
    def from_result(cls, records: list[MemoryRecord], offset: int) -> ListOut:
        """The page of ``records`` that starts at ``offset``."""
        return cls(memories=records, count=len(records), offset=offset)

    def to_result(self) -> list[MemoryRecord]:
        """The records."""
        return self.memories


StatsOut = NamespaceStats
"""``memory_stats``'s answer is the engine's ``NamespaceStats`` as it is."""

UpkeepOut = UpkeepReport
"""``maintain_memory``'s answer is the engine's ``UpkeepReport`` as it is: each step, what it did, its error."""


class DumpOut(ToolResult):
    """``dump_memory``'s answer: the human-readable listing."""

    dump: str

    def to_result(self) -> str:
        """The listing."""
        return self.dump
