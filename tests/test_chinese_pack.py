"""The Chinese pack does for a Chinese user what the English pack does: whose fact a statement is,
what the write filter keeps and as what, change and correction cues, time words, sameness."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from hindsight_integrations import MemoryEngine
from hindsight_integrations.core.language.sameness import says_the_same
from hindsight_integrations.core.language.slots import change_cue, detect_slot
from hindsight_integrations.core.language.speakers import speaker_of, spoken
from hindsight_integrations.core.language.values import values_of
from hindsight_integrations.core.model.records import Kind, Status, Tier
from hindsight_integrations.core.write.admission import assess, event_ttl

T0 = datetime(2024, 3, 4, 19, 0, tzinfo=UTC)


def _say(engine: MemoryEngine, text: str, day: int):  # type: ignore[no-untyped-def]
    return engine.record_turn(
        text, session_id=f"day-{day}", namespace="u", occurred_at=T0 + timedelta(days=day), speaker="Li"
    ).stored


@pytest.mark.parametrize(
    "text",
    ["你好", "早上好", "晚上好", "谢谢", "谢谢啦", "好的", "嗯嗯", "收到", "没问题", "哈哈", "好吧", "行", "OK了",
     "好的，谢谢！", "辛苦了", "好嘞", "太好了", "懂了，谢谢"],
)  # fmt: skip
def test_chinese_greetings_and_acknowledgements_are_not_remembered(text: str) -> None:
    decision = assess(text)
    assert not decision.remember and decision.kind is Kind.TURN and "greeting" in decision.reason


@pytest.mark.parametrize(
    "text",
    ["你喜欢什么框架？", "今天天气怎么样", "帮我写一首诗", "给我讲讲北京", "请问几点了", "帮我写一个排序函数。",
     "帮我写一封邮件，发给老板的时候抄送我。", "帮我回忆一下我们第一次见面的时候"],
)  # fmt: skip
def test_chinese_questions_and_one_off_requests_are_conversation_turns_only(text: str) -> None:
    decision = assess(text)
    assert not decision.remember and decision.kind is Kind.TURN


@pytest.mark.parametrize(
    ("text", "kind", "importance"),
    [
        ("我喜欢喝绿茶", Kind.PREFERENCE, 0.9),
        ("我更喜欢简短的回答", Kind.PREFERENCE, 0.9),
        ("请总是用中文回答", Kind.PREFERENCE, 0.9),
        ("只用中文回答", Kind.PREFERENCE, 0.9),
        ("不要加总结", Kind.PREFERENCE, 0.9),
        ("帮我把回答以后都写成中文", Kind.PREFERENCE, 0.9),  # a standing qualifier: an instruction
        # said for whenever it is done (…的时候), a request is a standing instruction too
        ("帮我做 code review 的时候请重点指出性能问题。", Kind.PREFERENCE, 0.9),
        ("帮我写 unit test 的时候记得覆盖 edge case。", Kind.PREFERENCE, 0.9),
        ("帮我写代码的时候请加上类型注解。", Kind.PREFERENCE, 0.9),
        ("帮我写代码时请加上类型注解。", Kind.PREFERENCE, 0.9),
        ("我决定用React", Kind.CONTEXT, 0.8),
        ("最后敲定了方案B", Kind.CONTEXT, 0.8),
        ("下周三开会", Kind.EVENT, 0.7),
        ("后天要去机场", Kind.EVENT, 0.7),
        ("报告最晚周五交", Kind.CONTEXT, 0.9),  # a bare weekday marks no event (chats say 周末 of the past): a deadline
        ("下周五交报告", Kind.EVENT, 0.7),  # a weekday ahead: time-bound first, as in English
        ("预算不超过五千块", Kind.CONTEXT, 0.9),
        ("我习惯早起", Kind.PREFERENCE, 0.8),
        ("我一般用vim", Kind.PREFERENCE, 0.8),
        ("我有两个孩子", Kind.CONTEXT, 0.8),
        ("说错了，应该是周四", Kind.CORRECTION, 0.9),
        ("我已经不喝咖啡了", Kind.CORRECTION, 0.9),
    ],
)
def test_chinese_statements_get_the_kind_and_importance_english_ones_get(
    text: str, kind: Kind, importance: float
) -> None:
    decision = assess(text)
    assert decision.remember and decision.kind is kind and decision.importance == pytest.approx(importance)


@pytest.mark.parametrize(
    ("text", "slot"),
    [
        ("我住在上海。", "user:location"),
        ("我妹妹住在杭州。", "妹妹:location"),
        ("我妈搬到北京了", "妈妈:location"),  # 我妈 and 我母亲 are one person
        ("我母亲搬到北京了", "妈妈:location"),
        ("我们公司搬到杭州了", "公司:location"),
        ("我们家在杭州", None),
        ("我妹妹的手机号是13800138000", "妹妹:phone"),
        ("小王的手机号是13800138000", "小王:phone"),
        ("他换了手机号13900139000", "他:phone"),
        ("我的手机号是13800138000", "user:phone"),
        ("我们项目用MySQL。", "project:database"),  # no space before the name
        ("Falcon项目的截止日期是周五", "project falcon:deadline"),
        ("报告的截止日期是周五", "project:deadline of 报告"),
    ],
)
def test_whose_fact_a_chinese_statement_is(text: str, slot: str | None) -> None:
    assert detect_slot(text) == slot


@pytest.mark.parametrize(
    ("text", "cue"),
    [("我换成了安卓手机", True), ("会议取消了", True), ("其实是周三", True), ("我已经不喝咖啡了", True),
     ("更正：项目用的是PostgreSQL", True), ("我现在是经理", True), ("会议在周三", False), ("我住在上海", False)],
)  # fmt: skip
def test_chinese_change_cues(text: str, cue: bool) -> None:
    assert change_cue(text) is cue


@pytest.mark.parametrize(
    ("text", "value"),
    [("昨天", "yesterday"), ("前天", "day before yesterday"), ("明天", "tomorrow"), ("后天", "day after tomorrow"),
     ("上周", "last week"), ("下周", "next week"), ("上个月", "last month"), ("下个月", "next month"),
     ("去年", "last year"), ("今年", "this year"), ("明年", "next year"), ("周三", "wednesday"),
     ("下周五", "next friday")],
)  # fmt: skip
def test_chinese_time_words_read_as_the_english_ones(text: str, value: str) -> None:
    assert value in values_of(f"我{text}去北京")
    english = {"昨天": "yesterday", "下周五": "next Friday", "上个月": "last month"}
    if text in english:
        assert value in values_of(f"I fly to Berlin {english[text]}")


@pytest.mark.parametrize(
    ("text", "days"), [("今晚吃火锅", 2), ("明天开会", 3), ("后天出发", 3), ("周三开会", 8), ("下星期五出差", 15)]
)
def test_chinese_events_expire_like_english_ones(text: str, days: int) -> None:
    assert event_ttl(text) == days * 86400


def test_chinese_sameness_reads_likes_as_one_and_relatives_as_other_people() -> None:
    assert says_the_same("我喜欢绿茶", "我更喜欢绿茶")
    assert says_the_same("我喜欢绿茶", "我爱绿茶")
    assert not says_the_same("我喜欢绿茶", "我讨厌绿茶")
    assert not says_the_same("我住在杭州", "我妹妹住在杭州")
    assert not says_the_same("我住在杭州", "他住在杭州")


def test_a_greeting_is_not_stored_and_a_preference_is_a_semantic_preference(engine: MemoryEngine) -> None:
    assert _say(engine, "你好", 0).stored == []
    assert _say(engine, "好的，谢谢！", 0).stored == []
    stored = _say(engine, "我喜欢喝绿茶", 0).stored
    assert len(stored) == 1 and stored[0].kind is Kind.PREFERENCE and stored[0].tier is Tier.SEMANTIC


def test_moving_supersedes_where_i_live(engine: MemoryEngine) -> None:
    old = _say(engine, "我住在上海。", 0).stored[0]
    new = _say(engine, "我搬到杭州了。", 30)
    assert new.superseded == [old.id]
    assert engine.get(old.id, namespace="u").status is Status.SUPERSEDED


def test_my_sister_living_elsewhere_supersedes_nothing_of_mine(engine: MemoryEngine) -> None:
    mine = _say(engine, "我住在上海。", 0).stored[0]
    sister = _say(engine, "我妹妹住在杭州。", 1)
    assert sister.superseded == [] and sister.stored[0].slot == "妹妹:location"
    assert engine.get(mine.id, namespace="u").status is Status.ACTIVE
    assert _say(engine, "我搬到杭州了。", 2).superseded == [mine.id]  # and mine still updates


def test_my_sisters_phone_number_supersedes_nothing_of_mine(engine: MemoryEngine) -> None:
    mine = _say(engine, "我的手机号是13800138000", 0).stored[0]
    assert _say(engine, "我妹妹的手机号是13900139000", 1).superseded == []
    assert engine.get(mine.id, namespace="u").status is Status.ACTIVE


def test_a_chinese_correction_supersedes_the_project_database(engine: MemoryEngine) -> None:
    old = _say(engine, "我们项目用MySQL。", 0).stored[0]
    fixed = _say(engine, "更正：项目用的是 PostgreSQL，不是 MySQL。", 1)
    assert fixed.superseded == [old.id]
    assert fixed.stored[0].kind is Kind.CORRECTION and fixed.stored[0].slot == "project:database"


@pytest.mark.parametrize(
    ("text", "speaker", "said"),
    [
        ("孙浩然: 哇谢谢！你去的是东京吗？", "孙浩然", "哇谢谢！你去的是东京吗？"),
        ("林晓雯：我下周去上海出差。", "林晓雯", "我下周去上海出差。"),
        ("备注：明天交房租。", None, "备注：明天交房租。"),  # a label, not a name
        ("我说: 明天见。", None, "我说: 明天见。"),  # a pronoun opens it: someone speaking, not a label
        ("我们说好了: 明天见。", None, "我们说好了: 明天见。"),
    ],
)
def test_a_chinese_name_label_names_the_speaker(text: str, speaker: str | None, said: str) -> None:
    assert speaker_of(text) == speaker
    assert spoken(text) == said


def test_a_chinese_transcript_line_stored_gets_its_speaker_as_an_entity(engine: MemoryEngine) -> None:
    """``store_memory`` of "孙浩然：…" gets 孙浩然 as an entity, as "Caroline: …" gets Caroline."""
    stored = engine.store("孙浩然：我下周去上海出差，住在外滩附近。", namespace="zh")
    assert engine.get(stored.ids[0], namespace="zh").entities == ["孙浩然"]
    english = engine.store("Caroline: I'm off to Lisbon next week for work.", namespace="en")
    assert engine.get(english.ids[0], namespace="en").entities == ["Caroline"]
