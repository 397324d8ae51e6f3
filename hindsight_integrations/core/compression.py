"""Summaries of compressed turn groups (working → episodic, SPEC §3).

Offline the summary is extractive: the sentences the write filter would keep, most
important first, capped at ~80 words, each tagged with who said it. With an LLM
configured the engine asks it instead and falls back to this on any failure.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from .records import MemoryRecord, Role
from .write_filter import assess

_SENTENCE = re.compile(r"(?<=[.!?。！？])\s+")


def transcript(turns: Sequence[MemoryRecord]) -> str:
    return "\n".join(f"{t.role.value}: {t.content.strip()}" for t in turns)


def extractive_summary(turns: Sequence[MemoryRecord], max_words: int = 80) -> str:
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
    for importance, order, sentence in sorted(scored, key=lambda s: (-s[0], s[1])):
        n = len(sentence.split())
        if chosen and words + n > max_words:
            continue
        chosen.append((order, sentence))
        words += n
    return " ".join(sentence for _, sentence in sorted(chosen))
