"""The text each memory is indexed under, for both BM25 and embeddings.

Memories are indexed *time-aware*: "On 8 May 2023, <content>", so questions that name a
date or period match; the memory's own vector carries the date too when a context vector reads
it undated (``vector_text``). A memory's
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


def vector_text(fields: dict[str, Any], *, time_aware: bool = True, framed: bool | None = None) -> str:
    """The text of a memory's own vector: its body, dated only when a context vector reads it undated.

    A date prefix costs a short memory half its similarity to a paraphrase ("how should answers
    look?" against "I prefer concise answers": cosine 0.48 undated, 0.20-0.28 with the day's date,
    below the relevance floor on some days). A memory with a context keeps the date in its own
    vector, since its context vector (``framed_text``) is the undated reading; one without a context
    has only this vector, so it is undated, and its date is matched lexically (BM25 indexes the
    dated ``body_text``). ``framed`` says whether the memory will have a context vector, for a
    record whose context is not set yet (a turn embedded before its memory is made).
    """
    has_frame = bool(context_text(fields)) if framed is None else framed
    return body_text(fields, time_aware=time_aware and has_frame)


def context_text(fields: dict[str, Any]) -> str:
    """The memory's context, BM25's second (down-weighted) field; empty when it has none."""
    return fields.get("context") or ""


FRAME_CONTEXT_CHARS = 200


def framed_text(fields: dict[str, Any]) -> str | None:
    """The text of the context vector: the memory after the end of its context. None without context.

    Only the last ``FRAME_CONTEXT_CHARS`` of the context (from a word start) and the memory
    without its date: the memory's own vector carries the date, and what frames a reply is what
    was said just before it. On LoCoMo this framing finds as much evidence as the whole two
    preceding turns with the date (0.788 against 0.779 recall@10 on the default path; 150 and 250
    characters gave 0.783 and 0.774) in ~80 word pieces instead of ~110: the framed text is most
    of what embedding a conversation turn costs.
    """
    context = context_text(fields)
    if not context:
        return None
    if len(context) > FRAME_CONTEXT_CHARS:
        tail = context[-FRAME_CONTEXT_CHARS:]
        space = tail.find(" ")
        context = tail[space + 1 :] if 0 <= space < len(tail) - 1 else tail
    return f"{context}\n{body_text(fields, time_aware=False)}"
