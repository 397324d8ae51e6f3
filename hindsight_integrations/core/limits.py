"""Bounds on everything a caller sends besides content: ids, metadata, entities, filters.

Content has always had a size limit; the rest had none, and a caller (or a model) could store
3.5 MB of metadata, a 1 MB session id or 2 MB of entities, which then came back in every
listing and log line. Each bound here is checked before anything is written and refused with
an error naming the field and the limit (and the setting that changes it, where there is one).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from .errors import InvalidInputError

MAX_METADATA_KEYS = 64  # keys of one metadata object (nested ones included in the size bound)
MAX_METADATA_DEPTH = 6  # objects and lists nested inside metadata
MAX_ENTITY_CHARS = 200  # one entity name


@dataclass(frozen=True)
class InputLimits:
    """The configurable bounds (``Settings``: ``max_metadata_bytes``, ``max_id_chars``, ...)."""

    max_metadata_bytes: int = 8192
    max_id_chars: int = 200
    max_entities: int = 50
    max_filter_bytes: int = 8192

    @classmethod
    def from_settings(cls, settings: Any) -> InputLimits:
        """The limits a ``Settings`` object configures."""
        return cls(
            max_metadata_bytes=settings.max_metadata_bytes,
            max_id_chars=settings.max_id_chars,
            max_entities=settings.max_entities,
            max_filter_bytes=settings.max_filter_bytes,
        )


def check_id(value: str | None, field: str, limits: InputLimits) -> None:
    """An identifier (session, agent, request): valid UTF-8 and at most ``max_id_chars``."""
    if value is None:
        return
    _utf8(value, field)
    if len(value) > limits.max_id_chars:
        raise InvalidInputError(
            field, f"is {len(value)} characters; the limit is {limits.max_id_chars} (HINDSIGHT_MAX_ID_CHARS)"
        )


def check_metadata(metadata: dict[str, Any], field: str, limits: InputLimits) -> None:
    """Metadata: at most ``MAX_METADATA_KEYS`` keys, ``MAX_METADATA_DEPTH`` levels, ``max_metadata_bytes`` of JSON."""
    if len(metadata) > MAX_METADATA_KEYS:
        raise InvalidInputError(field, f"has {len(metadata)} keys; the limit is {MAX_METADATA_KEYS}")
    if _depth(metadata) > MAX_METADATA_DEPTH:
        raise InvalidInputError(field, f"is nested too deep; the limit is {MAX_METADATA_DEPTH} levels")
    size = _json_size(metadata, field)
    if size > limits.max_metadata_bytes:
        raise InvalidInputError(
            field,
            f"is {size} bytes as JSON; the limit is {limits.max_metadata_bytes} (HINDSIGHT_MAX_METADATA_BYTES)",
        )


def check_entities(entities: list[str], field: str, limits: InputLimits) -> None:
    """Entities: at most ``max_entities`` names of at most ``MAX_ENTITY_CHARS`` characters each."""
    if len(entities) > limits.max_entities:
        raise InvalidInputError(
            field, f"has {len(entities)} names; the limit is {limits.max_entities} (HINDSIGHT_MAX_ENTITIES)"
        )
    for n, name in enumerate(entities):
        _utf8(name, f"{field}[{n}]")
        if len(name) > MAX_ENTITY_CHARS:
            raise InvalidInputError(f"{field}[{n}]", f"is {len(name)} characters; the limit is {MAX_ENTITY_CHARS}")


def check_filters(raw: Any, limits: InputLimits) -> None:
    """A recall/list filter as the caller sent it: its size, its metadata keys and its ids."""
    if not isinstance(raw, dict):
        return  # coerce_model reports the type
    size = _json_size(raw, "filters")
    if size > limits.max_filter_bytes:
        raise InvalidInputError(
            "filters", f"is {size} bytes as JSON; the limit is {limits.max_filter_bytes} (HINDSIGHT_MAX_FILTER_BYTES)"
        )
    metadata = raw.get("metadata")
    if isinstance(metadata, dict) and len(metadata) > MAX_METADATA_KEYS:
        raise InvalidInputError("filters.metadata", f"has {len(metadata)} keys; the limit is {MAX_METADATA_KEYS}")
    for key in ("session_id", "agent_id"):
        if isinstance(raw.get(key), str):
            check_id(raw[key], f"filters.{key}", limits)


def _utf8(value: str, field: str) -> None:
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise InvalidInputError(field, "is not valid UTF-8 text (it contains unpaired surrogates)") from None


def _json_size(value: Any, field: str) -> int:
    try:
        return len(json.dumps(value, ensure_ascii=False, default=str).encode("utf-8"))
    except UnicodeEncodeError:
        raise InvalidInputError(field, "is not valid UTF-8 text (it contains unpaired surrogates)") from None
    except (TypeError, ValueError) as exc:  # circular references, NaN is fine in JSON dumps
        raise InvalidInputError(field, f"cannot be stored as JSON ({exc})") from None


def _depth(value: Any, level: int = 0) -> int:
    if level > MAX_METADATA_DEPTH:  # deep enough to refuse; stop before Python's recursion limit
        return level
    if isinstance(value, dict):
        return max((_depth(v, level + 1) for v in value.values()), default=level + 1)
    if isinstance(value, (list, tuple)):
        return max((_depth(v, level + 1) for v in value), default=level + 1)
    return level


__all__ = ["InputLimits", "check_entities", "check_filters", "check_id", "check_metadata"]
