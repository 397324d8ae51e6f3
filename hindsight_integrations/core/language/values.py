"""The values a statement carries, so deduplication never merges two distinct facts.

"Meeting with Dana on Tuesday at 3pm" and "… on Thursday at 3pm" embed almost identically;
what tells them apart is a handful of values. ``values_of`` pulls those out with offline rules
(no model, cheap enough for every write) and normalises them, lower case throughout:

* URLs (scheme, ``www.`` and trailing slash dropped), bare domains (``acme.com``), e-mails;
* dates: ISO ``2024-05-03``, ``3 May``/``May 3rd``/``3rd of May`` (with or without a year),
  numeric ``5/3`` read month-first (US order; day-first only when the first part exceeds 12),
  Chinese ``3月5日``/``三月五号`` — all become ``[yyyy-]mm-dd``;
* times: ``3pm``, ``3:30 p.m.``, ``15:00``, noon, midnight, Chinese ``下午三点``/``15点30分`` → ``hh:mm``;
* phone numbers written in groups (``555-0100``, ``+1 (555) 010-0199``) → digits only, the
  same token a contiguous number gives;
* amounts: the number on its own (``1,000`` = ``1000``, ``3.50`` = ``3.5``, ``5k`` = ``5000``,
  ``1.5万`` = ``15000``) and the currency as its own token (``usd``, ``eur``, ``gbp``, ``cny``, ``jpy``);
* codes and identifiers mixing letters and digits (``INV-1001``, ``v2.3.1``, ``ABC123``, IPs);
  any other digits count as numbers, inside words too;
* weekdays, months and relative days in English and Chinese, in one English form
  (``Tue``/``周二``/``星期二``/``礼拜二`` → ``tuesday``; ``下周二`` → ``next tuesday``; ``明天`` → ``tomorrow``);
* Chinese numerals followed by a measure word or 第 (``三个``, ``十二天``, ``第二``);
* proper names and places: capitalised words not at a sentence start and not common
  sentence words (runs of them join: ``New York``), and a short list of major cities and the
  provinces written in Chinese (``北京`` → ``beijing``, ``云南`` → ``yunnan``; not 西藏, which
  东西藏在… holds) or with a place suffix after a locative (``在朝阳区``).

The tables and patterns live in the language packs (``language/rules/*/values.toml``: ``common``
for the shapes every language writes alike, ``en`` and ``zh`` for words and numerals); this
module holds the extractors that normalise their matches, the order they run in, and the API.

Each rule masks what it matched, so ``3pm`` is a time and not also the number 3. What the
rules miss: names at a sentence start, Chinese personal names, spelled-out English numbers
("three"), ambiguous currencies (``$`` is read as ``usd``, ``¥`` as ``cny``, ``pounds`` as ``gbp``).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from decimal import Decimal, InvalidOperation
from functools import lru_cache

from .rules import Rules, clear_with_packs, every, for_text
from .rules.prescreen import Prescreen, TextWords
from .text import rule_spans

MAX_NUMBER_DIGITS = 30
"""Longer runs of digits are kept as written: identifiers, not amounts (and ``int`` refuses over 4,300)."""


def _number(text: str, scale: int = 1) -> str:
    """``1,000`` → ``1000``, ``3.50`` → ``3.5``, times a scale; digits kept as written if odd or too long."""
    if len(text) > MAX_NUMBER_DIGITS + 20:  # a long token: not worth counting its digits
        return text
    if sum(c.isdigit() for c in text) > MAX_NUMBER_DIGITS:
        return text
    try:
        plain = text.replace(".", "") if text.count(".") > 1 else text  # 1.000.000
        value = Decimal(plain.replace(",", "")) * scale
    except InvalidOperation:
        return text
    if value == value.to_integral_value():
        return str(int(value))
    return format(value.normalize(), "f")


def numeral_value(text: str) -> int | None:
    """A number in the packs' numerals (``digits``, ``units``, ``big_units``): ``十二`` → 12, ``两万三千`` → 23000.

    ``三千二`` → 3200, ``2`` → 2. Values and the times a question names (``when.py``) read counts so.
    None when it is no numeral (or an implausibly long one).
    """
    if len(text) > 20:
        return None
    if text.isdigit():
        return int(text)
    rules = every()
    digits, units, big_units = rules.mapping("digits"), rules.mapping("units"), rules.mapping("big_units")
    if len(text) >= 3 and text[-1] in digits and (units.get(text[-2], 0) >= 100 or text[-2] in big_units):
        # 三千二 is 3200, 两万五 25000: a last digit right after 百/千/万 counts in the next unit down
        lower = (units.get(text[-2]) or big_units[text[-2]]) // 10
        head = numeral_value(text[:-1])
        return None if head is None else head + digits[text[-1]] * lower
    total, section, digit = 0, 0, None
    for char in text:
        if char in digits:
            digit = digits[char]
        elif char in units:
            section += (1 if digit is None else digit) * units[char]
            digit = None
        elif char in big_units:
            total = (total + section + (digit or 0)) * big_units[char]
            section, digit = 0, None
        else:
            return None
    return total + section + (digit or 0)


def _month_day(month: int, day: int, year: str | None = None) -> str | None:
    if not (1 <= month <= 12 and 1 <= day <= 31):
        return None
    stamp = f"{month:02d}-{day:02d}"
    if year:
        full = int(year) + (2000 if len(year) == 2 else 0)
        return f"{full:04d}-{stamp}"
    return stamp


def _clock(hour: int, minute: int = 0) -> str | None:
    return f"{hour:02d}:{minute:02d}" if 0 <= hour <= 24 and 0 <= minute < 60 else None


# -- one extractor per kind of value: a match in, tokens out ---------------------------------
Extractor = Callable[[re.Match[str]], Iterator[str]]


def _url(m: re.Match[str]) -> Iterator[str]:
    url = _common("values.url_prefix").sub("", m.group(0).lower()).rstrip(".,;!?/")
    yield url


def _whole(m: re.Match[str]) -> Iterator[str]:
    yield m.group(0).lower()


def _iso_date(m: re.Match[str]) -> Iterator[str]:
    stamp = _month_day(int(m.group(2)), int(m.group(3)), m.group(1))
    yield stamp or m.group(0)


def _zh_date(m: re.Match[str]) -> Iterator[str]:
    month, day = numeral_value(m.group(2)), numeral_value(m.group(3))
    stamp = _month_day(month, day, m.group(1)) if month and day else None
    yield stamp or m.group(0)


def _day_month(m: re.Match[str]) -> Iterator[str]:
    stamp = _month_day(every().mapping("months")[m.group(2).lower()], int(m.group(1)), m.group(3))
    yield stamp or m.group(0).lower()


def _month_day_match(m: re.Match[str]) -> Iterator[str]:
    if m.group(1) in every().words("modal_months"):
        return  # "may 3 people come": the modal verb
    stamp = _month_day(every().mapping("months")[m.group(1).lower()], int(m.group(2)), m.group(3))
    yield stamp or m.group(0).lower()


def _slash_date(m: re.Match[str]) -> Iterator[str]:
    first, second = int(m.group(1)), int(m.group(2))
    stamp = _month_day(first, second, m.group(3)) or _month_day(second, first, m.group(3))
    yield stamp or m.group(0)


def _phone(m: re.Match[str]) -> Iterator[str]:
    digits = _common("values.not_digit").sub("", m.group(0))
    groups = _common("values.digit_run").findall(m.group(0))
    years = len(groups) == 2 and all(len(g) == 4 and g[:2] in ("19", "20") for g in groups)
    if len(digits) >= 7 and not years:  # else a range ("10-20", "2023-2024"), left to the number rule
        yield digits


def _clock_12(m: re.Match[str]) -> Iterator[str]:
    hour = int(m.group(1)) % 12 + (12 if m.group(3).lower().startswith("p") else 0)
    yield _clock(hour, int(m.group(2) or 0)) or m.group(0).lower()


def _clock_24(m: re.Match[str]) -> Iterator[str]:
    yield _clock(int(m.group(1)), int(m.group(2))) or m.group(0)


def _noon(m: re.Match[str]) -> Iterator[str]:
    yield every().mapping("named_times")[m.group(1).lower()]


def _zh_time(m: re.Match[str]) -> Iterator[str]:
    period, hour_text, extra, minute_text = m.groups()
    hour = numeral_value(hour_text)
    rules = every()
    if hour is None or (not period and not extra and hour_text in rules.words("ambiguous_hours")):
        return  # "快一点", "两点建议": not a time
    if hour < rules.mapping("pm_periods").get(period or "", 0):
        hour += 12  # 下午三点 is 15:00
    minute = rules.mapping("minute_words").get(extra or "", 0)
    if minute_text:
        minute = numeral_value(minute_text) or 0
    clock = _clock(hour, minute)
    if clock:
        yield clock


def _scaled(m: re.Match[str]) -> Iterator[str]:
    yield _number(m.group(1), every().mapping("scales")[m.group(2).lower()])


def _plain_number(m: re.Match[str]) -> Iterator[str]:
    yield _number(m.group(0))


def _currency(m: re.Match[str]) -> Iterator[str]:
    rules = every()
    word = m.group(0).strip().lower()
    yield rules.mapping("currencies").get(word) or rules.mapping("counted_currencies")[word]


def _zh_weekday(m: re.Match[str]) -> Iterator[str]:
    rules = every()
    qualifier = rules.mapping("zh_qualifiers")[m.group(1) or ""]
    yield f"{qualifier} {rules.mapping('zh_weekdays')[m.group(2)]}".strip()


def _en_weekday(m: re.Match[str]) -> Iterator[str]:
    word = m.group(2)
    rules = every()
    if len(word) <= 4 and word.lower() not in rules.words("lower_case_weekdays") and not word[0].isupper():
        return  # "sun", "sat", "wed" in lower case are words, not days
    qualifier = rules.mapping("weekday_qualifiers")[m.group(1).lower()] if m.group(1) else ""  # "this Friday" is Friday
    yield f"{qualifier} {rules.mapping('weekdays')[word.lower()]}".strip()


def _relative(m: re.Match[str]) -> Iterator[str]:
    words = " ".join(m.group(0).lower().split())
    yield every().mapping("relative").get(words, words)  # English words are their own normal form


def _en_month(m: re.Match[str]) -> Iterator[str]:
    word = m.group(1)
    if word.lower() not in every().words("modal_months"):
        yield word.lower()
        return
    if not word[0].isupper():
        return  # the modal verb
    modal = for_text(word).pattern("values.modal_after_may")
    if word == word.capitalize() and modal is not None and modal.match(m.string, m.end()):
        return  # "May I ask": the verb opening a question
    yield word.lower()


def _zh_month(m: re.Match[str]) -> Iterator[str]:
    month = numeral_value(m.group(1))
    if month and 1 <= month <= 12:
        yield every().lexicon("month_names")[month - 1]


def _zh_count(m: re.Match[str]) -> Iterator[str]:
    value = numeral_value(m.group(1) or m.group(3) or m.group(4))
    if value is not None and (m.group(3) or "x")[0] not in every().words("not_count_starts"):
        yield str(value)


def _zh_city(m: re.Match[str]) -> Iterator[str]:
    yield every().mapping("cities")[m.group(0)]


def _zh_place(m: re.Match[str]) -> Iterator[str]:
    yield m.group(1)


# The kinds of value in the order they are read: each masks its matches before the next one
# runs. A kind is the packs' rule ``values.<kind>``; a text gets the kinds of its scripts' packs.
_KINDS: tuple[tuple[str, Extractor], ...] = (
    ("url", _url),
    ("email", _whole),
    ("domain", _url),
    ("iso_date", _iso_date),
    ("zh_date", _zh_date),
    ("day_month", _day_month),
    ("month_day", _month_day_match),
    ("slash_date", _slash_date),
    ("ip", _whole),
    ("phone", _phone),
    ("clock_12", _clock_12),
    ("clock_24", _clock_24),
    ("noon", _noon),
    ("zh_time", _zh_time),
    ("currency", _currency),
    ("scaled", _scaled),
    ("code", _whole),
    ("plain_number", _plain_number),
    ("zh_weekday", _zh_weekday),
    ("en_weekday", _en_weekday),
    ("relative", _relative),
    ("en_month", _en_month),
    ("zh_month", _zh_month),
    ("zh_count", _zh_count),
    ("zh_city", _zh_city),
    ("zh_place", _zh_place),
)


def _common(name: str) -> re.Pattern[str]:
    pattern = every().pattern(name)
    assert pattern is not None  # common's
    return pattern


@lru_cache(maxsize=16)
def _rules_of(rules: Rules) -> tuple[tuple[re.Pattern[str], Extractor, Prescreen | None], ...]:
    """The value rules of a combination of packs, in reading order, with what a text needs for each to match."""
    return tuple(
        (p, extract, rules.prescreen(f"values.{kind}"))
        for kind, extract in _KINDS
        if (p := rules.pattern(f"values.{kind}")) is not None
    )


def _apply(pattern: re.Pattern[str], extract: Extractor, text: str, found: set[str]) -> str:
    """Add what ``pattern`` finds to ``found``; return ``text`` with every used match blanked out."""
    pieces: list[str] = []
    last = 0
    for match in pattern.finditer(text):
        tokens = list(extract(match))
        if not tokens:
            continue
        found.update(tokens)
        pieces.append(text[last : match.start()])
        pieces.append(" " * (match.end() - match.start()))
        last = match.end()
    if not pieces:
        return text
    pieces.append(text[last:])
    return "".join(pieces)


def _at_sentence_start(text: str, start: int) -> bool:
    index = start - 1
    while index >= 0 and text[index] in " \t":
        index -= 1
    return index < 0 or text[index] in every().words("sentence_ends")


def _names(text: str) -> Iterator[str]:
    """Runs of capitalised words, minus a sentence's first word and common sentence words."""
    capitalised = for_text(text).pattern("values.names")
    if capitalised is None:
        return
    rules = every()
    not_names, endings = rules.words("not_names"), rules.lexicon("possessive_endings")
    for match in capitalised.finditer(text):
        words = match.group(0).split()
        if _at_sentence_start(text, match.start()):
            words = words[1:]
        run: list[str] = []
        for word in [*words, ""]:
            cleaned = word.strip("'’-").lower()
            owner = next((cleaned[: -len(e)] for e in endings if cleaned.endswith(e)), None)  # "ivan's": ivan
            if cleaned and cleaned not in not_names and owner is None:
                run.append(cleaned)
                continue
            if owner is not None and owner not in not_names:
                run.append(owner)
            if run:
                yield " ".join(run)
            run = []


@lru_cache(maxsize=4096)
def values_of(text: str) -> frozenset[str]:
    """The normalised values ``text`` carries: numbers, amounts, dates, times, days, codes, names.

    Read span by span (``text.rule_spans``): a text of normal length is one span, and a long
    one costs time in proportion to its length whatever the rule.
    """
    spans = rule_spans(text)
    if len(spans) == 1:
        return _span_values(text)
    return frozenset().union(*(_span_values(span) for span in spans))


@lru_cache(maxsize=4096)
def _span_values(text: str) -> frozenset[str]:
    found: set[str] = set()
    words = TextWords(text)
    for pattern, extract, prescreen in _rules_of(for_text(text)):
        if prescreen is None or prescreen.admits(text, words):
            blanked = _apply(pattern, extract, text, found)
            if blanked is not text:  # a match blanked out between two words' letters frees a word ("周二March周三")
                text, words = blanked, TextWords(blanked)
    found.update(_names(text))
    return frozenset(found)


def same_values(a: str, b: str) -> bool:
    """Whether ``a`` and ``b`` carry the same values, in any order (two texts without values do)."""
    return values_of(a) == values_of(b)


def differing_values(a: str, b: str) -> tuple[frozenset[str], frozenset[str]]:
    """The values only ``a`` carries and those only ``b`` carries."""
    left, right = values_of(a), values_of(b)
    return left - right, right - left


clear_with_packs(values_of, _span_values)


__all__ = ["differing_values", "numeral_value", "same_values", "values_of"]
