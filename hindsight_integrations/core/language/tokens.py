"""Token counting.

Thresholds (working-memory compression, context budgets) only need an estimate that costs
nothing, needs no model files and does not undercount: a budget that is overrun is a prompt
that overflows. Measured against OpenAI's BPE encodings (``benchmarks/token_estimate.py``): Latin
text runs at 4.4-4.6 characters per token, so chars/3.5 overcounts by ~25 %; a CJK ideograph is
0.87-0.95 of a token in o200k_base (GPT-4o and later) and 1.2-1.4 in cl100k_base, so one token
per ideograph overcounts the current encoding by 5-15 % (it was 1.8 ideographs per token, which
undercounted Chinese by 40-55 %). CJK punctuation counts as Latin. Where exact counts matter,
``TiktokenCounter`` uses a real BPE tokenizer.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Protocol

from .rules import every
from .tiktoken_files import ESTIMATE, offline_encoding


class TokenCounter(Protocol):
    """Anything that counts tokens: thresholds and budgets only need this one call."""

    def count(self, text: str) -> int:
        """How many tokens ``text`` takes."""
        ...


def estimate_tokens(text: str) -> int:
    """Cheap token estimate: one token per CJK ideograph, the rest at 3.5 characters per token."""
    return estimate_from_counts(len(text), cjk_chars(text))


def cjk_chars(text: str) -> int:
    """How many CJK characters ``text`` holds: a text's count is the sum of its pieces' counts."""
    if text.isascii():  # most lines: no CJK character can be among them
        return 0
    cjk_char = every().pattern("text.cjk_char")
    return len(cjk_char.findall(text)) if cjk_char else 0


def estimate_from_counts(chars: int, cjk: int) -> int:
    """``estimate_tokens`` of a text of ``chars`` characters, ``cjk`` of them CJK.

    So a text joined from pieces is estimated from its pieces' counts, without joining it:
    the context budget's search tries many joins of the same lines.
    """
    if chars == 0:
        return 0
    return max(1, round(cjk + (chars - cjk) / 3.5))


class EstimatingCounter:
    """The default counter: ``estimate_tokens``."""

    def count(self, text: str) -> int:
        """See ``estimate_tokens``."""
        return estimate_tokens(text)


class TiktokenCounter:
    """Exact counts with tiktoken, from an encoding file in tiktoken's cache (``tiktoken_files``: never downloaded)."""

    def __init__(self, encoding: str = "cl100k_base") -> None:
        self._encoding = offline_encoding(encoding)

    def count(self, text: str) -> int:
        """The exact count (special-token text is counted as ordinary text, never refused)."""
        return len(self._encoding.encode(text, disallowed_special=()))


@lru_cache(maxsize=4)
def counter_for(name: str) -> TokenCounter:
    """``"estimate"`` or a tiktoken encoding name such as ``"cl100k_base"`` (``HINDSIGHT_TOKENIZER``)."""
    if name == ESTIMATE:
        return EstimatingCounter()
    return TiktokenCounter(name)
