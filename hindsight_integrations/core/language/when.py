"""The time a question is about ("in June", "last week", 2023, 上个月, 去年夏天), as date ranges.

"When did Melanie go camping in June?" is answered by a memory from June, which neither its
words nor its vector say: the memory reads "I went camping with the kids last week". Recall
gives the memories dated inside what a question names a bonus (``recall/ranking.py``), so this
module turns a question into ``TimeFrame``s. The reading is ``dateparser``'s (English, Chinese
and the other languages it knows: the packs' ``dateparser`` setting names the language), asked
only when a pack's ``recall.time_hint`` finds a time word, since most questions name none and
the parser costs a millisecond or two a question, and only in the languages of the packs whose
time words it found ("letzte Woche" is German's to read, "last week" English's). A date written
out ("August 3, 2023") is read on its own, which the search over a whole question sometimes
misread. Seasons, which ``dateparser`` does not read, come from the packs' ``seasons`` map (the
month each starts).

Relative times ("last week", 上个月) are read against an ``anchor``: recall passes the latest date
its namespace holds, not the clock. A memory's present is the last thing it heard (the adapters
write the question's own turn before recalling); for a chat history imported a year later,
"last May" is the May before its last conversation.
"""

from __future__ import annotations

import calendar
import logging
import os
import re
import threading
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from .rules import Rules, every, for_text, matches
from .values import numeral_value

log = logging.getLogger(__name__)

if TYPE_CHECKING:
    from dateparser.date import DateDataParser

    from .rules.loading import Pack

_GRAINS = ("day", "week", "month", "year")
PARSED_CHARS = 300
MOST_DATES = 8


@dataclass(frozen=True)
class TimeFrame:
    """A stretch of time a question names: ``start`` inclusive, ``end`` exclusive, naive UTC like stored dates."""

    start: datetime
    end: datetime
    said: str
    grain: str


def time_frames(query: str, anchor: datetime) -> tuple[TimeFrame, ...]:
    """The frames ``query`` names, read against ``anchor``; () when it names no time the parser reads.

    Only what overlaps a time word the hint found counts: the parser also takes "10" (of "April
    10" read on its own) and "18th" (a birthday) for dates. Only the first ``PARSED_CHARS``
    characters are read: the parser's time grows with the text (3 s for 32 KB), and a question
    names its time early. A date written out counts without a time word ("2023-08-03?").
    """
    query = query[:PARSED_CHARS]
    rules = for_text(query.lower())
    gaps = rules.pattern("recall.date_gap")
    query = gaps.sub("", query) if gaps is not None else query
    lowered = query.lower()
    hint = rules.pattern("recall.time_hint")
    spans = [m.span() for m in hint.finditer(lowered)] if hint is not None else []
    anchor = anchor.replace(tzinfo=None)
    frames, read = _dates(lowered, rules, anchor)
    if not spans and not frames:
        return ()
    unread = [span for span in spans if not any(begin <= span[0] and span[1] <= end for begin, end in read)]
    blanked = _blanked(lowered, read)
    for language in _languages(rules.matched_by(("recall.time_hint",), blanked, unread)) if unread else ():
        known = {(f.start, f.end, f.grain) for f in frames}  # what another language's parser read already
        frames += [
            frame
            for frame in _parsed(_blanked(query, read), language, anchor)
            if _within_hints(frame.said.lower(), blanked, unread) and (frame.start, frame.end, frame.grain) not in known
        ]
    frames += _years(lowered, rules, frames)
    return tuple(_with_seasons(_months(frames, lowered, rules, anchor), lowered, rules, anchor))


def names_a_time(query: str) -> bool:
    """Whether ``query`` has a time word (the packs' ``recall.time_hint``): only then may ``time_frames`` parse.

    Parsing takes milliseconds and is worth a worker thread; reading a question without a time
    word takes microseconds, less than handing it to one.
    """
    return matches("recall.time_hint", query[:PARSED_CHARS])


def _blanked(query: str, spans: Sequence[tuple[int, int]]) -> str:
    """``query`` with the dates already read blanked out: the parser's search spent ~10 ms reading them again."""
    for begin, end in spans:
        query = query[:begin] + " " * (end - begin) + query[end:]
    return query


def _languages(packs: Iterable[Pack]) -> list[str]:
    return [code for pack in packs if (code := pack.properties.get("dateparser"))]


def _dates(lowered: str, rules: Rules, anchor: datetime) -> tuple[list[TimeFrame], list[tuple[int, int]]]:
    """Dates written out ("August 3, 2023", "16 June, 2023", 2023年8月11日), each read on its own, and their spans.

    The parser's search over a whole question misreads some ("the week before August 3, 2023"
    gave only the year, "before April 10, 2023" April and 2023 apart) and takes ~10-20 ms on
    others; the packs' ``recall.absolute_date`` finds them, and the parser reads each alone.
    At most ``MOST_DATES`` distinct dates are read (each reading costs ~1 ms, and no question
    names more); the spans of any further ones count as read, so the whole question is not
    searched for them either. Relative times the parser misses inside a question
    (``recall.relative_date``: 去年五月 read whole is nothing) are read alone the same way.
    """
    found = _read_alone(lowered, rules)
    if not found:
        return [], []
    from dateparser.date import DateDataParser  # imported on the first question naming a time

    named = rules.matched_by(("recall.absolute_date", "recall.relative_date", "recall.time_hint"), lowered)
    languages = _languages(named) or _languages(rules.packs) or _languages(every().packs)  # "2023-08-03?": any
    parsers = [DateDataParser(languages=[language], settings=_settings(anchor)) for language in languages]
    readings: dict[str, TimeFrame | None] = {}
    frames: list[TimeFrame] = []
    read: list[tuple[int, int]] = []
    with _PARSING:
        for said, span in found:
            if said not in readings:
                if len(readings) == MOST_DATES:
                    read.append(span)
                    continue
                spelled = _spelled(said, rules)
                reading = next(filter(None, (_read(parser, spelled, anchor) for parser in parsers)), None)
                reading = reading or _read_with_year(parsers, spelled, rules, anchor)
                readings[said] = replace(reading, said=said) if reading is not None else None
            frame = readings[said]
            if frame is None:
                continue
            read.append(span)
            frame = _reaching_back(frame) if _named_before(lowered, span, rules) else frame
            if frame not in frames:
                frames.append(frame)
    return frames, read


def _read_with_year(parsers: Sequence[DateDataParser], said: str, rules: Rules, anchor: datetime) -> TimeFrame | None:
    """A day named without its year (8月11日) as the last such day up to ``anchor``.

    The parser reads "August 11" as the last one, but 8月11日 as nothing: it is read again with the
    anchor's year added as the pack writes it (``year_added``), or an earlier year's when that day
    is still to come (or, for 2月29日, not in that year).
    """
    form = rules.property("year_added")
    undated = rules.pattern("recall.undated_day")
    if form is None or undated is None or not undated.search(said):
        return None
    leap = next(y for y in range(anchor.year - 2, anchor.year - 6, -1) if calendar.isleap(y))
    for year in (anchor.year, anchor.year - 1, leap):  # a day of every year is in one of the first two
        for parser in parsers:
            frame = _read(parser, form.format(year=year, date=said), anchor)
            if frame is not None and frame.start <= anchor:
                return frame
    return None


def _read_alone(lowered: str, rules: Rules) -> list[tuple[str, tuple[int, int]]]:
    """What the parser reads alone, with its span, in the order the query says it.

    Dates written out (``recall.absolute_date``), then relative times it misses inside a question
    (``recall.relative_date``) where no date is.
    """
    found: list[tuple[str, tuple[int, int]]] = []
    for name in ("recall.absolute_date", "recall.relative_date"):
        pattern = rules.pattern(name)
        for match in pattern.finditer(lowered) if pattern is not None else ():
            if not any(match.start() < end and begin < match.end() for _, (begin, end) in found):
                found.append((match.group(0), match.span()))
    return sorted(found, key=lambda item: item[1])


def _spelled(said: str, rules: Rules) -> str:
    """``said`` spelled as the parser reads it: the packs' ``date_spellings``, counts in digits.

    The parser knows neither 这个月 nor 前年, and reads a count before 天前 only in digits.
    """
    spellings = rules.mapping("date_spellings")
    for word in sorted(spellings, key=len, reverse=True):
        said = said.replace(word, spellings[word])
    counts = rules.pattern("recall.spelled_count")
    if counts is None:
        return said
    return counts.sub(lambda count: str(numeral_value(count.group(0)) or count.group(0)), said)


def _named_before(lowered: str, span: tuple[int, int], rules: Rules) -> bool:
    """Whether the date is one something happened before ("the week before August 3, 2023", 2023年8月3日之前).

    The packs say it on the text up to the date (``recall.before_date``) or from its end
    (``recall.date_before``).
    """
    ahead, behind = rules.pattern("recall.before_date"), rules.pattern("recall.date_before")
    return bool(
        (ahead is not None and ahead.search(lowered, 0, span[0]))
        or (behind is not None and behind.match(lowered, span[1]))
    )


def _reaching_back(frame: TimeFrame) -> TimeFrame:
    """A day something happened before, as the week up to it and the day itself.

    What happened "the week before August 3" is told in a memory of the days before, or of August
    3 itself ("last week we…"); the day alone missed the first.
    """
    if frame.grain != "day":
        return frame
    return TimeFrame(start=frame.start - timedelta(days=7), end=frame.end, said=frame.said, grain="before")


def _settings(anchor: datetime) -> dict[str, object]:
    return {"RELATIVE_BASE": anchor, "PREFER_DATES_FROM": "past", "RETURN_TIME_AS_PERIOD": True}


def _read(parser: DateDataParser, said: str, anchor: datetime) -> TimeFrame | None:
    """``said`` as the frame the parser reads it as (its date, and its period: day, month...), if a plausible one."""
    data = parser.get_date_data(said)
    moment = data.date_obj.replace(tzinfo=None) if data.date_obj is not None else None
    if moment is None or moment.year < 1900 or moment > anchor + timedelta(days=366):
        return None
    return _frame(said, moment, data.period or "day")


def _parsed(query: str, language: str, anchor: datetime) -> list[TimeFrame]:
    from dateparser.date import DateDataParser  # imported on the first question naming a time
    from dateparser.search import search_dates

    settings = _settings(anchor)
    with _PARSING:  # search_dates runs through a process-wide singleton that raced between threads (dateparser#1369)
        found = search_dates(query, languages=[language], settings=settings) or []
        parser = DateDataParser(languages=[language], settings=settings)  # for each one's period (day, month...)
        return [frame for said, _ in found if (frame := _read(parser, said, anchor)) is not None]


_PARSING = threading.Lock()


def warm() -> None:
    """Import the parser and load each pack's language now (~0.3 s), not at the first question naming a time.

    Once per process: a server warms at start and its engine's background warming then has nothing to do.
    """
    if _WARMED.is_set():
        return
    from dateparser.date import DateDataParser
    from dateparser.search import search_dates

    anchor = datetime(2000, 1, 1)
    with _PARSING:
        for language in _languages(every().packs):
            DateDataParser(languages=[language], settings=_settings(anchor)).get_date_data("2000-01-01")
            search_dates("on 2000-01-01", languages=[language], settings=_settings(anchor))
    _WARMED.set()


_WARMED = threading.Event()


_warming: list[threading.Thread] = []


def warm_in_background() -> None:
    """``warm`` in a daemon thread, once per process, ``WARM_AFTER_SECONDS`` from now.

    An engine's recaller starts it when it is made, so the first question naming a time is not the one
    that pays ~0.25 s for the parser's import and languages. Not at once: a command that makes an engine
    and exits (``hindsight stats``, ``hindsight recall``) is done before it starts, and its own imports
    do not share the interpreter with it (run at once, it made ``stats`` 0.12 s slower).
    """
    with _STARTING:
        if not _warming:
            timer = threading.Timer(WARM_AFTER_SECONDS, _warm_quietly)
            timer.name, timer.daemon = "hindsight-dates-warm", True
            _warming.append(timer)
            timer.start()


def _warm_quietly() -> None:
    try:
        warm()
    except Exception as exc:  # noqa: BLE001 - the first question naming a time loads it, or says why
        log.debug("warming the date parser failed: %s", exc)


def _finish_warming() -> None:
    """Before a fork: a child must not start with the parser half imported by a thread it does not have."""
    if _warming and _warming[0].is_alive():
        _warming[0].join(_FORK_WAIT_SECONDS)


_STARTING = threading.Lock()
WARM_AFTER_SECONDS = 1.0
"""How long after an engine is made the date parser is warmed in the background."""
_FORK_WAIT_SECONDS = 10.0
os.register_at_fork(before=_finish_warming)


def _years(lowered: str, rules: Rules, frames: Sequence[TimeFrame]) -> list[TimeFrame]:
    """Years the parser missed (it reads "2022年" as year 1): the packs' ``recall.year``."""
    pattern = rules.pattern("recall.year")
    if pattern is None:
        return []
    covered = {f.start.year for f in frames}
    years = {int(m.group(0)) for m in pattern.finditer(lowered)} - covered
    return [_frame(str(year), datetime(year, 1, 1), "year") for year in sorted(years)]


def _within_hints(said: str, blanked: str, spans: Sequence[tuple[int, int]]) -> bool:
    """Whether some occurrence of ``said`` in the query overlaps a span the time hint matched.

    ``blanked`` is the query as the parser searched it, the dates read alone blanked out; the
    parser gives what it found with the spaces closed up ("on last year" from "on may 3 last
    year", May 3 blanked), so any run of spaces in the query matches a space of ``said``.
    """
    words = said.split()
    if not words:
        return False
    found = re.finditer(r"\s+".join(map(re.escape, words)), blanked)
    return any(any(m.start() < end and begin < m.end() for begin, end in spans) for m in found)


def _frame(said: str, moment: datetime, period: str) -> TimeFrame:
    grain = period if period in _GRAINS else "day"
    day = moment.replace(hour=0, minute=0, second=0, microsecond=0)
    if grain == "day":
        start, end = day, day + timedelta(days=1)
    elif grain == "week":
        start = day - timedelta(days=day.weekday())
        end = start + timedelta(days=7)
    elif grain == "month":
        start = day.replace(day=1)
        end = start + timedelta(days=calendar.monthrange(start.year, start.month)[1])
    else:
        start, end = day.replace(month=1, day=1), day.replace(year=day.year + 1, month=1, day=1)
    return TimeFrame(start=start, end=end, said=said, grain=grain)


def _with_seasons(frames: Sequence[TimeFrame], lowered: str, rules: Rules, anchor: datetime) -> Iterable[TimeFrame]:
    """``frames`` with a season the query names: in a year frame found, else the latest begun by ``anchor``.

    "去年夏天" is summer of last year: the year frame it narrows is replaced by the season. "last
    summer" asked during a summer is the one before it.
    """
    season = rules.pattern("recall.season")
    found = season.search(lowered) if season is not None else None
    if found is None:
        return frames
    first_month = int(rules.mapping("seasons")[found.group(0)])
    years = [f for f in frames if f.grain == "year"]
    if years:
        year = years[0].start.year
    else:
        year = anchor.year if (anchor.month, anchor.day) >= (first_month, 1) else anchor.year - 1
        if _called_last(lowered, found.start(), rules) and anchor < _season_end(year, first_month):
            year -= 1
    kept = [f for f in frames if f not in years[:1]]
    start, end = datetime(year, first_month, 1), _season_end(year, first_month)
    return [*kept, TimeFrame(start=start, end=end, said=found.group(0), grain="season")]


def _season_end(year: int, first_month: int) -> datetime:
    """The end of the season begun in ``first_month`` of ``year``: three months on (winter's is in the next year)."""
    end_month = first_month + 3
    return datetime(year + (end_month - 1) // 12, (end_month - 1) % 12 + 1, 1)


def _months(frames: Sequence[TimeFrame], lowered: str, rules: Rules, anchor: datetime) -> list[TimeFrame]:
    """``frames`` with each month or day named without its year (``recall.month_name``, ``undated_day``) put in
    the year the query means.

    The parser reads a month as the latest one begun by the anchor, and a year beside it as a frame
    of its own: "in May last year" asked in 2024 framed May 2024 and the whole of 2023, and "last May"
    asked in May framed the May it was asked in. A year the query names is the month's ("in May last
    year", "last year in May", 去年五月: one frame, that month of that year); otherwise "last May"
    asked during May is the May a year before (asked in June it is this year's, as the parser reads it).
    A day is put in the year named beside it the same way (去年5月3日).
    """
    month_name, undated_day = rules.pattern("recall.month_name"), rules.pattern("recall.undated_day")
    named = [
        f
        for f in frames
        if (f.grain == "month" and month_name is not None and month_name.fullmatch(f.said.strip().lower()))
        or (f.grain == "day" and undated_day is not None and undated_day.fullmatch(f.said.strip().lower()))
    ]
    if not named:
        return list(frames)
    years = [f for f in frames if f.grain == "year"]
    out: list[TimeFrame] = []
    for frame in frames:
        if years and frame == years[0]:
            continue  # the named months' year: narrowed to them
        if frame in named:
            if years:
                year = years[0].start.year
            elif frame.start <= anchor < frame.end and _follows_last(lowered, frame.said.lower(), rules):
                year = frame.start.year - 1
            else:
                year = frame.start.year
            if frame.start.month == 2 and frame.start.day == 29 and not calendar.isleap(year):
                year = frame.start.year  # 去年2月29日 in a year without one: the day as read
            frame = _frame(frame.said, frame.start.replace(year=year), frame.grain)
        out.append(frame)
    return out


def _follows_last(lowered: str, said: str, rules: Rules) -> bool:
    """Whether some occurrence of ``said`` in the query is called the last one ("last May")."""
    start = lowered.find(said)
    while start >= 0:
        if _called_last(lowered, start, rules):
            return True
        start = lowered.find(said, start + 1)
    return False


def _called_last(lowered: str, start: int, rules: Rules) -> bool:
    """Whether the text up to ``start`` calls what begins there the last one (the packs' ``recall.last_named``)."""
    last = rules.pattern("recall.last_named")
    return last is not None and last.search(lowered, 0, start) is not None


__all__ = [
    "MOST_DATES",
    "PARSED_CHARS",
    "WARM_AFTER_SECONDS",
    "TimeFrame",
    "names_a_time",
    "time_frames",
    "warm",
    "warm_in_background",
]
