"""The kinds of case ``hindsight bench lifecycle`` scores, and the turn every case is said in.

The cases themselves are data (``data/lifecycle_history.toml``, loaded by ``lifecycle_history``);
these types are what that file is validated into and what the scorer (``lifecycle_scoring``)
and the scripted LLM (``scripted_llm``) read. They are pydantic dataclasses, frozen and
refusing unknown fields, so a typo in the data file is an error naming the field, not a case
that silently never runs. Each says, in its docstring, the outcome a good memory should give.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Literal

from pydantic import ConfigDict
from pydantic.dataclasses import dataclass

Kind = Literal["fact", "context", "preference", "event", "correction"]
Role = Literal["user", "assistant"]
_STRICT = ConfigDict(extra="forbid")

# The importance the scripted model gives what it extracts, by kind, when a turn does not say.
IMPORTANCE_BY_KIND: dict[str, float] = {"preference": 0.9, "correction": 0.9, "context": 0.8, "event": 0.7, "fact": 0.5}


@dataclass(frozen=True, config=_STRICT)
class Turn:
    """One turn of a session, as the adapters record it.

    ``remember`` says whether it is worth a long-term memory at all (small talk and questions are
    not); ``memory`` is what a language model would extract (a self-contained first-person
    sentence; the turn's own text when None) with ``kind`` its type; ``sets`` the attribute and
    value it states, which the scripted LLM judges updates by. ``untrusted`` turns are not spoken:
    a tool writes them with ``store_memory(trusted=false)``.
    """

    text: str
    role: Role = "user"
    remember: bool = True
    kind: Kind = "fact"
    memory: str | None = None
    sets: tuple[str, str] | None = None
    untrusted: bool = False
    importance: float | None = None

    @property
    def extracted(self) -> str:
        """The sentence an LLM extracts from this turn."""
        return self.memory or self.text

    @property
    def weight(self) -> float:
        """The importance a model gives what it extracts: ``importance``, else by kind."""
        return self.importance if self.importance is not None else IMPORTANCE_BY_KIND.get(self.kind, 0.5)


def said(
    text: str,
    kind: Kind = "fact",
    *,
    memory: str | None = None,
    sets: tuple[str, str] | None = None,
    importance: float | None = None,
) -> Turn:
    """A user statement worth remembering."""
    return Turn(text, kind=kind, memory=memory, sets=sets, importance=importance)


def chat(text: str) -> Turn:
    """A user turn with nothing to remember: a greeting, an acknowledgement, a question."""
    return Turn(text, remember=False)


def bot(text: str) -> Turn:
    """An assistant turn."""
    return Turn(text, role="assistant", remember=False)


@dataclass(frozen=True, config=_STRICT)
class Attribute:
    """An attribute of the user's life that changes: the questions asking for it, its values by week.

    ``values`` are (week, value, turn): the value is what a recalled memory must mention, and the
    turn is how she said it. The current value at a checkpoint is the last one said by then.
    ``question_zh`` is asked too from the week she first said a value in Chinese (a user asks in
    the language she wrote in). Expected: the latest value first, older ones as history on request.
    """

    name: str
    question: str
    values: tuple[tuple[int, str, Turn], ...]
    question_zh: str | None = None

    def questions(self, week: int) -> list[str]:
        """The questions asked about it at a checkpoint of ``week``."""
        chinese = [w for w, _v, turn in self.values if w <= week and _has_cjk(turn.text)]
        return [self.question] + ([self.question_zh] if self.question_zh and chinese else [])

    def said_by(self, week: int) -> list[tuple[int, str, Turn]]:
        """The values said by the end of ``week``, in order."""
        return [v for v in self.values if v[0] <= week]


def _has_cjk(text: str) -> bool:
    return any("\u4e00" <= ch <= "\u9fff" for ch in text)


@dataclass(frozen=True, config=_STRICT)
class Preference:
    """A preference: how she says it each time (week, turn), the question asking for it, what an answer names.

    Said in several sessions in different words (``statement``: what a model distils them into),
    it is expected consolidated into one semantic memory with provenance; said once (no
    ``statement``), it is expected recalled when first asked about, more than a year later.
    """

    name: str
    question: str
    marker: str
    sayings: tuple[tuple[int, Turn], ...]
    statement: str = ""


@dataclass(frozen=True, config=_STRICT)
class Event:
    """Something with a time: said in ``week``, expected recalled at once and hidden once it is past."""

    name: str
    week: int
    turn: Turn
    question: str
    marker: str
    lasts: timedelta  # how long after it was said it is past (when it happened, plus a margin)


@dataclass(frozen=True, config=_STRICT)
class Repeat:
    """The same sentence said in several weeks: one memory expected, whose text names ``marker``."""

    text: str
    marker: str
    weeks: tuple[int, ...]
    kind: Kind = "fact"


@dataclass(frozen=True, config=_STRICT)
class Poisoning:
    """A low-trust write contradicting an important fact: expected quarantined, the fact unchanged.

    ``target`` names the attribute or the once-said preference it contradicts; ``marker`` is the
    false value, which no memory recalled for it may name.
    """

    name: str
    week: int
    turn: Turn
    target: str
    marker: str


@dataclass(frozen=True, config=_STRICT)
class Fact:
    """An ordinary fact said once and asked about at every later checkpoint."""

    question: str
    marker: str
    week: int
    turn: Turn


__all__ = [
    "IMPORTANCE_BY_KIND",
    "Attribute",
    "Event",
    "Fact",
    "Kind",
    "Poisoning",
    "Preference",
    "Repeat",
    "Role",
    "Turn",
    "bot",
    "chat",
    "said",
]
