"""Bounds on everything a caller sends: content, ids, metadata, entities, filters, counts.

Content has always had a size limit; the rest had none, and a caller (or a model) could store
3.5 MB of metadata, a 1 MB session id or 2 MB of entities, which then came back in every
listing and log line. A filter's metadata became one Chroma ``where`` clause per key, and
10,000 keys crashed the process in Chroma's Rust bindings (issue #24). Each bound is refused
with an error naming the field and the limit (and the setting that changes it, where there is one).

The bounds are written once, here, and applied where a value becomes typed: ``Identifier``,
``Metadata`` and ``Entities`` are the field types of ``MemoryItem``, ``RecallFilters`` and the
MCP argument models, and those models re-validate instances, so a value is checked whatever
form it arrives in (a dict, a model instance, a JSON string FastMCP parsed) and from whichever
transport. Two kinds of bound:

* *structural* ones (keys per object, nesting, entity length, valid UTF-8 text in values and
  keys) hold for every validation;
* *configured* ones (``InputLimits``, from ``Settings``: bytes, id length, entity count) need
  the engine's settings, which a validation carries as its context (``InputLimits.context()``).
  The engine always passes it; the MCP layer validates without it, so a server configured
  above the defaults is not held to them there, and the engine checks them right after.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, BeforeValidator, Field, ValidationInfo
from pydantic_core import PydanticCustomError

from ..errors import InvalidInputError

MAX_METADATA_KEYS = 64  # keys of one metadata object (nested ones included in the size bound)
RESERVED_METADATA_PREFIX = "_"  # top-level metadata keys of hindsight's own bookkeeping; callers may not set them
MAX_METADATA_DEPTH = 6  # objects and lists nested inside metadata
MAX_ENTITY_CHARS = 200  # one entity name
MAX_MEMORY_ID_CHARS = 200  # a memory id (ours are 36-character UUIDs): fixed, so no setting hides stored ones
MAX_TOKENS = 10_000_000  # a token budget or compression threshold: beyond any model's context window
MAX_OFFSET = 1_000_000_000  # paging offsets: far beyond any namespace, short of numbers that only waste work
MAX_PAGE = 10_000  # records one ``list`` call returns
MAX_CANDIDATES = 10_000  # the search pool of one recall (``MemoryEngine.recall(candidates=)``)

INT64_RANGE = (-(2**63), 2**63 - 1)
"""The integers Chroma stores and filters on: a filter past them failed inside Chroma, a stored one never matched."""

LIMITS_CONTEXT_KEY = "hindsight_input_limits"
"""Key of the ``InputLimits`` in a pydantic validation context (``InputLimits.context()``)."""


@dataclass(frozen=True)
class InputLimits:
    """The configurable bounds (``Settings``: ``max_content_bytes``, ``max_metadata_bytes``, ...)."""

    max_content_bytes: int = 32 * 1024
    max_metadata_bytes: int = 8192
    max_id_chars: int = 200
    max_entities: int = 50
    max_filter_bytes: int = 8192

    @classmethod
    def from_settings(cls, settings: Any) -> InputLimits:
        """The limits a ``Settings`` object configures."""
        return cls(
            max_content_bytes=settings.max_content_bytes,
            max_metadata_bytes=settings.max_metadata_bytes,
            max_id_chars=settings.max_id_chars,
            max_entities=settings.max_entities,
            max_filter_bytes=settings.max_filter_bytes,
        )

    def context(self) -> dict[str, InputLimits]:
        """A pydantic validation context under which the models also apply these limits."""
        return {LIMITS_CONTEXT_KEY: self}


def configured_limits(info: ValidationInfo) -> InputLimits | None:
    """The ``InputLimits`` a validation carries (None: only the structural bounds apply)."""
    context = info.context
    found = context.get(LIMITS_CONTEXT_KEY) if isinstance(context, dict) else None
    return found if isinstance(found, InputLimits) else None


# -- checks: each raises InvalidInputError(field, ...); ``limits`` None means structural bounds only --


def check_id(value: str | None, field: str, limits: InputLimits | None) -> None:
    """An identifier (memory, session, agent, request): valid UTF-8 and at most ``max_id_chars``."""
    if value is None:
        return
    check_text(value, field)
    if limits is not None and len(value) > limits.max_id_chars:
        raise InvalidInputError(
            field, f"is {len(value)} characters; the limit is {limits.max_id_chars} (HINDSIGHT_MAX_ID_CHARS)"
        )


def check_memory_id(value: str, field: str = "id") -> None:
    """A memory id as a caller names it: valid UTF-8, at most ``MAX_MEMORY_ID_CHARS``."""
    check_text(value, field)
    if len(value) > MAX_MEMORY_ID_CHARS:
        raise InvalidInputError(field, f"is {len(value)} characters; the limit is {MAX_MEMORY_ID_CHARS}")


def check_metadata(metadata: dict[str, Any], field: str, limits: InputLimits | None) -> None:
    """Metadata: at most ``MAX_METADATA_KEYS`` keys, ``MAX_METADATA_DEPTH`` levels, ``max_metadata_bytes`` of JSON."""
    if not isinstance(metadata, dict):
        raise InvalidInputError(field, f"must be an object, got {type(metadata).__name__}")
    if len(metadata) > MAX_METADATA_KEYS:
        raise InvalidInputError(field, f"has {len(metadata)} keys; the limit is {MAX_METADATA_KEYS}")
    reserved = sorted(k for k in metadata if isinstance(k, str) and k.startswith(RESERVED_METADATA_PREFIX))
    if reserved:  # "_supersedes" would make any memory of the namespace history at the next start
        raise InvalidInputError(
            field,
            f"key {reserved[0]!r} starts with {RESERVED_METADATA_PREFIX!r}: such keys are hindsight's own "
            "(what a memory supersedes, was merged into, its stated importance); rename it",
        )
    if _depth(metadata) > MAX_METADATA_DEPTH:
        raise InvalidInputError(field, f"is nested too deep; the limit is {MAX_METADATA_DEPTH} levels")
    check_text(metadata, field)
    check_int64(metadata, field)
    if limits is None:
        return
    size = json_size(metadata, field)
    if size > limits.max_metadata_bytes:
        raise InvalidInputError(
            field,
            f"is {size} bytes as JSON; the limit is {limits.max_metadata_bytes} (HINDSIGHT_MAX_METADATA_BYTES)",
        )


def check_filter_metadata(metadata: dict[str, Any], field: str, limits: InputLimits | None) -> None:
    """A filter's metadata: at most ``MAX_METADATA_KEYS`` keys (each one a Chroma clause), finite numbers, UTF-8."""
    if len(metadata) > MAX_METADATA_KEYS:
        raise InvalidInputError(field, f"has {len(metadata)} keys; the limit is {MAX_METADATA_KEYS}")
    compared = {key: value.get("$ne") if isinstance(value, dict) else value for key, value in metadata.items()}
    check_text(metadata, field)
    check_int64(compared, field)
    for key, value in compared.items():
        if isinstance(value, float) and not math.isfinite(value):
            raise InvalidInputError(field, f"{shown(key)!r} must be a finite number, got {value}")


def check_int64(metadata: dict[str, Any], field: str) -> None:
    """Refuse a top-level integer outside ``INT64_RANGE``: Chroma keeps each as ``m.<key>`` to filter on, and cannot.

    A filter on one raised chromadb's own error from recall and list; a stored one was kept but no
    filter ever matched it. Nested values are stored as JSON only, so any integer is fine there.
    """
    low, high = INT64_RANGE
    for key, value in metadata.items():
        if isinstance(value, int) and not isinstance(value, bool) and not low <= value <= high:
            raise InvalidInputError(
                field,
                f"{shown(str(key))!r} is an integer outside the signed 64-bit range (-2**63 to 2**63-1) that "
                "Chroma stores and filters on; send it as a string",
            )


def check_entities(entities: list[str], field: str, limits: InputLimits | None) -> None:
    """Entities: at most ``max_entities`` names of at most ``MAX_ENTITY_CHARS`` characters each."""
    if limits is not None and len(entities) > limits.max_entities:
        raise InvalidInputError(
            field, f"has {len(entities)} names; the limit is {limits.max_entities} (HINDSIGHT_MAX_ENTITIES)"
        )
    for n, name in enumerate(entities):
        check_text(name, f"{field}[{n}]")
        if len(name) > MAX_ENTITY_CHARS:
            raise InvalidInputError(f"{field}[{n}]", f"is {len(name)} characters; the limit is {MAX_ENTITY_CHARS}")


def check_text(value: Any, field: str) -> None:
    """Refuse text that is not valid UTF-8 (unpaired surrogates) anywhere in ``value``: values and keys, nested.

    Such text cannot be written as JSON or handed to Chroma; sent as is, it breaks the
    transport's writer (on stdio, the whole connection). The error names where it was.
    """
    where = invalid_text_at(value)
    if where is not None:
        place = f" (at {where})" if where else ""
        raise InvalidInputError(field, f"is not valid UTF-8 text: it contains unpaired surrogates{place}")


def invalid_text_at(value: Any) -> str | None:
    """The path (``a.b[2]``, ``""`` for ``value`` itself) of the first text in ``value`` that is not valid UTF-8.

    Walks dicts (keys too), lists, tuples, sets and pydantic models without recursion, so
    however deep ``value`` is nested the walk ends; None when all text is valid. A bad key
    is named by where it sits (its text is shown escaped, never as is).
    """
    stack: list[tuple[Any, str]] = [(value, "")]
    seen: set[int] = set()
    while stack:
        item, path = stack.pop()
        if isinstance(item, str):
            if not _is_utf8(item):
                return path
            continue
        if isinstance(item, BaseModel):
            item = dict(item.__dict__)
        if isinstance(item, (dict, list, tuple, set, frozenset)):
            if id(item) in seen:  # a structure that contains itself
                continue
            seen.add(id(item))
        if isinstance(item, dict):
            for key, child in reversed(list(item.items())):
                name = key if isinstance(key, str) else str(key)
                if not _is_utf8(name):
                    return f"{path}.{shown(name)}" if path else shown(name)
                stack.append((child, f"{path}.{name}" if path else name))
        elif isinstance(item, (list, tuple, set, frozenset)):
            for n, child in reversed(list(enumerate(item))):
                stack.append((child, f"{path}[{n}]"))
    return None


def shown(text: str, limit: int = 40) -> str:
    """``text`` as an error message may quote it: unpaired surrogates escaped, cut to ``limit`` characters."""
    safe = text.encode("utf-8", "backslashreplace").decode("utf-8")
    return safe if len(safe) <= limit else safe[: limit - 3] + "..."


def _is_utf8(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def json_size(value: Any, field: str) -> int:
    """``value``'s size as UTF-8 JSON, or InvalidInputError naming ``field`` if it cannot be JSON."""
    try:
        return len(json.dumps(value, ensure_ascii=False, default=str).encode("utf-8"))
    except UnicodeEncodeError:
        raise InvalidInputError(field, "is not valid UTF-8 text: it contains unpaired surrogates") from None
    except (TypeError, ValueError, RecursionError) as exc:  # circular references; NaN is fine in JSON dumps
        raise InvalidInputError(field, f"cannot be stored as JSON ({exc})") from None


def _depth(value: Any, level: int = 0) -> int:
    if level > MAX_METADATA_DEPTH:  # deep enough to refuse; stop before Python's recursion limit
        return level
    if isinstance(value, dict):
        return max((_depth(v, level + 1) for v in value.values()), default=level + 1)
    if isinstance(value, (list, tuple)):
        return max((_depth(v, level + 1) for v in value), default=level + 1)
    return level


# -- the checks as pydantic field types ----------------------------------------------------------


def refusal(message: str) -> PydanticCustomError:
    """A pydantic error whose message is ``message`` as written (no "Value error, " before it)."""
    return PydanticCustomError("invalid_input", "{reason}", {"reason": message})


def _bounded(check: Callable[[Any, str, InputLimits | None], None]) -> AfterValidator:
    """``check`` as a pydantic validator: the validation's configured limits, else the structural ones."""

    def validate(value: Any, info: ValidationInfo) -> Any:
        if value is None:  # an optional field left out (the tool parameters make fields optional)
            return value
        try:
            check(value, info.field_name or "value", configured_limits(info))
        except InvalidInputError as exc:
            position = exc.field.removeprefix(info.field_name or "value")
            raise refusal(f"{position} {exc.message}".lstrip() if position else exc.message) from None
        return value

    return AfterValidator(validate)


Identifier = Annotated[str, _bounded(check_id)]
"""A session, agent, request or memory id: valid UTF-8, at most ``max_id_chars`` (HINDSIGHT_MAX_ID_CHARS)."""

Metadata = Annotated[dict[str, Any], _bounded(check_metadata)]
"""A memory's metadata: ``MAX_METADATA_KEYS`` keys, ``MAX_METADATA_DEPTH`` levels, ``max_metadata_bytes``."""

AnyOf = Annotated[dict[Literal["$in"], Annotated[list[str], Field(min_length=1)]], Field(min_length=1)]
"""``{"$in": [texts]}``: a metadata value equal to any one of these (one recall over many items by their key)."""

NotEqual = Annotated[dict[Literal["$ne"], str | int | float | bool], Field(min_length=1)]
"""``{"$ne": value}``: a metadata value other than this one, or no such key at all (Chroma's ``$ne``).

What finds the memories a writer did not mark: the LangGraph store lists those of its items it
wrote before it kept their fields as keys (``langchain/store_fields.py``).
"""

_VALUE_SHAPES = 'a text, a number, a boolean, {"$in": [texts]} (one or more texts) or {"$ne": a value}'


def _any_of_shape(metadata: Any) -> Any:
    """Refuse an object value other than ``{"$in": [texts]}`` or ``{"$ne": value}`` saying what a value may be."""
    for key, value in metadata.items() if isinstance(metadata, dict) else ():
        if not isinstance(value, dict):
            continue
        ((op, operand),) = value.items() if len(value) == 1 else ((None, None),)
        any_of = op == "$in" and isinstance(operand, list) and operand and all(isinstance(o, str) for o in operand)
        not_equal = op == "$ne" and isinstance(operand, (str, int, float))  # a boolean is an int
        if not (any_of or not_equal):
            raise refusal(
                f"{shown(str(key))!r}: a value is {_VALUE_SHAPES}, got {shown(json.dumps(value, default=str))}"
            )
    return metadata


FilterMetadata = Annotated[
    dict[str, str | int | float | bool | AnyOf | NotEqual],
    BeforeValidator(_any_of_shape),
    _bounded(check_filter_metadata),
]
"""A filter's metadata: at most ``MAX_METADATA_KEYS`` keys, each compiled to one Chroma ``where`` clause."""

Entities = Annotated[list[str], _bounded(check_entities)]
"""Names a memory is about: at most ``max_entities`` (HINDSIGHT_MAX_ENTITIES) of ``MAX_ENTITY_CHARS`` each."""


__all__ = [
    "INT64_RANGE",
    "LIMITS_CONTEXT_KEY",
    "MAX_CANDIDATES",
    "MAX_ENTITY_CHARS",
    "MAX_MEMORY_ID_CHARS",
    "MAX_METADATA_DEPTH",
    "MAX_METADATA_KEYS",
    "MAX_OFFSET",
    "MAX_PAGE",
    "MAX_TOKENS",
    "RESERVED_METADATA_PREFIX",
    "AnyOf",
    "Entities",
    "FilterMetadata",
    "Identifier",
    "InputLimits",
    "Metadata",
    "NotEqual",
    "check_entities",
    "check_filter_metadata",
    "check_id",
    "check_int64",
    "check_memory_id",
    "check_metadata",
    "check_text",
    "configured_limits",
    "invalid_text_at",
    "json_size",
    "refusal",
    "shown",
]
