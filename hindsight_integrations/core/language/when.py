"""The time a question is about ("in June", "last week", 2023, 上个月, 去年夏天), as date ranges.

"When did Melanie go camping in June?" is answered by a memory from June, which neither its
words nor its vector say: the memory reads "I went camping with the kids last week". Recall
gives the memories dated inside what a question names a bonus (``recall/ranking.py``), so this
module turns a question into ``TimeFrame``s. The reading is ``dateparser``'s (English, Chinese
and the other languages it knows: the packs' ``dateparser`` setting names the language), asked
only when a pack's ``recall.time_hint`` finds a time word, since most questions name none and
the parser costs a millisecond or two a question. Seasons, which ``dateparser`` does not read,
come from the packs' ``seasons`` map (the month each starts).

Relative times ("last week", 上个月) are read against an ``anchor``: recall passes the latest date
its namespace holds, not the clock. A memory's present is the last thing it heard (the adapters
write the question's own turn before recalling); for a chat history imported a year later,
"last May" is the May before its last conversation.
"""

from __future__ import annotations

import calendar
import threading
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from .rules import Rules, for_text

_GRAINS = ("day", "week", "month", "year")
PARSED_CHARS = 300


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
    names its time early.
    """
    query = query[:PARSED_CHARS]
    lowered = query.lower()
    rules = for_text(lowered)
    hint = rules.pattern("recall.time_hint")
    spans = [m.span() for m in hint.finditer(lowered)] if hint is not None else []
    if not spans:
        return ()
    anchor = anchor.replace(tzinfo=None)
    frames = [
        frame
        for language in _languages(rules)
        for frame in _parsed(query, language, anchor)
        if _within_hints(frame.said.lower(), lowered, spans)
    ]
    frames += _years(lowered, rules, frames)
    return tuple(_with_seasons(frames, lowered, rules, anchor))


def _languages(rules: Rules) -> list[str]:
    return [code for pack in rules.packs if (code := pack.properties.get("dateparser"))]


def _parsed(query: str, language: str, anchor: datetime) -> list[TimeFrame]:
    from dateparser.date import DateDataParser  # imported on the first question naming a time
    from dateparser.search import search_dates

    settings = {"RELATIVE_BASE": anchor, "PREFER_DATES_FROM": "past", "RETURN_TIME_AS_PERIOD": True}
    with _PARSING:  # search_dates runs through a process-wide singleton that raced between threads (dateparser#1369)
        found = search_dates(query, languages=[language], settings=settings) or []
        parser = DateDataParser(languages=[language], settings=settings)  # for each one's period (day, month...)
        out = []
        for said, _ in found:
            data = parser.get_date_data(said)
            moment = data.date_obj.replace(tzinfo=None) if data.date_obj is not None else None
            if moment is not None and moment.year >= 1900 and moment <= anchor + timedelta(days=366):
                out.append(_frame(said, moment, data.period or "day"))
        return out


_PARSING = threading.Lock()


def _years(lowered: str, rules: Rules, frames: Sequence[TimeFrame]) -> list[TimeFrame]:
    """Years the parser missed (it reads "2022年" as year 1): the packs' ``recall.year``."""
    pattern = rules.pattern("recall.year")
    if pattern is None:
        return []
    covered = {f.start.year for f in frames}
    years = {int(m.group(0)) for m in pattern.finditer(lowered)} - covered
    return [_frame(str(year), datetime(year, 1, 1), "year") for year in sorted(years)]


def _within_hints(said: str, lowered: str, spans: Sequence[tuple[int, int]]) -> bool:
    """Whether some occurrence of ``said`` in the query overlaps a span the time hint matched."""
    start = lowered.find(said)
    while start >= 0:
        if any(start < end and begin < start + len(said) for begin, end in spans):
            return True
        start = lowered.find(said, start + 1)
    return False


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

    "去年夏天" is summer of last year: the year frame it narrows is replaced by the season.
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
    start = datetime(year, first_month, 1)
    end_month = first_month + 3
    end = datetime(year + (end_month - 1) // 12, (end_month - 1) % 12 + 1, 1)
    kept = [f for f in frames if f not in years[:1]]
    return [*kept, TimeFrame(start=start, end=end, said=found.group(0), grain="season")]


__all__ = ["PARSED_CHARS", "TimeFrame", "time_frames"]
