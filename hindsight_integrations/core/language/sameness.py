"""In what two memories agree or differ, and whether they state one fact (docs/architecture.md, "Writing", "Upkeep").

One check, shared by the write path and upkeep: ``compare`` says, each part computed once and
only when asked, whether two memories can be compared at all (``can_repeat``), whether their
slots or entities differ, whether one turns the other round, whether their negations, values
and subjects differ, and whether one says all the other says. ``repeats.is_repeat`` (a repeat:
the same text, or close meaning with the same values and negations), ``supersede.rule_verdict``
(an update) and consolidation's clustering (``same_frame``, ``joins``: one fact) read it.

Embedding similarity cannot tell a restatement from a contrast. For MiniLM, "I prefer window
seats on trains" is as close to "I prefer aisle seats on trains" (0.80) as to "I like sitting
by the window when I travel by train" (0.80), and "I prefer concise answers" is closer to "I
prefer detailed answers" (0.78) than to "Keep your answers short, please" (0.55). Similarity
therefore only nominates. Two memories state one fact when, as well:

* they carry the same values (numbers, dates, codes, names, places: ``values.py``) and the same
  negations ("no longer", "not": ``keys.polarity``), and are not about different identifiers
  or people's relatives (``subjects.different_subjects``);
* their slots (``slots.detect_slot``) agree when both have one, and their entities overlap
  when both have some;
* they do not say opposite changes: "我之前用 MySQL，现在换成了 MongoDB" and "我之前用
  MongoDB，现在换成了 MySQL" carry the same values and characters, but what each says is gone
  (``retired.retired_spans``: "from A to", "to B from A", "instead of A", 把 A 换成, 之前用 A，现在) is
  another thing (``opposite_changes``); a list ("Paris and Lyon") says nothing gone, in any order;
* they speak of the same people: the same pronouns among I / we / he-she-they, and the same
  people do what is said to the same people: "We visit my mom every Christmas" has the
  mother visited, "My mom visits us every Christmas" has her visit (``swaps_roles``: the same
  people named in another order, a pronoun turned from doer to receiver);
* one says everything the other says, and at most as much again: the content words of one are
  all among the other's (after dropping fillers such as "please", "as I said", and reading
  like / love / prefer as one word). A word of one *replaced* by another ("window" → "aisle",
  "trains" → "planes", "like" → "hate") is a different fact, and so is an added name or
  relative ("My sister prefers window seats").

A cluster (``joins``) holds memories that all extend its *core*, the member that says least:
"When I travel by train, I prefer window seats" and "On long train journeys I prefer a window
seat" add different details to "I prefer window seats on trains", and replace none of its words.

Paraphrases that change words ("An oat flat white is my usual." / "If you order coffee for me,
it's a flat white with oat milk.") are not one fact here; consolidation reads what this leaves
alone a second time, more loosely (``paraphrase.py``).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from functools import cached_property, lru_cache

from ..model.records import Kind, MemoryRecord, Tier
from .keys import negations, normalised, polarity, topic_words
from .retired import retired_spans
from .rules import clear_with_packs, every, for_text
from .speakers import without_speaker
from .subjects import different_subjects
from .text import lexical_tokens, stopwords
from .values import differing_values, values_of


def can_repeat(record: MemoryRecord) -> bool:
    """Turns, summaries and working memory are never deduplicated (nor updated): each is its own moment."""
    return record.kind not in (Kind.TURN, Kind.SUMMARY) and record.tier is not Tier.WORKING


def reversals() -> frozenset[str]:
    """Words that reverse a statement when only one side has them: the packs' ``negations`` and ``reversals``."""
    return every().words("negations", "reversals")


def reverses(old: str, new: str) -> bool:
    """Whether ``new`` says ``old`` turned around: the same topic words, a negation on one side only.

    "I'm no longer allergic to peanuts" reverses "Lena: I'm allergic to peanuts"; "I'm not
    allergic to cats" does not reverse "I'm allergic to peanuts" (other words).
    """
    return _turned_round(polarity(old) ^ polarity(new), old, new)


def _turned_round(flipped: set[str], old: str, new: str) -> bool:
    if not flipped & negations():
        return False
    before = topic_words(old)
    return bool(before) and before == topic_words(new)


class Comparison:
    """In what memories ``a`` and ``b`` agree or differ; each part is computed when first asked, once."""

    def __init__(self, a: MemoryRecord, b: MemoryRecord) -> None:
        self.a = a
        self.b = b

    @cached_property
    def comparable(self) -> bool:
        """Both are statements that may repeat or update another (``can_repeat``)."""
        return can_repeat(self.a) and can_repeat(self.b)

    @cached_property
    def different_slots(self) -> bool:
        """Both set an attribute, not the same one."""
        return bool(self.a.slot and self.b.slot and self.a.slot != self.b.slot)

    @cached_property
    def disjoint_entities(self) -> bool:
        """Both name entities (speakers, projects), none in common: about different people or things."""
        return bool(self.a.entities and self.b.entities and not set(self.a.entities) & set(self.b.entities))

    @cached_property
    def same_text(self) -> bool:
        """The same text once normalised (``keys.normalised``): an exact repeat."""
        return normalised(self.a.content) == normalised(self.b.content)

    @cached_property
    def flipped(self) -> set[str]:
        """The negations and qualifiers only one of them has (``keys.polarity``)."""
        return polarity(self.a.content) ^ polarity(self.b.content)

    @property
    def same_polarity(self) -> bool:
        """The same negations and qualifiers."""
        return not self.flipped

    @cached_property
    def differing_values(self) -> tuple[frozenset[str], frozenset[str]]:
        """The values only ``a`` carries and those only ``b`` carries."""
        return differing_values(self.a.content, self.b.content)

    @property
    def same_values(self) -> bool:
        """The same values, in any order (two texts without values have the same)."""
        only_a, only_b = self.differing_values
        return not (only_a or only_b)

    @cached_property
    def different_subjects(self) -> bool:
        """About different things: other identifiers, other people's relatives (``subjects``)."""
        return different_subjects(self.a.content, self.b.content)

    @cached_property
    def reversal(self) -> bool:
        """``b`` says ``a`` turned around (``reverses``)."""
        return _turned_round(self.flipped, self.a.content, self.b.content)

    @cached_property
    def swapped_roles(self) -> bool:
        """Who does what to whom is turned round: "My mom visits us" / "We visit my mom" (``swaps_roles``)."""
        return swaps_roles(self.a.content, self.b.content)

    @cached_property
    def opposite_changes(self) -> bool:
        """Each says another thing is gone: "from MySQL to MongoDB" / "from MongoDB to MySQL" (``opposite_changes``)."""
        return opposite_changes(self.a.content, self.b.content)

    @property
    def same_setting(self) -> bool:
        """Everything but the wording and the negations agrees: comparable, slots, entities, values, subjects,
        roles and what is said to be gone."""
        return (
            self.comparable
            and not self.different_slots
            and not self.disjoint_entities
            and self.same_values
            and not self.different_subjects
            and not self.swapped_roles
            and not self.opposite_changes
        )

    @property
    def same_frame(self) -> bool:
        """Everything but the wording agrees: ``same_setting`` and the same negations."""
        return self.same_setting and self.same_polarity


def compare(a: MemoryRecord, b: MemoryRecord) -> Comparison:
    """In what ``a`` and ``b`` agree or differ (see ``Comparison``)."""
    return Comparison(a, b)


# The groups of people a statement speaks of (the packs' ``pronouns_<group>``).
_PEOPLE = ("self", "we", "others")


def stem(word: str) -> str:
    """A word as sameness compares it: like / love / prefer as "+", hate / avoid as "-", a plural as its singular."""
    rules = every()
    if word in rules.words("likes"):
        return "+"  # "I like X" and "I prefer X" state one preference
    if word in rules.words("dislikes"):
        return "-"
    plural = rules.pattern("sameness.plural")
    if plural is not None and (match := plural.match(word)):  # "parties" and "party" say the same
        return match.group("stem") + rules.mapping("plural_endings")[match.group("ending")]
    return word


@lru_cache(maxsize=8192)
def _reading(text: str) -> tuple[frozenset[str], frozenset[str], frozenset[str]]:
    """(content words, capitalised content words, the groups of people it speaks of)."""
    words: set[str] = set()
    named: set[str] = set()
    people: set[str] = set()
    rules = for_text(text)
    fillers, verbs = rules.words("fillers"), rules.words("likes", "dislikes")
    groups = [(group, rules.words(f"pronouns_{group}")) for group in _PEOPLE]
    token = every().pattern("text.token")
    assert token is not None  # common's
    for match in token.finditer(text):
        raw = match.group(0)
        word = raw.lower().replace("’", "'").split("'")[0]
        people.update(group for group, pronouns in groups if word in pronouns)
        if word in fillers:
            continue
        stemmed = stem(word)
        words.add(stemmed)
        if raw[:1].isupper() and word not in verbs:
            named.add(stemmed)
    return frozenset(words), frozenset(named), frozenset(people)


@lru_cache(maxsize=8192)
def _roles(text: str) -> tuple[tuple[str, ...], frozenset[tuple[str, bool]], bool]:
    """(the people named, in order; (group, does it) for each pronoun of a case; whether two are joined as a list).

    People are the pronoun groups (``_PEOPLE``) and relatives ("mom"); a pronoun of the packs'
    ``pronouns_doer`` does what is said, one of ``pronouns_receiver`` has it done to them
    (possessives, "my mom", are neither).
    """
    rules = for_text(text)
    doers, receivers = rules.words("pronouns_doer"), rules.words("pronouns_receiver")
    relatives, joins_list, fillers = rules.words("relatives"), rules.words("list_joins"), rules.words("fillers")
    groups = [(group, rules.words(f"pronouns_{group}")) for group in _PEOPLE]
    token = every().pattern("text.token")
    assert token is not None  # common's
    named: list[str] = []
    cases: set[tuple[str, bool]] = set()
    listed = False
    between: list[str] = []  # the words since the last person named
    for match in token.finditer(text):
        word = match.group(0).lower().replace("’", "'").split("'")[0]
        if word in doers or word in receivers:
            person = next(group for group, pronouns in groups if word in pronouns)
            cases.add((person, word in doers))
        elif word in relatives:
            person = stem(word)
        else:
            between.append(word)
            continue
        if named and between and all(w in joins_list or w in fillers for w in between):
            listed = listed or any(w in joins_list for w in between)
        named.append(person)
        between = []
    return tuple(dict.fromkeys(named)), frozenset(cases), listed


def swaps_roles(a: str, b: str) -> bool:
    """Whether who does what to whom is turned round: the same people, one doing what the other had done to them.

    "My mom visits us every Christmas." / "We visit my mom every Christmas.": the same people
    in another order, and a pronoun that received (us) now does (we). Content words and people
    cannot tell: both are {mom, visit, christmas} with my and we. A list is said in any order
    ("My brother and I" / "Me and my brother"), and a pronoun's case alone is no swap ("Remind
    me to call mom" / "I call mom": mom is called in both).
    """
    named_a, cases_a, listed_a = _roles(a)
    named_b, cases_b, listed_b = _roles(b)
    if listed_a or listed_b or cases_a == cases_b or len(named_a) < 2:
        return False
    return set(named_a) == set(named_b) and named_a != named_b


def opposite_changes(a: str, b: str) -> bool:
    """Whether both say something is gone, and not the same thing: a change one way and the other.

    "I switched from Vim to Emacs." / "I switched from Emacs to Vim."; 我之前用 MySQL，现在换成了
    MongoDB / 我之前用 MongoDB，现在换成了 MySQL. The words of what each says is gone
    (``retired.retired_spans``) share none; a restatement says the same thing gone, or none.
    """
    gone_a, gone_b = _gone(a), _gone(b)
    return bool(gone_a and gone_b and gone_a.isdisjoint(gone_b))


def _gone(text: str) -> frozenset[str]:
    return frozenset(word for span in retired_spans(text) for word in content_words(span))


def content_words(text: str) -> frozenset[str]:
    """The words that carry a statement's meaning, fillers dropped and like / love / prefer read as one."""
    return _reading(text)[0]


def meaning_terms(text: str, names: Iterable[str] = (), dropped: frozenset[str] | None = None) -> frozenset[str]:
    """The terms that say what a statement is about: its words (character pairs in Chinese).

    Not who said it ("Lena: …", or any of ``names``: a memory's entities, its speaker among
    them), no stopword, value, or word that only says when or how often
    (the packs' ``time_words``: "every", "evening", 晚上). Two statements sharing none are about
    different things, however close their vectors: e5 puts one speaker's unrelated turns 0.94
    apart. ``dropped`` replaces the stopwords and time words left out.
    """
    said = without_speaker(text)
    label = every().pattern("text.leading_label")  # any script's ("孙浩然: "), not only a speaker's
    if label is not None:
        for _ in range(3):  # "孙浩然: 孙浩然: …": the turn quoted with its label
            said = label.sub("", said, count=1)
    if dropped is None:
        dropped = stopwords() | every().words("time_words")
    ignored = dropped | {t for name in names for t in lexical_tokens(name)}
    return frozenset(t for t in lexical_tokens(said) if t not in ignored and not t.isdigit() and not values_of(t))


def share_a_topic(a: MemoryRecord, b: MemoryRecord) -> bool:
    """Whether two memories share a term about what they say (``meaning_terms``, their entities aside)."""
    names = [*a.entities, *b.entities]
    return bool(meaning_terms(a.content, names) & meaning_terms(b.content, names))


def says_the_same(a: str, b: str) -> bool:
    """Whether one text says all the other says and at most as much again, naming no one new.

    The content words of one are all among the other's; what the longer adds is no longer
    than what they share (so "I prefer it" does not take in every preference), and is no name
    or relative.
    """
    words_a, named_a, people_a = _reading(a)
    words_b, named_b, people_b = _reading(b)
    if people_a != people_b or not (words_a & words_b):
        return False
    if words_a <= words_b:
        core, added, named = words_a, words_b - words_a, named_b
    elif words_b <= words_a:
        core, added, named = words_b, words_a - words_b, named_a
    else:
        return False  # each has a word the other lacks: a substitution, i.e. another fact
    if len(added) > len(core):
        return False
    return not _names_others(a, b, added, named - (named_a & named_b))


def substituted(a: str, b: str) -> bool:
    """Whether each text has a content word the other lacks: a word replaced, so another fact.

    "I go to the gym before work." / "… after work."; 我喜欢吃甜豆腐脑 / 我喜欢吃咸豆腐脑 (a
    Chinese text's content words are its characters). A repeat adds or drops words, it replaces none.
    """
    words_a, words_b = content_words(a), content_words(b)
    return bool(words_a - words_b and words_b - words_a)


def people_of(text: str) -> frozenset[str]:
    """The groups of people a statement speaks of: "self", "we", "others" (the packs' pronouns)."""
    return _reading(text)[2]


def names_someone_new(a: str, b: str) -> bool:
    """Whether one text names a relative or a person the other does not ("My sister prefers…", "…, Tom said")."""
    words_a, named_a, _ = _reading(a)
    words_b, named_b, _ = _reading(b)
    return _names_others(a, b, words_a ^ words_b, named_a ^ named_b)


def names_a_relative_new(a: str, b: str) -> bool:
    """Whether one text names a relative the other does not ("My brother lives in Lyon." / "I moved from Lyon …")."""
    return bool((_reading(a)[0] ^ _reading(b)[0]) & every().words("relatives"))


def _names_others(a: str, b: str, added: frozenset[str], named: frozenset[str]) -> bool:
    # A name (capitalised where the sentence did not need it) or a relative changes whom it is about.
    relatives = every().words("relatives")
    return bool(added & relatives or added & named - _sentence_starts(a, b))


def _sentence_starts(*texts: str) -> set[str]:
    """Words capitalised only because they open a sentence (or follow a "Speaker:" label)."""
    out = set()
    sentence_start = every().pattern("text.sentence_start")
    assert sentence_start is not None  # common's
    for text in texts:
        for match in sentence_start.finditer(text):
            out.add(stem(match.group(1).lower()))
    return out


def same_frame(a: MemoryRecord, b: MemoryRecord) -> bool:
    """Everything but the wording: both factual statements, same slot, entities, values, negations, subjects."""
    return compare(a, b).same_frame


def same_fact(a: MemoryRecord, b: MemoryRecord) -> bool:
    """Whether ``a`` and ``b`` state one fact (see the module docstring); similarity is the caller's check."""
    return same_frame(a, b) and says_the_same(a.content, b.content)


def core(members: Sequence[MemoryRecord]) -> MemoryRecord:
    """The member that says least: the statement the others extend."""
    return min(members, key=lambda m: (len(content_words(m.content)), m.occurred_at))


def joins(members: Sequence[MemoryRecord], record: MemoryRecord) -> bool:
    """Whether ``record`` states the fact of a cluster: in frame with every member, and saying what its core says.

    Members may add different details to the core ("when I travel by train" / "on long
    journeys"); none may replace one of its words.
    """
    return all(same_frame(m, record) for m in members) and says_the_same(core(members).content, record.content)


clear_with_packs(_reading, _roles)


__all__ = [
    "Comparison",
    "can_repeat",
    "compare",
    "content_words",
    "core",
    "joins",
    "meaning_terms",
    "names_a_relative_new",
    "names_someone_new",
    "opposite_changes",
    "people_of",
    "reversals",
    "reverses",
    "same_fact",
    "same_frame",
    "says_the_same",
    "share_a_topic",
    "stem",
    "substituted",
    "swaps_roles",
]
