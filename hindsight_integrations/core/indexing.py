"""The text each memory is indexed under, for both BM25 and embeddings.

Memories are indexed *time-aware*: "On 8 May 2023, <content>", so questions that name a
date or period match, and the embedding knows when something was said. A memory's
``context`` (e.g. the turns around a conversation turn) is indexed separately: as a
second, down-weighted BM25 field and as a second "window" embedding, so it helps the
memory match without being returned as its content.
"""

from __future__ import annotations

import json
from datetime import datetime, timezone
from typing import Any


def date_words(moment: datetime) -> str:
    return f"{moment.day} {moment.strftime('%B')} {moment.year}"


def body_text(document: str | None, meta: dict[str, Any], *, time_aware: bool = True) -> str:
    parts = []
    occurred = meta.get("occurred_at")
    text = document or ""
    if time_aware and occurred:
        text = f"On {date_words(datetime.fromtimestamp(float(occurred), tz=timezone.utc))}, {text}"
    parts.append(text)
    if meta.get("summary"):
        parts.append(meta["summary"])
    entities = meta.get("entities_json")
    if entities and entities != "[]":
        parts.append(" ".join(json.loads(entities)))
    return " ".join(parts)


def context_text(meta: dict[str, Any]) -> str:
    return meta.get("context") or ""


def window_text(document: str | None, meta: dict[str, Any], *, time_aware: bool = True) -> str | None:
    """The text of the second embedding: the memory inside its context. None without context."""
    context = context_text(meta)
    if not context:
        return None
    return f"{context}\n{body_text(document, meta, time_aware=time_aware)}"
