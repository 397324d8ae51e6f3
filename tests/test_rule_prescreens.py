"""Rule prescreens: skipping a rule where a text lacks what it needs never changes what is read.

A prescreen that is wrong loses matches silently, so each is held to the rule itself: every
example a rule must match passes its prescreen, and the values read from every text at hand
(the packs' own examples, the dev conversations in both languages, the benchmark's judgement
and lifecycle statements, and texts written to sit on the edges) are the same with the
prescreens as without them.
"""

from __future__ import annotations

import json
import shutil
import tomllib
from collections.abc import Iterator
from pathlib import Path

import pytest

from hindsight_integrations.core.language import values
from hindsight_integrations.core.language.rules import PACKS_DIR, PackError, Registry, for_text, registry
from hindsight_integrations.core.language.rules.prescreen import TextWords

SHARED = Path(__file__).resolve().parents[2] / "shared" / "data"
BENCH_DATA = Path(values.__file__).resolve().parents[2] / "bench" / "data"

EDGES = [
    "MEET ME ON MAY 3RD, NOT SEPT. 14",
    "we met on sept.14 and again 3rd of May",
    "the wedding is on Wed. and the party Sat",
    "it was 3may or may3, nobody knows",
    "我在March搬家，3月5日到北京，下午三点见",
    "周二March周三见",
    "下午三点noon周五",  # a word freed by blanking out its neighbours' matches
    "周二下午３点在朝阳区见，花了五十美元",
    "Pay US$5 or €3 or ５０ euros by next  weekend",
    "day  after  tomorrow we fly; the day before yesterday we landed",
    "lena.k@example.co.uk wrote from www.acme.com and https://docs.acme.io/x?y=1",
    "INV-1001 and v2.3.1 at 10.0.0.1 call +351 912 345 678 at 3:30 p.m.",
    "noon, midday or MIDNIGHT: 1.5 million or 5k bucks",
    "Tonight, tomorrow, today; this week and last month",
]


def _unscreened(text: str) -> frozenset[str]:
    """``values_of`` without the prescreens: every rule runs on every span."""
    found: set[str] = set()
    for span in values.rule_spans(text):
        rest = span
        for pattern, extract, _ in values._rules_of(for_text(span)):
            rest = values._apply(pattern, extract, rest, found)
        found.update(values._names(rest))
    return frozenset(found)


def _pack_texts() -> Iterator[str]:
    for pack in registry().packs:
        for rule in pack.rules.values():
            yield from rule.examples
            yield from rule.counter


def _conversation_texts() -> Iterator[str]:
    for folder in ("locomo_dev", "zh_dev"):
        for path in sorted((SHARED / folder).glob("*.json")):
            data = json.loads(path.read_text(encoding="utf-8"))
            for conversation in data if isinstance(data, list) else [data]:
                yield from _strings(conversation)


def _strings(node: object) -> Iterator[str]:
    if isinstance(node, str):
        yield node
    elif isinstance(node, dict):
        for value in node.values():
            yield from _strings(value)
    elif isinstance(node, list):
        for value in node:
            yield from _strings(value)


def _benchmark_statements() -> Iterator[str]:
    for name in ("judgement_cases.toml", "lifecycle_history.toml"):
        yield from _strings(tomllib.loads((BENCH_DATA / name).read_text(encoding="utf-8")))


def test_every_example_of_a_prescreened_rule_passes_its_prescreen() -> None:
    checked = 0
    for pack in registry().packs:
        rules = registry().of(pack.name)
        for name, rule in pack.rules.items():
            prescreen = rules.prescreen(name) if rule.requires or rule.requires_words else None
            for example in rule.examples if prescreen is not None else ():
                assert prescreen.admits(example, TextWords(example)), f"{rule.where}: {example!r}"
                checked += 1
    assert checked > 40


@pytest.mark.parametrize("text", EDGES)
def test_values_on_edge_texts_are_the_same_with_and_without_prescreens(text: str) -> None:
    assert values.values_of(text) == _unscreened(text)


def test_values_of_the_packs_examples_and_the_benchmarks_statements_are_unchanged() -> None:
    texts = list(dict.fromkeys([*_pack_texts(), *_benchmark_statements()]))
    assert len(texts) > 500
    differ = [t for t in texts if values.values_of(t) != _unscreened(t)]
    assert differ == []


@pytest.mark.skipif(not (SHARED / "locomo_dev").is_dir(), reason=f"dev conversations not found at {SHARED}")
def test_values_of_every_dev_conversation_text_are_unchanged() -> None:
    texts = list(dict.fromkeys(_conversation_texts()))
    assert len(texts) > 2000
    differ = [t for t in texts if values.values_of(t) != _unscreened(t)]
    assert differ == []


def test_a_text_without_what_a_rule_needs_skips_it() -> None:
    rules = for_text("no digits here")
    assert not rules.prescreen("values.plain_number").admits("no digits here", TextWords("no digits here"))
    month = rules.prescreen("values.en_month")
    assert not month.admits("we were marching", TextWords("we were marching"))
    assert month.admits("back in March", TextWords("back in March"))


def _pack_with(tmp_path: Path, rule: str) -> Path:
    folder = tmp_path / "packs"
    shutil.copytree(PACKS_DIR, folder)
    with (folder / "en" / "values.toml").open("a", encoding="utf-8") as file:
        file.write(rule)
    return folder


BAD_DECLARATIONS = {
    "not a words reference of the pattern": (
        "\n[rule.bad_screen]\npattern = '''\\bnoon\\b'''\nrequires_words = [\"named_times\"]\n",
        r"not a \{words:\.\.\.\} of its pattern",
    ),
    "an entry starting with no letter": (
        '\n[lexicon.signs]\nwords = ["$", "usd"]\n'
        "\n[rule.bad_screen]\npattern = '''{words:signs}'''\nrequires_words = [\"signs\"]\n",
        "start with no letter",
    ),
    # "any\s?more" would give the word "any", and "anymore" would then skip a rule that matches it
    "a lexicon of patterns": (
        "\n[lexicon.again_cues]\npatterns = true\nwords = ['any\\s?more', 'again']\n"
        "\n[rule.bad_screen]\npattern = '''\\b{words:again_cues}\\b'''\nrequires_words = [\"again_cues\"]\n",
        "holds patterns",
    ),
}


@pytest.mark.parametrize("case", list(BAD_DECLARATIONS))
def test_a_requires_words_that_could_skip_a_match_is_refused_at_load(tmp_path: Path, case: str) -> None:
    rule, message = BAD_DECLARATIONS[case]
    with pytest.raises(PackError, match=message):
        Registry(_pack_with(tmp_path, rule))
