"""Updates no earlier rule named (issue #27), the current value first at recall, and ``hindsight bench judgement``.

The statements are written as a user writes them: through an in-process MCP session,
``store_memory`` once per statement, dated weeks apart, on the default engine (``auto`` model:
the Chinese ones run on e5).
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from typer.testing import CliRunner

from hindsight_integrations import MemoryEngine
from hindsight_integrations.bench.judgement import (
    Case,
    JudgementScript,
    judgement_table,
    load_cases,
    run_mode,
    score_case,
)
from hindsight_integrations.bench.scripted_llm import ScriptedLLMServer
from hindsight_integrations.cli import app
from hindsight_integrations.core.clock import ManualClock
from hindsight_integrations.core.language.retired import retires
from hindsight_integrations.core.language.sameness import share_a_topic
from hindsight_integrations.core.language.slots import detect_slot, is_named
from hindsight_integrations.core.language.values import values_of
from hindsight_integrations.core.model.records import MemoryRecord, Source, Status, Tier
from hindsight_integrations.core.model.results import RecallHit
from hindsight_integrations.core.recall.currency import current_first
from hindsight_integrations.core.write.supersede import Verdict, rule_verdict
from hindsight_integrations.mcp import MemoryClient

T0 = datetime(2026, 3, 2, 19, 0, tzinfo=UTC)

# (earlier, later, question, what the first answer must name): each names no attribute the
# rules knew before, so both used to stay current with the earlier one first.
UPDATES = [
    ("我的房租是每月三千二。", "房东涨价了，下个月起每月三千五。", "我的房租多少钱？", "三千五"),
    ("我们的鹦鹉叫小绿。", "鹦鹉后来改叫豆豆了。", "鹦鹉叫什么名字？", "豆豆"),
    (
        "The kitchen renovation can cost at most 8,000 euros.",
        "We settled on 11,000 for the kitchen in the end.",
        "How much will the kitchen cost?",
        "11,000",
    ),
    (
        "Our search runs on Elasticsearch.",
        "We swapped Elasticsearch out for OpenSearch in March.",
        "What does our search run on?",
        "OpenSearch",
    ),
    ("I rent a flat in Porto.", "Packed everything up and moved to Braga.", "Where do I live?", "Braga"),
    (
        "I'm an accountant at Deloitte.",
        "Two weeks into my new role at a fintech called Ledgerly.",
        "Where do I work?",
        "Ledgerly",
    ),
    # what the old one holds, said to be gone: sold, or moved from it to another (``retired.retires``)
    (
        "I drive a silver Corolla to the office.",
        "Sold the Corolla, I take the train to work now.",
        "How do I get to work?",
        "train",
    ),
    (
        "Our CI runs on Jenkins.",
        "We migrated CI from Jenkins to GitHub Actions last sprint.",
        "What does our CI run on?",
        "GitHub Actions",
    ),
    # ... or moved to another from it, said in that order
    (
        "Our CI runs on Jenkins.",
        "We migrated CI to GitHub Actions from Jenkins last sprint.",
        "What does our CI run on?",
        "GitHub Actions",
    ),
    ("我每天坐地铁上班。", "现在把地铁换成了自行车。", "我怎么上班？", "自行车"),
    # 把 X 的 A 换成: A is gone, not X
    ("我的电脑装的是 Windows。", "把电脑的 Windows 换成了 Linux。", "我的电脑装的是什么系统？", "Linux"),
    # a service's price: the provider changing its prices names the service, not the plan
    (
        "Our broadband plan is 35 euros a month.",
        "The broadband provider raised its prices, we pay 42 a month now.",
        "How much do we pay for broadband?",
        "42",
    ),
    ("我的健身卡每月三百块。", "健身房涨价了，现在每月三百五。", "我的健身卡多少钱？", "三百五"),
]


@pytest.fixture
def default_engine(tmp_path: Path) -> Iterator[tuple[MemoryEngine, ManualClock]]:
    clock = ManualClock(T0)
    yield MemoryEngine(store=tmp_path / "store", llm=False, clock=clock), clock


def _write(engine: MemoryEngine, clock: ManualClock, namespace: str, *texts: str) -> list[MemoryRecord]:
    written = []
    start = clock.now() + timedelta(days=1)
    with MemoryClient.in_process(engine, namespace=namespace) as client:
        for n, text in enumerate(texts):
            at = start + timedelta(weeks=4 * n)
            clock.set(at)
            written += client.store(text, session_id=f"s{n}", occurred_at=at).stored
    return written


@pytest.mark.parametrize(("earlier", "later", "question", "current"), UPDATES, ids=[u[3] for u in UPDATES])
def test_a_new_value_said_in_other_words_makes_the_old_one_history(
    default_engine: tuple[MemoryEngine, ManualClock], earlier: str, later: str, question: str, current: str
) -> None:
    engine, clock = default_engine
    old, new = _write(engine, clock, "u", earlier, later)
    assert engine.get(old.id, namespace="u").status is Status.SUPERSEDED
    assert engine.get(old.id, namespace="u").superseded_by == new.id
    assert [m.content for m in engine.list(namespace="u")] == [later]
    assert current in engine.recall(question, namespace="u").records[0].content


def test_a_relatives_value_and_an_unrelated_number_stay_current(
    default_engine: tuple[MemoryEngine, ManualClock],
) -> None:
    engine, clock = default_engine
    _write(engine, clock, "a", "My brother lives in Lyon.", "I live in Paris now.")
    assert len(engine.list(namespace="a")) == 2
    assert "Lyon" in engine.recall("Where does my brother live?", namespace="a").records[0].content
    # a change cue, a slot on one side and another number, but not the same question (MiniLM 0.53)
    _write(engine, clock, "b", "My budget for the apartment is 1200 euros a month.", "Actually, I have 2 kids, not 3.")
    assert len(engine.list(namespace="b")) == 2


def test_what_a_statement_says_is_gone_updates_only_the_one_that_holds_it(
    default_engine: tuple[MemoryEngine, ManualClock],
) -> None:
    assert retires("Our CI runs on Jenkins.", "We migrated CI from Jenkins to GitHub Actions.") == {"jenkins"}
    assert retires("我住在上海。", "我们从上海搬到了杭州。") == {"上海"}
    assert not retires("Our CI runs on Jenkins.", "We migrated the wiki from Confluence to Notion.")
    assert not retires("I drive a Corolla.", "I got a letter from Anna.")  # no "to": nothing left
    assert retires("I live in Lyon.", "I moved to Paris from Lyon.") == {"lyon"}  # "to B from A" is "from A to B"
    assert retires("I live in Lyon.", "I moved to Paris from Lyon in 2019.") == {"lyon"}
    assert not retires("I start work at 9 on Monday.", "I switched to decaf from next Monday on.")  # a start, no loss
    assert retires("我们的 backend 用 MongoDB。", "把 backend 的 MongoDB 换成 PostgreSQL 了。") == {"mongodb"}
    assert not retires("我们的 backend 用 Go 写的。", "把 backend 的 MongoDB 换成 PostgreSQL 了。")  # the owner stays
    engine, clock = default_engine
    # a relative's value, a route that is no change, another thing sold: all stay current
    _write(engine, clock, "a", "My brother lives in Lyon.", "I moved from Lyon to Paris.")
    _write(engine, clock, "b", "I live in Leeds.", "I commute from Leeds to York every day.")
    _write(engine, clock, "c", "I drive a silver Corolla to the office.", "Sold the old bike, I drive everywhere now.")
    _write(engine, clock, "d", "My brother lives in Lyon.", "I moved to Paris from Lyon.")
    for namespace, count in (("a", 2), ("b", 2), ("c", 2), ("d", 2)):
        assert len(engine.list(namespace=namespace)) == count, engine.list(namespace=namespace)


def test_what_the_backend_is_written_in_and_its_database_are_two_facts(
    default_engine: tuple[MemoryEngine, ManualClock],
) -> None:
    """Go is no word of the technology lexicon, so "written in Go" set no language slot (or "my backend"'s)."""
    engine, clock = default_engine
    go_zh, go_en = "我们的 backend 用 Go 写的。", "Our backend is written in Go."
    database_zh = "把 backend 的 MongoDB 换成 PostgreSQL 了。"
    database_en = "We swapped the backend's MongoDB for Postgres."
    rust_zh, rust_en = "我们的 backend 现在改用 Rust 写了。", "Our backend is now written in Rust."
    for namespace, texts, current in (
        ("a", (go_zh, database_zh), [database_zh, go_zh]),
        ("b", (go_en, database_en), [database_en, go_en]),
        ("c", (go_zh, rust_zh), [rust_zh]),  # a new language is still an update
        ("d", (go_en, rust_en), [rust_en]),
    ):
        _write(engine, clock, namespace, *texts)
        assert sorted(m.content for m in engine.list(namespace=namespace)) == sorted(current), namespace


def test_a_backends_language_and_a_frontends_are_two_facts(default_engine: tuple[MemoryEngine, ManualClock]) -> None:
    engine, clock = default_engine
    backend, frontend = "Our backend is written in Python.", "Our frontend is written in TypeScript."
    _write(engine, clock, "a", backend, frontend)
    assert sorted(m.content for m in engine.list(namespace="a")) == sorted([backend, frontend])
    _write(engine, clock, "b", "我们的后端用 Go 写的。", "我们的前端用 Go 重写了。")
    assert len(engine.list(namespace="b")) == 2
    _write(engine, clock, "c", backend, "Our backend is now written in Rust.")  # the same part: an update
    assert [m.content for m in engine.list(namespace="c")] == ["Our backend is now written in Rust."]


def test_a_thing_kept_with_its_owner_retires_it_where_the_owner_is_named_too(
    default_engine: tuple[MemoryEngine, ManualClock],
) -> None:
    """上班的地铁 keeps 上班 as its owner: it is 地铁 of a memory that says 上班 too, of no other."""
    assert retires("我每天坐地铁上班。", "现在把上班的地铁换成了自行车。") == {"地铁"}
    assert not retires("周末我坐地铁去公园。", "现在把上班的地铁换成了自行车。")  # another trip's subway
    assert not retires("我妹妹的汽车是丰田。", "把我的汽车换成了电动车。")  # 我 names no owner
    engine, clock = default_engine
    _write(engine, clock, "u", "我每天坐地铁上班。", "现在把上班的地铁换成了自行车。")
    assert [m.content for m in engine.list(namespace="u")] == ["现在把上班的地铁换成了自行车。"]


def test_a_persons_thing_retires_it_only_where_the_memory_says_it_is_theirs(
    default_engine: tuple[MemoryEngine, ManualClock],
) -> None:
    """女儿的钢琴 is her piano: "我女儿在学钢琴" names her and piano but speaks of lessons, which go on."""
    replaced = "把女儿的钢琴换成了新的。"
    assert not retires("我女儿在学钢琴。", replaced)
    assert retires("我女儿有一架旧钢琴。", replaced) == {"钢琴"}
    assert "钢琴" in retires("我女儿的钢琴是二手的。", replaced)
    engine, clock = default_engine
    _write(engine, clock, "a", "我女儿在学钢琴。", replaced)
    assert len(engine.list(namespace="a")) == 2
    _write(engine, clock, "b", "我女儿有一架旧钢琴。", replaced)
    assert [m.content for m in engine.list(namespace="b")] == [replaced]


def test_two_services_prices_are_two_facts(default_engine: tuple[MemoryEngine, ManualClock]) -> None:
    engine, clock = default_engine
    gym, streaming = "My gym membership costs 30 pounds a month.", "My Netflix subscription costs 12 a month."
    _write(engine, clock, "u", gym, streaming, "The gym put its prices up, I pay 38 a month now.")
    current = sorted(m.content for m in engine.list(namespace="u"))
    assert current == [streaming, "The gym put its prices up, I pay 38 a month now."]


def test_a_kind_of_plan_names_no_service(default_engine: tuple[MemoryEngine, ManualClock]) -> None:
    """ "family" is no service: a family phone plan's price and a family gym membership's are two facts."""
    engine, clock = default_engine
    phone, gym = "Our family plan costs 30 euros a month.", "Our family membership costs 60 euros a month."
    _write(engine, clock, "a", phone, gym)
    assert sorted(m.content for m in engine.list(namespace="a")) == sorted([phone, gym])
    _write(engine, clock, "b", phone, "Our family plan now costs 35 euros a month.")  # the same plan: an update
    assert [m.content for m in engine.list(namespace="b")] == ["Our family plan now costs 35 euros a month."]
    netflix, spotify = "My Netflix family plan costs 18 euros.", "My Spotify family plan costs 17 euros."
    assert detect_slot(netflix) == "user:price of netflix" != detect_slot(spotify)


def test_two_pets_names_are_two_facts(default_engine: tuple[MemoryEngine, ManualClock]) -> None:
    engine, clock = default_engine
    _write(engine, clock, "u", "Our dog is called Rex.", "Our cat is called Tom.", "We renamed the cat Whiskers.")
    current = sorted(m.content for m in engine.list(namespace="u"))
    assert current == ["Our dog is called Rex.", "We renamed the cat Whiskers."]


def test_a_change_both_memories_keep_ranks_first_and_the_context_marks_the_earlier(
    default_engine: tuple[MemoryEngine, ManualClock],
) -> None:
    engine, clock = default_engine
    old, new = _write(
        engine, clock, "u", "Our CI runs on Jenkins.", "Now our CI uses GitHub Actions, Jenkins kept breaking."
    )
    # no rule names CI, nor says Jenkins is gone ("from Jenkins to …" would): both stay current
    assert engine.get(old.id, namespace="u").status is Status.ACTIVE
    result = engine.recall("What does our CI run on?", namespace="u")
    assert [r.id for r in result.records] == [new.id, old.id]
    assert f'"Our CI runs on Jenkins." [earlier: changed on {new.occurred_at.date().isoformat()}]' in result.context
    assert 'kept breaking." [' not in result.context
    # another person's value is no change of the user's, and is not marked
    _write(engine, clock, "b", "My brother lives in Lyon.", "I live in Paris now.")
    brother = engine.recall("Where does my brother live?", namespace="b")
    assert "Lyon" in brother.records[0].content and "[earlier" not in brother.context


def test_a_chinese_place_is_a_thing_both_name(default_engine: tuple[MemoryEngine, ManualClock]) -> None:
    # no capital shows 云南 is a name: the pack's places do, so the cancel ranks above the plan
    engine, clock = default_engine
    plan, cancel = _write(engine, clock, "u", "我们五月去云南玩一周。", "云南的行程取消了。")
    assert "yunnan" in values_of("云南的行程取消了。") and not values_of("东西藏在柜子里。")  # 西藏 is left out
    result = engine.recall("我们还去云南吗？", namespace="u")
    assert [r.id for r in result.records][:2] == [cancel.id, plan.id]
    assert f"[earlier: changed on {cancel.occurred_at.date().isoformat()}]" in result.context


def test_chinese_numerals_with_a_dropped_unit_read_as_amounts() -> None:
    assert values_of("我的房租是每月三千二。") == {"3200"}
    assert "3500" in values_of("房东涨价了，下个月起每月三千五。")
    assert values_of("两万五") == {"25000"} and values_of("一百五十块钱") >= {"150"}
    assert values_of("三千零二") == {"3002"} and values_of("三个人") == {"3"}


# -- hindsight bench judgement -----------------------------------------------------------------


def _case(kind: str, statements: list[str], question: str, current: str) -> Case:
    return Case(set="own", kind=kind, language="en", statements=statements, question=question, current=current)  # type: ignore[arg-type]


def _record(content: str, **fields: object) -> MemoryRecord:
    return MemoryRecord(namespace="n", content=content, **fields)  # type: ignore[arg-type]


def test_the_scoring_fails_what_it_should() -> None:
    update = _case("update", ["I live in Leeds.", "Relocated to York."], "Where do I live?", "York")
    old, new = _record("I live in Leeds."), _record("Relocated to York.")
    assert score_case(update, [new], [new]) == (True, "")
    assert score_case(update, [new, old], [new, old]) == (False, "the earlier statement is still current")
    assert score_case(update, [old, new], [new])[0] is False
    assert score_case(update, [], [new]) == (False, "recalled nothing")
    paraphrase = _case("paraphrase", ["Short answers, please.", "Keep it short."], "How long?", "short")
    assert score_case(paraphrase, [_record("Keep it short.")], [])[0]
    assert score_case(paraphrase, [_record("Keep it short."), _record("Short answers, please.")], [])[0] is False
    habit = _case("habit", ["Swam tonight.", "Swam again."], "Do I do any sport?", "swim")
    assert score_case(habit, [_record("Swam tonight.")], [_record("Swam tonight.")]) == (
        False,
        "no memory of the habit",
    )
    made = _record("Done on 2 days: Swam tonight.", tier=Tier.SEMANTIC, source=Source(memory_ids=["a", "b"]))
    assert score_case(habit, [made], [made]) == (True, "")
    assert score_case(habit, [_record("Swam tonight."), made], [made])[0] is False


def test_the_scripted_judge_answers_as_a_good_model_would() -> None:
    cases = [
        _case("update", ["Our CI runs on Jenkins.", "We moved CI to GitHub Actions."], "CI?", "GitHub"),
        _case("paraphrase", ["Short answers, please.", "Keep it short."], "How long?", "short"),
    ]
    script = JudgementScript(cases)
    prompt = "NEW: We moved CI to GitHub Actions.\nSTORED:\n1. Our CI runs on Jenkins.\n2. Keep it short."
    assert script.judge(prompt) == {"verdicts": ["keep_new", "keep_both"]}
    assert script.distil("1. Short answers, please.\n2. Keep it short.")["content"] == "Short answers, please."
    assert script.distil("1. Short answers, please.\n2. Our CI runs on Jenkins.") == {"same_fact": False}
    with pytest.raises(ValueError, match="history or a script"):
        ScriptedLLMServer()


def test_the_packaged_cases_cover_every_kind_and_language() -> None:
    cases = load_cases()
    assert {c.kind for c in cases} == {"update", "cancel", "kept_apart", "paraphrase", "habit", "contrast"}
    assert {c.language for c in cases} == {"en", "zh", "mixed"} and {c.set for c in cases} == {
        "issue",
        "own",
        "heldout",
        "fresh",
    }
    heldout = [c for c in cases if c.set == "heldout"]
    assert {c.kind for c in heldout} == {"paraphrase", "contrast"} and len(heldout) == 32
    fresh = Counter((c.kind, c.language) for c in cases if c.set == "fresh")
    assert fresh == {(kind, language): n for kind in ("paraphrase", "contrast") for language, n in LANGUAGES.items()}


LANGUAGES = {"en": 12, "zh": 8, "mixed": 4}  # the fresh set's cases of each kind, by language


def test_a_malformed_case_file_is_refused_with_its_name(tmp_path: Path) -> None:
    bad = tmp_path / "cases.toml"
    bad.write_text('doc = "x"\n[[case]]\nkind = "guess"\n', encoding="utf-8")
    with pytest.raises(ValueError, match=r"cases\.toml: not a judgement case file"):
        load_cases(bad)
    result = CliRunner().invoke(app, ["bench", "judgement", "--llm", "none", "--cases", str(bad)])
    assert result.exit_code == 2 and "not a judgement case file" in result.output
    assert CliRunner().invoke(app, ["bench", "judgement", "--llm", "sometimes"]).exit_code == 2


@pytest.mark.parametrize("mode", ["none", "scripted"])
def test_the_benchmark_runs_cases_offline_and_through_the_scripted_server(tmp_path: Path, mode: str) -> None:
    cases = [c for c in load_cases() if c.question in ("Where do I live?", "Where does my brother live?")]
    result = run_mode(mode, cases, store=tmp_path / mode)
    assert result["total"] == len(cases) == 3
    assert {c["question"] for c in result["cases"] if c["passed"]} >= {"Where does my brother live?"}
    if mode == "scripted":
        assert result["llm_server"]["requests"].get("update_judgement", 0) >= 1
    table = judgement_table({"modes": {mode: result}})
    assert table.splitlines()[-1].startswith(f"| all | {result['passed']}/3")
    json.dumps(result)  # what --out writes


# -- habits: repeated episodes of one activity -------------------------------------------------

SWIMS = [
    "Swam 40 lengths at the leisure centre pool tonight.",
    "Back at the pool after work, 36 lengths.",
    "Another swim this evening, 42 lengths at the leisure centre.",
    "Pool again tonight, managed 45 lengths.",
]


def _episodes(engine: MemoryEngine, clock: ManualClock, namespace: str, texts: list[str]) -> list[MemoryRecord]:
    written = []
    start = clock.now() + timedelta(days=1)
    for n, text in enumerate(texts):
        at = start + timedelta(days=2 * n)
        clock.set(at)
        written += engine.store(text, namespace=namespace, session_id=f"{namespace}-{n}", occurred_at=at).stored
    return written


def test_four_evenings_at_the_pool_become_one_memory_of_the_habit(
    default_engine: tuple[MemoryEngine, ManualClock],
) -> None:
    engine, clock = default_engine
    swims = _episodes(engine, clock, "u", SWIMS)
    report = engine.consolidate("u")
    assert len(report.created) == 1 and report.created[0].distilled_by == "rules"
    habit = engine.get(str(report.created[0].id), namespace="u")
    assert habit.content.startswith("Done on 4 days from ") and "about every 2 days" in habit.content
    assert SWIMS[0] in habit.content and SWIMS[-1] in habit.content  # the first and the latest, as said
    assert set(habit.source.memory_ids) == {s.id for s in swims}
    assert all(engine.get(s.id, namespace="u").consolidated_into == habit.id for s in swims)
    recalled = engine.recall("Do I do any sport?", namespace="u").records
    assert recalled[0].id == habit.id and not {s.id for s in swims} & {r.id for r in recalled}
    assert engine.consolidate("u").created == []  # nothing new: nothing added
    # one more evening reinforces the habit, whose text counts it
    _episodes(engine, clock, "u", ["Swam 50 lengths at the pool tonight, a new record."])
    again = engine.consolidate("u")
    assert again.created == [] and [f.id for f in again.reinforced] == [habit.id]
    assert engine.get(habit.id, namespace="u").content.startswith("Done on 5 days from ")
    assert engine.recall("Do I do any sport?", namespace="u").records[0].id == habit.id


def test_different_activities_and_a_denied_one_make_no_habit(default_engine: tuple[MemoryEngine, ManualClock]) -> None:
    engine, clock = default_engine
    _episodes(
        engine, clock, "a", ["Had dinner at Nando's with Priya.", "Fixed the brakes on my bike.", "Watched Dune."]
    )
    assert engine.consolidate("a").created == []
    _episodes(
        engine,
        clock,
        "b",
        ["Went for a run along the river this morning.", "Didn't go for a run this morning.", "Ran along the river."],
    )
    assert engine.consolidate("b").created == []  # two runs, and a day without one


def test_a_scripted_llm_distils_the_habit_and_the_counts_stay_the_rules(tmp_path: Path) -> None:
    habit = next(c for c in load_cases() if c.kind == "habit" and c.language == "en")
    result = run_mode("scripted", [habit], store=tmp_path / "s")
    assert result["passed"] == 1, result["cases"]
    assert result["llm_server"]["requests"].get("distillation", 0) >= 1
    first = result["cases"][0]["recalled"][0]
    assert first.startswith("Done on 4 days from ") and first.endswith(str(habit.distilled))


def _hit(content: str, day: int, **fields: object) -> RecallHit:
    record = _record(content, occurred_at=T0 + timedelta(days=day), **fields)
    return RecallHit(record=record, score=1.0 - day / 100, relevance=1.0)


def test_current_first_needs_a_cue_a_shared_thing_and_closeness() -> None:
    old, new = _hit("Our CI runs on Jenkins.", 0), _hit("Now our CI uses GitHub Actions instead of Jenkins.", 9)
    ordered, changed = current_first([old, new])
    assert [h.record.content for h in ordered] == [new.record.content, old.record.content]
    assert [h.score for h in ordered] == [old.score, old.score]  # moved above it, it ranks as it did
    assert changed == {old.record.id: new.record.occurred_at.date()}
    assert current_first([old, new], lambda a, b: 0.3, floor=0.675) == ([old, new], {})  # not close enough
    no_cue = _hit("Our CI builds with Jenkins pipelines.", 9)
    assert current_first([old, no_cue]) == ([old, no_cue], {})
    earlier_said_later = _hit("Now our CI uses GitHub Actions instead of Jenkins.", -1)
    assert current_first([old, earlier_said_later])[1] == {}  # the one announcing the change is older


def test_current_first_leaves_a_chat_alone() -> None:
    # a name three turns share is whom they speak to, not what changed; a speaker is no value either
    turns = [
        _hit("Melanie: Thanks, Caroline! These are for running.", 0, entities=["Melanie"]),
        _hit("Melanie: Wow, Caroline, your group sounds awesome!", 1, entities=["Melanie"]),
        _hit("Melanie: Hey Caroline! Since we last spoke, I took my kids to the park.", 2, entities=["Melanie"]),
    ]
    assert current_first(turns) == (turns, {})


def test_only_a_slot_a_rule_names_stands_for_the_question() -> None:
    # the one-slot path: a change cue, a replaced value, closer than halfway, under the update cosine
    old_rent = _record("My rent is 900 a month.", slot="user:rent")
    old_family = _record("My family is 4 people.", slot="user:family")  # a generic "my X is" slot
    new = _record("The landlord raised it, from June it is 950 a month.")
    assert is_named("user:rent") and not is_named("user:family") and is_named("user:name of parrot")
    assert rule_verdict(old_rent, new, 0.8, 0.85, related=0.675) is Verdict.KEEP_NEW
    assert rule_verdict(old_family, new, 0.8, 0.85, related=0.675) is Verdict.KEEP_BOTH
    assert rule_verdict(old_rent, new, 0.6, 0.85, related=0.675) is Verdict.KEEP_BOTH  # not close enough
    assert rule_verdict(old_rent, new, 0.8, 0.85) is Verdict.KEEP_BOTH  # no one-slot bar given


def test_a_slot_on_one_side_needs_a_shared_topic_not_only_closeness() -> None:
    # e5 puts one speaker's unrelated turns this close; the speaker's name is no shared topic
    chat = _record("孙浩然: 哇谢谢！你去的是东京吗？", entities=["孙浩然"])
    news = _record(
        "孙浩然: 跟你说个大新闻，我要跳槽了。上海一家叫星河数据的公司给了我offer，薪资涨了三成。",
        slot="user:employer",
        entities=["孙浩然"],
    )
    assert not share_a_topic(chat, news)
    assert rule_verdict(chat, news, 0.945, 0.97, related=0.935) is Verdict.KEEP_BOTH
    rent = _record("我的房租是每月三千二。", slot="user:rent")
    raised = _record("房东涨价了，下个月起每月三千五。")
    assert share_a_topic(rent, raised)  # 每月
    assert rule_verdict(rent, raised, 0.955, 0.97, related=0.935) is Verdict.KEEP_NEW
