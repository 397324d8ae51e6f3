"""The write path's bounds, applied to a record of an export before it is imported.

``store`` checks what a caller sends (``inputs.MemoryItem``, with the bounds of ``limits.py``);
an import writes records as they are, so without the same checks it took 200 KB of content, a
5,000-character id, an empty id (refused by Chroma mid-write), metadata keys that steer the
engine, and a time in the year 3001 (read back as now). A record the engine wrote passes as it
is: its own metadata keys are held to the shapes the engine writes (``reserved.py``), and a
memory distilled from others may name the entities of all of them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from datetime import UTC
from typing import Any

from ..errors import InvalidInputError
from .inputs import EARLIEST, LATEST, validate_content
from .limits import (
    RESERVED_METADATA_PREFIX,
    InputLimits,
    check_entities,
    check_id,
    check_memory_id,
    check_metadata,
    check_text,
)
from .records import MemoryRecord
from .reserved import reserved_value_problem

_TIMES = ("occurred_at", "created_at", "updated_at", "valid_from", "valid_until", "expires_at", "last_accessed_at")


def aware(record: MemoryRecord) -> MemoryRecord:
    """``record`` with naive times taken as UTC, as the write path takes them."""
    naive = {f: t.replace(tzinfo=UTC) for f in _TIMES if (t := getattr(record, f)) is not None and t.tzinfo is None}
    return record.model_copy(update=naive) if naive else record


def cleaned(record: MemoryRecord, limits: InputLimits) -> MemoryRecord:
    """``record``, which ``record_problems`` passed, with its content and context cleaned as ``store`` cleans them.

    Control characters dropped, NFC, surrounding whitespace trimmed (``validate_content``): an
    import stored text as given, so an exported-then-imported namespace differed from one ``store`` wrote.
    """
    texts = {"content": validate_content(record.content, max_bytes=limits.max_content_bytes)}
    if record.context is not None:
        texts["context"] = validate_content(record.context, max_bytes=limits.max_content_bytes, field="context")
    changed = {field: text for field, text in texts.items() if text != getattr(record, field)}
    return record.model_copy(update=changed) if changed else record


def record_problems(record: MemoryRecord, where: str, limits: InputLimits) -> list[str]:
    """What of ``record`` (at ``where``, e.g. ``records[3]``) is out of the write path's bounds, one line each."""
    problems: list[str] = []

    def check(bound: Callable[..., object], *args: Any, **kwargs: Any) -> None:
        try:
            bound(*args, **kwargs)
        except InvalidInputError as exc:
            problems.append(f"{where}.{exc.field}: {exc.message}")

    if not record.id.strip():
        problems.append(f"{where}.id: is empty; leave it out and the import gives the memory a new id")
    check(check_memory_id, record.id)
    check(validate_content, record.content, max_bytes=limits.max_content_bytes)
    if record.context is not None:  # as ``store`` checks it (``MemoryItem``): a blank context frames nothing
        check(validate_content, record.context, max_bytes=limits.max_content_bytes, field="context")
    if record.summary is not None:
        check(check_text, record.summary, "summary")
    for field in ("session_id", "agent_id", "request_id"):
        value = getattr(record, field)
        check(check_id, value, field, limits)
        if value is not None and not value.strip():
            problems.append(f"{where}.{field}: is empty; leave it out instead")
    caller = {k: v for k, v in record.metadata.items() if not k.startswith(RESERVED_METADATA_PREFIX)}
    check(check_metadata, caller, "metadata", limits)
    for key, value in record.metadata.items():
        if key.startswith(RESERVED_METADATA_PREFIX) and (problem := reserved_value_problem(key, value)) is not None:
            problems.append(f"{where}.metadata.{key}: {problem}")
    # a memory distilled from others (consolidation) names every entity of its sources
    sources = max(1, len(record.source.memory_ids))
    check(check_entities, record.entities, "entities", replace(limits, max_entities=limits.max_entities * sources))
    for field in _TIMES:
        value = getattr(record, field)
        if value is not None and not EARLIEST <= value <= LATEST:
            problems.append(f"{where}.{field}: must be between the years 1900 and 2999, got {value.isoformat()}")
    for field in ("access_count", "token_count"):
        if getattr(record, field) < 0:
            problems.append(f"{where}.{field}: must be 0 or more, got {getattr(record, field)}")
    return problems


__all__ = ["aware", "cleaned", "record_problems"]
