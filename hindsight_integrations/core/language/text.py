"""Text normalisation shared by the lexical index, the write filter and query analysis.

Also the bounded spans every rule runs on (``rule_spans``): the rules of the write path are
regular expressions, and one of them that backtracks costs the square of the text it scans.
Cut into sentences of at most ``SPAN_CHARS`` characters, a 32 KB memory costs at most
``32 KB × SPAN_CHARS`` steps per pattern whatever the pattern, and text of normal length
(one span) is matched exactly as before.
"""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache

from .rules import Searcher, clear_with_packs, every

SPAN_CHARS = 400
"""Longest span (in characters) a rule pattern is run on at once: a few sentences, far more than any rule reads."""


def _rule(name: str) -> re.Pattern[str]:
    """A rule of the ``common`` pack: the same for every text."""
    pattern = every().pattern(name)
    assert pattern is not None  # common defines it
    return pattern


def stopwords() -> frozenset[str]:
    """Words a query term never is (the packs' ``stopwords``)."""
    return every().words("stopwords")


def clean_text(text: str) -> str:
    """NFC-normalise and drop control characters (keeping newlines and tabs)."""
    return _rule("text.control").sub("", unicodedata.normalize("NFC", text))


def lexical_tokens(text: str) -> list[str]:
    """Words lower-cased; runs of CJK characters split into overlapping character bigrams.

    Text without spaces (Chinese, Japanese) has no word boundaries to split on; bigrams
    are the standard cheap substitute for a segmenter and work well for BM25.
    """
    tokens: list[str] = []
    pos = 0
    lowered = text.lower()
    for match in _rule("text.cjk_run").finditer(lowered):
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
    joiner = _rule("text.joiner")
    for word in _rule("text.word").findall(text):
        out.append(word)
        if not word.isalnum():  # joined by - ' . or _ (``_WORD``'s other characters are all alphanumeric)
            # "ORD-7731-KX" should match "ord", "7731" and the whole token.
            out.extend(part for part in joiner.split(word) if part)
    return out


def query_terms(text: str) -> list[str]:
    """Distinct content-bearing tokens of a query (stopwords removed, order kept)."""
    return _distinct(lexical_tokens(text), stopwords())


def ranking_tokens(text: str) -> list[str]:
    """The terms BM25 indexes: ``lexical_tokens`` plus each character of a CJK run.

    Chinese words are mostly one or two characters, and a bigram that straddles two words matches
    only where both recur together; each character as a term as well lets a question's words
    match wherever they stand. By BM25 alone on zh_dev, characters and bigrams found 0.593 of the
    evidence against 0.324 for bigrams, 0.637 with the Chinese function words out of the query
    (``ranking_terms``); jieba's segmentation found 0.35-0.41. English text is unchanged.
    """
    tokens = lexical_tokens(text)
    runs = _rule("text.cjk_run").findall(text.lower())
    tokens.extend(char for run in runs if len(run) > 1 for char in run)
    return tokens


def ranking_terms(text: str) -> list[str]:
    """Distinct ``ranking_tokens`` of a query, without stopwords and the packs' ``function_words``."""
    return _distinct(ranking_tokens(text), every().words("stopwords", "function_words"))


def _distinct(tokens: list[str], ignored: frozenset[str]) -> list[str]:
    return list(dict.fromkeys(token for token in tokens if token not in ignored))


def sentences(text: str) -> list[str]:
    """``text`` cut after each sentence's end mark (recall's trimming and compression's summary read sentences)."""
    return _rule("text.sentence_split").split(text)


@lru_cache(maxsize=256)
def rule_spans(text: str, limit: int = SPAN_CHARS) -> tuple[str, ...]:
    """``text`` as consecutive spans of at most ``limit`` characters that rules are matched on.

    Whole sentences are packed into a span while they fit, so a text of normal length is one
    span (itself) and matches exactly as the whole text would; only a sentence longer than
    ``limit`` is cut, at the last whitespace or punctuation of its second half where it has
    one, else at ``limit``. The spans join back to ``text``, each in one pass: O(len(text)).
    """
    if len(text) <= limit:
        return (text,)
    ends = [m.end() for m in _rule("text.sentence_end").finditer(text)]
    if not ends or ends[-1] != len(text):
        ends.append(len(text))
    spans: list[str] = []
    start = end = 0  # the span being built is text[start:end]
    for cut in ends:
        if cut - start <= limit:
            end = cut
            continue
        if end > start:
            spans.append(text[start:end])
            start = end
        while cut - start > limit:  # a sentence longer than a span: cut it by length
            split = _soft_cut(text, start, limit)
            spans.append(text[start:split])
            start = split
        end = cut
    if end > start:
        spans.append(text[start:end])
    return tuple(spans)


def _soft_cut(text: str, start: int, limit: int) -> int:
    """Where a span of a long sentence from ``start`` ends: after a break in its second half, else at ``limit``."""
    soft_breaks = every().words("soft_breaks")
    for index in range(start + limit, start + limit // 2, -1):
        if text[index - 1] in soft_breaks:
            return index
    return start + limit


def search_spans(rule: Searcher | None, text: str) -> re.Match[str] | None:
    """The first match of ``rule`` (None: no match) in ``text``'s spans (``match.string`` is the span it is in)."""
    if rule is None:
        return None
    for span in rule_spans(text):
        if (match := rule.search(span)) is not None:
            return match
    return None


def in_spans(rule: Searcher | None, text: str) -> bool:
    """Whether ``rule`` matches in one of ``text``'s spans."""
    return search_spans(rule, text) is not None


clear_with_packs(rule_spans)
