"""The text each memory is indexed under, for both BM25 and embeddings.

Memories are indexed *time-aware*: "On 8 May 2023, <content>", so questions that name a
date or period match, and the embedding knows when something was said. A memory's
``context`` (e.g. the turns around a conversation turn) is indexed separately: as a
second, down-weighted BM25 field and as a second embedding, the *context vector* of the memory
framed by its context (``framed_text``), so it helps the
memory match without being returned as its content.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any


def date_words(moment: datetime) -> str:
    """``8 May 2023``: how questions name dates, so BM25 and embeddings match them."""
    return f"{moment.day} {moment.strftime('%B')} {moment.year}"


def body_text(fields: dict[str, Any], *, time_aware: bool = True) -> str:
    """The main indexed text of a memory, from its flat view (``records.unpack``/``flat_fields``)."""
    parts = []
    occurred = fields.get("occurred_at")
    text = fields.get("content") or ""
    if time_aware and occurred:
        text = f"On {date_words(datetime.fromtimestamp(float(occurred), tz=UTC))}, {text}"
    parts.append(text)
    if fields.get("summary"):
        parts.append(fields["summary"])
    entities = fields.get("entities_json")
    if entities and entities != "[]":
        parts.append(" ".join(json.loads(entities)))
    return " ".join(parts)


def context_text(fields: dict[str, Any]) -> str:
    """The memory's context, BM25's second (down-weighted) field; empty when it has none."""
    return fields.get("context") or ""


def framed_text(fields: dict[str, Any], *, time_aware: bool = True) -> str | None:
    """The text of the context vector: the memory inside its context. None without context."""
    context = context_text(fields)
    if not context:
        return None
    return f"{context}\n{body_text(fields, time_aware=time_aware)}"
