"""Pathological text costs time in proportion to its length (security issue #24, findings 2, 3 and 4).

The write path's rules are regular expressions, and the engine's work runs in worker threads
under the GIL: one pattern that backtracks over a 32 KB memory holds the CPU for seconds, and
every other tenant of an HTTP server waits. Three layers are tested here:

* every compiled pattern of the language packs (``language.rules``: each pack alone and all of
  them together), on 32 KB strings built from the pattern's own characters and words (the guard
  that keeps future patterns linear), and no compiled pattern left in the rule modules;
* every rule entry point, on 32 KB adversarial memories;
* a real ``hindsight serve --transport http`` with two tenants: the attack is stored or
  refused cleanly while the other tenant's recalls are served, and the server lives on.

No test asserts on wall-clock time: each has a timeout far above its normal cost, so a
regression shows as a timeout.
"""

from __future__ import annotations

import importlib
import random
import re
import threading
import zlib
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from re import _constants as sre  # type: ignore[attr-defined]
from re import _parser as sre_parse  # type: ignore[attr-defined]
from typing import Any

import httpx
import pytest

from hindsight_integrations.core.embedding import routing
from hindsight_integrations.core.language import (
    keys,
    retired,
    rules,
    sameness,
    slots,
    speakers,
    subjects,
    text,
    tokens,
    values,
)
from hindsight_integrations.core.language.rules import Followed, patterns_of
from hindsight_integrations.core.model.records import MemoryRecord, Role
from hindsight_integrations.core.recall import context
from hindsight_integrations.core.working import compression
from hindsight_integrations.core.write import admission, corrections, repeats
from hindsight_integrations.mcp import MemoryClient, MemoryToolInputError

from .mcp_support import http_server

RULE_MODULES = (
    "write.admission",
    "language.slots",
    "language.values",
    "language.subjects",
    "language.keys",
    "language.sameness",
    "language.speakers",
    "language.text",
    "language.tokens",
    "write.corrections",
    "write.repeats",
    "write.supersede",
    "write.conversation",
    "working.compression",
    "recall.ranking",
    "recall.context",
    "storage.lexical",
)
MEMORY_CHARS = 32_000  # the content limit is 32 KB
WALK_CHARS = MEMORY_CHARS


# -- every compiled pattern, on strings built from its own characters ---------------------------


def _rules_in(value: Any, seen: set[int], depth: int = 0) -> Iterator[Any]:
    """Compiled patterns and rule objects (anything with ``search``) inside a module-level value."""
    if depth > 4 or id(value) in seen:
        return
    seen.add(id(value))
    if isinstance(value, re.Pattern):
        yield value
    elif isinstance(value, (tuple, list, set, frozenset)):
        for item in value:
            yield from _rules_in(item, seen, depth + 1)
    elif isinstance(value, dict):
        for item in value.values():
            yield from _rules_in(item, seen, depth + 1)
    elif callable(getattr(value, "search", None)) and type(value).__module__.startswith("hindsight_integrations."):
        yield value  # a rule object (rules.Followed): searched itself, and its patterns walked too
        for item in vars(value).values():
            yield from _rules_in(item, seen, depth + 1)


def _module_rules() -> list[tuple[str, Any]]:
    """Compiled patterns and rule objects held by the rule modules themselves (there should be none)."""
    seen: set[int] = set()
    found = []
    for name in RULE_MODULES:
        module = importlib.import_module(f"hindsight_integrations.core.{name}")
        for attribute, value in vars(module).items():
            if (
                attribute.startswith("__")
                or isinstance(value, type)
                or (callable(value) and not hasattr(value, "search"))
            ):
                continue
            for n, rule in enumerate(_rules_in(value, seen)):
                found.append((f"{name}.{attribute}#{n}", rule))
    return found


def _pack_rules() -> list[tuple[str, Any]]:
    """Every compiled rule of the packs (each pack alone, each set a text's scripts pick), once per distinct pattern."""
    found: dict[str, tuple[str, Any]] = {}
    for name, rule in rules.registry().compiled():
        found.setdefault(repr(sorted((p.pattern, p.flags) for p in patterns_of(rule))), (name, rule))
    return list(found.values())


_CATEGORY_CHARS = {
    sre.CATEGORY_DIGIT: "1",
    sre.CATEGORY_NOT_DIGIT: "a",
    sre.CATEGORY_WORD: "a",
    sre.CATEGORY_NOT_WORD: ".",
    sre.CATEGORY_SPACE: " ",
    sre.CATEGORY_NOT_SPACE: "a",
}


def _literals(pattern: str, flags: int) -> tuple[set[str], set[str]]:
    """The characters a pattern names (literals, class members and ends of ranges) and its literal words."""
    chars: set[str] = set()
    words: set[str] = set()

    def walk(tree: Any) -> None:
        run: list[str] = []
        for op, arg in tree:
            if op is sre.LITERAL:
                run.append(chr(arg))
                chars.add(chr(arg))
                continue
            if len(run) > 1:
                words.add("".join(run))
            run = []
            if op is sre.IN:
                for member, value in arg:
                    if member is sre.LITERAL:
                        chars.add(chr(value))
                    elif member is sre.RANGE:
                        chars.update({chr(value[0]), chr(value[1]), chr((value[0] + value[1]) // 2)})
                    elif member is sre.CATEGORY:
                        chars.add(_CATEGORY_CHARS.get(value, "a"))
            elif op is sre.CATEGORY:
                chars.add(_CATEGORY_CHARS.get(arg, "a"))
            elif op in (sre.MAX_REPEAT, sre.MIN_REPEAT, sre.POSSESSIVE_REPEAT):
                walk(arg[2])
            elif op is sre.SUBPATTERN:
                walk(arg[-1])
            elif op is sre.ATOMIC_GROUP:
                walk(arg)
            elif op is sre.BRANCH:
                for branch in arg[1]:
                    walk(branch)
            elif op in (sre.ASSERT, sre.ASSERT_NOT):
                walk(arg[1])
        if len(run) > 1:
            words.add("".join(run))

    walk(sre_parse.parse(pattern, flags))
    return chars, words


def fragments(rule: Any, sampled: int = 30, most_words: int = 60) -> list[str]:
    """What a pathological string for ``rule`` repeats: the pattern's literal words (``email``,
    ``goodbye``, ``手机``), and a sample of its characters alone and after a letter, digit, space or
    capital (``a@``, ``a.``, ``1,``, ``A-``)."""
    chars: set[str] = set()
    words: set[str] = set()
    for pattern in patterns_of(rule):
        more_chars, more_words = _literals(pattern.pattern, pattern.flags)
        chars |= more_chars
        words |= more_words
    always = {"a", "A", "1", " ", "a@", "a.", "1.", "1,", "A-", "a1", "a ", "1 ", "A "}
    rng = random.Random(zlib.crc32(repr(sorted(p.pattern for p in patterns_of(rule))).encode()))
    literal_words = sorted(words - always)
    if len(literal_words) > most_words:
        literal_words = sorted(rng.sample(literal_words, most_words))
    pairs = sorted(({*chars} | {base + c for c in chars for base in ("a", "1", " ", "A")}) - always - words)
    return sorted(always) + literal_words + sorted(rng.sample(pairs, min(len(pairs), sampled)))


RULES = _pack_rules()


def test_the_walk_finds_the_rules_it_guards() -> None:
    names = {name.split(":", 1)[1].split(" #")[0] for name, _ in RULES}
    for expected in (
        "admission.acknowledgement",
        "en/slots.toml [[slot]]",
        "zh/slots.toml [[slot]]",
        "slots.change",
        "values.email",
        "values.zh_count",
        "subjects.possessive",
        "text.sentence_end",
        "text.word_run",
    ):
        assert expected in names
    combined = {name.split(":", 1)[0] for name, _ in RULES}
    assert any("en" in c.split("+") and "zh" in c.split("+") for c in combined)  # mixed-language rules too
    walked = {name.split(":", 1)[0] for name, _ in rules.registry().compiled()}
    picked = {"+".join(r.names) for r in rules.registry().combinations()}
    assert {"+".join(rules.for_text(t).names) for t in ("Hi", "你好", "Hi 你好", "42")} <= picked <= walked
    assert any(isinstance(rule, Followed) for _, rule in RULES)  # rule objects are walked too
    assert len(RULES) > 150


def test_the_rule_modules_hold_no_pattern_of_their_own() -> None:
    """The packs are the only place a pattern lives: a module-level pattern would escape the walk above."""
    assert _module_rules() == []


@pytest.mark.timeout(30)  # a few seconds at most here; a quadratic pattern takes minutes
@pytest.mark.parametrize(("name", "rule"), RULES, ids=[name for name, _ in RULES])
def test_every_rule_pattern_is_linear_on_strings_of_its_own_characters(name: str, rule: Any) -> None:
    """32 KB of each fragment, ending in a character that breaks a match: every match of the rule, and one at 0."""
    for fragment in fragments(rule):
        string = (fragment * (WALK_CHARS // len(fragment) + 1))[: WALK_CHARS - 1] + "!"
        if isinstance(rule, re.Pattern):
            for _ in rule.finditer(string):
                pass
            rule.match(string)
        else:
            rule.search(string)


_INLINE_PATTERN = re.compile(r"\bre\.(?:search|match|fullmatch|sub|subn|findall|finditer|split)\(\s*r?[\"']")


@pytest.mark.parametrize("name", RULE_MODULES)
def test_rule_modules_compile_every_pattern_where_the_walk_sees_it(name: str) -> None:
    """A pattern written inline in a function escapes the walk above: each one is a module constant."""
    source = Path(importlib.import_module(f"hindsight_integrations.core.{name}").__file__ or "").read_text()
    assert "re.compile(" not in source
    assert not _INLINE_PATTERN.findall(source)


# -- every rule entry point, on 32 KB adversarial memories ---------------------------------------


def _long(fragment: str, tail: str = "") -> str:
    return (fragment * (MEMORY_CHARS // len(fragment) + 1))[: MEMORY_CHARS - len(tail)] + tail


ADVERSARIAL = {
    "email-like": _long("a@b.c"),
    "one-word-then-bang": _long("a", "!"),
    "digits": _long("1"),
    "digit-groups": _long("111,"),
    "dotted-digits": _long("1."),
    "capital-hyphens": _long("A-"),
    "capitals": _long("A"),
    "spaces-then-word": _long(" ", "x"),
    "goodbyes": _long("goodbye"),
    "chinese-phone": _long("手机"),
    "chinese-numerals": _long("万"),
    "my-phone": _long("my phone "),
    "may": _long("May "),
    "manager": _long("Dana is my "),
    "project": _long("Project "),
    "no-sentence-breaks": _long("lorem ipsum dolor sit amet "),
    "one-sentence-per-line": _long("I moved to Lisbon and my email is x@y.com.\n"),
    "from-without-to": _long("from Jenkins "),
    "to-then-from": _long("to Paris from Lyon "),
    "sold-sold": _long("sold "),
    "chinese-from": _long("从把将"),
    "chinese-owners": _long("把 backend 的项目的 "),
}
PAIR = (ADVERSARIAL["email-like"], ADVERSARIAL["capital-hyphens"])


@pytest.fixture(autouse=True)
def _cold_caches() -> None:
    """Each entry point pays for its own reading, not one cached by an earlier test."""
    for module, name in (
        (values, "values_of"),
        (values, "_span_values"),
        (text, "rule_spans"),
        (sameness, "_reading"),
        (keys, "read"),
    ):
        cached = getattr(module, name, None)
        if cached is not None:
            cached.cache_clear()


def _record(content: str, days: int = 0, **fields: Any) -> MemoryRecord:
    when = datetime(2024, 1, 1, tzinfo=UTC) + timedelta(days=days)
    return MemoryRecord(namespace="attack", content=content, occurred_at=when, **fields)


ENTRY_POINTS: dict[str, Callable[[str], object]] = {
    "detect_slot": slots.detect_slot,
    "change_cue": slots.change_cue,
    "values_of": values.values_of,
    "differing_values": lambda t: values.differing_values(t, PAIR[0]),
    "assess_user": lambda t: admission.assess(t, Role.USER),
    "assess_assistant": lambda t: admission.assess(t, Role.ASSISTANT),
    "assess_tool": lambda t: admission.assess(t, Role.TOOL),
    "event_ttl": admission.event_ttl,
    "owner_of": lambda t: subjects.owner_of(t, len(t)),
    "project_slot": lambda t: subjects.project_slot(t, "deadline"),
    "different_subjects": lambda t: subjects.different_subjects(t, PAIR[1]),
    "value_shapes": keys.value_shapes,
    "reverses": lambda t: sameness.reverses(t, "I'm no longer " + t),
    "negated": keys.negated,
    "reversal_key": keys.reversal_key,
    "inherited_slot": lambda t: corrections.inherited_slot(
        _record(t), [_record("My phone is 555-0100-0199", slot="user:phone"), _record(PAIR[0], slot="user:email")]
    ),
    "polarity": keys.polarity,
    "normalised": keys.normalised,
    "is_repeat": lambda t: repeats.is_repeat(_record(PAIR[0]), _record(t), 0.99, 0.9),
    "says_the_same": lambda t: sameness.says_the_same(t, PAIR[1]),
    "same_fact": lambda t: sameness.same_fact(_record(t), _record(PAIR[0])),
    "speaker_of": speakers.speaker_of,
    "spoken": speakers.spoken,
    "lexical_tokens": text.lexical_tokens,
    "query_terms": text.query_terms,
    "estimate_tokens": tokens.estimate_tokens,
    "extractive_summary": lambda t: compression.extractive_summary([_record(t, role=Role.USER)]),
    "trim_to_query": lambda t: context.trim_to_query(t, 300, ["lisbon", "email"]),
    "retires": lambda t: retired.retires(PAIR[1], t),
    "tells_script": routing.tells_script,
}


@pytest.mark.timeout(60)
@pytest.mark.parametrize("entry", ENTRY_POINTS, ids=list(ENTRY_POINTS))
def test_every_rule_entry_point_reads_32_kb_of_adversarial_text(entry: str) -> None:
    """All the adversarial memories through one entry point; each finishes, and none raises."""
    call = ENTRY_POINTS[entry]
    for text_ in ADVERSARIAL.values():
        call(text_)


def test_spans_cover_the_text_in_order_and_leave_normal_text_whole() -> None:
    normal = "I moved to Lisbon last week. My new email is ana@example.com!"
    assert text.rule_spans(normal) == (normal,)
    for sample in ADVERSARIAL.values():
        spans = text.rule_spans(sample)
        assert "".join(spans) == sample and all(0 < len(s) <= text.SPAN_CHARS for s in spans)
    sentences = text.rule_spans("First sentence here. " * 40)
    assert all(s.endswith(". ") for s in sentences)  # cut between sentences, not inside one


def test_a_32000_digit_number_is_one_long_token_not_an_error() -> None:
    digits = "7" * 32_000
    found = values.values_of(f"Order {digits} shipped")
    assert found and all(set(v) <= {"7"} for v in found if v[0].isdigit())
    assert values.values_of("It costs 1,000 euros") == frozenset({"1000", "eur"})  # amounts still read
    assert slots.detect_slot(digits) is None


@pytest.mark.parametrize(
    ("content", "slot"),
    [
        ("My email is ana@example.com", "user:email"),
        ("ana@example.com is my e-mail now", "user:email"),
        ("Reach me by email:\nana@example.com", None),  # another line: as ".*" read it
        ("My number is +351 912 345 678", "user:phone"),
        ("My phone\n+351 912 345 678", None),
        ("我的手机是13812345678", "user:phone"),
    ],
)
def test_the_rewritten_either_order_rules_read_as_before(content: str, slot: str | None) -> None:
    assert slots.detect_slot(content) == slot


@pytest.mark.timeout(60)
def test_packing_long_memories_into_a_budget_is_bounded_and_keeps_the_budget() -> None:
    """Finding 3: a few 32 KB memories without sentence breaks, and a 400-sentence document."""
    sentences = " ".join(f"Sentence {n} says the garden needs water on day {n}." for n in range(400))
    records = [_record(ADVERSARIAL["no-sentence-breaks"], n) for n in range(4)]
    records += [_record(sentences, 5), _record("The garden has three apple trees.", 6)]
    for budget in (150, 450, 2000):
        packed = context.pack_within_budget(records, budget, query="when does the garden need water?")
        assert packed and tokens.estimate_tokens(context.format_context(packed)) <= budget
        assert all(len(trimmed) < MEMORY_CHARS for _, trimmed in packed)


# -- a real HTTP server, two tenants ---------------------------------------------------------------

ATTACKER = "attacker-token-3f9c1a7e5b2d8046c1e9a7b3f5d2"
VICTIM = "victim-token-8d2b6f4a1c9e7305b8d1f6a2c4e9"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with http_server(tmp_path_factory.mktemp("attack"), tokens={ATTACKER: "attacker", VICTIM: "victim"}) as base:
        with MemoryClient.http(f"{base}/mcp", token=VICTIM) as victim:
            victim.store("The victim's garden has three apple trees and a fig.")
        yield base


class _Recalling:
    """The other tenant, recalling in a loop on its own connection while the attack runs."""

    def __init__(self, base: str) -> None:
        self._base = base
        self._stop = threading.Event()
        self.answers: list[int] = []
        self.errors: list[BaseException] = []
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        try:
            with MemoryClient.http(f"{self._base}/mcp", token=VICTIM) as client:
                while not self._stop.is_set() or not self.answers:
                    self.answers.append(len(client.recall("What grows in my garden?").hits))
        except BaseException as exc:
            self.errors.append(exc)

    def __enter__(self) -> _Recalling:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=120)


def _attack(base: str, attack: Callable[[MemoryClient], object]) -> _Recalling:
    with _Recalling(base) as other, MemoryClient.http(f"{base}/mcp", token=ATTACKER, retries=0) as client:
        attack(client)
    assert not other.errors, other.errors
    assert other.answers and all(n >= 1 for n in other.answers)  # served, with its memory, throughout
    assert httpx.get(f"{base}/health", timeout=10).json()["status"] == "ok"
    return other


@pytest.mark.server
@pytest.mark.timeout(20, func_only=True)  # ~2 s each here; "a@b.c" × 6400 alone took 23 s before
@pytest.mark.parametrize("name", ["email-like", "one-word-then-bang", "digits", "goodbyes", "capitals"])
def test_pathological_memories_are_stored_over_http_while_another_tenant_recalls(server: str, name: str) -> None:
    """Findings 2 and 4: ``store_memory`` and ``record_turn`` of each, no internal_error, the server alive."""
    content = ADVERSARIAL[name]

    def attack(client: MemoryClient) -> None:
        stored = client.store(content)
        assert stored.ids
        client.record_turn(content, session_id=f"attack-{name}")
        client.recall(content[:2000])

    _attack(server, attack)


@pytest.mark.server
@pytest.mark.timeout(30, func_only=True)
@pytest.mark.parametrize("content", ["7" * 32_000, "[1, 2]", "null", '{"editor": "vim"}', "12345"])
def test_store_memory_keeps_text_that_reads_as_json_as_text(server: str, content: str) -> None:
    """Finding 4: FastMCP read an optional text argument as JSON first (32,000 digits: an internal error)."""
    with MemoryClient.http(f"{server}/mcp", token=ATTACKER) as client:
        stored = client.store(content, apply_filter=False, dedup=False)
        assert [r.content for r in client.list(limit=100) if r.id in stored.ids] == [content]


@pytest.mark.server
@pytest.mark.timeout(30, func_only=True)
@pytest.mark.parametrize(
    ("tool", "arguments", "field"),
    [
        ("retrieve_memory", {"query": "garden", "top_k": "9" * 5000}, "top_k"),
        ("store_memory", {"content": "I grow rooibos.", "ttl_seconds": "9" * 5000}, "ttl_seconds"),
        ("list_memories", {"limit": "9" * 5000}, "limit"),
        ("store_memory", {"memories": '[{"content": "I grow tea.", "ttl_seconds": ' + "9" * 5000 + "}]"}, "memories"),
    ],
)
def test_a_number_past_pythons_digit_limit_is_invalid_input(
    server: str, tool: str, arguments: dict[str, object], field: str
) -> None:
    """Finding 4 for numbers: their JSON string read past Python's int limit was an internal error."""
    with _Recalling(server) as other, MemoryClient.http(f"{server}/mcp", token=ATTACKER, retries=0) as client:
        with pytest.raises(MemoryToolInputError, match=field):
            client.call_tool(tool, arguments)
        assert not [r for r in client.list(limit=100) if r.content.startswith("I grow")]  # nothing half-written
    assert not other.errors and other.answers


@pytest.mark.server
@pytest.mark.timeout(40, func_only=True)  # ~4 s here; each recall took 33-57 s before
def test_recall_stays_cheap_after_long_memories_are_stored(server: str) -> None:
    """Finding 3: 32 KB memories without sentence breaks and a 400-sentence document, then recalls."""
    document = " ".join(f"Note {n}: the orchard's row {n} was pruned on day {n}." for n in range(400))
    padding = ADVERSARIAL["no-sentence-breaks"]

    def attack(client: MemoryClient) -> None:
        for n in range(3):
            client.store(f"orchard {n} " + padding[: MEMORY_CHARS - 20], dedup=False)
        client.store(document[:MEMORY_CHARS])
        for _ in range(3):
            result = client.recall("What happened in the orchard?", token_budget=450)
            assert result.hits and result.tokens <= 450

    _attack(server, attack)
