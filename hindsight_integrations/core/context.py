"""Context assembly: the block of memories injected before a model call (docs/architecture.md, "Recall").

Memories are taken in score order until the token budget is spent, then put in
chronological order, one dated line each, between clear markers so the model can tell
remembered facts from the live conversation. When the best memories do not fit whole,
the top few stay whole and the rest are trimmed to their sentences that match the query
(one shared length cap, as high as the budget allows) before any is dropped: ten short
relevant lines beat five long ones.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence

from .records import MemoryRecord, Status
from .text import query_terms
from .tokens import TokenCounter, estimate_tokens

CONTEXT_HEADER = "### Quoted memories from earlier conversations (oldest first)"  # quoted: see ``quoted``
CONTEXT_FOOTER = "### End of memories. The current conversation follows."
_SENTENCE = re.compile(r"(?<=[.!?。！？])\s+")
_LINE_BREAKS = ("\u0085", "\u2028", "\u2029")  # str.splitlines breaks on these; json.dumps keeps them
# Characters json.dumps keeps that change how the text around them is *displayed*: the
# bidirectional controls (Unicode's Bidi_Control: embeddings, overrides, isolates, marks), the
# deprecated format controls of U+206A-U+206F, and DEL and the C1 controls (U+009B is a
# terminal's CSI). A U+202E in a memory would display the rest of its line, closing quote and
# marker included, right to left. Escaped like the line breaks, they are visible and inert.
_DISPLAY_CONTROLS = "".join(
    [
        *_LINE_BREAKS,
        "\u061c",
        "\u200e",
        "\u200f",
        *map(chr, range(0x202A, 0x202F)),
        *map(chr, range(0x2066, 0x2070)),
        *map(chr, range(0x7F, 0xA0)),
    ]
)
DISPLAY_CONTROL_ESCAPES = str.maketrans({c: f"\\u{ord(c):04x}" for c in _DISPLAY_CONTROLS})
"""A ``str.translate`` table writing those characters as ``\\uXXXX`` (the viewer's HTML uses it too)."""


def quoted(text: str) -> str:
    """``text`` as one double-quoted line (JSON string escapes), whatever it holds.

    Memory text comes from users, tools and web pages. Quoted, it can never start a line of its
    own: no fake end marker, no column-0 "System:" line, no fake dated memory; and line breaks
    JSON leaves as they are, bidirectional and other display controls are escaped too
    (``\\u202e``), so no memory can visually reorder the block it is shown in.
    """
    return json.dumps(text.strip(), ensure_ascii=False).translate(DISPLAY_CONTROL_ESCAPES)


def memory_line(record: MemoryRecord, content: str | None = None) -> str:
    """One dated line of the context block (``content`` replaces the record's, e.g. trimmed)."""
    line = f"- ({record.occurred_at.date().isoformat()}) {quoted(content if content is not None else record.content)}"
    if record.status is Status.SUPERSEDED:
        until = record.valid_until.date().isoformat() if record.valid_until else "later"
        line += f" [superseded on {until}]"
    return line


def trim_to_query(text: str, max_chars: int, terms: Sequence[str]) -> str:
    """Keep the sentences sharing most words with the query (in their order) within ``max_chars``."""
    if len(text) <= max_chars:
        return text
    sentences = [s for s in _SENTENCE.split(text) if s]
    prefixes = {t[:5] for t in terms}
    ranked = sorted(
        range(len(sentences)),
        key=lambda i: (-sum(w[:5] in prefixes for w in re.findall(r"\w+", sentences[i].lower())), i),
    )
    keep: list[int] = []
    used = 0
    for i in ranked:
        if used + len(sentences[i]) + 1 <= max_chars - 2:
            keep.append(i)
            used += len(sentences[i]) + 1
    if not keep:
        cut = text[: max(1, max_chars - 2)]
        return (cut.rsplit(" ", 1)[0] if " " in cut else cut) + " …"
    return " ".join(sentences[i] for i in sorted(keep)) + " …"


def pack_within_budget(
    records: Sequence[MemoryRecord],
    budget: int | None,
    *,
    query: str = "",
    counter: TokenCounter | None = None,
    keep_whole: int = 3,
    min_chars: int = 60,
) -> list[tuple[MemoryRecord, str]]:
    """Fit records (best first) into ``budget`` tokens: whole, then trimmed, then dropped from the end."""
    count = counter.count if counter else estimate_tokens
    items = [(r, r.content.strip()) for r in records]
    if budget is None:
        return items

    def cost(chosen: Sequence[tuple[MemoryRecord, str]]) -> int:
        return count(format_context(chosen))

    terms = query_terms(query)
    while items:
        if cost(items) <= budget:
            return items
        for whole in (min(keep_whole, len(items) - 1), 0):
            cap = max(len(c) for _, c in items[whole:])
            while cap >= min_chars:
                trimmed = items[:whole] + [(r, trim_to_query(c, cap, terms)) for r, c in items[whole:]]
                if cost(trimmed) <= budget:
                    return trimmed
                cap -= 10
        items = items[:-1]
    return []


def format_context(items: Sequence[MemoryRecord | tuple[MemoryRecord, str]]) -> str:
    """The injected block: chronological, dated, fenced. Empty string when nothing was recalled."""
    if not items:
        return ""
    pairs = [item if isinstance(item, tuple) else (item, item.content) for item in items]
    ordered = sorted(pairs, key=lambda p: p[0].occurred_at)
    return "\n".join([CONTEXT_HEADER, *(memory_line(r, c) for r, c in ordered), CONTEXT_FOOTER])
