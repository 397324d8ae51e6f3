"""Rule-based conflict detection: which subject/attribute a statement sets (docs/architecture.md, "Writing").

A new value for the same subject and attribute supersedes the old record (kept as history,
never deleted). ``detect_slot`` names that ``"subject:attribute"`` with offline rules, English
and Chinese, checked in this order:

* explicit attributes of the user — name, phone, email, address, team, role/title, location
  (live/moved/based; city and home count as location; 住在/搬到/搬去/在X住, time words in
  between allowed), employer (work at/for, started a new job, joined/left/hired by/now at an
  organisation written with a capital; 在X工作/上班, 换了工作, 跳槽, 入职, 辞职), diet
  (vegetarian/vegan/eat meat again; 吃素/不吃肉), manager, partner, car — and of the project:
  deadline (deadline, due date, is due; 截止日期/期限) and budget (budget; 预算);
* a project's database, language, cloud, OS or frontend named with a project cue; Go, which
  the lexicon cannot hold ("go" is a verb), where it is what something is written in ("written
  in Go", "用 Go 写的");
* "my/our X is Y" and "the/my/our X is now / changed to / moved to Y", X normalised: leading
  "new", "current", articles dropped, synonyms folded (phone number, mobile, cell → phone;
  boss → manager; wife, boyfriend → partner; city, home → location; favorite color →
  favourite_colour). Vague heads ("my guess is", a bare "my favourite is") get no slot.

A "user" attribute said of someone else is that person's slot (``priya:phone``), a named
project's attribute is that project's (``project ember:database``) and a deadline is narrowed
to what is due when the text says (``project:deadline of report``): ``subjects.py``.

Deliberately nothing fuzzy: likes and dislikes get no slot ("likes red" and "hates red
clothes" are different attributes), and anything not matched here never supersedes anything.
Known gaps: "I left Paris" reads as leaving an employer; a bare "my manager is tired" still
takes the manager slot; objects are not compared, so two different meetings "moved to" a new
time share a slot.

``change_cue`` says whether a text announces a change of an earlier value ("now", "new X",
"moved to", "no longer", "cancelled", "update:", 改成, 搬到, 换了, 不再, 取消, 推迟…).

The rules are the language packs' (``language/rules/*/slots.toml``): ``[[slot]]`` tables in
order, the generic ``my_x_is`` / ``x_is_now`` rules with their word lists, the ``change`` cue,
and ``common``'s technology names (``category``). This module holds the order they are
tried in and what a match means.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from functools import lru_cache
from pathlib import Path
from re import Match

from .rules import Rules, Searcher, every, for_text, registry
from .subjects import owner_of, project_slot
from .text import in_spans, rule_spans

# The project attributes named by a technology, in the order they are tried (``common``'s
# ``slots.category`` has a named group for each).
_CATEGORIES = ("database", "language", "cloud", "os", "frontend")
# Attributes a project has rather than a person (the rest of the generic slots are the speaker's).
_SUBJECT_OF = {"deadline": "project", "budget": "project"}

# Attributes of a person that last until changed: a statement setting one is never a passing
# event, even when it says when ("I moved to Lisbon yesterday", "started at Feedzai this week").
LASTING_ATTRIBUTES = frozenset(
    {"name", "phone", "email", "address", "team", "role", "location", "employer", "diet", "manager", "partner", "car"}
)


def is_lasting(slot: str | None) -> bool:
    """Whether ``slot`` (``"subject:attribute"``) is one of someone's ``LASTING_ATTRIBUTES``."""
    return slot is not None and slot.rpartition(":")[2] in LASTING_ATTRIBUTES


def is_named(slot: str | None) -> bool:
    """Whether ``slot`` is one the packs' slot rules name (a phone, rent, a project's database…).

    Not a generic "my X is" slot (``user:family`` from "my family is everything"): chat is full of
    those, and they name no question precisely enough for a slot on one side alone to say two
    statements answer it (``supersede.rule_verdict``).
    """
    if slot is None:
        return False
    attribute = slot.rpartition(":")[2]
    head = attribute.partition(" of ")[0]  # "language of backend": a part's technology (subjects.project_slot)
    return attribute in _named_attributes(every()) or head in _CATEGORIES or head in ("deadline", "name")


@lru_cache(maxsize=16)
def _named_attributes(rules: Rules) -> frozenset[str]:
    named = {attribute for _, attribute, _ in _slot_rules(rules)}
    return frozenset(named | set(_CATEGORIES) | set(_SUBJECT_OF))


def detect_slot(content: str) -> str | None:
    """Return ``"subject:attribute"`` if the text sets a recognisable attribute, else None.

    The rules run on the text's bounded spans (``text.rule_spans``): a text of normal length is
    one span, and a long one costs time in proportion to its length whatever the rule.
    """
    spans = rule_spans(content)
    rules = for_text(content)
    return _explicit_slot(rules, content, spans) or _category_slot(content) or _generic_slot(rules, content, spans)


def slot_rules() -> str:
    """A digest of what decides a slot: this layer's code and the packs in use, each file's path and bytes.

    A namespace records it with its slots (``write/reslot.py``): slots read under other rules are read again.
    """
    return _digest(Path(__file__).parent, registry().folder)


@lru_cache(maxsize=4)
def _digest(code: Path, packs: Path) -> str:
    found = hashlib.sha256()
    for root, pattern in ((code, "*.py"), (packs, "*.toml")):
        for file in sorted(root.rglob(pattern)):
            found.update(file.relative_to(root).as_posix().encode() + b"\0" + file.read_bytes())
    return found.hexdigest()[:16]


def change_cue(content: str) -> bool:
    """Whether the text signals a change of an earlier value ("now", "moved to", "no longer", 改成, 不再…)."""
    return in_spans(for_text(content).pattern("slots.change"), content)


@lru_cache(maxsize=16)
def _slot_rules(rules: Rules) -> list[tuple[str, str, list[Searcher]]]:
    """The packs' slot rules by slot, slots in the order they first appear, a slot's patterns in pack order."""
    grouped: dict[tuple[str, str], list[Searcher]] = {}
    for entry, searchers in rules.table("slot"):
        grouped.setdefault((entry.fields["subject"], entry.fields["attribute"]), []).extend(searchers)
    return [(subject, attribute, found) for (subject, attribute), found in grouped.items()]


def _explicit_slot(rules: Rules, content: str, spans: Sequence[str]) -> str | None:
    for subject, attribute, searchers in _slot_rules(rules):
        for rule in searchers:
            for span in spans:
                if match := rule.search(span):
                    if subject == "project":
                        return project_slot(content, attribute)
                    return f"{owner_of(span, match.start()) or subject}:{_filled(attribute, match)}"
    return None


def _filled(attribute: str, match: Match[str]) -> str:
    """``"name of {animal}"`` with the animal the rule found, in one language: two pets' names are two slots.

    So is ``"price of {service}"``: the gym's price and the phone plan's are two facts. A kind of plan
    any service sells names none ("our family plan", "our family membership": the packs' ``plan_kinds``),
    so it is named with its contract, "price of family plan" and "price of family membership".
    """
    found = match.groupdict()
    if "{animal}" in attribute:
        animal = (found.get("animal") or "pet").lower()
        return attribute.replace("{animal}", every().mapping("pet_kinds").get(animal, animal))
    if "{service}" in attribute:
        service = (found.get("service") or "service").lower()
        if found.get("contract") and service in every().words("plan_kinds"):
            service = f"{service} {found['contract'].lower()}"
        return attribute.replace("{service}", service)
    return attribute


def _category_slot(content: str) -> str | None:
    lowered = content.lower()
    category = every().pattern("slots.category")
    named = {match.lastgroup for match in category.finditer(lowered)} if category else set()
    for attribute in _CATEGORIES:
        if attribute in named and _about_project(lowered, attribute):
            return project_slot(content, attribute)
    return None


def _about_project(lowered: str, attribute: str) -> bool:
    return attribute in lowered or any(cue in lowered for cue in every().lexicon("project_cues"))


def _generic_slot(rules: Rules, content: str, spans: Sequence[str]) -> str | None:
    for name in ("slots.my_x_is", "slots.x_is_now"):
        pattern = rules.pattern(name)
        match = next((m for span in spans if (m := pattern.search(span))), None) if pattern else None
        attribute = _attribute(match.group(1)) if match else None
        if match and attribute:
            subject = _SUBJECT_OF.get(attribute, "user")
            if subject == "project":
                return project_slot(content, attribute)
            return f"{owner_of(match.string, match.start()) or subject}:{attribute}"
    return None


def _attribute(phrase: str) -> str | None:
    """``"new phone number"`` → ``phone``, ``"favorite color"`` → ``favourite_colour``; None when vague."""
    rules = every()
    dropped = rules.words("dropped_words")
    words = [w for w in phrase.lower().replace("-", " ").split() if w not in dropped]
    if not words or words[0] in rules.words("not_heads") or " ".join(words) in rules.words("vague_heads"):
        return None
    key = "_".join(words)
    for spelling, normal in rules.mapping("spellings").items():
        key = key.replace(spelling, normal)
    return rules.mapping("attribute_synonyms").get(key, key)


__all__ = ["LASTING_ATTRIBUTES", "change_cue", "detect_slot", "is_lasting", "is_named", "slot_rules"]
