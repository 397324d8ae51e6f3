"""Validated inputs of the write API.

``MemoryInput`` is what a caller may say about a new memory; strings are checked here
(empty, too large, not valid UTF-8, control characters) so that a bad item of a batch is
rejected, with its position, before anything of the batch is written.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from .errors import InvalidInputError
from .records import Kind, Role, Source, Tier
from .text import clean_text


class MemoryInput(BaseModel):
    """One memory to store. Only ``content`` is required."""

    model_config = ConfigDict(extra="forbid", str_strip_whitespace=False)

    content: str = Field(..., description="the text to remember")
    role: Role = Role.USER
    kind: Kind | None = None
    tier: Tier | None = None
    importance: float | None = Field(None, ge=0, le=1)
    metadata: dict[str, Any] = Field(default_factory=dict)
    occurred_at: datetime | None = None
    ttl_seconds: int | None = Field(None, gt=0)
    session_id: str | None = None
    agent_id: str | None = None
    entities: list[str] = Field(default_factory=list)
    context: str | None = None
    source: Source | None = None

    @field_validator("content", mode="before")
    @classmethod
    def _content_is_text(cls, value: Any) -> Any:
        if not isinstance(value, str):
            raise ValueError(f"must be a string, got {type(value).__name__}")
        return value

    @field_validator("occurred_at")
    @classmethod
    def _aware(cls, value: datetime | None) -> datetime | None:
        if value is not None and value.tzinfo is None:
            return value.replace(tzinfo=UTC)
        return value


def validate_content(content: str, *, max_bytes: int, field: str = "content") -> str:
    if not isinstance(content, str):
        raise InvalidInputError(field, f"must be a string, got {type(content).__name__}")
    try:
        size = len(content.encode("utf-8"))
    except UnicodeEncodeError:
        raise InvalidInputError(field, "is not valid UTF-8 text (it contains unpaired surrogates)") from None
    if size > max_bytes:
        raise InvalidInputError(field, f"is {size} bytes; the limit is {max_bytes} (HINDSIGHT_MAX_CONTENT_BYTES)")
    cleaned = clean_text(content).strip()
    if not cleaned:
        raise InvalidInputError(field, "is empty or only whitespace/control characters")
    return cleaned


def parse_inputs(items: Any, *, max_bytes: int, field: str = "memories") -> list[MemoryInput]:
    """Validate a batch. Any bad item raises InvalidInputError naming ``memories[i].field``."""
    if isinstance(items, (str, dict, MemoryInput)):
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
        try:
            parsed = item if isinstance(item, MemoryInput) else MemoryInput.model_validate(item)
        except ValidationError as exc:
            err = exc.errors()[0]
            loc = ".".join(str(p) for p in err["loc"])
            raise InvalidInputError(f"{prefix}{loc}" if loc else prefix.rstrip(".") or field, err["msg"]) from None
        parsed.content = validate_content(parsed.content, max_bytes=max_bytes, field=f"{prefix}content")
        if parsed.context is not None:
            parsed.context = validate_content(parsed.context, max_bytes=max_bytes, field=f"{prefix}context")
        out.append(parsed)
    return out
