"""Reading a rule pack: its folder's TOML files, checked entry by entry, before anything is compiled.

A pack that cannot be used is refused at load with a ``PackError`` naming the pack, the file
and the entry (an unknown key, a missing field, a wrong type, an empty or repeated word, a
name defined twice), so a mistake in a pack stops the process at start-up, not mid-write.
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ALWAYS = "any"  # the script of a pack that applies to every text

_FLAGS = {"IGNORECASE": re.IGNORECASE, "MULTILINE": re.MULTILINE, "DOTALL": re.DOTALL, "ASCII": re.ASCII}
_PACK_KEYS = {
    "name": str, "scripts": list, "order": int, "stemmer": str, "dateparser": str, "year_added": str, "doc": str,
    "lacks": list, "language_rules": list,
}  # fmt: skip
_NOT_PROPERTIES = ("name", "scripts", "order", "doc", "lacks", "language_rules")
_LEXICON_KEYS = {"words": list, "patterns": bool, "flexible_spaces": bool, "doc": str}
_RULE_KEYS = {
    "pattern": str,
    "flags": list,
    "examples": list,
    "counter": list,
    "doc": str,
    "requires": str,
    "requires_words": list,
}
_SLOT_KEYS = {"subject": str, "attribute": str, "patterns": list, "examples": list, "counter": list, "doc": str}
_SLOT_PATTERN_KEYS = {"first": str, "then": str, "either_order": bool, "leftmost": list}


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
    requires: str | None = None  # a pattern every text it matches contains (``Rules.prescreen``)
    requires_words: tuple[str, ...] = ()  # or lexicons one of whose entries such a text has as words


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
    lacks: tuple[str, ...] | None = None  # the rules every language has that this one knowingly goes without
    language_rules: tuple[str, ...] = ()  # (``common``) the rules every language pack is expected to have

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
    for key in ("examples", "counter", "words", "requires_words", "lacks", "language_rules"):
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
        properties={k: v for k, v in head.items() if k not in _NOT_PROPERTIES},
        lacks=tuple(head["lacks"]) if "lacks" in head else None,
        language_rules=tuple(head.get("language_rules", ())),
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
            entry.get("requires"),
            tuple(entry.get("requires_words", [])),
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


def slot_pattern_strings(items: Sequence[Any]) -> Iterator[str]:
    """The pattern strings of a slot's patterns, tables included."""
    for item in items:
        if isinstance(item, str):
            yield item
        elif "leftmost" in item:
            yield from slot_pattern_strings(item["leftmost"])
        else:
            yield item["first"]
            yield item["then"]


__all__ = ["ALWAYS", "Entry", "Lexicon", "Pack", "PackError", "Rule", "load_pack", "slot_pattern_strings"]
