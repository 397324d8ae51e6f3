"""Compression of a session's working window into episodic summaries (working → episodic).

When a session's live turns pass the threshold (``compress_ratio`` × ``context_window_tokens``
by default), the oldest group of turns (``compress_group_turns``) is summarised into one
episodic memory, the raw turns are archived with a link to it (``metadata.summary_id``, and
the summary's ``source.message_ids`` lists them), and so on until the window fits; the two
newest turns always stay live.

Offline the summary is extractive: the sentences the write filter would keep, most
important first, capped at ~80 words, each tagged with who said it. With an LLM
configured the summary is the LLM's, falling back to the extractive one on any failure.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence

from .errors import LLMError
from .namespace_store import NamespaceStore
from .parts import EngineParts
from .records import Kind, MemoryRecord, Role, Source, Status, Tier, utcnow
from .results import CompressionResult
from .write_filter import assess

log = logging.getLogger("hindsight.compression")

_SENTENCE = re.compile(r"(?<=[.!?。！？])\s+")


def transcript(turns: Sequence[MemoryRecord]) -> str:
    """Turns as ``role: text`` lines: what an LLM is shown to summarise or extract from."""
    return "\n".join(f"{t.role.value}: {t.content.strip()}" for t in turns)


def extractive_summary(turns: Sequence[MemoryRecord], max_words: int = 80) -> str:
    """The offline summary: the turns' memorable sentences, most important first, within ``max_words``."""
    scored: list[tuple[float, int, str]] = []
    for order, turn in enumerate(turns):
        for sentence in _SENTENCE.split(turn.content.strip()):
            sentence = sentence.strip()
            if not sentence:
                continue
            decision = assess(sentence, turn.role)
            if decision.remember:
                scored.append((decision.importance, order, f"{turn.role.value}: {sentence}"))
    if not scored:
        scored = [
            (0.1, order, f"{t.role.value}: {_SENTENCE.split(t.content.strip())[0]}")
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
    """Folds the oldest turn groups of a session into episodic summaries until the window fits."""

    def __init__(self, parts: EngineParts) -> None:
        self._parts = parts

    def compress(
        self, handle: NamespaceStore, window: list[MemoryRecord], *, session_id: str, threshold: int, force: bool
    ) -> CompressionResult | None:
        """Compress ``window`` (the session's live turns, oldest first); None when it already fits.

        Runs under the namespace's write lock; the caller read ``window`` under it too.
        """
        before = sum(t.token_count for t in window)
        if not window or (before <= threshold and not force):
            return None
        group_size = self._parts.settings.compress_group_turns
        summaries: list[MemoryRecord] = []
        archived: list[str] = []
        total = before
        while window and (total > threshold or (force and not summaries)):
            keep_live = 2 if len(window) > 2 else 0
            group = window[: max(1, min(group_size, len(window) - keep_live))]
            window = window[len(group) :]
            summary = self._summary_record(handle.name, session_id, group)
            handle.add([summary], self._parts.embed_records([summary])[0])
            handle.update(
                [
                    t.model_copy(
                        update={
                            "status": Status.ARCHIVED,
                            "updated_at": summary.created_at,
                            "metadata": {**t.metadata, "summary_id": summary.id},
                        }
                    )
                    for t in group
                ]
            )
            summaries.append(summary)
            archived.extend(t.id for t in group)
            total -= sum(t.token_count for t in group)
            if keep_live == 0:
                break
        return CompressionResult(summaries=summaries, archived_ids=archived, tokens_before=before, tokens_after=total)

    def _summary_record(self, namespace: str, session_id: str, group: list[MemoryRecord]) -> MemoryRecord:
        return self._parts.new_record(
            namespace,
            self.summarize(group),
            now=utcnow(),
            session_id=session_id,
            tier=Tier.EPISODIC,
            kind=Kind.SUMMARY,
            role=Role.SYSTEM,
            importance=max(0.5, max(t.importance for t in group)),
            occurred_at=group[-1].occurred_at,
            valid_from=group[0].occurred_at,
            source=Source(session_id=session_id, message_ids=[t.id for t in group], origin="compression"),
        )

    def summarize(self, turns: Sequence[MemoryRecord]) -> str:
        """The LLM's summary of ``turns`` when one is configured, else (or when it fails) the extractive one."""
        llm = self._parts.llm
        if llm is not None:
            try:
                return llm.summarize(transcript(turns))
            except LLMError as exc:
                log.warning("LLM summary failed, using the extractive one: %s", exc)
        return extractive_summary(turns) or transcript(turns)[:400]


__all__ = ["Compressor", "extractive_summary", "transcript"]
