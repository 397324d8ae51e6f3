"""Consolidation of one fact said again in other words (issue #27), offline and with the real ``openai`` client.

Written as a user writes them, on the default engine (``auto``: the Chinese ones run on e5):
one ``store`` per statement, each in its own session a few days apart, then ``consolidate``.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest
from pydantic import ValidationError

from hindsight_integrations import MemoryEngine, MemoryRecord, Tier
from hindsight_integrations.bench.judgement import Case, JudgementScript, score_case
from hindsight_integrations.core.clock import ManualClock
from hindsight_integrations.core.language.paraphrase import fact_terms, rephrases
from hindsight_integrations.core.language.sameness import opposite_changes, substituted, swaps_roles
from hindsight_integrations.core.llm import LLMClient
from hindsight_integrations.core.model.records import Source

from .openai_stub import OpenAIStub

T0 = datetime(2026, 3, 2, 19, 0, tzinfo=UTC)
COFFEE = [
    "I always want my coffee to be an oat flat white.",
    "An oat flat white is my usual.",
    "If you order coffee for me, it's a flat white with oat milk.",
]
CORIANDER = ["我不吃香菜。", "菜里别放香菜，我受不了那个味道。", "点外卖记得备注不要香菜。"]
MIXED = ["I prefer dark mode in every editor, 深色主题。", "I prefer dark mode, 每个 editor 都用深色主题。"]

RESTATED = [
    (COFFEE[0], COFFEE[1]),
    (COFFEE[0], COFFEE[2]),
    (CORIANDER[0], CORIANDER[1]),
    (CORIANDER[0], CORIANDER[2]),
    ("Please keep your answers short.", "Short answers work best for me."),
    ("I prefer window seats on trains.", "On long train journeys I prefer a window seat."),
]
CONTRASTS = [
    ("I prefer window seats on trains.", "I prefer aisle seats on trains."),  # one part swapped
    ("I prefer window seats on trains.", "I prefer window seats on planes."),
    ("I prefer concise answers.", "I prefer detailed answers."),
    ("I take my coffee black.", "I take my coffee with milk."),
    ("I like red cars.", "I hate red cars."),  # liked, then disliked
    ("I love country music.", "I can't stand country music."),
    ("I prefer dark mode in every editor.", "Dark mode in every editor, please."),  # liked on one side only
    ("Please keep your answers short.", "I prefer brief replies, no long paragraphs."),  # a "no" on one side
    (COFFEE[0], "I always want my tea to be green."),  # only the framing shared
    ("I prefer window seats.", "My sister prefers window seats."),  # someone else
    ("I prefer window seats.", "I prefer window seats, Tom said."),
    ("我不吃香菜。", "我不吃辣。"),
    ("我喜欢喝绿茶。", "我喜欢喝红茶。"),
    ("I go to the gym before work.", "I go to the gym after work."),  # a stopword is no filler here
    ("I swim in the morning.", "I swim in the evening."),  # nor a time word
    ("Our project uses PostgreSQL for storage.", "Our project uses MySQL for storage."),  # other values
    ("The team meeting is on Tuesday at 3pm.", "The team meeting is on Thursday at 3pm."),
    ("My mom visits us every Christmas.", "We visit my mom every Christmas."),  # who visits whom
]


def _record(content: str) -> MemoryRecord:
    return MemoryRecord(namespace="u", content=content)


@pytest.mark.parametrize(("a", "b"), RESTATED)
def test_restatements_rephrase_each_other(a: str, b: str) -> None:
    assert rephrases(_record(a), _record(b)) and rephrases(_record(b), _record(a))


@pytest.mark.parametrize(("a", "b"), CONTRASTS)
def test_contrasts_never_rephrase(a: str, b: str) -> None:
    assert not rephrases(_record(a), _record(b)) and not rephrases(_record(b), _record(a))


def test_fact_terms_drop_the_framing() -> None:
    assert fact_terms("I always want my coffee to be an oat flat white.") >= {"oat", "flat", "white", "coffee"}
    assert not fact_terms("I always want my coffee to be an oat flat white.") & {"i", "my", "s", "always"}
    assert fact_terms("我不吃香菜。") == {"吃香", "香菜"}  # 我不 and 不吃 hold a pronoun and a negation


@pytest.fixture
def default_engine(tmp_path: Path) -> Iterator[tuple[MemoryEngine, ManualClock]]:
    clock = ManualClock(T0)
    engine = MemoryEngine(store=tmp_path / "store", llm=False, clock=clock)
    yield engine, clock
    engine.chroma.flush()


def _say(engine: MemoryEngine, clock: ManualClock, namespace: str, texts: list[str], **options: object) -> list[str]:
    ids = []
    for n, text in enumerate(texts):
        clock.advance(days=3)
        at = clock.now()
        said = {"session_id": f"{namespace}-{n}", **options}
        ids += [m.id for m in engine.store(text, namespace=namespace, occurred_at=at, **said).stored]  # type: ignore[arg-type]
    return ids


@pytest.mark.parametrize(
    ("texts", "question", "named"),
    [(COFFEE, "How do I take my coffee?", "flat white"), (CORIANDER, "我有什么忌口？", "香菜")],
    ids=["en", "zh"],
)
def test_a_fact_said_in_three_wordings_becomes_one_memory(
    default_engine: tuple[MemoryEngine, ManualClock], texts: list[str], question: str, named: str
) -> None:
    engine, clock = default_engine
    sources = _say(engine, clock, "u", texts)
    assert len(set(sources)) == 3
    (fact,) = engine.consolidate("u").created
    semantic = engine.get(str(fact.id), namespace="u")
    assert semantic.tier is Tier.SEMANTIC and semantic.content in texts and fact.distilled_by == "rules"
    assert semantic.source.memory_ids == sources and [m["content"] for m in semantic.source.members] == texts
    assert all(engine.get(i, namespace="u").consolidated_into == semantic.id for i in sources)
    recalled = engine.recall(question, namespace="u").records
    assert recalled[0].id == semantic.id and [r.id for r in recalled if named in r.content] == [semantic.id]
    assert engine.consolidate("u").created == []  # nothing new the second time
    # said again later, in yet other words: it reinforces the one memory
    later = "Oat flat white, that's my coffee order." if texts is COFFEE else "我吃饭从来不放香菜。"
    _say(engine, clock, "u", [later])
    again = engine.consolidate("u")
    assert again.created == [] and [f.id for f in again.reinforced] == [semantic.id]


def test_two_wordings_need_two_occasions(default_engine: tuple[MemoryEngine, ManualClock]) -> None:
    engine, clock = default_engine
    _say(engine, clock, "one", COFFEE[:2], session_id="chat")
    assert engine.consolidate("one").created == []  # one burst of one chat
    _say(engine, clock, "two", COFFEE[:2])
    assert len(engine.consolidate("two").created) == 1


def test_contrasts_and_other_peoples_facts_stay_apart(default_engine: tuple[MemoryEngine, ManualClock]) -> None:
    engine, clock = default_engine
    texts = [
        "I prefer window seats on trains.",
        "I prefer aisle seats on trains.",
        "I prefer window seats on planes.",
        "My sister prefers window seats on trains.",
        "I always want my tea to be green.",
        "I always want my coffee to be an oat flat white.",
    ]
    _say(engine, clock, "u", texts)
    assert engine.consolidate("u").created == []
    assert sorted(r.content for r in engine.list(namespace="u")) == sorted(texts)


def test_a_mixed_language_fact_said_twice_is_one_memory(default_engine: tuple[MemoryEngine, ManualClock]) -> None:
    engine, clock = default_engine
    _say(engine, clock, "u", MIXED)
    (fact,) = engine.consolidate("u").created
    assert fact.content in MIXED and len(fact.sources) == 2


def test_two_episodes_of_an_activity_are_no_fact(default_engine: tuple[MemoryEngine, ManualClock]) -> None:
    engine, clock = default_engine
    _say(engine, clock, "u", ["Went for a run along the river this morning.", "Ran along the river."])
    assert engine.consolidate("u").created == []  # two runs: a habit's, from three days on


# -- with an LLM: looser clusters, the model decides ---------------------------------------------------


@pytest.fixture
def stub() -> Iterator[OpenAIStub]:
    with OpenAIStub() as server:
        yield server


def _llm_engine(tmp_path: Path, stub: OpenAIStub) -> tuple[MemoryEngine, ManualClock]:
    client = LLMClient(model="distil", base_url=stub.base_url, api_key="test", timeout=5.0, max_retries=1)
    clock = ManualClock(T0)
    return MemoryEngine(store=tmp_path / "llm", llm=client, clock=clock), clock


def _import(engine: MemoryEngine, clock: ManualClock, texts: list[str]) -> None:
    for n, text in enumerate(texts):  # as an import: no write-time LLM calls
        clock.advance(days=3)
        engine.store_memories([{"content": text, "session_id": f"s{n}"}], namespace="u", dedup=False, supersede=False)


def test_a_model_joins_what_the_rules_miss(tmp_path: Path, stub: OpenAIStub) -> None:
    engine, clock = _llm_engine(tmp_path, stub)
    _import(engine, clock, ["I take my coffee black.", "I drink my coffee black."])  # one verb swapped
    distilled = {"same_fact": True, "content": "I drink black coffee.", "kind": "preference", "importance": 0.8}
    stub.script(json.dumps(distilled))
    (fact,) = engine.consolidate("u").created
    assert fact.distilled_by == "llm" and fact.content == "I drink black coffee." and len(fact.sources) == 2
    (request,) = stub.requests
    prompt = request["body"]["messages"][1]["content"]
    assert "I take my coffee black." in prompt and "I drink my coffee black." in prompt


def test_a_model_that_finds_two_facts_leaves_them_and_is_asked_once(tmp_path: Path, stub: OpenAIStub) -> None:
    engine, clock = _llm_engine(tmp_path, stub)
    _import(engine, clock, ["I prefer window seats on trains.", "I prefer aisle seats on trains."])
    stub.script(json.dumps({"same_fact": False}))
    assert engine.consolidate("u").created == [] and len(stub.requests) == 1
    assert all(r.consolidated_into is None for r in engine.list(namespace="u"))
    assert engine.consolidate("u", dry_run=True).created == [] and len(stub.requests) == 1  # a dry run: rules only


def test_when_the_model_fails_only_what_the_rules_join_is_consolidated(tmp_path: Path, stub: OpenAIStub) -> None:
    engine, clock = _llm_engine(tmp_path, stub)
    _import(engine, clock, ["I prefer window seats on trains.", "I prefer aisle seats on trains."])
    stub.script(*[("status", 500)] * 2)  # the call and its one retry
    assert engine.consolidate("u").created == [] and len(stub.requests) == 2  # asked, failed: no rules on a contrast
    assert all(r.consolidated_into is None for r in engine.list(namespace="u"))
    engine, clock = _llm_engine(tmp_path / "coffee", stub)
    _import(engine, clock, COFFEE)
    stub.script(*[("status", 500)] * 2)
    (fact,) = engine.consolidate("u").created
    assert fact.distilled_by == "rules" and len(fact.sources) == 3


# -- the write path: what looks alike is no repeat ---------------------------------------------------


@pytest.mark.parametrize(
    ("first", "second"),
    [
        ("我不吃猪肉。", "我老婆不吃猪肉。"),  # 0.985 with e5: a relative's fact, not the speaker's
        ("我喜欢吃甜豆腐脑。", "我喜欢吃咸豆腐脑。"),  # 0.99: one character replaced
        ("I drink green tea in the evening.", "I drink black tea in the evening."),
        ("My mom visits us every Christmas.", "We visit my mom every Christmas."),  # the same words, roles swapped
    ],
)
def test_a_relatives_fact_or_a_replaced_word_is_no_repeat(
    default_engine: tuple[MemoryEngine, ManualClock], first: str, second: str
) -> None:
    engine, clock = default_engine
    ids = _say(engine, clock, "u", [first, second])
    assert len(set(ids)) == 2
    assert sorted(r.content for r in engine.list(namespace="u")) == sorted([first, second])
    assert engine.consolidate("u").created == []


@pytest.mark.parametrize(
    "said",
    [
        ["I take my coffee black.", "As I said, I take my coffee black!"],
        ["My brother and I go fishing every Sunday.", "Me and my brother go fishing every Sunday."],  # a list
    ],
)
def test_a_repeat_with_other_fillers_still_merges(
    default_engine: tuple[MemoryEngine, ManualClock], said: list[str]
) -> None:
    engine, clock = default_engine
    ids = _say(engine, clock, "u", said)
    assert len(set(ids)) == 1 and len(engine.list(namespace="u")) == 1


@pytest.mark.parametrize(
    ("first", "second"),
    [
        # the same values and characters, another thing gone
        ("我之前用 MySQL，现在换成了 MongoDB。", "我之前用 MongoDB，现在换成了 MySQL。"),
        ("I switched from Vim to Emacs.", "I switched from Emacs to Vim."),
        ("I switched to Emacs from Vim.", "I switched to Vim from Emacs."),
    ],
)
def test_a_change_back_the_other_way_is_kept_as_the_later_fact(
    default_engine: tuple[MemoryEngine, ManualClock], first: str, second: str
) -> None:
    engine, clock = default_engine
    ids = _say(engine, clock, "u", [first, second])
    assert len(set(ids)) == 2  # never merged into the earlier
    assert second in [r.content for r in engine.list(namespace="u")]  # current, the earlier history or kept beside it
    assert sorted(r.content for r in engine.list(namespace="u", include_history=True)) == sorted([first, second])
    assert engine.consolidate("u").created == []


def test_opposite_changes_need_another_thing_gone_on_each_side() -> None:
    assert opposite_changes("我之前用 MySQL，现在换成了 MongoDB。", "我之前用 MongoDB，现在换成了 MySQL。")
    assert opposite_changes("We moved CI from Jenkins to Travis.", "We moved CI from Travis to Jenkins.")
    assert opposite_changes("We moved CI to Travis from Jenkins.", "We moved CI to Jenkins from Travis.")
    # one change, said in either order
    assert not opposite_changes("We moved CI from Jenkins to Travis.", "We moved CI to Travis from Jenkins.")
    assert opposite_changes("我们把 Jenkins 换成了 GitHub Actions。", "我们把 GitHub Actions 换成了 Jenkins。")
    assert opposite_changes("把 backend 的 MongoDB 换成了 PostgreSQL。", "把 backend 的 PostgreSQL 换成了 MongoDB。")
    assert not opposite_changes("I live in Paris and Lyon.", "I live in Lyon and Paris.")  # a list: nothing gone
    assert not opposite_changes(  # the same thing gone, said with more words around it
        "I drink tea instead of coffee every morning.", "Every morning I drink tea instead of coffee."
    )


def test_who_does_what_to_whom_turned_round_is_another_fact() -> None:
    assert swaps_roles("My mom visits us every Christmas.", "We visit my mom every Christmas.")
    assert swaps_roles("He called me.", "I called him.")
    assert not swaps_roles("My brother and I go fishing.", "Me and my brother go fishing.")  # a list, any order
    assert not swaps_roles("Remind me to call mom on Sundays.", "I call mom on Sundays.")  # mom is called in both


def test_substituted_reads_a_replaced_word_not_an_added_one() -> None:
    assert substituted("I drink green tea.", "I drink black tea.")
    assert substituted("我喜欢吃甜豆腐脑。", "我喜欢吃咸豆腐脑。")
    assert not substituted("I take my coffee black.", "I take my coffee black every morning.")
    assert not substituted("I take my coffee black.", "Please remember, I take my coffee black.")


# -- the benchmark's held-out kinds ---------------------------------------------------------------


def _stored(namespace: str, *contents: str, origin: str = "write") -> list[MemoryRecord]:
    return [MemoryRecord(namespace=namespace, content=c, source=Source(origin=origin)) for c in contents]


def test_a_contrast_passes_only_when_both_stay_apart() -> None:
    case = Case(set="heldout", kind="contrast", language="en", statements=CONTRASTS[0])
    assert score_case(case, [], _stored("u", *CONTRASTS[0]))[0]
    assert not score_case(case, [], _stored("u", CONTRASTS[0][0]))[0]  # one merged into the other
    joined = _stored("u", CONTRASTS[0][0], origin="consolidation")
    assert not score_case(case, [], joined)[0]
    first, later = _stored("u", *CONTRASTS[0])
    assert score_case(case, [], [later], [first])[0]  # a change of mind: the earlier is history, not merged


def test_a_paraphrase_without_a_question_passes_as_one_memory() -> None:
    case = Case(set="heldout", kind="paraphrase", language="en", statements=COFFEE)
    assert score_case(case, [], _stored("u", COFFEE[0]))[0]
    assert not score_case(case, [], _stored("u", *COFFEE[:2]))[0]


def test_a_source_kept_beside_its_consolidated_memory_is_not_a_second_memory() -> None:
    """Consolidation keeps each source, linked, and recall returns the consolidated memory in its place.

    Counted as a second memory, a paraphrase whose one merged memory was consolidated failed, and
    the same case passed when the distillation call failed and nothing was consolidated.
    """
    case = Case(set="heldout", kind="paraphrase", language="en", statements=COFFEE)
    (fact,) = _stored("u", COFFEE[0], origin="consolidation")
    sources = [s.model_copy(update={"consolidated_into": fact.id}) for s in _stored("u", *COFFEE)]
    assert score_case(case, [], [*sources, fact])[0]
    (other,) = _stored("u", "I take sugar in my tea.", origin="consolidation")
    assert not score_case(case, [], [*sources, fact, other])[0]
    unlinked = [sources[0].model_copy(update={"consolidated_into": "gone"}), fact]  # its fact is no longer current
    assert not score_case(case, [], unlinked)[0]


@pytest.mark.parametrize(
    "fields",
    [
        {"kind": "update", "statements": ["a", "b"]},  # an update needs its question
        {"kind": "paraphrase", "statements": COFFEE, "question": "How do I take my coffee?"},  # without current
        {"kind": "contrast", "statements": COFFEE},  # three statements
    ],
)
def test_a_malformed_heldout_case_is_refused(fields: dict[str, object]) -> None:
    with pytest.raises(ValidationError):
        Case.model_validate({"set": "heldout", "language": "en", **fields})


def test_the_scripted_model_never_distils_a_contrast() -> None:
    case = Case(set="heldout", kind="contrast", language="en", statements=CONTRASTS[0])
    prompt = "\n".join(f"{n}. {text}" for n, text in enumerate(case.statements, 1))
    assert JudgementScript([case]).distil(prompt) == {"same_fact": False}
