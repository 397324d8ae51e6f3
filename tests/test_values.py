"""Values a statement carries (core/language/values.py): distinct facts never look the same to dedup."""

from __future__ import annotations

import pytest

from hindsight_integrations.core.language.values import differing_values, same_values, values_of


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Meeting with Dana on Tuesday at 3pm", {"dana", "tuesday", "15:00"}),
        ("invoice INV-1001 total was 250 euros", {"inv-1001", "250", "eur"}),
        ("The total is 1,000 dollars", {"1000", "usd"}),
        ("It weighs 3.50 kg", {"3.5"}),
        ("Price: $250", {"250", "usd"}),
        ("Price: €250", {"250", "eur"}),
        ("价格是250元", {"250", "cny"}),
        ("预算是1.5万元", {"15000", "cny"}),
        ("We have 5k users", {"5000"}),
        ("Due 2024-05-03", {"2024-05-03"}),
        ("due on 3 May", {"05-03"}),
        ("due on May 3rd", {"05-03"}),
        ("due on 5/3", {"05-03"}),
        ("3月5日交", {"03-05"}),
        ("三月五号交", {"03-05"}),
        ("at 15:00", {"15:00"}),
        ("下午三点开会", {"15:00"}),
        ("十二点半吃饭", {"12:30"}),
        ("lunch at noon", {"12:00"}),
        ("on Tue", {"tuesday"}),
        ("周二", {"tuesday"}),
        ("星期二", {"tuesday"}),
        ("礼拜二", {"tuesday"}),
        ("下周二见", {"next tuesday"}),
        ("see you next Tuesday", {"next tuesday"}),
        ("明天", {"tomorrow"}),
        ("下周再说", {"next week"}),
        ("see you next week", {"next week"}),
        ("release v2.3.1 with ABC123", {"v2.3.1", "abc123"}),
        ("mail Bob.Smith@Example.com", {"bob.smith@example.com"}),
        ("see https://www.Example.com/docs/", {"example.com/docs"}),
        ("call 555-0100", {"5550100"}),
        ("call +1 (555) 010-0199", {"15550100199"}),
        ("I live in New York with Dana Smith's dog.", {"new york", "dana smith"}),
        ("我住在北京", {"beijing"}),
        ("我有三个孩子", {"3"}),
        ("我有十二本书", {"12"}),
        ("快一点，一起走", set()),
        ("I may go in May.", {"may"}),
        ("Meeting tomorrow about the plan", {"tomorrow"}),
        ("from 2023-2024, 10-20 people", {"2023", "2024", "10", "20"}),
    ],
)
def test_values_of(text: str, expected: set[str]) -> None:
    assert values_of(text) == frozenset(expected)


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("Meeting with Dana on Tuesday at 3pm", "Meeting with Dana on Tuesday at 3 p.m."),
        ("Meeting with Dana on Tuesday at 3pm", "On Tuesday at 15:00 meeting with Dana"),
        ("The total was 1,000 euros", "The total was 1000 EUR"),
        ("The total was €250", "The total was 250 euros"),
        ("Pay $250", "Pay 250 dollars"),
        ("Due 3 May", "Due May 3rd"),
        ("Due 3 May", "Due 5/3"),
        ("周二开会", "星期二开会"),
        ("周二开会", "The meeting is on Tuesday"),
        ("明天见", "See you tomorrow"),
        ("下午三点", "at 3pm"),
        ("I prefer dark mode in every editor I use.", "I prefer dark mode in every editor that I use."),
        ("hello there", "好的"),
        ("Tag v2.3.1 is out", "v2.3.1 has been released"),
    ],
)
def test_same_values(a: str, b: str) -> None:
    assert same_values(a, b)


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("Meeting with Dana on Tuesday at 3pm", "Meeting with Dana on Thursday at 3pm"),
        ("Meeting with Dana on Tuesday at 3pm", "Meeting with Dana on Tuesday at 4pm"),
        ("Meeting with Dana on Tuesday at 3pm", "Meeting with Omar on Tuesday at 3pm"),
        ("invoice INV-1001 total was 250 euros", "invoice INV-1002 total was 990 euros"),
        ("invoice INV-1001 total was 250 euros", "invoice INV-1001 total was 250 dollars"),
        ("Due 2024-05-03", "Due 2024-05-04"),
        ("周二开会", "周四开会"),
        ("明天开会", "后天开会"),
        ("我住在北京", "我住在上海"),
        ("预算250元", "预算990元"),
        ("My phone number is 555-0100", "My phone number is 555-0199"),
        ("Deploy v2.3.1", "Deploy v2.3.2"),
        ("mail a@x.com", "mail b@x.com"),
        ("see you tomorrow", "see you next week"),
        ("我有三个孩子", "我有两个孩子"),
    ],
)
def test_different_values(a: str, b: str) -> None:
    assert not same_values(a, b)


def test_differing_values_reports_each_side() -> None:
    only_a, only_b = differing_values("Our budget is 3000", "Update: the budget is now 5000")
    assert (only_a, only_b) == (frozenset({"3000"}), frozenset({"5000"}))
    assert differing_values("Meeting on Tuesday", "Meeting on Tuesday") == (frozenset(), frozenset())


def test_values_are_lower_case_and_frozen() -> None:
    found = values_of("Ship INV-77 to Acme Corp by Friday")
    assert isinstance(found, frozenset)
    assert all(token == token.lower() for token in found)
    assert {"inv-77", "acme corp", "friday"} <= found
