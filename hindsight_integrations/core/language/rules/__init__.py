"""Language rule packs: the only place a word list or a pattern of the rules lives (docs/architecture.md, "Writing").

Each folder here is a pack: ``pack.toml`` (its name, the scripts it is picked for, its order)
and one TOML file per job (``admission.toml``, ``slots.toml``, ``values.toml``…). A file holds:

* ``[fragments]``: named sub-patterns, written ``{NAME}`` inside a pattern (a capital first,
  letters and ``_`` only, so regex quantifiers such as ``{1,3}`` are untouched);
* ``[lexicon.NAME]``: a word list (``words = [...]``; ``patterns = true`` when the entries are
  regex fragments, ``flexible_spaces = true`` when a space in an entry is any run of spaces);
* ``[map.NAME]``: a table of words to their normal form (``"tue" = "tuesday"``, ``"万" = 10000``);
* ``[rule.NAME]``: a pattern (``pattern``, ``flags``) with its ``examples`` (texts it must
  match) and ``counter`` (texts it must not), named ``<file>.<NAME>``;
* ``[script.NAME]``: the characters of a script (``latin``, ``han``…) that picks packs;
* ``[[slot]]``: the slot rules (``subject``, ``attribute``, ``patterns``; see ``slots.py``).

In a pattern, ``{lexicon:a,b}`` is an alternation of lexicons (or maps' keys) ``a`` and ``b`` of
every active pack, and ``{words:a}`` of this pack's only; plain words are escaped and put
longest first. A rule several packs define is their alternation, in pack order.

Packs are picked by script (``for_text``): ``common`` (scripts ``["any"]``) always, and each
pack whose script occurs in the text, so mixed-language text gets both. A rule of a pack only
matches text in that pack's script, so the rules a text does not get could not have matched
it: picking is a saving, never a change. Compiled rules are cached per combination of packs.
"""

from __future__ import annotations

import re
import threading
import tomllib
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .compose import Followed, Leftmost, Searcher, patterns_of

PACKS_DIR = Path(__file__).parent
ALWAYS = "any"  # the script of a pack that applies to every text

_FLAGS = {"IGNORECASE": re.IGNORECASE, "MULTILINE": re.MULTILINE, "DOTALL": re.DOTALL, "ASCII": re.ASCII}
_REFERENCE = re.compile(r"\{(?:(lexicon|words):([a-z_]+(?:,[a-z_]+)*)|([A-Z][A-Za-z_]*))\}")
_PACK_KEYS = {"name": str, "scripts": list, "order": int, "stemmer": str, "doc": str}
_LEXICON_KEYS = {"words": list, "patterns": bool, "flexible_spaces": bool, "doc": str}
_RULE_KEYS = {"pattern": str, "flags": list, "examples": list, "counter": list, "doc": str}
_SLOT_KEYS = {"subject": str, "attribute": str, "patterns": list, "examples": list, "counter": list, "doc": str}
_SLOT_PATTERN_KEYS = {"first": str, "then": str, "either_order": bool, "leftmost": list}
_SLOT_FLAGS = re.IGNORECASE


class PackError(ValueError):
    """A pack that cannot be used, naming the pack, file and entry at fault."""


@dataclass(frozen=True)
class Lexicon:
    """A named word list of one pack."""

    words: tuple[str, ...]
    patterns: bool = False
    flexible_spaces: bool = False


@dataclass(frozen=True)
class Rule:
    """A named pattern of one pack, with the texts it must and must not match."""

    where: str
    pattern: str
    flags: int
    examples: tuple[str, ...] = ()
    counter: tuple[str, ...] = ()


@dataclass(frozen=True)
class Entry:
    """One entry of a rule table (``[[slot]]``), as written."""

    pack: str
    where: str
    fields: dict[str, Any]


@dataclass
class Pack:
    """One language (or ``common``): what its files define, checked and not yet expanded."""

    name: str
    scripts: frozenset[str]
    order: int
    folder: Path
    properties: dict[str, Any] = field(default_factory=dict)
    fragments: dict[str, str] = field(default_factory=dict)
    lexicons: dict[str, Lexicon] = field(default_factory=dict)
    maps: dict[str, dict[str, Any]] = field(default_factory=dict)
    rules: dict[str, Rule] = field(default_factory=dict)
    scripts_defined: dict[str, str] = field(default_factory=dict)
    tables: dict[str, list[Entry]] = field(default_factory=dict)
    defined: dict[str, str] = field(default_factory=dict)  # what → where, for duplicate errors

    def names_of(self, name: str) -> tuple[str, ...] | None:
        """The entries of lexicon ``name`` (or the keys of map ``name``) here, None when neither is."""
        if name in self.lexicons:
            return self.lexicons[name].words
        if name in self.maps:
            return tuple(self.maps[name])
        return None


def _checked(table: dict[str, Any], allowed: Mapping[str, type], required: Sequence[str], where: str) -> dict[str, Any]:
    unknown = sorted(set(table) - set(allowed))
    if unknown:
        raise PackError(f"{where}: unknown key(s) {', '.join(unknown)}; allowed: {', '.join(sorted(allowed))}")
    missing = [key for key in required if key not in table]
    if missing:
        raise PackError(f"{where}: missing {', '.join(missing)}")
    for key, value in table.items():
        if not isinstance(value, allowed[key]):
            raise PackError(f"{where}: {key} must be a {allowed[key].__name__}, not {type(value).__name__}")
    for key in ("examples", "counter", "words"):
        if key in table and not all(isinstance(v, str) for v in table[key]):
            raise PackError(f"{where}: every entry of {key} must be a string")
    return table


def _flags(names: Sequence[str], where: str) -> int:
    flags = 0
    for name in names:
        if name not in _FLAGS:
            raise PackError(f"{where}: unknown flag {name!r}; known: {', '.join(_FLAGS)}")
        flags |= _FLAGS[name]
    return flags


def load_pack(folder: Path) -> Pack:
    """Read and check one pack folder (``pack.toml`` and its job files)."""
    head_file = folder / "pack.toml"
    if not head_file.is_file():
        raise PackError(f"{folder.name}: no pack.toml")
    head = _checked(_read(head_file), _PACK_KEYS, ("name", "scripts"), f"{folder.name}/pack.toml")
    if head["name"] != folder.name:
        raise PackError(f"{folder.name}/pack.toml: name {head['name']!r} is not the folder's name")
    pack = Pack(
        name=head["name"],
        scripts=frozenset(head["scripts"]),
        order=head.get("order", 50),
        folder=folder,
        properties={k: v for k, v in head.items() if k not in ("name", "scripts", "order", "doc")},
    )
    for path in sorted(folder.glob("*.toml")):
        if path.name != "pack.toml":
            _load_file(pack, path)
    return pack


def _read(path: Path) -> dict[str, Any]:
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as exc:
        raise PackError(f"{path.parent.name}/{path.name}: not valid TOML: {exc}") from exc


def _define(pack: Pack, what: str, where: str) -> None:
    if what in pack.defined:
        raise PackError(f"{where}: {what} is already defined in {pack.defined[what]}")
    pack.defined[what] = where


def _load_file(pack: Pack, path: Path) -> None:
    job = path.stem
    file = f"{pack.name}/{path.name}"
    data = _read(path)
    unknown = sorted(set(data) - {"fragments", "lexicon", "map", "rule", "script", "slot", "doc"})
    if unknown:
        raise PackError(f"{file}: unknown table(s) {', '.join(unknown)}")
    for name, text in data.get("fragments", {}).items():
        where = f"{file} [fragments] {name}"
        if not re.fullmatch(r"[A-Z][A-Za-z_]*", name) or not isinstance(text, str):
            raise PackError(f"{where}: a fragment is NAME (a capital first, letters and _) = a pattern string")
        _define(pack, f"fragment {name}", where)
        pack.fragments[name] = text
    for name, table in data.get("lexicon", {}).items():
        where = f"{file} [lexicon.{name}]"
        entry = _checked(table, _LEXICON_KEYS, ("words",), where)
        words = tuple(entry["words"])
        if not words:
            raise PackError(f"{where}: empty word list")
        if len(set(words)) != len(words):
            raise PackError(f"{where}: duplicate entries {sorted({w for w in words if words.count(w) > 1})}")
        _define(pack, f"lexicon {name}", where)
        pack.lexicons[name] = Lexicon(words, entry.get("patterns", False), entry.get("flexible_spaces", False))
    for name, table in data.get("map", {}).items():
        where = f"{file} [map.{name}]"
        if not table or not all(isinstance(v, (str, int)) for v in table.values()):
            raise PackError(f"{where}: a map is a non-empty table of words to strings or integers")
        _define(pack, f"lexicon {name}", where)
        pack.maps[name] = dict(table)
    for name, table in data.get("rule", {}).items():
        where = f"{file} [rule.{name}]"
        entry = _checked(table, _RULE_KEYS, ("pattern",), where)
        _define(pack, f"rule {job}.{name}", where)
        pack.rules[f"{job}.{name}"] = Rule(
            where,
            entry["pattern"],
            _flags(entry.get("flags", []), where),
            tuple(entry.get("examples", [])),
            tuple(entry.get("counter", [])),
        )
    for name, table in data.get("script", {}).items():
        where = f"{file} [script.{name}]"
        _checked(table, {"pattern": str, "doc": str}, ("pattern",), where)
        _define(pack, f"script {name}", where)
        pack.scripts_defined[name] = table["pattern"]
    for n, table in enumerate(data.get("slot", [])):
        where = f"{file} [[slot]] #{n + 1}"
        entry = _checked(table, _SLOT_KEYS, ("subject", "attribute", "patterns"), where)
        where += f" ({entry['subject']}:{entry['attribute']})"
        for item in entry["patterns"]:
            _check_slot_pattern(item, where)
        pack.tables.setdefault("slot", []).append(Entry(pack.name, where, entry))


def _check_slot_pattern(item: Any, where: str) -> None:
    if isinstance(item, str):
        return
    if not isinstance(item, dict):
        raise PackError(f"{where}: a pattern is a string or a table (first/then, leftmost)")
    _checked(item, _SLOT_PATTERN_KEYS, (), where)
    if "leftmost" in item:
        for inner in item["leftmost"]:
            _check_slot_pattern(inner, where)
    elif "first" not in item or "then" not in item:
        raise PackError(f"{where}: a table pattern needs first and then, or leftmost")


class Rules:
    """The rules of one combination of packs, compiled on first use and kept."""

    def __init__(self, packs: Sequence[Pack], every: Sequence[Pack]) -> None:
        self.packs = tuple(packs)
        self.names = tuple(p.name for p in self.packs)
        self._every = tuple(every)
        self._compiled: dict[str, re.Pattern[str] | None] = {}
        self._tables: dict[str, tuple[tuple[Entry, tuple[Searcher, ...]], ...]] = {}
        self._sets: dict[tuple[str, ...], frozenset[str]] = {}
        self._maps: dict[str, dict[str, Any]] = {}
        self._lock = threading.Lock()

    def pattern(self, name: str) -> re.Pattern[str] | None:
        """Rule ``name`` (``"admission.correction"``) of these packs, their parts in pack order; None if none has it."""
        try:
            return self._compiled[name]
        except KeyError:
            pass
        parts = [(pack, pack.rules[name]) for pack in self.packs if name in pack.rules]
        if not parts and not any(name in p.rules for p in self._every):
            raise KeyError(f"no pack defines rule {name!r}")
        compiled = None
        if parts:
            flags = {rule.flags for _, rule in parts}
            if len(flags) > 1:
                raise PackError(f"rule {name}: the packs {[p.name for p, _ in parts]} give it different flags")
            sources = [self.expand(rule.pattern, pack, rule.where) for pack, rule in parts]
            text = sources[0] if len(sources) == 1 else "|".join(f"(?:{s})" for s in sources)
            compiled = _compile(text, flags.pop(), parts[0][1].where)
        with self._lock:
            self._compiled[name] = compiled
        return compiled

    def lexicon(self, name: str) -> tuple[str, ...]:
        """Lexicon ``name`` (or map ``name``'s keys) of these packs, in pack and file order."""
        self._known(name)
        out: dict[str, None] = {}
        for pack in self.packs:
            out.update(dict.fromkeys(pack.names_of(name) or ()))
        return tuple(out)

    def words(self, *names: str) -> frozenset[str]:
        """The entries of lexicons ``names`` of these packs, as a set."""
        try:
            return self._sets[names]
        except KeyError:
            found = self._sets[names] = frozenset(w for name in names for w in self.lexicon(name))
            return found

    def mapping(self, name: str) -> dict[str, Any]:
        """Map ``name`` of these packs merged (a word two packs map differently is refused); do not change it."""
        if name in self._maps:
            return self._maps[name]
        self._known(name)
        out: dict[str, Any] = {}
        for pack in self.packs:
            for key, value in pack.maps.get(name, {}).items():
                if out.get(key, value) != value:
                    raise PackError(f"map {name}: {key!r} means {out[key]!r} in one pack and {value!r} in {pack.name}")
                out[key] = value
        self._maps[name] = out
        return out

    def property(self, name: str) -> Any:
        """A ``pack.toml`` setting (``stemmer``) of the first of these packs that has it, else None."""
        return next((p.properties[name] for p in self.packs if name in p.properties), None)

    def table(self, name: str) -> tuple[tuple[Entry, tuple[Searcher, ...]], ...]:
        """Table ``name``'s entries of these packs, in pack then file order, each with its compiled patterns."""
        try:
            return self._tables[name]
        except KeyError:
            pass
        built = tuple(
            (entry, tuple(self._searcher(item, pack, entry.where) for item in entry.fields["patterns"]))
            for pack in self.packs
            for entry in pack.tables.get(name, [])
        )
        with self._lock:
            self._tables[name] = built
        return built

    def _searcher(self, item: Any, pack: Pack, where: str) -> Searcher:
        if isinstance(item, str):
            return _compile(self.expand(item, pack, where), _SLOT_FLAGS, where)
        if "leftmost" in item:
            return Leftmost([self._searcher(inner, pack, where) for inner in item["leftmost"]])
        first = _compile(self.expand(item["first"], pack, where), _SLOT_FLAGS, where)
        then = _compile(self.expand(item["then"], pack, where), _SLOT_FLAGS, where)
        return Followed(first, then, either_order=item.get("either_order", False))

    def _known(self, name: str) -> None:
        if not any(p.names_of(name) is not None for p in self._every):
            raise KeyError(f"no pack defines lexicon or map {name!r}")

    def expand(self, pattern: str, pack: Pack, where: str, depth: int = 0) -> str:
        """``pattern`` with its fragments and lexicon references written out."""
        if depth > 8:
            raise PackError(f"{where}: fragments nest more than 8 deep (a fragment that names itself?)")
        common = [p for p in self._every if ALWAYS in p.scripts]

        def replace(match: re.Match[str]) -> str:
            kind, names, fragment = match.groups()
            if fragment:
                text = pack.fragments.get(fragment)
                if text is None:
                    text = next((p.fragments[fragment] for p in common if fragment in p.fragments), None)
                if text is None:
                    raise PackError(f"{where}: no fragment {{{fragment}}} in pack {pack.name} or common")
                return self.expand(text, pack, where, depth + 1)
            sources = [pack] if kind == "words" else list(self.packs)
            return self._alternation(names.split(","), sources, where)

        return _REFERENCE.sub(replace, pattern)

    def _alternation(self, names: Sequence[str], sources: Sequence[Pack], where: str) -> str:
        written: list[str] = []
        plain: dict[str, None] = {}
        for name in names:
            if not any(p.names_of(name) is not None for p in self._every):
                raise PackError(f"{where}: no lexicon or map {name!r} in any pack")
            for pack in sources:
                words = pack.names_of(name)
                lexicon = pack.lexicons.get(name)
                if words is None:
                    continue
                if lexicon is not None and lexicon.patterns:
                    written.extend(words)
                    continue
                spaced = lexicon is not None and lexicon.flexible_spaces
                for word in words:
                    plain[re.escape(word).replace(r"\ ", r"\s+") if spaced else re.escape(word)] = None
        by_length = sorted(plain, key=lambda w: len(w.replace(r"\s+", " ").replace("\\", "")), reverse=True)
        alternatives = [*written, *by_length]
        return "(?:" + "|".join(alternatives) + ")" if alternatives else "(?!)"


def _strings(items: Sequence[Any]) -> Iterator[str]:
    """The pattern strings of a slot's patterns, tables included."""
    for item in items:
        if isinstance(item, str):
            yield item
        elif "leftmost" in item:
            yield from _strings(item["leftmost"])
        else:
            yield item["first"]
            yield item["then"]


def _compile(text: str, flags: int, where: str) -> re.Pattern[str]:
    try:
        return re.compile(text, flags)
    except re.error as exc:
        raise PackError(f"{where}: not a valid pattern once expanded: {exc}") from exc


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
        used = {s for p in self.packs for s in p.scripts} - {ALWAYS}
        self._scripts = {name: re.compile(scripts[name]) for name in sorted(used)}
        self._by_scripts: dict[frozenset[str], Rules] = {}
        self.every = Rules(self.packs, self.packs)
        # Every fragment and lexicon a pattern names exists: fail at load, not mid-write. Patterns
        # compile on first use (compiling all at once costs half a second; tests compile them all).
        for pack in self.packs:
            alone = self.of(pack.name)
            for rule in pack.rules.values():
                alone.expand(rule.pattern, pack, rule.where)
            for entry in pack.tables.get("slot", []):
                for item in _strings(entry.fields["patterns"]):
                    alone.expand(item, pack, entry.where)

    def scripts_of(self, text: str) -> frozenset[str]:
        """The scripts of the packs that occur in ``text``."""
        return frozenset(name for name, pattern in self._scripts.items() if pattern.search(text))

    def for_text(self, text: str) -> Rules:
        """The rules for ``text``: ``common`` and the packs of the scripts it is written in."""
        scripts = self.scripts_of(text)
        try:
            return self._by_scripts[scripts]
        except KeyError:
            pass
        rules = Rules([p for p in self.packs if ALWAYS in p.scripts or p.scripts & scripts], self.packs)
        self._by_scripts[scripts] = rules
        return rules

    def of(self, *names: str) -> Rules:
        """The rules of the packs ``names`` (and ``common``), whatever the text."""
        unknown = set(names) - {p.name for p in self.packs}
        if unknown:
            raise KeyError(f"no rule pack {sorted(unknown)[0]!r}")
        return Rules([p for p in self.packs if ALWAYS in p.scripts or p.name in names], self.packs)

    def compiled(self) -> Iterator[tuple[str, Searcher]]:
        """Every compiled rule of every pack, alone and with all the others: what the security walk checks."""
        for rules in [*(self.of(p.name) for p in self.packs), self.every]:
            label = "+".join(rules.names)
            for name in sorted({n for p in rules.packs for n in p.rules}):
                if (pattern := rules.pattern(name)) is not None:
                    yield f"{label}:{name}", pattern
            for entry, searchers in rules.table("slot"):
                for searcher in searchers:
                    yield f"{label}:{entry.where}", searcher


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


def use_folder(folder: Path | None) -> Registry:
    """Read the packs from ``folder`` from now on (None: back to the packaged ones); returns the new registry."""
    global _registry
    with _lock:
        _registry = Registry(folder or PACKS_DIR)
        return _registry


def for_text(text: str) -> Rules:
    """The rules for ``text`` (see ``Registry.for_text``)."""
    return registry().for_text(text)


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
    "Rules",
    "Searcher",
    "every",
    "for_text",
    "load_pack",
    "patterns_of",
    "registry",
    "use_folder",
]
