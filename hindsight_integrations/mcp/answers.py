"""What a tool answers: the engine's own result models, and where the JSON differs from them, how.

Most tools answer with the engine's result as it is (``memory_stats``: ``NamespaceStats``,
``consolidate_memory``: ``ConsolidationReport``, ``maintain_memory``: ``UpkeepReport``), and the
client reads it back with the same model. Three answers extend an engine result, so only what
differs is written here: ``StoreOut`` puts the stored ``ids`` first and echoes the call's
``request_id``; ``TurnOut`` puts the ``turn_id`` first; ``RecallOut`` names the hits
``memories`` and sends each as one object (the record's fields, then its score fields). The
server builds them from the engine's result (``model_validate(result, from_attributes=True)``);
the client reads a store or a turn straight into ``StoreResult`` / ``TurnResult`` (the extra keys
are ignored) and a recall through ``RecallOut`` (``RecallOut.engine_result``), so an adapter sees
the same objects in-process and over the network. Engine operations that return a plain value
(a list of records, a count, a text) answer with a small envelope naming it. Records travel as
``MemoryRecord.public_dict()``; unknown keys are ignored everywhere, so a newer server still reads.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    PlainSerializer,
    SerializerFunctionWrapHandler,
    model_serializer,
)

from ..core.model.records import MemoryRecord
from ..core.model.results import CompressionResult, RecallHit, RecallResult, StoreResult, TurnResult

# -- engine results, extended ------------------------------------------------------------------------------------


class StoreOut(StoreResult):
    """``store_memory``'s answer: the engine's ``StoreResult``, its ``ids`` first, the call's ``request_id`` last."""

    model_config = ConfigDict(extra="ignore")

    request_id: str | None = None

    @model_serializer(mode="wrap")
    def _ids_first(self, dump: SerializerFunctionWrapHandler) -> dict[str, Any]:
        return {"ids": self.ids, **dump(self)}


class TurnOut(TurnResult):
    """``record_turn``'s answer: the engine's ``TurnResult``, its ``turn_id`` first, what it stored as ``StoreOut``."""

    model_config = ConfigDict(extra="ignore")

    stored: StoreOut

    @model_serializer(mode="wrap")
    def _turn_id_first(self, dump: SerializerFunctionWrapHandler) -> dict[str, Any]:
        return {"turn_id": self.turn.id, **dump(self)}


_SCORE_FIELDS = tuple(name for name in RecallHit.model_fields if name != "record")


def _flat_hit(hit: RecallHit) -> dict[str, Any]:
    """A hit as one object: the record's fields, then the score and its parts (whatever the engine reports).

    A part no stage computed (``cross_encoder`` without the re-ranker) is left out rather than sent as null.
    """
    return {**hit.record.public_dict(), **hit.model_dump(mode="json", exclude={"record"}, exclude_none=True)}


def _nested_hit(value: Any) -> Any:
    """A flat hit (as ``_flat_hit`` wrote it) back in ``RecallHit``'s shape."""
    if isinstance(value, dict) and "record" not in value:
        return {"record": value, **{k: value[k] for k in _SCORE_FIELDS if k in value}}
    return value


WireHit = Annotated[RecallHit, BeforeValidator(_nested_hit), PlainSerializer(_flat_hit)]
"""A ``RecallHit`` that travels flat: a record with ``score``, ``relevance``, ... beside its fields."""


class RecallOut(RecallResult):
    """``retrieve_memory``'s answer: the engine's ``RecallResult`` with its hits, flat, as ``memories``."""

    model_config = ConfigDict(extra="ignore", validate_by_name=True, validate_by_alias=True, serialize_by_alias=True)

    hits: list[WireHit] = Field(alias="memories")

    def engine_result(self) -> RecallResult:
        """The engine's own ``RecallResult`` (the same fields, so equal to what an in-process recall returns)."""
        return RecallResult(**dict(self))


# -- envelopes of plain values -----------------------------------------------------------------------------------


class Envelope(BaseModel):
    """The answer of an operation that returns a plain value, named (and with what else helps a model read it)."""

    model_config = ConfigDict(extra="ignore")


class WorkingOut(Envelope):
    """``get_working_memory``'s answer: a session's live turns, oldest first."""

    session_id: str
    turns: list[MemoryRecord]
    tokens: int


class ClearedOut(Envelope):
    """``clear_working_memory``'s answer: how many live turns were forgotten."""

    session_id: str
    cleared: int


class CompressOut(Envelope):
    """``compress_memory``'s answer; ``compression`` is None when the window was under the threshold."""

    session_id: str
    compressed: bool
    compression: CompressionResult | None


class MemoryOut(Envelope):
    """``update_memory``'s answer: the memory as it is now."""

    memory: MemoryRecord


class ForgottenOut(MemoryOut):
    """``forget_memory``'s answer: the memory, now marked deleted."""

    forgotten: bool = True


class ReviewOut(Envelope):
    """``review_memory``'s answer: the records changed, the reviewed one first."""

    memories: list[MemoryRecord]


class ListOut(Envelope):
    """``list_memories``'s answer: one page of records, newest first."""

    memories: list[MemoryRecord]
    count: int
    offset: int


class DumpOut(Envelope):
    """``dump_memory``'s answer: the human-readable listing."""

    dump: str


__all__ = [
    "ClearedOut",
    "CompressOut",
    "DumpOut",
    "Envelope",
    "ForgottenOut",
    "ListOut",
    "MemoryOut",
    "RecallOut",
    "ReviewOut",
    "StoreOut",
    "TurnOut",
    "WireHit",
    "WorkingOut",
]
