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
from collections.abc import Callable, Mapping, Sequence
from datetime import date
from functools import cached_property

from ..language.rules import every
from ..language.text import query_terms, sentences
from ..language.tokens import EstimatingCounter, TokenCounter, cjk_chars, estimate_from_counts
from ..model.records import MemoryRecord, Status

CONTEXT_HEADER = "### Quoted memories from earlier conversations (oldest first)"  # quoted: see ``quoted``
CONTEXT_FOOTER = "### End of memories. The current conversation follows."
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
_DISPLAY_CONTROL_SET = frozenset(_DISPLAY_CONTROLS)  # most texts have none: tested for before translating


def quoted(text: str) -> str:
    """``text`` as one double-quoted line (JSON string escapes), whatever it holds.

    Memory text comes from users, tools and web pages. Quoted, it can never start a line of its
    own: no fake end marker, no column-0 "System:" line, no fake dated memory; and line breaks
    JSON leaves as they are, bidirectional and other display controls are escaped too
    (``\\u202e``), so no memory can visually reorder the block it is shown in.
    """
    dumped = json.dumps(text.strip(), ensure_ascii=False)
    if dumped.isascii() and "\x7f" not in dumped:  # DEL is the one ASCII display control; isascii reads a flag
        return dumped
    return dumped if _DISPLAY_CONTROL_SET.isdisjoint(dumped) else dumped.translate(DISPLAY_CONTROL_ESCAPES)


def memory_line(record: MemoryRecord, content: str | None = None, *, changed_on: date | None = None) -> str:
    """One dated line of the context block (``content`` replaces the record's, e.g. trimmed).

    ``changed_on``: a later memory in the block announces a change of this one (``currency.py``).
    """
    before, after = _around(record, changed_on)
    return before + quoted(content if content is not None else record.content) + after


def _around(record: MemoryRecord, changed_on: date | None) -> tuple[str, str]:
    """What a memory's line says before and after its quoted text: its date, and whether it still holds."""
    before = f"- ({record.occurred_at.date().isoformat()}) "
    if record.status is Status.SUPERSEDED:
        return before, f" [superseded on {record.valid_until.date().isoformat() if record.valid_until else 'later'}]"
    if changed_on is not None:
        return before, f" [earlier: changed on {changed_on.isoformat()}]"
    return before, ""


def trim_to_query(text: str, max_chars: int, terms: Sequence[str]) -> str:
    """Keep the sentences sharing most words with the query (in their order) within ``max_chars``."""
    return _Trimmable(text, terms).within(max_chars)


class _Trimmable:
    """A memory's text split into sentences and ranked against the query once, then cut to any length.

    ``pack_within_budget`` tries many lengths; splitting and ranking at every try cost the
    square of the text. Without a sentence that fits, the text is cut by length (a 32 KB
    memory without a sentence break becomes its first ``max_chars`` characters).
    """

    def __init__(self, text: str, terms: Sequence[str]) -> None:
        self.text = text
        self._terms = terms

    @cached_property
    def _ranked(self) -> tuple[list[str], list[int]]:
        """The sentences, and their positions best match first: read once, and only for a text cut."""
        found = [s for s in sentences(self.text) if s]
        prefixes = {t[:5] for t in self._terms}
        words = every().pattern("text.word_run")
        assert words is not None  # common's
        matches = [sum(w[:5] in prefixes for w in words.findall(s.lower())) for s in found]
        return found, sorted(range(len(found)), key=lambda i: (-matches[i], i))

    def within(self, max_chars: int) -> str:
        """The best-matching sentences (in their order) within ``max_chars``, else the text cut by length."""
        if len(self.text) <= max_chars:
            return self.text
        found, ranked = self._ranked
        keep: list[int] = []
        used = 0
        for i in ranked:
            if used + len(found[i]) + 1 <= max_chars - 2:
                keep.append(i)
                used += len(found[i]) + 1
        if not keep:
            cut = self.text[: max(1, max_chars - 2)]
            return (cut.rsplit(" ", 1)[0] if " " in cut else cut) + " …"
        return " ".join(found[i] for i in sorted(keep)) + " …"


def pack_within_budget(
    records: Sequence[MemoryRecord],
    budget: int | None,
    *,
    query: str = "",
    counter: TokenCounter | None = None,
    keep_whole: int = 3,
    min_chars: int = 60,
    changed: Mapping[str, date] | None = None,
) -> list[tuple[MemoryRecord, str]]:
    """Fit records (best first) into ``budget`` tokens: whole, then trimmed, then dropped from the end.

    Trimmed means: the top ``keep_whole`` whole and the rest cut to one shared length cap (then
    all of them), the highest cap on a 10-character grid that fits, found by binary search
    (the cost grows with the cap), so a recall costs a few passes over the text it packs.
    """
    items = [(r, r.content.strip()) for r in records]
    if budget is None:
        return items

    cost = _Lines(changed, counter).tokens
    terms = query_terms(query)
    texts: list[_Trimmable] | None = None  # split into sentences only when something must be trimmed
    while items:
        if cost(items) <= budget:
            return items
        if texts is None:
            texts = [_Trimmable(c, terms) for _, c in items]
        for whole in (min(keep_whole, len(items) - 1), 0):
            if (
                packed := _trimmed_to_fit(items, texts, whole, lambda chosen: cost(chosen) <= budget, min_chars)
            ) is not None:
                return packed
        items, texts = items[:-1], texts[:-1]
    return []


def _trimmed_to_fit(
    items: Sequence[tuple[MemoryRecord, str]],
    texts: Sequence[_Trimmable],
    whole: int,
    fits: Callable[[list[tuple[MemoryRecord, str]]], bool],
    min_chars: int,
) -> list[tuple[MemoryRecord, str]] | None:
    """``items``, all but the first ``whole`` cut to the highest cap that fits (10-character steps from the longest)."""
    top = max(len(c) for _, c in items[whole:])

    def trimmed(step: int) -> list[tuple[MemoryRecord, str]]:
        cap = top - 10 * step
        return [*items[:whole], *((r, text.within(cap)) for (r, _), text in zip(items[whole:], texts[whole:]))]

    steps = (top - min_chars) // 10 + 1 if top >= min_chars else 0
    step = _first_fitting(steps, lambda k: fits(trimmed(k)))
    return None if step is None else trimmed(step)


def _first_fitting(steps: int, fits: Callable[[int], bool]) -> int | None:
    """The smallest ``k < steps`` with ``fits(k)``, for ``fits`` false up to some k and true after; None if none."""
    if steps <= 0 or not fits(steps - 1):
        return None
    low, high = 0, steps - 1  # fits(high) holds
    while low < high:
        middle = (low + high) // 2
        if fits(middle):
            high = middle
        else:
            low = middle + 1
    return low


def format_context(
    items: Sequence[MemoryRecord | tuple[MemoryRecord, str]], changed: Mapping[str, date] | None = None
) -> str:
    """The injected block: chronological, dated, fenced. Empty string when nothing was recalled.

    ``changed``: memories a later one in the block changes, by id, with that one's date.
    """
    return _Lines(changed).block([item if isinstance(item, tuple) else (item, item.content) for item in items])


class _Lines:
    """The context block's lines, each quoted once: the budget search formats the same lines many times.

    With the default estimate (``counter`` None or an ``EstimatingCounter``) a block's tokens
    are summed from its lines' sizes, so the search never joins a block to count it; a line's
    size is its quoted text's plus what its record puts around it, so no line is built either.
    """

    def __init__(self, changed: Mapping[str, date] | None, counter: TokenCounter | None = None) -> None:
        self._changed = changed or {}
        self._quoted: dict[tuple[str, str], str] = {}
        self._sizes: dict[str, tuple[int, int]] = {}  # a quoted text's characters and CJK characters, by text
        self._around: dict[str, tuple[int, int]] = {}  # the same for what a record's line puts around its text
        self._count = None if counter is None or isinstance(counter, EstimatingCounter) else counter.count
        frame = CONTEXT_HEADER + CONTEXT_FOOTER  # and a line break after each line but the last
        self._frame = (len(frame) + 1, cjk_chars(frame)) if self._count is None else (0, 0)

    def tokens(self, pairs: Sequence[tuple[MemoryRecord, str]]) -> int:
        """What ``block(pairs)`` costs in tokens."""
        if self._count is not None:
            return self._count(self.block(pairs))
        if not pairs:
            return 0
        chars, cjk = self._frame[0] + len(pairs), self._frame[1]
        for record, content in pairs:
            size = self._sizes.get(content)
            if size is None:
                text = quoted(content)
                size = self._sizes[content] = (len(text), cjk_chars(text))
            around = self._around.get(record.id)
            if around is None:
                parts = "".join(_around(record, self._changed.get(record.id)))
                around = self._around[record.id] = (len(parts), cjk_chars(parts))
            chars, cjk = chars + size[0] + around[0], cjk + size[1] + around[1]
        return estimate_from_counts(chars, cjk)

    def block(self, pairs: Sequence[tuple[MemoryRecord, str]]) -> str:
        if not pairs:
            return ""
        ordered = sorted(pairs, key=lambda p: p[0].occurred_at)
        return "\n".join([CONTEXT_HEADER, *(self._line(r, c) for r, c in ordered), CONTEXT_FOOTER])

    def _line(self, record: MemoryRecord, content: str) -> str:
        key = (record.id, content)
        line = self._quoted.get(key)
        if line is None:
            line = self._quoted[key] = memory_line(record, content, changed_on=self._changed.get(record.id))
        return line
