"""The German, Spanish, French, Italian, Norwegian, Portuguese and Swedish packs read what recall asks of a question.

Until they had a ``recall.toml`` those packs held only greetings: "Wann bin ich nach Berlin
gezogen?" was not read as asking *when* (its neighbours took a share of the answer's score, as
for no English question asking when), and "Wo wohnt sie jetzt?" not as asking for the present
(recency did not weigh double). A question word counts only at the start of a question: "ich
weiß nicht, wann sie kommt" asks nothing.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from hindsight_integrations import MemoryEngine
from hindsight_integrations.core.recall.ranking import Candidate, RecallWeights, asks_for_present, asks_when, rank
from hindsight_integrations.core.storage.field_index import MemoryFacts

ASKING_WHEN = {
    "de": ["Wann bin ich nach Berlin gezogen?", "Seit wann wohnt sie in Hamburg?", "In welchem Jahr war das?"],
    "es": ["¿Cuándo me mudé a Berlín?", "¿Desde cuándo vive en Lisboa?", "¿En qué año empezó a surfear?"],
    "fr": ["Quand ai-je déménagé à Berlin ?", "Depuis quand habite-t-elle à Lyon ?", "En quelle année était-ce ?"],
    "it": ["Quando mi sono trasferito a Berlino?", "Da quando vive a Milano?", "In che anno è successo?"],
    "nb": ["Når flyttet jeg til Berlin?", "Siden når har hun bodd i Bergen?", "Hvilket år var det?"],
    "pt": ["Quando me mudei para Berlim?", "Desde quando ela mora em Lisboa?", "Em que ano foi isso?"],
    "sv": ["När flyttade jag till Berlin?", "Sedan när bor hon i Malmö?", "För hur länge sedan var det?"],
}
NOT_ASKING_WHEN = {
    "de": ["Was hat sie gemacht, als sie in Paris war?", "Ich weiß nicht, wann sie kommt.", "Die Wanne ist kaputt."],
    "es": ["¿Qué hizo en París?", "No sé cuándo llega."],
    "fr": ["Qu'a-t-elle fait quand elle était à Paris ?", "Quant à lui, où vit-il ?"],
    "it": ["Cosa ha fatto a Parigi?", "Quanti anni hai?"],
    "nb": ["Hva gjorde hun i Paris?", "Hvor lenge varte turen?"],
    "pt": ["O que ela fez em Paris?", "Não sei quando ela chega."],
    "sv": ["Vad gjorde hon i Paris?", "Hur länge varade resan?"],
}
ASKING_FOR_NOW = {
    "de": ["Wo wohnt sie jetzt?", "Arbeitet er immer noch bei Siemens?"],
    "es": ["¿Dónde vive ahora?", "¿Todavía trabaja en Madrid?"],
    "fr": ["Où habite-t-elle maintenant ?", "Où travaille-t-il actuellement ?"],
    "it": ["Dove vive adesso?", "Dove lavora ora?"],
    "nb": ["Hvor bor hun nå?", "Jobber han fortsatt i Oslo?"],
    "pt": ["Onde ela mora agora?", "Ele ainda trabalha em Lisboa?"],
    "sv": ["Var bor hon nu?", "Jobbar han fortfarande i Göteborg?"],
}
NOT_ASKING_FOR_NOW = {
    "de": ["Wo wohnte sie früher?", "Noch ein Bier, bitte."],
    "es": ["¿Dónde vivía antes?", "¿Cuál es el precio actual?"],
    "fr": ["Où habitait-elle avant ?", "Il va toujours au cinéma le lundi."],
    "it": ["Dove viveva prima?", "A che ora parte il treno?"],
    "nb": ["Hvor bodde hun før?"],
    "pt": ["Onde ela morava antes?"],
    "sv": ["Var bodde hon förut?"],
}


def _cases(table: dict[str, list[str]]) -> list[tuple[str, str]]:
    return [(language, text) for language, texts in table.items() for text in texts]


@pytest.mark.parametrize(("language", "question"), _cases(ASKING_WHEN))
def test_a_question_asking_when_is_read_so_in_each_language(language: str, question: str) -> None:
    assert asks_when(question), f"{language}: {question!r} asks when"
    assert not asks_for_present(question)


@pytest.mark.parametrize(("language", "text"), _cases(NOT_ASKING_WHEN))
def test_a_question_word_only_counts_at_the_start_of_a_question(language: str, text: str) -> None:
    assert not asks_when(text), f"{language}: {text!r} does not ask when"


@pytest.mark.parametrize(("language", "question"), _cases(ASKING_FOR_NOW))
def test_a_question_asking_for_the_present_is_read_so_in_each_language(language: str, question: str) -> None:
    assert asks_for_present(question), f"{language}: {question!r} asks for the present"
    assert not asks_when(question)


@pytest.mark.parametrize(("language", "text"), _cases(NOT_ASKING_FOR_NOW))
def test_a_question_about_the_past_or_an_other_word_is_not_about_the_present(language: str, text: str) -> None:
    assert not asks_for_present(text), f"{language}: {text!r} does not ask for the present"


def _facts(session: str) -> MemoryFacts:
    return MemoryFacts(
        tier="episodic", kind="turn", status="active", session_id=session, agent_id=None, importance=0.5,
        occurred_at=0.0, valid_until=0.0, expires_at=0.0, access_count=0, entities=(), has_context_vector=False,
    )  # fmt: skip


@pytest.mark.parametrize("question", ["When did I move to Berlin?", *(q[0] for q in ASKING_WHEN.values())])
def test_a_question_asking_when_gives_the_neighbours_no_share_in_any_language(question: str) -> None:
    """The turn before the one dating the move lent it nothing for the English question, and a share for the German."""
    candidates = [
        Candidate(id="dated", facts=_facts("s"), lexical_raw=2.0, similarity=0.9),
        Candidate(id="before", facts=_facts("s"), lexical_raw=0.5, similarity=0.4),
        Candidate(id="other", facts=_facts("t"), lexical_raw=0.0, similarity=0.1),
    ]

    def adjacent(ids: object) -> dict[str, tuple[str, ...]]:
        return {"dated": ("before",), "before": ("dated",)}

    def scores(weights: RecallWeights) -> dict[str, float]:
        ranked = rank(
            candidates, query=question, query_vector=[1.0], weights=weights, now=datetime(2024, 1, 1), adjacent=adjacent
        )
        return {r.id: r.score for r in ranked}

    assert scores(RecallWeights()) == pytest.approx(scores(RecallWeights(neighbour_boost=0.0)))


def test_a_german_question_about_now_weighs_recency_double(engine: MemoryEngine) -> None:
    now = datetime.now(UTC).replace(microsecond=0)
    engine.store_memories(
        [
            {"content": "Lena fährt einen roten Volvo.", "occurred_at": now - timedelta(days=400)},
            {"content": "Lena hat ein blaues Fahrrad bekommen.", "occurred_at": now - timedelta(days=3)},
        ],
        namespace="u",
    )
    weights = {"similarity": 1.0, "recency": 0.3, "importance": 0.0, "access": 0.0}
    plain = {h.record.content: h.score for h in engine.recall("Was fährt Lena?", namespace="u", weights=weights).hits}
    asked_now = engine.recall("Was fährt Lena jetzt?", namespace="u", weights=weights).hits
    now_scores = {h.record.content: h.score for h in asked_now}
    newer, older = "Lena hat ein blaues Fahrrad bekommen.", "Lena fährt einen roten Volvo."
    assert now_scores[newer] - now_scores[older] > plain[newer] - plain[older]
