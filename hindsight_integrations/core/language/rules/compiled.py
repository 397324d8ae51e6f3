"""The rules of one combination of packs: fragments and lexicons written out, patterns compiled once and kept."""

from __future__ import annotations

import re
import threading
from collections.abc import Sequence
from typing import Any

from .compose import Followed, Leftmost, Searcher
from .loading import ALWAYS, Entry, Pack, PackError, Rule
from .prescreen import Prescreen, first_word

# ``{lexicon:a,b}``, ``{words:a}`` or ``{FRAGMENT}`` inside a pattern (letters only: ``{1,3}`` is a quantifier).
_REFERENCE = re.compile(r"\{(?:(lexicon|words):([a-z_]+(?:,[a-z_]+)*)|([A-Z][A-Za-z_]*))\}")
_SLOT_FLAGS = re.IGNORECASE  # slot patterns read text as written


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
        self._prescreens: dict[str, Prescreen | None] = {}
        self._parts: dict[str, tuple[tuple[Pack, re.Pattern[str]], ...]] = {}
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

    def search(self, name: str, text: str) -> re.Match[str] | None:
        """The first match of rule ``name`` in ``text``; None where it does not match or no pack has it."""
        pattern = self.pattern(name)
        return pattern.search(text) if pattern is not None else None

    def matched_by(self, names: Sequence[str], text: str, spans: Sequence[tuple[int, int]] = ()) -> list[Pack]:
        """The packs whose own part of a rule of ``names`` matches ``text`` (overlapping ``spans``, if given).

        Recall asks the date parser of each pack whose time words a question uses, not of every
        pack of its script: eight for Latin letters would read an English question eight times,
        and a word of one language may be another's.
        """
        found = {
            pack.name
            for name in names
            for pack, part in self._parts_of(name)
            for m in part.finditer(text)
            if not spans or any(m.start() < end and begin < m.end() for begin, end in spans)
        }
        return [pack for pack in self.packs if pack.name in found]

    def _parts_of(self, name: str) -> tuple[tuple[Pack, re.Pattern[str]], ...]:
        """Each of these packs' own part of rule ``name``, compiled alone (and kept)."""
        try:
            return self._parts[name]
        except KeyError:
            pass
        found = tuple((pack, self.own(pack.rules[name], pack)) for pack in self.packs if name in pack.rules)
        with self._lock:
            return self._parts.setdefault(name, found)

    def prescreen(self, name: str) -> Prescreen | None:
        """What a text must hold for rule ``name`` to match (``prescreen.py``); None if a part declares nothing."""
        try:
            return self._prescreens[name]
        except KeyError:
            pass
        parts = [(pack, pack.rules[name]) for pack in self.packs if name in pack.rules]
        found = None
        if parts and all(rule.requires or rule.requires_words for _, rule in parts):
            required = [f"(?:{rule.requires})" for _, rule in parts if rule.requires]
            words = {
                word for pack, rule in parts for lexicon in rule.requires_words for word in _firsts(pack, rule, lexicon)
            }
            pattern = _compile("|".join(required), parts[0][1].flags, parts[0][1].where) if required else None
            found = Prescreen(pattern, frozenset(words))
        with self._lock:
            self._prescreens[name] = found
        return found

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
            (entry, self.searchers(entry, pack)) for pack in self.packs for entry in pack.tables.get(name, [])
        )
        with self._lock:
            self._tables[name] = built
        return built

    def own(self, rule: Rule, pack: Pack) -> re.Pattern[str]:
        """``rule`` of ``pack`` compiled on its own, with these packs' lexicons (what its examples are checked on)."""
        return _compile(self.expand(rule.pattern, pack, rule.where), rule.flags, rule.where)

    def searchers(self, entry: Entry, pack: Pack) -> tuple[Searcher, ...]:
        """The compiled patterns of one table entry of ``pack``, in its order."""
        return tuple(self._searcher(item, pack, entry.where) for item in entry.fields["patterns"])

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
            return self._alternation(names.split(","), sources, where, depth)

        return _REFERENCE.sub(replace, pattern)

    def _alternation(self, names: Sequence[str], sources: Sequence[Pack], where: str, depth: int) -> str:
        """Lexicons ``names`` of ``sources`` as one alternation: patterns as written, then words longest first.

        A pattern entry may name fragments and lexicons itself (``went\\s+{lexicon:diets}``),
        written out with its own pack's fragments.
        """
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
                    written.extend(self.expand(word, pack, where, depth + 1) for word in words)
                    continue
                spaced = lexicon is not None and lexicon.flexible_spaces
                for word in words:
                    plain[re.escape(word).replace(r"\ ", r"\s+") if spaced else re.escape(word)] = None
        by_length = sorted(plain, key=lambda w: len(w.replace(r"\s+", " ").replace("\\", "")), reverse=True)
        alternatives = [*written, *by_length]
        return "(?:" + "|".join(alternatives) + ")" if alternatives else "(?!)"


def _firsts(pack: Pack, rule: Rule, lexicon: str) -> set[str]:
    """The first words of the entries of ``lexicon``, which ``rule`` must read as ``{words:...}`` (this pack's)."""
    if not re.search(r"\{words:(?:[a-z_]+,)*" + re.escape(lexicon) + r"[,}]", rule.pattern):
        raise PackError(f"{rule.where}: requires_words {lexicon!r} is not a {{words:...}} of its pattern")
    if (written := pack.lexicons.get(lexicon)) is not None and written.patterns:
        raise PackError(f"{rule.where}: requires_words {lexicon!r} holds patterns, whose words cannot be told")
    firsts = [first_word(entry) for entry in pack.names_of(lexicon) or ()]
    if not firsts or None in firsts:
        raise PackError(f"{rule.where}: requires_words {lexicon!r} has no entries, or some start with no letter")
    return {word for word in firsts if word}


def _compile(text: str, flags: int, where: str) -> re.Pattern[str]:
    try:
        return re.compile(text, flags)
    except re.error as exc:
        raise PackError(f"{where}: not a valid pattern once expanded: {exc}") from exc


__all__ = ["Rules"]
