"""A time named in a German, Spanish, French, Italian, Norwegian, Portuguese or Swedish question is read as a range.

Those packs had no ``recall.time_hint`` and no ``dateparser`` language: "Was habe ich letzte
Woche gemacht?" named no time, so recall gave the memories of last week no bonus, as it did
for "What did I do last week?". Each question is read by the parsers of the packs whose time
words it uses, not by all eight of its script: a word of one language is another's ("hier" is
French for yesterday and German for here, "mai" Italian for never), and an English question
is read by the English parser alone, as before.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from hindsight_integrations import MemoryEngine
from hindsight_integrations.core.clock import ManualClock
from hindsight_integrations.core.language import when
from hindsight_integrations.core.language.when import time_frames
from hindsight_integrations.mcp import MemoryClient

ASKED = datetime(2024, 7, 15, 12, 0)
LAST_WEEK = [("week", "2024-07-08", "2024-07-15")]
JUNE = [("month", "2024-06-01", "2024-07-01")]
THREE_DAYS_AGO = [("day", "2024-07-12", "2024-07-13")]
LAST_YEAR = [("year", "2023-01-01", "2024-01-01")]
MARCH_3 = [("day", "2023-03-03", "2023-03-04")]
LAST_SUMMER = [("season", "2023-06-01", "2023-09-01")]
THIS_SUMMER = [("season", "2024-06-01", "2024-09-01")]


def _frames(query: str) -> list[tuple[str, str, str]]:
    return [(f.grain, f.start.date().isoformat(), f.end.date().isoformat()) for f in time_frames(query, ASKED)]


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("Was habe ich letzte Woche gemacht?", LAST_WEEK),
        ("Was habe ich im Juni gemacht?", JUNE),
        ("Was habe ich vor drei Tagen gemacht?", THREE_DAYS_AGO),
        ("Wo war ich letztes Jahr?", LAST_YEAR),
        ("Was war am 3. März 2023?", MARCH_3),
        ("Was haben wir letzten Sommer gemacht?", LAST_SUMMER),
        ("¿Qué hice la semana pasada?", LAST_WEEK),
        ("¿Qué hice en junio?", JUNE),
        ("¿Qué hice hace 3 días?", THREE_DAYS_AGO),
        ("¿Dónde estuve el año pasado?", LAST_YEAR),
        ("¿Qué pasó el 3 de marzo de 2023?", MARCH_3),
        ("¿Qué hicimos en verano?", THIS_SUMMER),
        ("Qu'ai-je fait la semaine dernière ?", LAST_WEEK),
        ("Qu'ai-je fait en juin ?", JUNE),
        ("Qu'ai-je fait il y a trois jours ?", THREE_DAYS_AGO),
        ("Où étais-je l'an dernier ?", LAST_YEAR),
        ("Que s'est-il passé le 3 mars 2023 ?", MARCH_3),
        ("Qu'avons-nous fait cet été ?", THIS_SUMMER),
        ("Cosa ho fatto la settimana scorsa?", LAST_WEEK),
        ("Cosa ho fatto a giugno?", JUNE),
        ("Cosa ho fatto 3 giorni fa?", THREE_DAYS_AGO),
        ("Dov'ero l'anno scorso?", LAST_YEAR),
        ("Cosa è successo il 3 marzo 2023?", MARCH_3),
        ("Cosa abbiamo fatto quest'estate?", THIS_SUMMER),
        ("Hva gjorde jeg forrige uke?", LAST_WEEK),
        ("Hva gjorde jeg i juni?", JUNE),
        ("Hva gjorde jeg for tre dager siden?", THREE_DAYS_AGO),
        ("Hvor var jeg i fjor?", LAST_YEAR),
        ("Hva skjedde 3. mars 2023?", MARCH_3),
        ("Hva gjorde vi i fjor sommer?", LAST_SUMMER),
        ("O que fiz na semana passada?", LAST_WEEK),
        ("O que fiz em junho?", JUNE),
        ("O que fiz há 3 dias?", THREE_DAYS_AGO),
        ("Onde estive no ano passado?", LAST_YEAR),
        ("O que aconteceu em 3 de março de 2023?", MARCH_3),
        ("O que fizemos no verão?", THIS_SUMMER),
        ("Vad gjorde jag förra veckan?", LAST_WEEK),
        ("Vad gjorde jag i juni?", JUNE),
        ("Vad gjorde jag för 3 dagar sedan?", THREE_DAYS_AGO),
        ("Var var jag i fjol?", LAST_YEAR),
        ("Vad hände 3 mars 2023?", MARCH_3),
        ("Vad gjorde vi förra sommaren?", LAST_SUMMER),
    ],
)
def test_a_time_named_in_each_language_is_read_as_a_range(query: str, expected: list[tuple[str, str, str]]) -> None:
    assert _frames(query) == expected


@pytest.mark.parametrize(
    "query",
    [
        "Wohnst du hier?",  # German here, not French yesterday
        "Non sono mai stato a Roma?",  # Italian never, not German May
        "J'ai été malade, qu'ai-je pris ?",  # a participle, not summer
        "Vår bil är röd, var står den?",  # our, not spring
        "What did the Mars rover find?",
        "How are real estate prices?",
    ],
)
def test_a_word_that_is_a_time_only_in_another_language_names_none(query: str) -> None:
    assert _frames(query) == []


@pytest.mark.parametrize(
    ("query", "languages"),
    [
        ("What did I do last week?", ["en"]),
        ("Was habe ich letzte Woche gemacht?", ["de"]),
        ("Hva gjorde jeg forrige uke?", ["nb"]),
        ("我上个月去了哪里？", ["zh"]),
    ],
)
def test_a_question_is_searched_by_the_parsers_of_the_packs_whose_time_words_it_uses(
    monkeypatch: pytest.MonkeyPatch, query: str, languages: list[str]
) -> None:
    searched: list[str] = []
    real = when._parsed

    def spied(text: str, language: str, anchor: datetime) -> list[when.TimeFrame]:
        searched.append(language)
        return real(text, language, anchor)

    monkeypatch.setattr(when, "_parsed", spied)
    assert time_frames(query, ASKED)
    assert searched == languages


@pytest.fixture
def engine(tmp_path: Path) -> Iterator[MemoryEngine]:
    eng = MemoryEngine(store=tmp_path / "store", llm=False, clock=ManualClock(datetime(2026, 12, 1, tzinfo=UTC)))
    yield eng
    eng.close()


def test_recall_prefers_memories_from_the_month_a_german_question_names(engine: MemoryEngine) -> None:
    """As for "Which film did I watch at the cinema in June?": "im Juni" is read against the store's dates (2023)."""
    with MemoryClient.in_process(engine, namespace="filme") as client:
        for text, day in [
            ("Im Kino Odeon mit Ana einen Film gesehen: eine Komödie.", datetime(2023, 6, 10, tzinfo=UTC)),
            ("Im Kino Odeon mit Ana einen Film gesehen: ein Thriller.", datetime(2023, 8, 5, tzinfo=UTC)),
            ("Das Auto zur jährlichen Inspektion gebracht.", datetime(2023, 8, 20, tzinfo=UTC)),
        ]:
            client.store(text, occurred_at=day, session_id=f"s-{day:%Y%m%d}")
    question = "Welchen Film habe ich im Juni im Kino gesehen?"
    named = engine.recall(question, namespace="filme", top_k=2, touch=False)
    plain = engine.recall(question, namespace="filme", top_k=2, touch=False, weights={"time_boost": 0.0})
    assert "Thriller" in plain.records[0].content  # without the bonus for the time, the August one leads
    assert "Komödie" in named.records[0].content  # with it, June's
