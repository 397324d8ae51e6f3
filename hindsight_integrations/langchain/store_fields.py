"""A LangGraph item's text fields as metadata keys, so a filtered search lists only the items that can match.

A search ``filter`` is on the item's value, which metadata holds as one object (``lg_value``) that
no recall or listing filter can look into; a filtered search whose first recall did not find
enough listed every item under the prefix to apply it (~0.1-0.25 s per 500 items). So an item
keeps each top-level text field as a key of its own too (``lg_f.<field>``), and says whether it
kept them all (``lg_fields``: true, else false). The listing then asks for two sets:

* the items that kept their fields (``lg_fields`` true) and whose fields match the filter's
  text conditions (a text, ``{"$eq": text}`` or ``{"$in": [texts]}``), and
* every item that did not (``lg_fields`` ``{"$ne": true}``): one put before the fields were kept,
  or one whose fields would not fit (``field_keys``' bounds, or the server's metadata limit).

Together they hold every item the filter can keep, and the filter is still applied to their
values, so a search returns what listing every item returned. A condition on a number or a
boolean is not asked of the server (Python's ``1 == True`` is LangGraph's semantics, not
Chroma's), nor one on a nested field; a filter with only such conditions lists every item, as
before. A server that predates ``$ne`` refuses the filter, and the search lists every item.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

FIELDS_KEY = "lg_fields"
"""True when an item kept every top-level text field of its value as a key (``FIELD_PREFIX`` + name)."""
FIELD_PREFIX = "lg_f."
_MAX_NAME_CHARS = 64
_MAX_TEXT_BYTES = 256
_MAX_FIELDS_BYTES = 2048  # of all of an item's field keys: a value near the metadata limit stays storable


def field_keys(value: Mapping[str, Any], room: int) -> dict[str, Any]:
    """The metadata keys of ``value``'s top-level text fields, at most ``room`` of them, and ``FIELDS_KEY``.

    All or none: an item whose text fields do not all fit the bounds keeps none, and says so
    (``FIELDS_KEY`` false), so that every search lists it.
    """
    texts = {name: text for name, text in value.items() if isinstance(text, str)}
    size = sum(len(name.encode()) + len(text.encode()) for name, text in texts.items())
    fits = (
        len(texts) < room
        and size <= _MAX_FIELDS_BYTES
        and all(len(name) <= _MAX_NAME_CHARS and len(text.encode()) <= _MAX_TEXT_BYTES for name, text in texts.items())
    )
    if not fits:
        return {FIELDS_KEY: False}
    return {FIELDS_KEY: True, **{FIELD_PREFIX + name: text for name, text in texts.items()}}


def narrowed_listings(metadata: Mapping[str, Any], search_filter: Mapping[str, Any] | None) -> list[dict[str, Any]]:
    """The listing filters' metadata that together hold every item ``search_filter`` can keep; [] for every item.

    ``metadata`` is the listing's own (the store's mark, the prefix, whether indexed).
    """
    conditions: dict[str, Any] = {}
    for name, expected in (search_filter or {}).items():
        wanted = _texts(expected)
        if wanted is not None and len(name) <= _MAX_NAME_CHARS:
            conditions[FIELD_PREFIX + name] = wanted[0] if len(wanted) == 1 else {"$in": wanted}
    if not conditions:
        return []
    return [{**metadata, FIELDS_KEY: True, **conditions}, {**metadata, FIELDS_KEY: {"$ne": True}}]


def _texts(expected: Any) -> list[str] | None:
    """The texts a filter condition allows a field to be, when it allows only texts; None otherwise."""
    if isinstance(expected, str):
        return [expected]
    if isinstance(expected, Mapping) and len(expected) == 1:
        ((op, operand),) = expected.items()
        if op == "$eq" and isinstance(operand, str):
            return [operand]
        if op == "$in" and isinstance(operand, (list, tuple)) and operand and all(isinstance(o, str) for o in operand):
            return list(dict.fromkeys(operand))
    return None


__all__ = ["FIELDS_KEY", "FIELD_PREFIX", "field_keys", "narrowed_listings"]
