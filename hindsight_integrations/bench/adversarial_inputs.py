"""The pathological inputs of `hindsight bench adversarial`, and the ordinary text each is measured against.

Each attack's cost is reported as a ratio to an ordinary input of the same size sent through
the same call, so the ordinary prose (``ordinary_text``) is as much part of the measurement as
the attack texts (``content_attacks``): the 32 KB texts of security issue #24 and those the
pattern audit found.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

_ORDINARY = (
    "On {day} I met {name} at {hour}pm to go over the {topic} plan.",
    "The {topic} budget is {amount} euros, and {name} signs it off by Friday.",
    "{name} moved the {topic} review to room {room}; the invoice is INV-{room}{hour}.",
    "My colleague {name} prefers the {topic} notes in plain text.",
    "We agreed that the {topic} release ships after the tests pass on {day}.",
)
_NAMES = ("Dana", "Priya", "Marco", "Kenji", "Amara", "Sofia")
_DAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday")
_TOPICS = ("garden", "orchard", "database", "holiday", "budget", "guitar")


def ordinary_text(size: int, seed: int) -> str:
    """``size`` characters of ordinary prose (sentences with names, days, amounts, codes), varied by ``seed``."""
    parts: list[str] = []
    length = 0
    n = seed * 7919
    while length < size:
        template = _ORDINARY[n % len(_ORDINARY)]
        sentence = template.format(
            day=_DAYS[n % 5],
            name=_NAMES[(n // 5) % 6],
            hour=1 + n % 11,
            topic=_TOPICS[(n // 3) % 6],
            amount=100 + (n * 37) % 9000,
            room=100 + n % 900,
        )
        parts.append(sentence)
        length += len(sentence) + 1
        n += 1
    return " ".join(parts)[:size]


def repeated(fragment: str, size: int, tail: str = "") -> str:
    """``fragment`` repeated (then ``tail``) to ``size`` bytes of UTF-8 at most: the content limit is in bytes."""
    count = (size - len(tail.encode())) // len(fragment.encode())
    return fragment * count + tail


@dataclass(frozen=True)
class ContentAttack:
    """A pathological text sent as content (and as a query), against ordinary text of its size."""

    name: str
    text: str


def content_attacks(size: int) -> list[ContentAttack]:
    """The 32 KB texts of issue #24 and those the pattern audit found, each about ``size`` bytes."""
    return [
        ContentAttack('"a@b.c" × n', repeated("a@b.c", size)),
        ContentAttack('"a" × n + "!"', repeated("a", size, "!")),
        ContentAttack("digits", repeated("7", size)),
        ContentAttack('"goodbye" × n', repeated("goodbye", size)),
        ContentAttack('"A-" × n', repeated("A-", size)),
        ContentAttack('"A" × n', repeated("A", size)),
        ContentAttack('"万" × n', repeated("万", size)),
        ContentAttack('"my phone " × n', repeated("my phone ", size)),
        ContentAttack('"手机" × n', repeated("手机", size)),
    ]


def content_calls(text: str, session: int) -> list[tuple[str, dict[str, Any]]]:
    """The calls a content attack is sent through: stored, recorded as a turn, asked as a query."""
    return [
        ("store_memory", {"content": text}),
        ("record_turn", {"content": text, "session_id": f"session-{session}"}),
        ("retrieve_memory", {"query": text}),
    ]


__all__ = ["ContentAttack", "content_attacks", "content_calls", "ordinary_text", "repeated"]
