"""The language rule packs (``core/language/rules/``): every rule's own examples, the packs' data, the engine.

A pack is data: each rule carries the texts it must match (``examples``) and must not
(``counter``), so a change to a pattern is checked against what it was written for. The
engine refuses a malformed pack with an error naming the pack, the file and the entry, picks
packs by the scripts a text is written in, and a new language is a new folder: no code edit.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from hindsight_integrations.core.language import rules
from hindsight_integrations.core.language.rules import PACKS_DIR, PackError, Registry, RuleExamples, for_text
from hindsight_integrations.core.language.slots import detect_slot
from hindsight_integrations.core.language.values import values_of
from hindsight_integrations.core.model.records import Kind
from hindsight_integrations.core.recall.ranking import asks_for_present, asks_when
from hindsight_integrations.core.write.admission import assess

EXAMPLES = list(rules.registry().examples())


@pytest.mark.parametrize("entry", EXAMPLES, ids=[e.where for e in EXAMPLES])
def test_every_rule_matches_its_examples_and_none_of_its_counter_examples(entry: RuleExamples) -> None:
    assert entry.examples, f"{entry.where}: a rule needs at least one example"
    missed = [text for text in entry.examples if not entry.matches(text)]
    wrongly = [text for text in entry.counter if entry.matches(text)]
    assert not missed, f"{entry.where} does not match its examples {missed}"
    assert not wrongly, f"{entry.where} matches its counter-examples {wrongly}"


def test_the_examples_cover_every_job_of_both_main_languages() -> None:
    files = {e.where.split(" ")[0] for e in EXAMPLES}
    for job in ("admission", "slots", "values", "negation", "recall"):
        assert f"en/{job}.toml" in files and f"zh/{job}.toml" in files
    assert {"en/subjects.toml", "en/sameness.toml", "common/text.toml", "common/shapes.toml"} <= files
    assert any("[[slot]]" in e.where for e in EXAMPLES)  # table entries carry examples too
    assert len(EXAMPLES) > 120


def test_every_lexicon_is_non_empty_and_has_no_duplicates() -> None:
    packs = rules.registry().packs
    assert {p.name for p in packs} >= {"common", "en", "zh"}
    for pack in packs:
        for name, lexicon in pack.lexicons.items():
            assert lexicon.words, f"{pack.name}: lexicon {name} is empty"
            assert len(set(lexicon.words)) == len(lexicon.words), f"{pack.name}: lexicon {name} repeats a word"
        for name, mapping in pack.maps.items():
            assert mapping, f"{pack.name}: map {name} is empty"


def test_one_negation_list_and_one_change_cue_list_per_language() -> None:
    for name in ("en", "zh"):
        pack = next(p for p in rules.registry().packs if p.name == name)
        assert "negations" in pack.lexicons and "change_cues" in pack.lexicons
        assert pack.defined["lexicon negations"].startswith(f"{name}/negation.toml")
        assert pack.defined["lexicon change_cues"].startswith(f"{name}/cues.toml")
    assert "no longer" in rules.every().lexicon("negations") and "不再" in rules.every().lexicon("negations")


# -- a malformed pack is refused, naming the pack, the file and the entry ---------------------


def _pack(folder: Path, name: str, files: dict[str, str], scripts: str = '["any"]') -> Path:
    (folder / name).mkdir(parents=True)
    (folder / name / "pack.toml").write_text(f'name = "{name}"\nscripts = {scripts}\n', encoding="utf-8")
    for file, text in files.items():
        (folder / name / file).write_text(text, encoding="utf-8")
    return folder


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            "[rule.hello]\npattern = 'hi'\nexampels = ['hi']\n",
            "xx/admission.toml [rule.hello]: unknown key(s) exampels",
        ),
        ("[rule.hello]\nexamples = ['hi']\n", "xx/admission.toml [rule.hello]: missing pattern"),
        ("[rule.hello]\npattern = 3\n", "xx/admission.toml [rule.hello]: pattern must be a str, not int"),
        ("[rule.hello]\npattern = '{NOPE}'\n", "xx/admission.toml [rule.hello]: no fragment {NOPE} in pack xx"),
        ("[rule.hello]\npattern = '{lexicon:nope}'\n", "xx/admission.toml [rule.hello]: no lexicon or map 'nope'"),
        ("[rule.hello]\npattern = 'a'\nflags = ['LOUD']\n", "xx/admission.toml [rule.hello]: unknown flag 'LOUD'"),
        ("[lexicon.greetings]\nwords = []\n", "xx/admission.toml [lexicon.greetings]: empty word list"),
        (
            "[lexicon.greetings]\nwords = ['hi', 'yo', 'hi']\n",
            "xx/admission.toml [lexicon.greetings]: duplicate entries ['hi']",
        ),
        (
            "[lexicon.greetings]\nwords = ['hi', 3]\n",
            "xx/admission.toml [lexicon.greetings]: every entry of words must be a string",
        ),
        ("[fragments]\nlower = 'a'\n", "xx/admission.toml [fragments] lower: a fragment is NAME"),
        ("[rules.hello]\npattern = 'hi'\n", "xx/admission.toml: unknown table(s) rules"),
        ("[rule.hello\npattern = 'hi'\n", "xx/admission.toml: not valid TOML"),
        ("[[slot]]\nsubject = 'user'\npatterns = ['a']\n", "xx/admission.toml [[slot]] #1: missing attribute"),
    ],
)
def test_a_malformed_pack_is_refused_with_an_error_naming_pack_file_and_entry(
    tmp_path: Path, text: str, message: str
) -> None:
    with pytest.raises(PackError) as refused:
        Registry(_pack(tmp_path, "xx", {"admission.toml": text}))
    assert message in str(refused.value)


def test_a_rule_defined_twice_in_one_pack_is_refused(tmp_path: Path) -> None:
    files = {"a.toml": "[lexicon.greetings]\nwords = ['hi']\n", "b.toml": "[lexicon.greetings]\nwords = ['yo']\n"}
    with pytest.raises(
        PackError, match=r"xx/b.toml \[lexicon.greetings\]: lexicon greetings is already defined in xx/a.toml"
    ):
        Registry(_pack(tmp_path, "xx", files))


def test_a_pattern_that_does_not_compile_is_refused_naming_its_entry(tmp_path: Path) -> None:
    registry = Registry(_pack(tmp_path, "xx", {"admission.toml": "[rule.hello]\npattern = '(unclosed'\n"}))
    with pytest.raises(PackError, match=r"xx/admission.toml \[rule.hello\]: not a valid pattern once expanded"):
        registry.of("xx").pattern("admission.hello")


def test_a_pack_folder_and_its_name_must_agree_and_its_script_must_exist(tmp_path: Path) -> None:
    (tmp_path / "one" / "yy").mkdir(parents=True)
    (tmp_path / "one" / "yy" / "pack.toml").write_text('name = "zz"\nscripts = ["any"]\n')
    with pytest.raises(PackError, match=r"yy/pack.toml: name 'zz' is not the folder's name"):
        Registry(tmp_path / "one")
    with pytest.raises(PackError, match=r"xx/pack.toml: no \[script.klingon\] in any pack"):
        Registry(_pack(tmp_path / "two", "xx", {}, scripts='["klingon"]'))


# -- a new language is a new folder -------------------------------------------------------------


@pytest.fixture
def packs_copy(tmp_path: Path) -> Iterator[Path]:
    """The packaged packs copied to a temporary folder, in use until the test ends."""
    folder = tmp_path / "rules"
    shutil.copytree(PACKS_DIR, folder, ignore=shutil.ignore_patterns("*.py", "__pycache__"))
    yield folder
    rules.use_folder(None)


def test_a_new_language_folder_changes_admission_without_a_code_edit(packs_copy: Path) -> None:
    greeting, said = "Hujambo, asante sana!", "I said Hujambo to Amani"
    before = assess(greeting)
    assert before.remember  # no pack knows Swahili: a short statement, kept
    assert values_of(said) == {"hujambo", "amani"}  # a capitalised word: a name (and now cached)
    swahili = (
        '[lexicon.acknowledgements]\npatterns = true\nwords = ["hujambo", "asante( sana)?"]\n\n'
        '[lexicon.not_names]\nwords = ["hujambo"]\n'
    )
    _pack(packs_copy, "sw", {"admission.toml": swahili}, scripts='["latin"]')
    in_use = rules.use_folder(packs_copy)
    assert "sw" in in_use.for_text(greeting).names
    after = assess(greeting)
    assert not after.remember and after.kind is Kind.TURN and after.reason == "greeting or acknowledgement"
    assert assess("Hujambo, I moved to Nairobi last week").remember  # a greeting with a statement is still one
    assert values_of(said) == {"amani"}  # read again with the new packs, not from the cache
    rules.use_folder(None)
    assert assess(greeting).remember and values_of(said) == {"hujambo", "amani"}  # the packaged packs again


# -- packs are picked by the scripts a text is written in ---------------------------------------


def test_packs_are_picked_by_script_and_mixed_language_text_gets_both() -> None:
    assert set(rules.for_text("I moved to Lisbon").names) >= {"en", "common"}
    assert "zh" not in rules.for_text("I moved to Lisbon").names
    assert rules.for_text("我搬到北京了").names == ("zh", "common")
    assert rules.for_text("12:30 2024-05-03").names == ("common",)
    mixed = rules.for_text("下周二 meeting at 3pm")
    assert {"en", "zh", "common"} <= set(mixed.names)
    assert mixed is rules.for_text("周三 lunch")  # one compiled combination per set of scripts


def test_mixed_language_text_is_read_by_both_packs() -> None:
    assert {"next tuesday", "15:00"} <= values_of("下周二 meeting at 3pm")
    assert {"tomorrow", "beijing"} <= values_of("Flight to 北京 tomorrow")
    assert detect_slot("我的手机号是 555-0100") == "user:phone"
    assert detect_slot("Update: 我搬到上海了") == "user:location"


@pytest.mark.parametrize(
    ("question", "when", "present"),
    [
        ("When did Caroline go to the support group?", True, False),
        ("How long ago did you move?", True, False),
        ("Where does she live now?", False, True),
        ("What does Melanie paint?", False, False),
        ("我们什么时候去的杭州？", True, False),
        ("她现在住在哪里？", False, True),
    ],
)
def test_what_a_question_asks_is_read_by_its_own_packs(question: str, when: bool, present: bool) -> None:
    """``Rules.search`` as recall uses it: the question's packs, lowered text, a match or None."""
    assert asks_when(question) is when
    assert asks_for_present(question) is present
    lowered = question.lower()
    assert (for_text(lowered).search("recall.asks_when", lowered) is not None) is when
