"""Text normalisation shared by the lexical index, the write filter and query analysis."""

from __future__ import annotations

import re
import unicodedata

_CJK_RUN = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff]+")
_WORD = re.compile(r"[^\W_]+(?:[-'._][^\W_]+)*", re.UNICODE)
_JOINER = re.compile(r"[-'._]")
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")

STOPWORDS = frozenset(
    [
        "a",
        "about",
        "above",
        "after",
        "again",
        "against",
        "all",
        "am",
        "an",
        "and",
        "any",
        "are",
        "as",
        "at",
        "be",
        "because",
        "been",
        "before",
        "being",
        "below",
        "between",
        "both",
        "but",
        "by",
        "can",
        "could",
        "did",
        "do",
        "does",
        "doing",
        "down",
        "during",
        "each",
        "few",
        "for",
        "from",
        "further",
        "had",
        "has",
        "have",
        "having",
        "he",
        "her",
        "here",
        "hers",
        "herself",
        "him",
        "himself",
        "his",
        "how",
        "i",
        "if",
        "in",
        "into",
        "is",
        "it",
        "its",
        "itself",
        "just",
        "me",
        "more",
        "most",
        "my",
        "myself",
        "no",
        "nor",
        "not",
        "now",
        "of",
        "off",
        "on",
        "once",
        "only",
        "or",
        "other",
        "our",
        "ours",
        "ourselves",
        "out",
        "over",
        "own",
        "same",
        "she",
        "should",
        "so",
        "some",
        "such",
        "than",
        "that",
        "the",
        "their",
        "theirs",
        "them",
        "themselves",
        "then",
        "there",
        "these",
        "they",
        "this",
        "those",
        "through",
        "to",
        "too",
        "under",
        "until",
        "up",
        "very",
        "was",
        "we",
        "were",
        "what",
        "when",
        "where",
        "which",
        "while",
        "who",
        "whom",
        "why",
        "will",
        "with",
        "would",
        "you",
        "your",
        "yours",
        "yourself",
        "yourselves",
        "tell",
        "told",
        "say",
        "said",
        "also",
        "ever",
        "really",
        "much",
        "many",
        "get",
        "got",
    ]
)


def clean_text(text: str) -> str:
    """NFC-normalise and drop control characters (keeping newlines and tabs)."""
    return _CONTROL.sub("", unicodedata.normalize("NFC", text))


def lexical_tokens(text: str) -> list[str]:
    """Words lower-cased; runs of CJK characters split into overlapping character bigrams.

    Text without spaces (Chinese, Japanese) has no word boundaries to split on; bigrams
    are the standard cheap substitute for a segmenter and work well for BM25.
    """
    tokens: list[str] = []
    pos = 0
    lowered = text.lower()
    for match in _CJK_RUN.finditer(lowered):
        tokens.extend(_words(lowered[pos : match.start()]))
        run = match.group()
        if len(run) == 1:
            tokens.append(run)
        else:
            tokens.extend(run[i : i + 2] for i in range(len(run) - 1))
        pos = match.end()
    tokens.extend(_words(lowered[pos:]))
    return tokens


def _words(text: str) -> list[str]:
    out = []
    for word in _WORD.findall(text):
        out.append(word)
        if not word.isalnum():  # joined by - ' . or _ (``_WORD``'s other characters are all alphanumeric)
            # "ORD-7731-KX" should match "ord", "7731" and the whole token.
            out.extend(part for part in _JOINER.split(word) if part)
    return out


def query_terms(text: str) -> list[str]:
    """Distinct content-bearing tokens of a query (stopwords removed, order kept)."""
    seen: dict[str, None] = {}
    for token in lexical_tokens(text):
        if token not in STOPWORDS and token not in seen:
            seen[token] = None
    return list(seen)
