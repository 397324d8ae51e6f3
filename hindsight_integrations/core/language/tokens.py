"""Token counting.

Thresholds (working-memory compression, context budgets) only need an estimate: the
chars/3.5 for Latin text and chars/1.8 for CJK is within ~10 %, costs nothing, and needs no
model files. Where exact counts matter, ``TiktokenCounter`` uses a real BPE tokenizer.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Protocol

from .rules import every


class TokenCounter(Protocol):
    """Anything that counts tokens: thresholds and budgets only need this one call."""

    def count(self, text: str) -> int:
        """How many tokens ``text`` takes."""
        ...


def estimate_tokens(text: str) -> int:
    """Cheap token estimate: CJK characters at 1.8 chars/token, the rest at 3.5."""
    if not text:
        return 0
    cjk_char = every().pattern("text.cjk_char")
    cjk = len(cjk_char.findall(text)) if cjk_char else 0
    other = len(text) - cjk
    return max(1, round(cjk / 1.8 + other / 3.5))


class EstimatingCounter:
    """The default counter: ``estimate_tokens``."""

    def count(self, text: str) -> int:
        """See ``estimate_tokens``."""
        return estimate_tokens(text)


class TiktokenCounter:
    """Exact counts with tiktoken (the encoding files must be cached locally)."""

    def __init__(self, encoding: str = "cl100k_base") -> None:
        import tiktoken

        self._encoding = tiktoken.get_encoding(encoding)

    def count(self, text: str) -> int:
        """The exact count (special-token text is counted as ordinary text, never refused)."""
        return len(self._encoding.encode(text, disallowed_special=()))


@lru_cache(maxsize=4)
def counter_for(name: str) -> TokenCounter:
    """``"estimate"`` or a tiktoken encoding name such as ``"cl100k_base"``."""
    if name == "estimate":
        return EstimatingCounter()
    return TiktokenCounter(name)
