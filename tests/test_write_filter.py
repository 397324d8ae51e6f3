"""The write filter's verdicts: what becomes a memory, as what kind, ranked how (rules only, offline)."""

from __future__ import annotations

import pytest

from hindsight_integrations.core.model.records import Kind, Role
from hindsight_integrations.core.write.admission import assess

KEPT = [
    # Real facts the old minimum word count dropped as small talk.
    ("I am allergic to peanuts.", Kind.PREFERENCE),
    ("I use vim keybindings", Kind.PREFERENCE),
    ("Use tabs not spaces", Kind.PREFERENCE),
    # An instruction for whenever the assistant does something of the user's (as zh's 帮我…的时候…).
    ("When you review my code, point out performance problems first.", Kind.PREFERENCE),
    ("Whenever you write SQL, use uppercase keywords.", Kind.PREFERENCE),
    ("When you go to the store, grab some milk.", Kind.FACT),  # an errand, said once
    # ... also with a short object between the verb and "for me": a task done for the user, not an errand.
    ("When you write Python for me, always add type hints.", Kind.PREFERENCE),
    ("When you draft emails for me, keep them short.", Kind.PREFERENCE),
    ("When you plan trips for us, avoid red-eye flights.", Kind.PREFERENCE),
    ("When you go to the store for me, grab some milk.", Kind.FACT),
    ("When you pick up the kids for us, text me.", Kind.FACT),
    ("When you have time for me, let's talk.", Kind.FACT),
    ("We chose option B", Kind.CONTEXT),
    ("I drink oat milk", Kind.PREFERENCE),
    ("I deploy with Kamal", Kind.PREFERENCE),
    # Preferences and standing instructions.
    ("I prefer concise answers with code examples.", Kind.PREFERENCE),
    ("I'm vegetarian", Kind.PREFERENCE),
    ("I hate long emails", Kind.PREFERENCE),
    ("Always answer in French", Kind.PREFERENCE),
    ("Don't use emojis", Kind.PREFERENCE),
    ("Never add trailing summaries", Kind.PREFERENCE),
    ("Write all commit messages in English", Kind.PREFERENCE),
    ("Could you always answer in British English?", Kind.PREFERENCE),
    ("Hi! I'm vegan.", Kind.PREFERENCE),
    ("我对花生过敏", Kind.PREFERENCE),
    ("我用vim", Kind.PREFERENCE),
    ("别用emoji", Kind.PREFERENCE),
    ("以后都用中文回答", Kind.PREFERENCE),
    ("我不吃辣", Kind.PREFERENCE),
    # Corrections.
    ("Actually, the service runs on PostgreSQL, not MySQL.", Kind.CORRECTION),
    ("No, it's Tuesday", Kind.CORRECTION),
    ("I meant the staging server", Kind.CORRECTION),
    ("Not MySQL but Postgres", Kind.CORRECTION),
    ("We switched to pnpm", Kind.CORRECTION),
    ("其实是上海", Kind.CORRECTION),
    ("不是周二而是周三", Kind.CORRECTION),
    ("我不再吃肉了", Kind.CORRECTION),
    # Constraints, decisions, personal and project context.
    ("The budget for the launch must stay under 5000 euros.", Kind.CONTEXT),
    ("We don't deploy on Fridays", Kind.CONTEXT),
    ("We went with Redis for the cache", Kind.CONTEXT),
    ("Let's go with the monorepo", Kind.CONTEXT),
    ("我们选了方案B", Kind.CONTEXT),
    ("We're building a checkout service and the database is MySQL.", Kind.CONTEXT),
    ("My dog is called Rex", Kind.CONTEXT),
    ("I work at Google", Kind.CONTEXT),
    ("我叫小明", Kind.CONTEXT),
    ("I moved to Berlin last week, any tips?", Kind.CONTEXT),
    ("我上周搬到柏林了，有什么建议吗？", Kind.CONTEXT),
    # Events.
    ("I have a dentist appointment tomorrow at 9am.", Kind.EVENT),
    ("明天下午有会议", Kind.EVENT),
    # Plain statements, long or short: admitted, ranked by importance.
    ("When I was a kid I lived in Spain", Kind.FACT),
    ("Paris is nice", Kind.FACT),
    ("I'm tired", Kind.FACT),
    ("I keep getting KeyError: 'x' when loading the config", Kind.FACT),
]

NOT_REMEMBERED = [
    # Questions and requests: conversation turns, not facts or preferences.
    ("Which framework do I like?", "question"),
    ("How do I deploy?", "question"),
    ("what time is it", "question"),
    ("Is the database Postgres", "question"),
    ("Hi, how are you?", "question"),
    ("Can you help me plan a trip?", "question"),
    ("Tell me about Berlin", "request"),
    ("Write a poem about cats", "request"),
    ("你喜欢什么框架？", "question"),
    ("我喜欢什么", "question"),
    ("这个怎么用", "question"),
    ("有没有更好的办法", "question"),
    # Error output.
    ('Traceback (most recent call last):\n  File "x.py", line 1, in <module>\nValueError: bad value', "error"),
    ("KeyError: 'x'", "error"),
    ("Error: connection refused", "error"),
    # Greetings, acknowledgements, thanks.
    ("hi", "greeting"),
    ("Hello there!", "greeting"),
    ("ok thanks", "greeting"),
    ("Thanks! That fixed it.", "greeting"),
    ("no worries", "greeting"),
    ("sounds good, thank you", "greeting"),
    ("好的谢谢", "greeting"),
    ("你好", "greeting"),
    ("哈哈哈哈", "greeting"),
    # Empty, punctuation, emoji, chain-of-thought.
    ("", "empty"),
    ("   \n\t", "empty"),
    ("...", "empty"),
    ("👍🎉", "empty"),
    ("Thought: I should look up the user's database first", "chain-of-thought"),
]

TOOL_ERRORS = [
    'Traceback (most recent call last):\n  File "app.py", line 3, in <module>\nValueError: invalid literal',
    "Error: connection refused",
    "KeyError: 'x'",
    "requests.exceptions.ConnectionError: HTTPSConnectionPool(host='api', port=443)",
    "Failed to fetch https://example.com: timed out",
    "bash: kamal: command not found",
    "HTTP/1.1 500 Internal Server Error",
    "Not Found: /favicon.ico",
    "503 Service Unavailable",
    "Bad Gateway",
]


@pytest.mark.parametrize(("text", "kind"), KEPT)
def test_user_statements_are_kept_with_a_kind(text: str, kind: Kind) -> None:
    decision = assess(text, Role.USER)
    assert decision.remember, decision.reason
    assert decision.kind is kind, decision.reason


@pytest.mark.parametrize(("text", "why"), NOT_REMEMBERED)
def test_questions_errors_and_chit_chat_are_not_remembered(text: str, why: str) -> None:
    decision = assess(text, Role.USER)
    assert not decision.remember and decision.kind is Kind.TURN and decision.reason
    if why in ("question", "request"):
        assert decision.reason == "question or request: not a fact to remember"


@pytest.mark.parametrize("text", TOOL_ERRORS)
def test_tool_errors_are_turns_only(text: str) -> None:
    decision = assess(text, Role.TOOL)
    assert not decision.remember and decision.kind is Kind.TURN and "error" in decision.reason


def test_tool_results_describing_state_are_kept_and_lookups_dropped() -> None:
    assert assess("Config saved: max_connections=200, port 5432", Role.TOOL).remember
    assert assess("Forbidden City tour booked for Monday, 2 tickets", Role.TOOL).remember  # a word, not a status
    assert assess("HTTP/1.1 200 OK: order 88-1207 created", Role.TOOL).remember
    assert not assess("The weather in Paris is 18°C and sunny", Role.TOOL).remember


def test_assistant_keeps_only_decisions_and_actions() -> None:
    assert assess("I've scheduled the deploy for Friday, anything else?", Role.ASSISTANT).remember
    assert not assess("Sure, happy to help with that!", Role.ASSISTANT).remember
    assert not assess("Shall I go ahead?", Role.ASSISTANT).remember


def test_importance_ranks_what_is_admitted() -> None:
    explicit = assess("I prefer concise answers with code examples.").importance
    correction = assess("Actually, it's Lisbon not Porto").importance
    decision = assess("We chose option B").importance
    habit = assess("I use vim keybindings").importance
    event = assess("I have a dentist appointment tomorrow at 9am.").importance
    plain = assess("When I was a kid I lived in Spain").importance
    short = assess("Paris is nice").importance
    assert explicit == correction == 0.9
    assert decision == habit == 0.8
    assert event == 0.7 and plain == 0.5 and short == 0.3
    assert assess("I am allergic to peanuts.").importance == 0.9


def test_events_expire_and_others_do_not() -> None:
    assert assess("I have a dentist appointment tomorrow at 9am.").ttl_seconds == 3 * 86400
    assert assess("I drink oat milk").ttl_seconds is None


def test_greeting_with_content_keeps_the_content() -> None:
    decision = assess("Thanks! I deploy with Kamal, by the way.")
    assert decision.remember and decision.kind is Kind.PREFERENCE


def test_long_repetitive_input_stays_cheap() -> None:
    # Acknowledgement words glued together must not make the patterns backtrack exponentially.
    for text in ("k" * 3000 + "x", "哈" * 3000 + "x", "haha" * 800 + "x", "ok " * 1000 + "x"):
        assert assess(text).remember
