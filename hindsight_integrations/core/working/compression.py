"""Compression of a session's working window into episodic summaries (working → episodic).

When a session's live turns pass the threshold (``compress_ratio`` × ``context_window_tokens``
by default), the oldest group of turns (``compress_group_turns``) is summarised into one
episodic memory, the raw turns are archived with a link to it (``metadata.summary_id``, and
the summary's ``source.message_ids`` lists them), and so on until the window is well under the
threshold (``compress_target`` of it); the two newest turns always stay live. A summary leaves
out the turns a long-term memory was already made from, and a group whose memories hold all
it said worth keeping is archived without one (each memory names its turn in
``source.message_ids``).

Offline the summary is extractive: the sentences the write filter would keep, most
important first, capped at ~80 words, each tagged with who said it. With an LLM
configured the summary is the LLM's, falling back to the extractive one on any failure.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from datetime import datetime

from ..errors import LLMError
from ..language.text import sentences
from ..model.records import Kind, MemoryRecord, Role, Source, Status, Tier, merged_turn_ids
from ..model.results import CompressionResult
from ..parts import EngineParts
from ..redaction import describe_error
from ..storage.namespace_store import NamespaceStore
from ..write.admission import assess

log = logging.getLogger("hindsight.compression")

SUMMARY_ID_KEY = "summary_id"  # a compressed turn's metadata: the summary that tells it


def transcript(turns: Sequence[MemoryRecord]) -> str:
    """Turns as ``role: text`` lines: what an LLM is shown to summarise or extract from."""
    return "\n".join(f"{t.role.value}: {t.content.strip()}" for t in turns)


def extractive_summary(turns: Sequence[MemoryRecord], max_words: int = 80, *, fallback: bool = True) -> str:
    """The offline summary: the turns' memorable sentences, most important first, within ``max_words``.

    Without a memorable sentence it falls back to the user turns' first sentences, unless
    ``fallback`` is False: then it is empty.
    """
    scored: list[tuple[float, int, str]] = []
    for order, turn in enumerate(turns):
        for sentence in sentences(turn.content.strip()):
            sentence = sentence.strip()
            if not sentence:
                continue
            decision = assess(sentence, turn.role)
            if decision.remember:
                scored.append((decision.importance, order, f"{turn.role.value}: {sentence}"))
    if not scored and fallback:
        scored = [
            (0.1, order, f"{t.role.value}: {sentences(t.content.strip())[0]}")
            for order, t in enumerate(turns)
            if t.role is Role.USER and t.content.strip()
        ]
    chosen: list[tuple[int, str]] = []
    words = 0
    for _importance, order, sentence in sorted(scored, key=lambda s: (-s[0], s[1])):
        n = len(sentence.split())
        if chosen and words + n > max_words:
            continue
        chosen.append((order, sentence))
        words += n
    return " ".join(sentence for _, sentence in sorted(chosen))


class Compressor:
    """Folds the oldest turn groups of a session into episodic summaries until the window is well under its threshold.

    Well under (``compress_target`` of the threshold, half by default), not just under: a
    window folded only until it fits passes the threshold again a few turns later, and a long
    conversation would then compress on nearly every turn.
    """

    def __init__(self, parts: EngineParts) -> None:
        self._parts = parts

    def compress(
        self, handle: NamespaceStore, window: list[MemoryRecord], *, session_id: str, threshold: int, force: bool
    ) -> CompressionResult | None:
        """Compress ``window`` (the session's live turns, oldest first); None when it already fits.

        Runs under the namespace's write lock; the caller read ``window`` under it too.
        """
        before = sum(t.token_count for t in window)
        groups = self.groups(window, threshold=threshold, force=force)
        if not groups:
            return None
        remembered = _remembered_turns(handle, session_id)
        summaries: list[MemoryRecord] = []
        archived: list[str] = []
        total = before
        for group in groups:
            now = self._parts.clock.now()
            summary = self._summary_record(handle.name, session_id, group, remembered, now)
            if summary is not None:
                handle.add([summary], self._parts.embed_records([summary])[0])
                summaries.append(summary)
            link = {SUMMARY_ID_KEY: summary.id} if summary is not None else {}
            handle.rewrite(
                [
                    t.model_copy(
                        update={"status": Status.ARCHIVED, "updated_at": now, "metadata": {**t.metadata, **link}}
                    )
                    for t in group
                ]
            )
            archived.extend(t.id for t in group)
            total -= sum(t.token_count for t in group)
        return CompressionResult(summaries=summaries, archived_ids=archived, tokens_before=before, tokens_after=total)

    def groups(self, window: list[MemoryRecord], *, threshold: int, force: bool) -> list[list[MemoryRecord]]:
        """The turn groups ``compress`` folds, oldest first; empty when the window fits (and not ``force``).

        Apart from the writes, so a dry run of upkeep reports exactly the turns a real one would fold.
        """
        total = sum(t.token_count for t in window)
        if not window or (total <= threshold and not force):
            return []
        group_size = self._parts.settings.compress_group_turns
        target = threshold * self._parts.settings.compress_target
        groups: list[list[MemoryRecord]] = []
        while window and ((len(window) > 2 and total > target) or (force and not groups)):
            keep_live = 2 if len(window) > 2 else 0
            group = window[: max(1, min(group_size, len(window) - keep_live))]
            window = window[len(group) :]
            groups.append(group)
            total -= sum(t.token_count for t in group)
            if keep_live == 0:
                break
        return groups

    def _summary_record(
        self, namespace: str, session_id: str, group: list[MemoryRecord], remembered: set[str], now: datetime
    ) -> MemoryRecord | None:
        """The episodic summary of ``group``, or None when its long-term memories already hold all of it."""
        told = told_turns(group, remembered)
        if told is None:
            return None  # the rest is small talk: the turns stay reachable through their memories
        turns, fallback = told
        content = self.summarize(turns, fallback=fallback)
        return self._parts.new_record(
            namespace,
            content,
            now=now,
            session_id=session_id,
            tier=Tier.EPISODIC,
            kind=Kind.SUMMARY,
            role=Role.SYSTEM,
            importance=max(0.5, max(t.importance for t in turns)),
            occurred_at=group[-1].occurred_at,
            valid_from=group[0].occurred_at,
            source=Source(session_id=session_id, message_ids=[t.id for t in group], origin="compression"),
        )

    def summarize(self, turns: Sequence[MemoryRecord], *, fallback: bool = True) -> str:
        """The LLM's summary of ``turns`` when one is configured, else (or when it fails) the extractive one."""
        llm = self._parts.llm
        if llm is not None:
            try:
                return llm.summarize(transcript(turns))
            except LLMError as exc:
                log.warning("LLM summary failed, using the extractive one: %s", describe_error(exc))
        return extractive_text(turns, fallback=fallback)


def told_turns(group: Sequence[MemoryRecord], remembered: set[str]) -> tuple[list[MemoryRecord], bool] | None:
    """The turns of ``group`` its summary tells, and whether it may fall back to first sentences; None: no summary.

    Turns a long-term memory was made from (``remembered``) are left out: that memory is recalled
    by itself and is superseded when corrected, where a copy in a summary would keep the old value.
    """
    rest = [t for t in group if t.id not in remembered]
    if len(rest) == len(group):
        return rest, True
    if any(assess(t.content, t.role).remember for t in rest):
        return rest, False
    return None


def extractive_text(turns: Sequence[MemoryRecord], *, fallback: bool = True) -> str:
    """The summary without an LLM: ``extractive_summary``, else the start of the transcript."""
    return extractive_summary(turns, fallback=fallback) or transcript(turns)[:400]


def _remembered_turns(handle: NamespaceStore, session_id: str) -> set[str]:
    """Ids of the session's turns a long-term memory was made from, or was reinforced by as a repeat."""
    where = {"$and": [{"session_id": session_id}, {"tier": {"$in": [Tier.EPISODIC.value, Tier.SEMANTIC.value]}}]}
    return remembered_turns(handle.find(where))


def remembered_turns(records: Sequence[MemoryRecord]) -> set[str]:
    """Ids of the turns the long-term memories among ``records`` were made from, or reinforced by as a repeat.

    Not those a summary tells: it is no memory made from a turn, but what is left of its turns.
    """
    turns: set[str] = set()
    for memory in records:
        if memory.tier in (Tier.EPISODIC, Tier.SEMANTIC) and memory.kind is not Kind.SUMMARY:
            turns.update(memory.source.message_ids)
            for merged in memory.sources:
                turns.update(merged_turn_ids(merged))
    return turns


__all__ = [
    "SUMMARY_ID_KEY",
    "Compressor",
    "extractive_summary",
    "extractive_text",
    "remembered_turns",
    "told_turns",
    "transcript",
]
