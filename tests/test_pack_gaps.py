"""A language pack says which of the rules every language has it goes without (``lacks`` in its ``pack.toml``).

The German, Spanish, French, Italian, Norwegian, Portuguese and Swedish packs held greetings
only, and nothing said that a question in those languages went without ``recall.asks_when``,
``recall.present`` and ``recall.time_hint``: recall read them as no question asking when, about
the present or naming a time. ``common``'s ``language_rules`` lists the rules every language is
expected to have; a pack's ``lacks`` must name exactly those it does not write, and a new pack
that names none loads with a warning listing them.
"""

from __future__ import annotations

import logging
import re
import shutil
from pathlib import Path

import pytest

from hindsight_integrations.core.language import rules
from hindsight_integrations.core.language.rules import PACKS_DIR, PackError, Registry

SEVEN = ("de", "es", "fr", "it", "nb", "pt", "sv")


def _copy(tmp_path: Path) -> Path:
    folder = tmp_path / "rules"
    shutil.copytree(PACKS_DIR, folder, ignore=shutil.ignore_patterns("*.py", "__pycache__"))
    return folder


def _add_pack(folder: Path, name: str, head: str = "") -> None:
    (folder / name).mkdir()
    (folder / name / "pack.toml").write_text(f'name = "{name}"\nscripts = ["latin"]\n{head}', encoding="utf-8")
    (folder / name / "admission.toml").write_text('[lexicon.acknowledgements]\nwords = ["hujambo"]\n', encoding="utf-8")


def test_every_packaged_pack_names_what_it_lacks_and_loads_without_a_warning(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING, logger=rules.__name__):
        registry = Registry(_copy(tmp_path))
    assert not caplog.records
    assert registry.lacking["en"] == registry.lacking["zh"] == frozenset()
    for name in SEVEN:
        pack = next(p for p in registry.packs if p.name == name)
        assert pack.lacks is not None and set(pack.lacks) == registry.lacking[name]
        assert {"recall.asks_when", "recall.present", "recall.time_hint", "recall.season"}.isdisjoint(pack.lacks)


def test_a_new_pack_that_names_no_gaps_loads_with_a_warning_listing_them(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    folder = _copy(tmp_path)
    _add_pack(folder, "sw")
    with caplog.at_level(logging.WARNING, logger=rules.__name__):
        registry = Registry(folder)
    assert "recall.asks_when" in registry.lacking["sw"]
    warned = [r.getMessage() for r in caplog.records if "rule pack sw lacks" in r.getMessage()]
    assert len(warned) == 1 and "recall.asks_when" in warned[0] and "lacks" in warned[0]


@pytest.mark.parametrize(
    ("lacks", "message"),
    [
        ('["recall.asks_when"]', "sw/pack.toml: the pack also lacks admission.assistant_decision"),
        ('["recall.nope"]', "sw/pack.toml: lacks names recall.nope, not among common's language_rules"),
    ],
)
def test_a_pack_whose_gaps_are_named_wrongly_is_refused(tmp_path: Path, lacks: str, message: str) -> None:
    folder = _copy(tmp_path)
    _add_pack(folder, "sw", f"lacks = {lacks}\n")
    with pytest.raises(PackError, match=re.escape(message)):
        Registry(folder)


def test_a_pack_that_names_a_rule_it_defines_as_lacking_is_refused(tmp_path: Path) -> None:
    folder = _copy(tmp_path)
    head = (folder / "de" / "pack.toml").read_text(encoding="utf-8")
    (folder / "de" / "pack.toml").write_text(head.replace("lacks = [", 'lacks = [\n    "recall.asks_when",'))
    with pytest.raises(
        PackError, match=re.escape("de/pack.toml: lacks names recall.asks_when, which the pack defines")
    ):
        Registry(folder)
