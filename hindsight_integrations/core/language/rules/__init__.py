"""Language rule packs: the only place a word list or a pattern of the rules lives (docs/architecture.md, "Writing").

Each folder here is a pack: ``pack.toml`` (its name, the scripts it is picked for, its order)
and one TOML file per job (``admission.toml``, ``slots.toml``, ``values.toml``…). A file holds:

* ``[fragments]``: named sub-patterns, written ``{NAME}`` inside a pattern (a capital first,
  letters and ``_`` only, so regex quantifiers such as ``{1,3}`` are untouched);
* ``[lexicon.NAME]``: a word list (``words = [...]``; ``patterns = true`` when the entries are
  regex fragments, ``flexible_spaces = true`` when a space in an entry is any run of spaces);
* ``[map.NAME]``: a table of words to their normal form (``"tue" = "tuesday"``, ``"万" = 10000``);
* ``[rule.NAME]``: a pattern (``pattern``, ``flags``) with its ``examples`` (texts it must
  match) and ``counter`` (texts it must not), named ``<file>.<NAME>``; optionally what every
  text it matches holds, so that a text without it skips the rule (``requires``: a short
  pattern; ``requires_words``: word lexicons or maps of a ``{words:...}`` of the pattern; ``prescreen.py``);
* ``[script.NAME]``: the characters of a script (``latin``, ``han``…) that picks packs;
* ``[[slot]]``: the slot rules (``subject``, ``attribute``, ``patterns``; see ``slots.py``).

In a pattern, ``{lexicon:a,b}`` is an alternation of lexicons (or maps' keys) ``a`` and ``b`` of
every active pack, and ``{words:a}`` of this pack's only; plain words are escaped and put
longest first (a ``patterns = true`` lexicon's entries are written as they are, and may name
fragments and lexicons themselves). A rule several packs define is their alternation, in pack order.

Packs are picked by script (``for_text``): ``common`` (scripts ``["any"]``) always, and each
pack whose script occurs in the text, so mixed-language text gets both. A rule of a pack only
matches text in that pack's script, so the rules a text does not get could not have matched
it: picking is a saving, never a change. Compiled rules are cached per combination of packs.

Adding a language is adding a folder (``pack.toml`` with its script, and the lexicons or rules
it has: a folder with one greeting lexicon already changes the write filter). ``common``'s
``language_rules`` lists the rules every language is expected to have (those English and
Chinese both do: ``recall.asks_when``, ``recall.time_hint``, the write filter's kinds...); a pack
names those it goes without in its ``lacks``, exactly, and one that names none loads with a
warning listing them (``Registry.lacking``), so a partial pack is never silently so. ``loading.py``
reads and checks a pack, ``compiled.py`` writes out and compiles one combination's rules, and
this module picks the combination for a text.
"""

from __future__ import annotations

import itertools
import logging
import re
import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Protocol

from .compiled import Rules
from .compose import Followed, Leftmost, Searcher, patterns_of
from .loading import ALWAYS, Entry, Pack, PackError, Rule, load_pack, slot_pattern_strings

PACKS_DIR = Path(__file__).parent
log = logging.getLogger(__name__)


class Registry:
    """Every pack of a folder, and the rules of each combination of them (cached)."""

    def __init__(self, folder: Path = PACKS_DIR) -> None:
        self.folder = folder
        packs = [load_pack(d) for d in sorted(folder.iterdir()) if d.is_dir() and not d.name.startswith(("_", "."))]
        if not packs:
            raise PackError(f"{folder}: no rule packs")
        self.packs = tuple(sorted(packs, key=lambda p: (p.order, p.name)))
        scripts: dict[str, str] = {}
        for pack in self.packs:
            scripts.update(pack.scripts_defined)
        for pack in self.packs:
            unknown = pack.scripts - set(scripts) - {ALWAYS}
            if unknown:
                raise PackError(f"{pack.name}/pack.toml: no [script.{sorted(unknown)[0]}] in any pack")
        self.lacking = {pack.name: _gaps(pack, self.packs) for pack in self.packs if ALWAYS not in pack.scripts}
        """Each language pack's gaps: the rules of ``common``'s ``language_rules`` it does not define."""
        used = {s for p in self.packs for s in p.scripts} - {ALWAYS}
        self._scripts = {name: re.compile(scripts[name]) for name in sorted(used)}
        self._by_scripts: dict[frozenset[str], Rules] = {}
        self._lock = threading.Lock()
        self.every = Rules(self.packs, self.packs)
        # Every fragment and lexicon a pattern names exists: fail at load, not mid-write. Patterns
        # compile on first use (compiling all at once costs half a second; tests compile them all).
        for pack in self.packs:
            alone = self.of(pack.name)
            for name, rule in pack.rules.items():
                alone.expand(rule.pattern, pack, rule.where)
                if rule.requires or rule.requires_words:
                    alone.prescreen(name)
            for entry in pack.tables.get("slot", []):
                for item in slot_pattern_strings(entry.fields["patterns"]):
                    alone.expand(item, pack, entry.where)

    def scripts_of(self, text: str) -> frozenset[str]:
        """The scripts of the packs that occur in ``text``."""
        return frozenset(name for name, pattern in self._scripts.items() if pattern.search(text))

    def for_text(self, text: str) -> Rules:
        """The rules for ``text``: ``common`` and the packs of the scripts it is written in."""
        return self.for_scripts(self.scripts_of(text))

    def for_scripts(self, scripts: frozenset[str]) -> Rules:
        """The rules of ``common`` and the packs of ``scripts`` (kept: one ``Rules`` per combination)."""
        try:
            return self._by_scripts[scripts]
        except KeyError:
            pass
        rules = Rules([p for p in self.packs if ALWAYS in p.scripts or p.scripts & scripts], self.packs)
        with self._lock:
            return self._by_scripts.setdefault(scripts, rules)

    def of(self, *names: str) -> Rules:
        """The rules of the packs ``names`` (and ``common``), whatever the text."""
        unknown = set(names) - {p.name for p in self.packs}
        if unknown:
            raise KeyError(f"no rule pack {sorted(unknown)[0]!r}")
        return Rules([p for p in self.packs if ALWAYS in p.scripts or p.name in names], self.packs)

    def combinations(self) -> list[Rules]:
        """Each pack alone (with ``common``), and every combination a text can pick by its scripts."""
        scripts = sorted(self._scripts)
        picked = [frozenset(c) for n in range(len(scripts) + 1) for c in itertools.combinations(scripts, n)]
        found: dict[tuple[str, ...], Rules] = {}
        for rules in [*(self.of(p.name) for p in self.packs), *(self.for_scripts(s) for s in picked), self.every]:
            found.setdefault(rules.names, rules)
        return list(found.values())

    def compiled(self) -> Iterator[tuple[str, Searcher]]:
        """Every compiled rule of every combination (``combinations``): what the security walk checks."""
        for rules in self.combinations():
            label = "+".join(rules.names)
            for name in sorted({n for p in rules.packs for n in p.rules}):
                if (pattern := rules.pattern(name)) is not None:
                    yield f"{label}:{name}", pattern
            for entry, searchers in rules.table("slot"):
                for searcher in searchers:
                    yield f"{label}:{entry.where}", searcher

    def examples(self) -> Iterator[RuleExamples]:
        """Every rule and table entry of every pack, with the texts it must and must not match.

        ``tests/test_language_packs.py`` runs them all: each text is matched by the entry alone,
        written out with the lexicons of the packs that text picks (``common``'s amounts read
        English and Chinese scales: "5k", "1.5万").
        """
        for pack in self.packs:
            for rule in pack.rules.values():
                compiled = self._matcher(partial(_own_rule, rule=rule, pack=pack))
                yield RuleExamples(rule.where, rule.examples, rule.counter, compiled)
            for entries in pack.tables.values():
                for entry in entries:
                    examples, counter = entry.fields.get("examples", []), entry.fields.get("counter", [])
                    compiled = self._matcher(partial(Rules.searchers, entry=entry, pack=pack))
                    yield RuleExamples(entry.where, tuple(examples), tuple(counter), compiled)

    def _matcher(self, compile_with: Callable[[Rules], tuple[Searcher, ...]]) -> Callable[[str], bool]:
        """Whether a text is matched by an entry compiled with the packs the text picks."""

        def matches(text: str) -> bool:
            return any(searcher.search(text) for searcher in compile_with(self.for_text(text)))

        return matches


def _gaps(pack: Pack, packs: Sequence[Pack]) -> frozenset[str]:
    """The rules every language has (``common``'s ``language_rules``) that ``pack`` does not define.

    A pack says which it knowingly goes without (``lacks`` in its ``pack.toml``), and that list
    must be exact: a gap it does not name, or a rule it names but defines, stops the load. A pack
    that names none (a new folder of greetings) loads, with a warning naming what its language's
    text goes without, so a partial pack is never silently so.
    """
    expected = {name for p in packs for name in p.language_rules}
    missing = frozenset(expected - set(pack.rules))
    if pack.lacks is None:
        if missing:
            log.warning(
                "rule pack %s lacks %d rules every language has: %s; a text in it goes without them "
                "(write them in the pack, or list them in its pack.toml's lacks)",
                pack.name,
                len(missing),
                ", ".join(sorted(missing)),
            )
        return missing
    where, declared = f"{pack.name}/pack.toml", set(pack.lacks)
    if unknown := sorted(declared - expected):
        raise PackError(f"{where}: lacks names {', '.join(unknown)}, not among common's language_rules")
    if defined := sorted(declared & set(pack.rules)):
        raise PackError(f"{where}: lacks names {', '.join(defined)}, which the pack defines: take it out of lacks")
    if undeclared := sorted(missing - declared):
        raise PackError(f"{where}: the pack also lacks {', '.join(undeclared)}: write it, or add it to lacks")
    return missing


def _own_rule(rules: Rules, *, rule: Rule, pack: Pack) -> tuple[Searcher, ...]:
    return (rules.own(rule, pack),)


@dataclass(frozen=True)
class RuleExamples:
    """One rule's or table entry's examples and counter-examples, and whether it matches a text."""

    where: str
    examples: tuple[str, ...]
    counter: tuple[str, ...]
    matches: Callable[[str], bool]


_lock = threading.Lock()
_registry: Registry | None = None


def registry() -> Registry:
    """The packs in use (those under ``PACKS_DIR`` unless ``use_folder`` chose others), loaded once."""
    global _registry
    if _registry is None:
        with _lock:
            if _registry is None:
                _registry = Registry()
    return _registry


class Clearable(Protocol):
    """A cache of results read off the packs (a ``functools.lru_cache``)."""

    def cache_clear(self) -> None:
        """Forget every result."""
        ...


_read_off_packs: list[Clearable] = []


def clear_with_packs(*caches: Clearable) -> None:
    """Note caches of results read off the packs (``values_of``, a text's keys): ``use_folder`` empties them."""
    _read_off_packs.extend(caches)


def use_folder(folder: Path | None) -> Registry:
    """Read the packs from ``folder`` from now on (None: back to the packaged ones); returns the new registry.

    The results cached from the packs before (``clear_with_packs``) are forgotten, so every text
    is read with the new packs.
    """
    global _registry
    with _lock:
        _registry = Registry(folder or PACKS_DIR)
        for cache in _read_off_packs:
            cache.cache_clear()
        return _registry


def for_text(text: str) -> Rules:
    """The rules for ``text`` (see ``Registry.for_text``)."""
    return registry().for_text(text)


def matches(rule: str, text: str) -> bool:
    """Whether ``rule`` of the packs ``text`` picks matches it, lowered: a question asking when, naming a time."""
    lowered = text.lower()
    return for_text(lowered).search(rule, lowered) is not None


def every() -> Rules:
    """The rules of every pack together (for word sets and tables read whatever the text)."""
    return registry().every


__all__ = [
    "PACKS_DIR",
    "Entry",
    "Followed",
    "Leftmost",
    "PackError",
    "Registry",
    "RuleExamples",
    "Rules",
    "Searcher",
    "clear_with_packs",
    "every",
    "for_text",
    "load_pack",
    "matches",
    "patterns_of",
    "registry",
    "use_folder",
]
