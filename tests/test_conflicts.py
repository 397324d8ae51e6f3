"""Conflict rules (core/language/slots.py): which slot a statement sets, and whether it announces a change."""

from __future__ import annotations

import pytest

from hindsight_integrations.core.language.slots import change_cue, detect_slot


@pytest.mark.parametrize(
    ("old", "new", "slot"),
    [
        ("I work at Acme", "I started a new job at Globex", "user:employer"),
        ("I work at Acme", "I joined Globex last week", "user:employer"),
        ("I work at Acme", "I'm now at Globex", "user:employer"),
        ("I work at Acme", "I got hired by Initech", "user:employer"),
        ("I work at Acme", "I left Acme", "user:employer"),
        ("我在腾讯上班", "我换了工作", "user:employer"),
        ("I work for Acme", "我在阿里巴巴工作", "user:employer"),
        ("My phone number is 555-0100", "I have a new phone number: 555-0199", "user:phone"),
        ("My phone number is 555-0100", "My mobile number is now 555-0142", "user:phone"),
        ("My cell is 555-0100", "call me at 555-0199", "user:phone"),
        ("我的电话是13800138000", "我的手机号换成了13900139000", "user:phone"),
        ("I eat meat.", "I'm vegetarian now", "user:diet"),
        ("I'm vegetarian now", "I went vegan", "user:diet"),
        ("I went vegan", "I eat meat again", "user:diet"),
        ("我吃素", "我现在不吃素了", "user:diet"),
        ("The deadline is Friday", "The deadline moved to next Tuesday", "project:deadline"),
        (
            "Farah said the onboarding guide for project Cobalt is due on Tuesday.",
            "Farah said the onboarding guide for project Cobalt is now due on Sunday.",
            "project cobalt:deadline of onboarding guide",
        ),
        ("The due date is May 3", "The due date was pushed back to May 10", "project:deadline"),
        ("截止日期是周五", "截止日期改到下周五", "project:deadline"),
        ("I live in Beijing near the university.", "I moved to Shanghai last month.", "user:location"),
        ("我住在北京", "我上个月搬到上海了", "user:location"),
        ("我住在北京", "我去年搬去了深圳", "user:location"),
        ("我住在北京", "我现在在上海住", "user:location"),
        ("My city is Berlin", "I'm based in Lisbon now", "user:location"),
        ("Our budget is 3000", "Update: the budget is now 5000", "project:budget"),
        ("预算是三万", "预算改成五万", "project:budget"),
        ("my email is a@b.com", "My new e-mail address is x@y.org", "user:email"),
        ("My address is 1 Main St", "Our new address is 9 Elm Road", "user:address"),
        ("My manager is Sam", "Lee is now my boss", "user:manager"),
        ("I'm on the payments team", "I moved to the platform team", "user:team"),
        ("my role is staff engineer", "I got promoted to principal", "user:role"),
        ("my job title is analyst", "My title is now senior analyst", "user:role"),
        ("I drive a Tesla", "I bought a new car", "user:car"),
        ("My wife is Anna", "My partner is Sam", "user:partner"),
        (
            "Our project database is MySQL 8.",
            "Correction: the project actually uses PostgreSQL, not MySQL.",
            "project:database",
        ),
        ("my favourite colour is blue", "My favorite color is now green", "user:favourite_colour"),
        ("My name is Ana", "Call me Annie", "user:name"),
    ],
)
def test_old_and_new_share_a_slot(old: str, new: str, slot: str) -> None:
    assert detect_slot(old) == slot
    assert detect_slot(new) == slot


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("I like red sports cars.", "I hate red clothes, never suggest them."),
        ("my favourite colour is blue", "my favourite food is sushi"),
        ("I work at Acme", "I live in Beijing"),
        ("My phone number is 555-0100", "my email is a@b.com"),
        ("The deadline is Friday", "Our budget is 3000"),
        ("I'm on the payments team", "I work at Acme"),
        ("My manager is Sam", "My wife is Anna"),
        ("我住在北京", "我在北京工作"),
    ],
)
def test_different_attributes_do_not_share_a_slot(a: str, b: str) -> None:
    slot_a, slot_b = detect_slot(a), detect_slot(b)
    assert slot_a is None or slot_b is None or slot_a != slot_b


@pytest.mark.parametrize(
    "text",
    [
        "I like red sports cars.",
        "I hate red clothes, never suggest them.",
        "I prefer concise answers with code examples.",
        "I have a meeting with the design team tomorrow at 10am.",
        "My guess is that it will rain.",
        "My phone died yesterday.",
        "The release train leaves every second Tuesday.",
        "I eat chicken for dinner tonight.",
        "好的",
    ],
)
def test_no_slot(text: str) -> None:
    assert detect_slot(text) is None


@pytest.mark.parametrize(
    "text",
    [
        "I'm vegetarian now",
        "I have a new phone number: 555-0199",
        "The deadline moved to next Tuesday",
        "We moved the launch back to June",
        "The team switched to Rust",
        "It changed to blue",
        "I no longer drink coffee",
        "I don't drink coffee anymore",
        "The meeting is cancelled",
        "I eat meat again",
        "Use tabs instead",
        "Update: the budget is now 5000",
        "From now on answer in French",
        "I started a new job at Globex",
        "I left Acme",
        "预算改成五万",
        "我的手机号换成了13900139000",
        "我上个月搬到上海了",
        "我去年搬去了深圳",
        "我换了工作",
        "我不再吃肉",
        "我现在在上海住",
        "我已经不在那里工作了",
        "会议取消了",
        "发布推迟到下周",
        "截止日期提前到周三",
    ],
)
def test_change_cue(text: str) -> None:
    assert change_cue(text)


@pytest.mark.parametrize(
    "text",
    [
        "I live in New York.",
        "I work at Acme",
        "The deadline is Friday",
        "My phone number is 555-0100",
        "我住在北京",
        "I like red sports cars.",
        "Happy New Year!",
    ],
)
def test_no_change_cue(text: str) -> None:
    assert not change_cue(text)


@pytest.mark.parametrize(
    ("text", "slot"),
    [
        ("Priya's phone number is 555-0300.", "priya:phone"),
        ("My sister's email is sis@example.org.", "sister:email"),
        ("Mateo changed his phone number again, to 555-0199.", "mateo:phone"),
        ("Mateo has a new phone number: 555-0142.", "mateo:phone"),
        ("Caroline: Melanie's email is mel@example.org", "melanie:email"),
        ("Caroline: my new phone number is 555-0101", "user:phone"),
        ("I have a new phone number: 555-0199.", "user:phone"),
        ("New phone number: 555-0199", "user:phone"),
    ],
)
def test_someone_elses_attribute_is_their_slot(text: str, slot: str) -> None:
    assert detect_slot(text) == slot


@pytest.mark.parametrize("text", ["The demo day in Cusco ran over budget by 20 percent.", "We came in under budget."])
def test_how_an_event_went_against_its_budget_sets_no_budget(text: str) -> None:
    assert detect_slot(text) is None


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("Yusuf said the launch checklist for project Ember is due on Friday.",
         "Yusuf said the quarterly report for project Lumen is due on Sunday."),
        ("Yusuf said the launch checklist for project Ember is due on Friday.",
         "Yusuf said the design doc for project Ember is due on Sunday."),
        ("We use MySQL for the Falcon project database.", "We switched the Ember project database to PostgreSQL."),
    ],
)  # fmt: skip
def test_different_projects_or_deliverables_are_different_slots(a: str, b: str) -> None:
    assert detect_slot(a) and detect_slot(b) and detect_slot(a) != detect_slot(b)


def test_a_named_deliverable_keeps_its_own_deadline_slot() -> None:
    assert detect_slot("The deadline for the report is Friday.") == "project:deadline of report"
    assert detect_slot("The report deadline moved to next Tuesday.") == "project:deadline of report"
    assert detect_slot("The deadline for project Ember moved to Tuesday.") == "project ember:deadline"
