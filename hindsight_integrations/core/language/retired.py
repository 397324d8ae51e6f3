"""What a statement says is gone, and whether a stored memory holds it.

"Sold the Corolla, I take the train to work now." sets another slot than "I drive a silver
Corolla to the office." (a commute, not a car), and "We migrated CI from Jenkins to GitHub
Actions." sets none; yet each names the very thing the earlier statement holds as the thing
that is gone. The packs' ``cues.retired`` finds where a statement says so: the words after
"sold", "traded", "swapped", "instead of"…, or between "from" and "to" (after "from" when "to"
came first: "moved to Paris from Lyon"; 从…搬到, 把…换成, 把 X 的 A 换成: A). A
value of the new statement in those words (``values.py``: a name, an amount, a city) that the
stored memory carries too is what the new one retires. A Chinese object that is no value
(把地铁换成…) counts when the stored memory contains it as written. One kept with its owner
(把上班的地铁换成…) counts when the stored memory names the owner too ("我每天坐地铁上班": 地铁): the
owner is what says the thing is the stored memory's and not someone else's, so a bare common noun
(把车换成…) or an owner of one character (把我的车换成…) retires nothing of "我妹妹的车是丰田". An owner
who is a person (把女儿的钢琴换成…) owns the thing: a memory holds it where it says she has it (女儿有一架
钢琴), not where it names her and that kind of thing ("我女儿在学钢琴": her lessons go on).
"""

from __future__ import annotations

import re
from functools import lru_cache

from .rules import clear_with_packs, for_text
from .values import values_of

_CJK_LOW, _CJK_HIGH = "\u4e00", "\u9fff"
_HAS = "(?:的|有)[\u4e00-\u9fff]{0,4}?"  # between a person and their thing: 女儿的旧钢琴, 女儿有一架钢琴


@lru_cache(maxsize=4096)
def retired_spans(text: str) -> tuple[str, ...]:
    """The stretches of ``text`` that name what it says is gone (the packs' ``cues.retired``)."""
    pattern = for_text(text).pattern("cues.retired")
    if pattern is None:
        return ()
    return tuple(next(g for g in m.groups() if g) for m in pattern.finditer(text))


def _chinese(span: str) -> bool:
    return len(span) >= 2 and all(_CJK_LOW <= c <= _CJK_HIGH for c in span)


def retires(earlier: str, later: str) -> frozenset[str]:
    """What ``earlier`` holds that ``later`` says is gone; empty when it retires nothing of it."""
    spans = retired_spans(later)
    if not spans:
        return frozenset()
    lowered = [s.lower() for s in spans]
    named = {v for v in values_of(later) if any(v in s for s in lowered)} & values_of(earlier)
    written = {s for s in spans if _chinese(s) and s in earlier}
    owned = {thing for s in spans if (thing := _owned_thing_held(s, earlier))}
    return frozenset(named | written | owned)


def _owned_thing_held(span: str, earlier: str) -> str | None:
    """The thing of a Chinese "owner的thing" span when ``earlier`` names both the owner and the thing.

    The owner must be named in full and be more than a pronoun's one character: "上班的地铁" retires
    地铁 from "我每天坐地铁上班", "我的车" retires nothing (我 is in nearly every memory). An owner who is
    a person (the pack's ``cues.retired_possessor``) must be said to have it: "女儿的钢琴" retires 钢琴
    from "我女儿有一架旧钢琴", not from "我女儿在学钢琴" (lessons go on whatever piano she plays).
    """
    *owners, thing = (part.strip() for part in span.split("的"))
    if not owners or not all(_chinese(part) and part in earlier for part in [*owners, thing]):
        return None
    person = for_text(span).search("cues.retired_possessor", owners[-1])
    if person and not re.search(f"{re.escape(person.group(1))}{_HAS}{re.escape(thing)}", earlier):
        return None  # 把女儿的钢琴换成: her piano, not the piano "我女儿在学钢琴" speaks of
    return thing


clear_with_packs(retired_spans)


__all__ = ["retired_spans", "retires"]
