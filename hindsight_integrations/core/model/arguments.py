"""Checks for the engine's keyword arguments, shared by its modules.

Callers reach the engine from Python, the CLI and MCP tools (where a model wrote the
arguments), so every check names the argument and what it accepts.
"""

from __future__ import annotations

import json
from enum import Enum
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from ..errors import InvalidInputError
from .limits import MAX_TOKENS

M = TypeVar("M", bound=BaseModel)
E = TypeVar("E", bound=Enum)


def coerce_model(
    model: type[M], value: M | dict[str, Any] | str | None, field: str, *, context: dict[str, Any] | None = None
) -> M:
    """``value`` as ``model``: None → the defaults, a dict (or its JSON text) → validated, errors naming ``field.sub``.

    An instance of ``model`` is validated again when the model says so (``revalidate_instances``),
    so it meets the same bounds as a dict; ``context`` is pydantic's validation context (the
    engine's ``InputLimits.context()``).
    """
    if value is None:
        return model()
    if isinstance(value, str):
        try:
            value = json.loads(value)  # models send objects as JSON strings
        except (json.JSONDecodeError, RecursionError):
            raise InvalidInputError(field, "must be an object, got str (not JSON)") from None
    if not isinstance(value, (dict, model)):
        raise InvalidInputError(field, f"must be an object, got {type(value).__name__}")
    try:
        return model.model_validate(value, context=context)
    except ValidationError as exc:
        err = exc.errors()[0]
        where = ".".join([field, *(str(p) for p in err["loc"])])
        raise InvalidInputError(where, error_message(err)) from None


def error_message(err: Any) -> str:
    """A pydantic error's message without the "Value error, " pydantic puts before a validator's own."""
    return str(err["msg"]).removeprefix("Value error, ")


def validation_problems(exc: ValidationError, prefix: str) -> list[str]:
    """One readable line per error of ``exc``: ``prefix.field: what is wrong (got ...)``.

    pydantic's own text spreads one error over three lines and adds a documentation URL,
    which tells a person at a terminal nothing they can act on.
    """
    problems = []
    for err in exc.errors():
        where = ".".join([prefix, *(str(p) for p in err["loc"])]) if prefix else ".".join(str(p) for p in err["loc"])
        if err["type"] == "missing":
            problems.append(f"{where}: is missing")
            continue
        got = repr(err.get("input"))
        got = got if len(got) <= 60 else got[:57] + "..."
        message = err["msg"].removeprefix("Value error, ")
        problems.append(f"{where}: {message[0].lower() + message[1:] if message else 'is invalid'} (got {got})")
    return problems


def coerce_enum(enum: type[E], value: Any, field: str, default: E | None = None) -> E:
    """``value`` as a member of ``enum`` (case-insensitive); ``default`` instead of an error if given."""
    if isinstance(value, enum):
        return value
    try:
        return enum(str(value).lower())
    except ValueError:
        if default is not None:
            return default
        allowed = ", ".join(str(e.value) for e in enum)
        raise InvalidInputError(field, f"{value!r} is not one of: {allowed}") from None


def whole_number(value: Any, field: str, *, low: int, high: int | None = None) -> int:
    """An int in [low, high] (bools refused: ``True`` is not a count)."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidInputError(field, f"must be a whole number, got {type(value).__name__}")
    if value < low or (high is not None and value > high):
        bounds = f"between {low} and {high}" if high is not None else f"at least {low}"
        raise InvalidInputError(field, f"must be {bounds}, got {value}")
    return value


def context_tokens(value: Any, field: str = "token_budget") -> int:
    """A budget of context tokens: a whole number from 1 to ``MAX_TOKENS``."""
    if isinstance(value, bool) or not isinstance(value, int) or not 0 < value <= MAX_TOKENS:
        raise InvalidInputError(field, f"must be a whole number of tokens between 1 and {MAX_TOKENS}")
    return value


def fraction(value: Any, field: str) -> float:
    """A number in [0, 1] (importance, scores)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= 1:
        raise InvalidInputError(field, "must be a number between 0 and 1")
    return float(value)


__all__ = [
    "coerce_enum",
    "coerce_model",
    "context_tokens",
    "error_message",
    "fraction",
    "validation_problems",
    "whole_number",
]
