"""Whether two memories state one fact: what consolidation may put in one cluster (docs/architecture.md, "Upkeep").

Embedding similarity cannot tell a restatement from a contrast. For MiniLM, "I prefer window
seats on trains" is as close to "I prefer aisle seats on trains" (0.80) as to "I like sitting
by the window when I travel by train" (0.80), and "I prefer concise answers" is closer to "I
prefer detailed answers" (0.78) than to "Keep your answers short, please" (0.55). Similarity
therefore only nominates. Two memories state one fact when, as well:

* they carry the same values (numbers, dates, codes, names, places: ``values.py``) and the same
  negations ("no longer", "not": ``dedup.polarity``), and are not about different identifiers
  or people's relatives (``subjects.different_subjects``);
* their slots (``conflicts.detect_slot``) agree when both have one, and their entities overlap
  when both have some;
* they speak of the same people: the same pronouns among I / we / he-she-they;
* one says everything the other says, and at most as much again: the content words of one are
  all among the other's (after dropping fillers such as "please", "as I said", and reading
  like / love / prefer as one word). A word of one *replaced* by another ("window" → "aisle",
  "trains" → "planes", "like" → "hate") is a different fact, and so is an added name or
  relative ("My sister prefers window seats").

A cluster (``joins``) holds memories that all extend its *core*, the member that says least:
"When I travel by train, I prefer window seats" and "On long train journeys I prefer a window
seat" add different details to "I prefer window seats on trains", and replace none of its words.

Paraphrases that change words ("I take my coffee black" / "I drink my coffee black") are missed
offline; that is the price of never joining a contrast.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from functools import lru_cache

from ..model.records import MemoryRecord
from ..write.repeats import can_repeat, polarity
from .subjects import different_subjects
from .values import same_values


def _word_set(text: str) -> frozenset[str]:
    return frozenset(text.split())


_SENTENCE_START = re.compile(r"(?:^|[.!?:]\s+)([A-Za-z]+)")
_TOKEN = re.compile(r"[A-Za-z0-9]+(?:['’][A-Za-z]+)?|[\u3400-\u9fff]")
# Words that say nothing of the fact itself: articles, auxiliaries, fillers, restatement cues.
_FILLERS = _word_set(
    """a an the is are am was were be been being to of on in at for by and or with that this these those it its
    as so do does did have has had will would should could can may might shall please pls kindly always really
    just also very quite remember remind said say told tell mentioned mention before already earlier once more
    again definitely usually generally honestly actually basically truly still you your yours yourself
    i me my mine myself we us our ours he him his she her hers they them their theirs
    的 了 是 在 我 你 他 她 们 很 也 都 吧 呢 啊 请 就 还"""
)
# Verbs read as one: "I like X" and "I prefer X" state one preference; "hate" is its opposite.
_SYNONYMS = {
    **dict.fromkeys(["like", "likes", "love", "loves", "prefer", "prefers", "enjoy", "enjoys", "favour", "favor"], "+"),
    **dict.fromkeys(["hate", "hates", "dislike", "dislikes", "detest", "loathe", "avoid", "avoids"], "-"),
}
_RELATIVES = _word_set(
    """sister brother mother father mom mum dad wife husband partner son daughter friend boss manager colleague
    cousin aunt uncle grandmother grandfather girlfriend boyfriend kid kids child children parent parents"""
)
_PEOPLE = {
    "self": frozenset({"i", "me", "my", "mine", "myself"}),
    "we": frozenset({"we", "us", "our", "ours", "ourselves"}),
    "others": frozenset({"he", "him", "his", "she", "her", "hers", "they", "them", "their", "theirs"}),
}


def _stem(word: str) -> str:
    if word in _SYNONYMS:
        return _SYNONYMS[word]
    if len(word) > 4 and word.endswith("ies"):
        return word[:-3] + "y"
    if len(word) > 3 and word.endswith("s") and not word.endswith("ss"):
        return word[:-1]
    return word


@lru_cache(maxsize=8192)
def _reading(text: str) -> tuple[frozenset[str], frozenset[str], frozenset[str]]:
    """(content words, capitalised content words, the groups of people it speaks of)."""
    words: set[str] = set()
    named: set[str] = set()
    people: set[str] = set()
    for match in _TOKEN.finditer(text):
        raw = match.group(0)
        word = raw.lower().replace("’", "'").split("'")[0]
        people.update(group for group, pronouns in _PEOPLE.items() if word in pronouns)
        if word in _FILLERS:
            continue
        stem = _stem(word)
        words.add(stem)
        if raw[:1].isupper() and word not in _SYNONYMS:
            named.add(stem)
    return frozenset(words), frozenset(named), frozenset(people)


def content_words(text: str) -> frozenset[str]:
    """The words that carry a statement's meaning, fillers dropped and like / love / prefer read as one."""
    return _reading(text)[0]


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
    # A name (capitalised where the sentence did not need it) or a relative changes whom it is about.
    return not (added & _RELATIVES or added & (named - (named_a & named_b)) - _sentence_starts(a, b))


def _sentence_starts(*texts: str) -> set[str]:
    """Words capitalised only because they open a sentence (or follow a "Speaker:" label)."""
    out = set()
    for text in texts:
        for match in _SENTENCE_START.finditer(text):
            out.add(_stem(match.group(1).lower()))
    return out


def same_frame(a: MemoryRecord, b: MemoryRecord) -> bool:
    """Everything but the wording: both factual statements, same slot, entities, values, negations, subjects."""
    if not (can_repeat(a) and can_repeat(b)):
        return False
    if a.slot and b.slot and a.slot != b.slot:
        return False
    if a.entities and b.entities and not set(a.entities) & set(b.entities):
        return False
    if polarity(a.content) != polarity(b.content) or not same_values(a.content, b.content):
        return False
    return not different_subjects(a.content, b.content)


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


__all__ = ["content_words", "core", "joins", "same_fact", "same_frame", "says_the_same"]
