"""Time named in a question (#28): "in June", "last week", 上个月, 去年夏天 read as ranges, recall preferring them.

The parsing is ``dateparser``'s (``core/language/when.py``), gated by the packs' ``recall.time_hint``;
ranking gives memories dated inside the range ``RecallWeights.time_boost``. Relative times are
read against the store's latest date, not the clock, so an imported history's "June" is its own.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from hindsight_integrations import MemoryEngine
from hindsight_integrations.core.clock import ManualClock
from hindsight_integrations.core.language import when
from hindsight_integrations.core.language.when import MOST_DATES, PARSED_CHARS, names_a_time, time_frames
from hindsight_integrations.mcp import MemoryClient

ANCHOR = datetime(2023, 8, 28, 12, 0)


def _frames(query: str) -> list[tuple[str, str, str]]:
    return [(f.grain, f.start.date().isoformat(), f.end.date().isoformat()) for f in time_frames(query, ANCHOR)]


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("When did Melanie go camping in June?", [("month", "2023-06-01", "2023-07-01")]),
        ("What did I do last May?", [("month", "2023-05-01", "2023-06-01")]),
        ("What happened last week?", [("week", "2023-08-21", "2023-08-28")]),
        ("What did I do yesterday?", [("day", "2023-08-27", "2023-08-28")]),
        ("What did Gina find on 1 February, 2023?", [("day", "2023-02-01", "2023-02-02")]),
        ("What did Mel paint in July 2023?", [("month", "2023-07-01", "2023-08-01")]),
        ("Where did Caroline move from 4 years ago?", [("year", "2019-01-01", "2020-01-01")]),
        ("When did we go to a pride parade during the summer?", [("season", "2023-06-01", "2023-09-01")]),
        ("我上个月去了哪里？", [("month", "2023-07-01", "2023-08-01")]),
        ("去年夏天我们做了什么？", [("season", "2022-06-01", "2022-09-01")]),
        ("五月份你去旅行了吗", [("month", "2023-05-01", "2023-06-01")]),
        ("我2022年在哪里工作", [("year", "2022-01-01", "2023-01-01")]),
        # a year word and a month: that month of that year (read whole, the parser gave nothing or a wrong date)
        ("去年五月我去了哪里？", [("month", "2022-05-01", "2022-06-01")]),
        ("今年三月我去了哪里？", [("month", "2023-03-01", "2023-04-01")]),
        ("去年12月我去了哪里？", [("month", "2022-12-01", "2023-01-01")]),
        ("我2022年五月在哪里工作？", [("month", "2022-05-01", "2022-06-01")]),
        # what the parser does not know, spelled as it reads it: 前年 as 2年前, 这个月 as 本月, 三 as 3
        ("前年我去了哪里？", [("year", "2021-01-01", "2022-01-01")]),
        ("这个月我去了哪里？", [("month", "2023-08-01", "2023-09-01")]),
        ("三天前我去了哪里？", [("day", "2023-08-25", "2023-08-26")]),
        ("十二天前我去了哪里？", [("day", "2023-08-16", "2023-08-17")]),
        ("两个月前我去了哪里？", [("month", "2023-06-01", "2023-07-01")]),
        ("3个星期前我去了哪里？", [("week", "2023-08-07", "2023-08-14")]),
        # Written-out dates are read alone: the parser's search over the whole question gave only
        # the year for the first and April and 2023 apart for the second.
        # A date something happened before reaches back a week, the day itself included.
        (
            "What did John do the week before August 3, 2023 involving his kids?",
            [("before", "2023-07-27", "2023-08-04")],
        ),
        ("What did Maria do last weekend before April 10, 2023?", [("before", "2023-04-03", "2023-04-11")]),
        ("Maria's puppy she got two weeks before August 11, 2023?", [("before", "2023-08-04", "2023-08-12")]),
        ("我2023年8月3日之前在做什么？", [("before", "2023-07-27", "2023-08-04")]),
        ("What did we do after August 3, 2023?", [("day", "2023-08-03", "2023-08-04")]),
        (
            "What did we decide on the 3rd of March 2023 and on 2023-05-09?",
            [("day", "2023-03-03", "2023-03-04"), ("day", "2023-05-09", "2023-05-10")],
        ),
        ("我2023年8月11日去了哪里？", [("day", "2023-08-11", "2023-08-12")]),
        ("2023年5月发生了什么？", [("month", "2023-05-01", "2023-06-01")]),
        # Typeset Chinese spaces digits from characters: the same dates, read with the spaces out.
        ("我 2023 年 5 月去了哪里？", [("month", "2023-05-01", "2023-06-01")]),
        ("2023 年 8 月 11 日之前他做了什么？", [("before", "2023-08-04", "2023-08-12")]),
        ("我在 2023 年去了哪里？", [("year", "2023-01-01", "2024-01-01")]),
        ("我 2022 年五月在哪里工作？", [("month", "2022-05-01", "2022-06-01")]),
        # A date in digits needs no time word beside it, nor letters to pick a language.
        ("2023-08-03?", [("day", "2023-08-03", "2023-08-04")]),
        ("2023-08-03 和 2023-08-09", [("day", "2023-08-03", "2023-08-04"), ("day", "2023-08-09", "2023-08-10")]),
    ],
)
def test_a_named_time_is_read_as_a_range_against_the_anchor(query: str, expected: list[tuple[str, str, str]]) -> None:
    assert _frames(query) == expected


@pytest.mark.parametrize(
    ("query", "asked", "expected"),
    [
        # "last May" asked in May is the May before; asked after it, this year's (as the parser reads it)
        ("Where did I go hiking last May?", "2024-05-19", [("month", "2023-05-01", "2023-06-01")]),
        ("Where did I go hiking last May?", "2024-06-10", [("month", "2024-05-01", "2024-06-01")]),
        ("What did we do last summer?", "2024-07-15", [("season", "2023-06-01", "2023-09-01")]),
        ("What did we do last summer?", "2024-10-01", [("season", "2024-06-01", "2024-09-01")]),
        ("What did we do last winter?", "2024-01-15", [("season", "2022-12-01", "2023-03-01")]),
        ("What did we do during the summer?", "2024-07-15", [("season", "2024-06-01", "2024-09-01")]),
        # a month with a year named apart from it is one frame: that month of that year
        ("Where did I go hiking in May last year?", "2024-05-19", [("month", "2023-05-01", "2023-06-01")]),
        ("Where did I go hiking last year in May?", "2024-05-19", [("month", "2023-05-01", "2023-06-01")]),
        ("What did we do in December of last year?", "2024-05-19", [("month", "2023-12-01", "2024-01-01")]),
        ("Where did I go hiking in May 2023?", "2024-05-19", [("month", "2023-05-01", "2023-06-01")]),
        ("What did we do last year?", "2024-05-19", [("year", "2023-01-01", "2024-01-01")]),
        # a day with a year named apart from it is that day of that year (the parser gives "on last year" for
        # "on May 3 last year" once May 3 is read alone and blanked: the spaces it closed up still match)
        ("Where was I on May 3 last year?", "2024-06-10", [("day", "2023-05-03", "2023-05-04")]),
        ("What did I do last year on the 3rd of June?", "2024-06-10", [("day", "2023-06-03", "2023-06-04")]),
        ("What did I do on May 3?", "2024-06-10", [("day", "2024-05-03", "2024-05-04")]),
        # a day without its year, which the parser reads as nothing in Chinese: the last such day, or the year's named
        ("5月3日我在哪里？", "2024-06-10", [("day", "2024-05-03", "2024-05-04")]),
        ("5月3号我在哪里？", "2024-01-10", [("day", "2023-05-03", "2023-05-04")]),
        ("5 月 3 日我在哪里？", "2024-01-10", [("day", "2023-05-03", "2023-05-04")]),
        ("8月11日之前他做了什么？", "2024-01-10", [("before", "2023-08-04", "2023-08-12")]),
        ("去年5月3日我在哪里？", "2024-06-10", [("day", "2023-05-03", "2023-05-04")]),
        ("2月29日我在哪里？", "2024-01-10", [("day", "2020-02-29", "2020-03-01")]),
        ("2月30日我在哪里？", "2024-01-10", []),
    ],
)
def test_a_month_or_season_is_the_one_its_words_and_year_name(
    query: str, asked: str, expected: list[tuple[str, str, str]]
) -> None:
    anchor = datetime.fromisoformat(asked).replace(hour=12)
    frames = [(f.grain, f.start.date().isoformat(), f.end.date().isoformat()) for f in time_frames(query, anchor)]
    assert frames == expected


@pytest.mark.parametrize(
    "query",
    [
        "How do I get to work?",
        "What may I eat?",  # the verb, not the month
        "How long ago was Caroline's 18th birthday?",  # an ordinal, not a date
        "What is the name of John's one-year-old child?",
        "我怎么去上班？",
    ],
)
def test_a_question_naming_no_time_gets_no_frame(query: str) -> None:
    assert time_frames(query, ANCHOR) == ()


@pytest.mark.parametrize(
    "query",
    [
        "When did Melanie go camping in June?",
        "What happened last week?",
        "Where did Caroline move from 4 years ago?",
        "When did we go to a pride parade during the summer?",
        "What did John do the week before August 3, 2023 involving his kids?",
        "我上个月去了哪里？",
        "去年夏天我们做了什么？",
        "我2023年8月3日之前在做什么？",
        "2023-08-03?",
        "What may I eat?",
        "How long ago was Caroline's 18th birthday?",
        "x" * PARSED_CHARS + " in June",
    ],
)
def test_the_date_parser_runs_only_for_a_question_that_names_a_time(
    monkeypatch: pytest.MonkeyPatch, query: str
) -> None:
    """Recall reads a question ``names_a_time`` says names none in its own thread: no parse may hide there."""
    parsed: list[str] = []
    real = when._parsed

    def spied(text: str, *args: object) -> object:
        parsed.append(text)
        return real(text, *args)  # type: ignore[arg-type]

    monkeypatch.setattr(when, "_parsed", spied)
    time_frames(query, ANCHOR)
    assert not parsed or names_a_time(query)


def test_names_a_time_reads_the_time_words_of_either_language() -> None:
    assert names_a_time("What did I do last May?") and names_a_time("我上个月去了哪里？")
    assert names_a_time("三天前我去了哪里？") and names_a_time("两个月前我去了哪里？") and names_a_time("5天前呢")
    assert not names_a_time("How do I get to work?") and not names_a_time("x" * PARSED_CHARS + " in June")


def test_a_long_query_is_read_only_as_far_as_its_start() -> None:
    """A 32 KB query full of dates must not hold recall for seconds: only the first PARSED_CHARS are read."""
    noise = "what did I do last week in June 2023, and yesterday? " * 700
    frames = time_frames(noise, ANCHOR)
    assert all(noise.lower().find(f.said.lower()) < PARSED_CHARS for f in frames)
    assert time_frames("x" * PARSED_CHARS + " in June", ANCHOR) == ()


def test_a_query_of_many_dates_has_each_read_once_and_at_most_so_many(monkeypatch: pytest.MonkeyPatch) -> None:
    """A query of dates fills the 300 characters read with ~40 of them; the parser reads each distinct one once, up to
    ``MOST_DATES``, and the rest are neither read alone nor searched for in the whole query."""
    said: list[str] = []
    reading = when._read
    monkeypatch.setattr(when, "_read", lambda parser, text, anchor: said.append(text) or reading(parser, text, anchor))
    searched: list[str] = []
    monkeypatch.setattr(when, "_parsed", lambda query, language, anchor: searched.append(query) or [])

    assert _frames("may 1 " * 50) == [("day", "2023-05-01", "2023-05-02")]
    assert said == ["may 1"]
    said.clear()
    frames = _frames(" ".join(f"may {day}" for day in range(1, 32)))
    assert len(said) == MOST_DATES == len(frames)
    assert frames[0] == ("day", "2023-05-01", "2023-05-02")
    assert searched == []
    said.clear()
    impossible = [f"{month}月{day}日" for month, day in ((2, 30), (2, 31), (4, 31), (6, 31), (9, 31), (11, 31))]
    assert _frames(" ".join([*impossible, *impossible, "2月29日", "5月1号", "5月2号"])) == [
        ("day", "2020-02-29", "2020-03-01"),  # the last leap day before the anchor, 2023-08-28
        ("day", "2023-05-01", "2023-05-02"),  # 5月2号 is a ninth date: not read
    ]
    # each read alone, then at most three times with a year added (the anchor's, the one before, a leap year)
    assert len({text.split("年")[-1] for text in said}) == MOST_DATES and len(said) <= 4 * MOST_DATES


def test_the_whole_question_is_searched_without_the_dates_already_read(monkeypatch: pytest.MonkeyPatch) -> None:
    """ "last weekend" is searched for in the question, and the date read alone is not searched again (~10 ms)."""
    searched: list[str] = []
    parsed = when._parsed
    monkeypatch.setattr(
        when, "_parsed", lambda query, language, anchor: searched.append(query) or parsed(query, language, anchor)
    )

    assert _frames("What did Maria do last weekend before April 10, 2023?") == [("before", "2023-04-03", "2023-04-11")]
    assert searched and all("last weekend" in query and "april" not in query.lower() for query in searched)
    assert all(len(query) == len("What did Maria do last weekend before April 10, 2023?") for query in searched)


def test_nonsense_dates_are_no_frames_and_no_errors() -> None:
    for query in [
        "on 99/99/9999",
        "in the 45th of Smarch 2023",
        "last week of year 0",
        "\x00 june \ud7ff",
        "2023" * 80,
    ]:
        for frame in time_frames(query, ANCHOR):
            assert frame.start < frame.end


@pytest.fixture
def engine(tmp_path: Path) -> Iterator[MemoryEngine]:
    yield MemoryEngine(store=tmp_path / "store", llm=False, clock=ManualClock(datetime(2026, 12, 1, tzinfo=UTC)))


def _store(client: MemoryClient, text: str, when: datetime) -> None:
    client.store(text, occurred_at=when, session_id=f"s-{when:%Y%m%d}")


def test_recall_prefers_memories_from_the_month_a_question_names(engine: MemoryEngine) -> None:
    """Two cinema trips, August's closer in words; "June" is read against the store's dates (2023), not the clock's."""
    with MemoryClient.in_process(engine, namespace="films") as client:
        _store(client, "Saw a film at the Odeon cinema with Ana, a comedy.", datetime(2023, 6, 10, tzinfo=UTC))
        _store(client, "Watched a film at the Odeon cinema with Ana, a thriller.", datetime(2023, 8, 5, tzinfo=UTC))
        _store(client, "Booked the car in for its yearly service.", datetime(2023, 8, 20, tzinfo=UTC))
        asked = client.recall("Which film did I watch at the cinema in June?", top_k=2)
        assert "comedy" in asked.records[0].content
        plain = client.recall("Which film did I watch at the cinema?", top_k=2)
        assert "thriller" in plain.records[0].content  # without a time, the closer wording leads
    off = engine.recall(
        "Which film did I watch at the cinema in June?", namespace="films", top_k=2, weights={"time_boost": 0.0}
    )
    assert "thriller" in off.records[0].content  # the bonus is what put June first


def test_a_time_no_candidate_falls_in_changes_nothing(engine: MemoryEngine) -> None:
    with MemoryClient.in_process(engine, namespace="films") as client:
        _store(client, "Watched a film at the Odeon cinema with Ana, a thriller.", datetime(2023, 6, 10, tzinfo=UTC))
        _store(client, "Saw a film at the Odeon cinema with Ana, a comedy.", datetime(2023, 8, 5, tzinfo=UTC))
    question = "Which film did I watch at the cinema in 2019?"
    named = engine.recall(question, namespace="films", top_k=2, touch=False)
    plain = engine.recall(question, namespace="films", top_k=2, touch=False, weights={"time_boost": 0.0})
    assert [h.record.id for h in named.hits] == [h.record.id for h in plain.hits]
    # Two recalls' float sums may differ in the last bits; the time bonus moves a score by far more.
    assert [h.score for h in named.hits] == pytest.approx([h.score for h in plain.hits], abs=1e-6)


def test_a_hostile_query_full_of_dates_returns_promptly_and_the_engine_goes_on(engine: MemoryEngine) -> None:
    with MemoryClient.in_process(engine, namespace="films") as client:
        _store(client, "Watched a film at the Odeon cinema with Ana, a thriller.", datetime(2023, 6, 10, tzinfo=UTC))
        hostile = "On 1 June 2023, last week, yesterday, in May 2022 and 去年夏天 " * 440  # under the 32 KB limit
        result = client.recall(hostile, top_k=3)
        assert result.records and "thriller" in result.records[0].content
        assert client.recall("Which film did I watch in June?", top_k=1).records  # still answering


def _run_python(*lines: str) -> None:
    """Run ``lines`` in a fresh interpreter, where nothing is imported yet; a failure there fails the test."""
    subprocess.run([sys.executable, "-c", "\n".join(lines)], check=True, timeout=120)


def test_warming_loads_the_date_parser_before_the_first_question() -> None:
    """A server warms at start (``MemoryEngine.warm``), so its first question naming a time does not wait ~0.3 s."""
    _run_python(
        "import sys",
        "from hindsight_integrations.core.language import when",
        "assert 'dateparser' not in sys.modules",
        "when.warm()",
        "assert {'dateparser.search', 'dateparser.date'} <= set(sys.modules)",
    )


def test_an_engine_warms_the_date_parser_in_the_background_when_it_is_made(tmp_path: Path) -> None:
    """Not only a server: any engine (the adapters' in-process one, a script's) loads the parser before it is asked."""
    _run_python(
        "import sys",
        "from hindsight_integrations import MemoryEngine",
        "from hindsight_integrations.core.language import when",
        "assert 'dateparser' not in sys.modules",
        f"MemoryEngine(store={str(tmp_path / 'store')!r}, llm=False)",
        "when._warming[0].join(60)",
        "assert {'dateparser.search', 'dateparser.date'} <= set(sys.modules)",
        f"MemoryEngine(store={str(tmp_path / 'other')!r}, llm=False)",
        "assert len(when._warming) == 1  # once per process",
    )


def test_a_fork_waits_for_the_warming_so_the_child_never_finds_the_parser_half_imported(tmp_path: Path) -> None:
    """A server that forks its workers right after making the engine (a pre-forking one, say)."""
    _run_python(
        "import os, sys, time",
        "from datetime import datetime, UTC",
        "from hindsight_integrations import MemoryEngine",
        "from hindsight_integrations.core.language import when",
        f"MemoryEngine(store={str(tmp_path / 'store')!r}, llm=False)",
        "pid = os.fork()",
        "if pid == 0:",
        "    os._exit(0 if when.time_frames('Where did I go 3 weeks ago?', datetime(2024, 5, 1, tzinfo=UTC)) else 3)",
        "assert not when._warming[0].is_alive()  # joined before the fork",
        "for _ in range(600):",
        "    done, status = os.waitpid(pid, os.WNOHANG)",
        "    if done:",
        "        sys.exit(os.waitstatus_to_exitcode(status))",
        "    time.sleep(0.1)",
        "os.kill(pid, 9)",
        "sys.exit('the child hung')",
    )
