"""Whether two memories restate one fact in other words: consolidation's second, looser reading.

``sameness.joins`` only joins statements of which one says all the other says, so "I always
want my coffee to be an oat flat white." and "An oat flat white is my usual." stay two facts,
and so do 我不吃香菜。 and 点外卖记得备注不要香菜。. Vectors cannot settle it either: e5 puts
我喜欢喝绿茶 and 我喜欢喝红茶 0.99 apart, closer than those paraphrases (0.97). What tells a
restatement from a contrast here is what the two *share* and what each says *instead*:

* a contrast swaps one part for another and keeps the rest ("window" → "aisle", 绿茶 → 红茶,
  "black" → "with milk"): exactly one term of its own on each side;
* a restatement shares the terms that carry the fact (oat, flat, white; 香菜), and on one side
  adds no more terms of its own than the two share: "I always want my tea to be green." shares
  only framing with the coffee (always, want), and two shared words do not outweigh tea and green.

Terms are a statement's words (``sameness.meaning_terms``: no speaker or value; time words and
stopwords kept, since "before work" is not "after work"), stemmed, without the words that only
frame a statement: pronouns, fillers, negations and the like / dislike verbs (character pairs
holding one of them, in Chinese). On top of that, both must be in frame as
``sameness.Comparison.same_setting`` reads it (values, slots, entities, subjects), speak of the same people
(an imperative's unnamed "you" asks for the speaker), be negated alike (不吃 and 不要 are both a
"no"; "no long paragraphs" is not "keep your answers short"), like or dislike alike (a liking
on one side only is kept apart too: with it, the lifecycle's scripted model was handed clusters
that cost seven current values their place), and name no relative or name the other lacks.

"I take my coffee black" / "I drink my coffee black" (one verb swapped) is still missed
offline; an LLM, when configured, sees the looser ``related`` candidates and decides.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache

from ..model.records import MemoryRecord
from .keys import polarity
from .rules import clear_with_packs, every
from .sameness import compare, content_words, meaning_terms, names_someone_new, people_of, stem

_FRAMING = ("fillers", "likes", "dislikes", "pronouns_self", "pronouns_we", "pronouns_others")
_NEGATING = ("negations", "short_negations", "qualifiers")


def _framing_words() -> frozenset[str]:
    return every().words(*_FRAMING, *_NEGATING)


@lru_cache(maxsize=8192)
def fact_terms(text: str, names: tuple[str, ...] = ()) -> frozenset[str]:
    """The terms that carry what ``text`` states (see the module docstring), stemmed."""
    framing = _framing_words()
    out = set()
    for term in meaning_terms(text, names, dropped=every().words("fillers")):
        word = term.replace("’", "'").split("'")[0]
        if (len(word) < 2 and word.isascii()) or word in framing or any(c in framing for c in word if ord(c) > 127):
            continue  # "it's" leaves "s"; 不吃 and 我喜 hold a negation or a pronoun
        out.add(stem(word))
    return frozenset(out - {"+", "-"})


def _negated(text: str) -> bool:
    return bool(polarity(text) & every().words(*_NEGATING))


def _sign(text: str) -> frozenset[str]:
    return content_words(text) & {"+", "-"}


def in_frame(a: MemoryRecord, b: MemoryRecord) -> bool:
    """Whether all but the wording agrees: the frame, the people, negation and liking (see the module docstring)."""
    same = compare(a, b)
    flipped = same.flipped - every().words(*_NEGATING)
    people_a, people_b = people_of(a.content), people_of(b.content)
    people = people_a == people_b or (people_a | people_b) == {"self"}
    return (
        same.same_setting
        and not flipped
        and people
        and _negated(a.content) == _negated(b.content)
        and _sign(a.content) == _sign(b.content)
        and not names_someone_new(a.content, b.content)
    )


def related(a: MemoryRecord, b: MemoryRecord) -> bool:
    """In frame and sharing a term of the fact: worth showing an LLM, not enough to join offline."""
    names = (*a.entities, *b.entities)
    return in_frame(a, b) and bool(fact_terms(a.content, names) & fact_terms(b.content, names))


def _own(terms: frozenset[str], other: frozenset[str]) -> set[str]:
    """What ``terms`` say that ``other`` does not: words, and of a Chinese pair the characters ``other`` lacks.

    Character pairs overlap, so one character replaced changes two of them (吃甜, 甜豆 for 吃咸,
    咸豆): counted by character, that is the one swap it is.
    """
    seen = {char for term in other for char in term}
    own: set[str] = set()
    for term in terms - other:
        if term.isascii():
            own.add(term)
        else:
            own.update(char for char in term if char not in seen)
    return own


def rephrases(a: MemoryRecord, b: MemoryRecord) -> bool:
    """Whether ``b`` states ``a``'s fact in other words (see the module docstring); closeness is the caller's.

    In Chinese, where a character pair is a weak unit, the plainer of the two may add at most
    one character of its own (我不吃香菜 has 吃 beside the 香菜 it shares); 坐高铁 / 坐飞机 and
    早上送 / 下午接 change more.
    """
    names = (*a.entities, *b.entities)
    terms_a, terms_b = fact_terms(a.content, names), fact_terms(b.content, names)
    shared = terms_a & terms_b
    own_a, own_b = _own(terms_a, terms_b), _own(terms_b, terms_a)
    swapped = len(own_a) == 1 and len(own_b) == 1
    chinese = not all(piece.isascii() for piece in own_a | own_b | shared)
    limit = 1 if chinese else len(shared)
    return bool(shared) and not swapped and min(len(own_a), len(own_b)) <= limit and in_frame(a, b)


def plainest(members: Sequence[MemoryRecord]) -> MemoryRecord:
    """The member with the fewest fact terms: the plainest statement of the cluster's fact."""
    return min(members, key=lambda m: (len(fact_terms(m.content, tuple(m.entities))), m.occurred_at))


def joins_rephrased(members: Sequence[MemoryRecord], record: MemoryRecord) -> bool:
    """Whether ``record`` restates a cluster's fact: in frame with every member, rephrasing its plainest.

    "菜里别放香菜，我受不了那个味道。" and "点外卖记得备注不要香菜。" each add words of their own, too
    many to rephrase each other, and both rephrase 我不吃香菜。.
    """
    return all(in_frame(m, record) for m in members) and rephrases(plainest(members), record)


def states_one_fact(members: Sequence[MemoryRecord]) -> bool:
    """Whether the rules would have joined ``members`` (in the order said): each rephrases those before it."""
    ordered = sorted(members, key=lambda m: m.occurred_at)
    return all(joins_rephrased(ordered[:n], ordered[n]) for n in range(1, len(ordered)))


def joins_related(members: Sequence[MemoryRecord], record: MemoryRecord) -> bool:
    """Whether ``record`` is ``related`` to every member: a cluster for an LLM to judge."""
    return all(related(m, record) for m in members)


clear_with_packs(fact_terms)


__all__ = [
    "fact_terms",
    "in_frame",
    "joins_related",
    "joins_rephrased",
    "plainest",
    "related",
    "rephrases",
    "states_one_fact",
]
