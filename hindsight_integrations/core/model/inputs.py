"""Validated inputs of the write API, declared once for every caller.

``MemoryItem`` holds every field a caller may say about a new memory, with the descriptions
a model reads and the leniency models need (a bare string item, a JSON string, enum values
in the wrong case, metadata sent as a JSON string). The engine's ``MemoryInput`` adds the
server-only ``source``; the MCP server takes ``MemoryItem`` as the item of a ``store_memory``
batch and generates that tool's single-memory parameters from its fields, so the three can
no longer drift apart. Every bound (``limits.py``) is a validator of these fields, so a bad
item of a batch is rejected, with its position, before anything of the batch is written,
whether it came as a dict, a string or a model instance (instances are validated again).
"""

from __future__ import annotations

import json
import unicodedata
from dataclasses import replace
from datetime import UTC, datetime
from typing import Annotated, Any

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)

from ..errors import InvalidInputError
from ..language.text import clean_text
from .arguments import error_message
from .limits import Entities, Identifier, InputLimits, Metadata, check_text, configured_limits, refusal
from .records import Kind, Role, Source, Tier


def lower_text(value: Any) -> Any:
    """``value`` trimmed and lower-cased when it is text, else unchanged (pydantic then judges it)."""
    return value.strip().lower() if isinstance(value, str) else value


Lower = BeforeValidator(lower_text)
"""Enum values and booleans as models write them (``"PREFERENCE"``, ``" False"``): trimmed and
lower-cased before validation, so the value is read instead of the call being refused."""

Flag = Annotated[bool, Lower]
"""A boolean argument that also accepts ``"true"``/``"False "`` as text."""


def _json_object(value: Any) -> Any:
    if isinstance(value, str):
        try:
            return json.loads(value)
        except (json.JSONDecodeError, RecursionError):
            return value
    return value


JsonObject = BeforeValidator(_json_object)
"""An object argument that models sometimes send as a JSON string: parsed before validation."""


# The times a memory may carry: stored as epoch seconds, far dates overflowed or (from 3000 on) read back as "not set".
EARLIEST = datetime(1900, 1, 1, tzinfo=UTC)
LATEST = datetime(2999, 12, 31, 23, 59, 59, tzinfo=UTC)
MAX_TTL_SECONDS = 100 * 365 * 24 * 3600


class MemoryItem(BaseModel):
    """One new memory as any caller may describe it; only ``content`` is required, the rest is inferred.

    Validated under the engine's limits (``parse_inputs`` passes ``InputLimits.context()``):
    content size, emptiness and control characters, and the configured bounds of ids,
    metadata and entities; without them (FastMCP's own validation) the structural bounds
    only. ``source`` is set by the server, see ``MemoryInput``.
    """

    model_config = ConfigDict(
        extra="forbid",
        str_strip_whitespace=False,
        revalidate_instances="always",
        json_schema_extra={"description": "One memory of a ``store_memory`` batch."},
    )

    content: str = Field(..., description="The text to remember, self-contained (max 32 KB).")
    role: Annotated[Role, Lower] = Field(Role.USER, description="Who said it: user, assistant, tool or system.")
    kind: Annotated[Kind | None, Lower] = Field(
        None, description="preference, fact, context, correction or event; inferred when omitted."
    )
    tier: Annotated[Tier | None, Lower] = Field(
        None, description="Force a tier; normally inferred (preferences and corrections are semantic)."
    )
    importance: float | None = Field(None, ge=0, le=1, description="0-1; inferred when omitted.")
    metadata: Annotated[Metadata, JsonObject] = Field(
        default_factory=dict,
        description="Free-form JSON attached to the memory; scalar values can be filtered on. "
        "Keys starting with _ are reserved.",
    )
    occurred_at: datetime | None = Field(None, description="ISO 8601 time it was stated; defaults to now.")
    ttl_seconds: int | None = Field(
        None, gt=0, description="Forget automatically after this many seconds (temporary facts)."
    )
    session_id: Identifier | None = Field(None, description="Conversation the memory came from.")
    agent_id: Identifier | None = Field(
        None, description="The agent that wrote it, when several agents share the memory."
    )
    entities: Entities = Field(
        default_factory=list, description="Names the memory is about (people, projects); recall favours them."
    )
    context: str | None = Field(
        None, description="Surrounding text indexed with the memory but not returned as its content."
    )
    trusted: Flag = Field(
        True,
        description=(
            "False for text from tools, web pages or other agents: such a memory cannot overwrite an "
            "important one (importance >= 0.9); a contradiction is quarantined for review instead."
        ),
    )

    @model_validator(mode="before")
    @classmethod
    def _bare_string(cls, value: Any) -> Any:
        if isinstance(value, str):
            stripped = value.strip()
            if stripped.startswith("{"):
                try:
                    return json.loads(stripped)
                except (json.JSONDecodeError, RecursionError):
                    pass
            return {"content": value}
        return value

    @field_validator("session_id")
    @classmethod
    def _session_is_named(cls, value: str | None) -> str | None:
        """A session id names a conversation (``record_turn`` refuses an empty one too)."""
        if value is not None and not value.strip():
            raise ValueError("is empty: leave session_id out for a memory of no conversation")
        return value

    @field_validator("content", mode="before")
    @classmethod
    def _content_is_text(cls, value: Any) -> Any:
        """Refuse content that is not text, naming its type.

        A refusal, not a ``ValueError``: a server's message for a ``ValueError`` adds the value sent
        (``(got 5)``), which repeated what this one says ("must be a string, got int (got 5)").
        """
        if not isinstance(value, str):
            raise refusal(f"must be a string, got {type(value).__name__}")
        return value

    @field_validator("content", "context")
    @classmethod
    def _bounded_text(cls, value: str | None, info: ValidationInfo) -> str | None:
        if value is None:
            return None
        limits = configured_limits(info)
        try:
            if limits is None:
                check_text(value, info.field_name or "content")
                return value
            return validate_content(value, max_bytes=limits.max_content_bytes, field=info.field_name or "content")
        except InvalidInputError as exc:
            raise refusal(exc.message) from None

    @field_validator("occurred_at")
    @classmethod
    def _aware(cls, value: datetime | None) -> datetime | None:
        if value is not None and value.tzinfo is None:
            value = value.replace(tzinfo=UTC)
        if value is not None and not EARLIEST <= value <= LATEST:
            # Stored as epoch seconds; far dates overflowed or read back as "now".
            raise ValueError("must be between the years 1900 and 2999")
        return value

    @field_validator("ttl_seconds")
    @classmethod
    def _bounded_ttl(cls, value: int | None) -> int | None:
        if value is not None and value > MAX_TTL_SECONDS:
            raise ValueError(f"must be at most {MAX_TTL_SECONDS} seconds (100 years)")
        return value


class MemoryInput(MemoryItem):
    """A ``MemoryItem`` plus provenance, which only the engine's own callers may set.

    Over MCP the server decides where a memory came from, so ``source`` is not a field a
    client can send (``MemoryItem`` has none and forbids unknown fields).
    """

    source: Source | None = None


def validate_content(content: str, *, max_bytes: int, field: str = "content") -> str:
    """``content`` cleaned of control characters, or InvalidInputError naming ``field`` (type, size, UTF-8, empty)."""
    if not isinstance(content, str):
        raise InvalidInputError(field, f"must be a string, got {type(content).__name__}")
    try:
        size = len(content.encode("utf-8"))
    except UnicodeEncodeError:
        raise InvalidInputError(field, "is not valid UTF-8 text (it contains unpaired surrogates)") from None
    if size > max_bytes:
        raise InvalidInputError(field, f"is {size} bytes; the limit is {max_bytes} (HINDSIGHT_MAX_CONTENT_BYTES)")
    cleaned = clean_text(content).strip()
    if not any(_visible(character) for character in cleaned):
        raise InvalidInputError(field, "is empty or only whitespace/control characters")
    return cleaned


def _visible(character: str) -> bool:
    """Whether a character shows: not a space, nor a format character (a zero-width space, a byte-order mark)."""
    return not character.isspace() and unicodedata.category(character) != "Cf"


def parse_inputs(
    items: Any, *, max_bytes: int | None = None, field: str = "memories", limits: InputLimits | None = None
) -> list[MemoryInput]:
    """Validate a batch under ``limits``. Any bad item raises InvalidInputError naming ``memories[i].field``.

    ``limits`` bounds content, ids, metadata and entities (the defaults when not given;
    ``max_bytes`` overrides its content size). Every item is validated, model instances included.
    """
    limits = limits or InputLimits()
    if max_bytes is not None and max_bytes != limits.max_content_bytes:
        limits = replace(limits, max_content_bytes=max_bytes)
    context = limits.context()
    if isinstance(items, (str, dict, MemoryItem)):
        items = [items]
    if not isinstance(items, (list, tuple)):
        raise InvalidInputError(field, f"must be a list of memories, got {type(items).__name__}")
    if not items:
        raise InvalidInputError(field, "is empty; give at least one memory")
    out = []
    for n, item in enumerate(items):
        prefix = f"{field}[{n}]." if len(items) > 1 else ""
        if isinstance(item, str):
            item = {"content": item}
        elif isinstance(item, MemoryItem) and not isinstance(item, MemoryInput):
            item = item.model_dump(exclude_unset=True)
        try:
            out.append(MemoryInput.model_validate(item, context=context))
        except ValidationError as exc:
            err = exc.errors()[0]
            loc = ".".join(str(p) for p in err["loc"])
            where = f"{prefix}{loc}" if loc else prefix.rstrip(".") or field
            raise InvalidInputError(where, error_message(err)) from None
    return out
