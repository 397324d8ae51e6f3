"""The scripted history ``hindsight bench lifecycle`` replays: one user, ~14 months of weekly chats.

What Lena says, and what a good memory should make of it, is data: ``data/lifecycle_history.toml``
(shipped as package data), validated here into the case types of ``lifecycle_cases``. This
module turns that script into sessions. Every week she opens one chat session (``session_id``
``week-NN``), says hello, tells the assistant a few things, asks a few questions and says
goodbye; the assistant answers each turn. Threaded through those ordinary weeks are the cases
the benchmark scores (``lifecycle_scoring``), each in the week the file gives it:

* **attributes that change** (``ATTRIBUTES``): where she lives (Berlin → Lisbon → Porto, the last
  move said in Chinese, 搬到), where she works (two job changes), her phone number (a new one said
  in Chinese, 换了, then corrected with a bare "actually it's …"), her diet (不再吃素) and her
  apartment budget (raised, then corrected "actually … not …");
* **preferences repeated** in different words across many sessions (``REPEATED_PREFERENCES``)
  and **preferences said once**, in the first month, never again (``ONCE_SAID_PREFERENCES``);
* **events with a time** ("dentist tomorrow at 9", ``EVENTS``) and **exact repeats**
  (``EXACT_REPEATS``): the same sentence in several sessions;
* **a burst of small talk** (one whole week, and greetings every week): nothing remembered;
* **three poisoning attempts** (``POISONINGS``): a browser tool writing with ``trusted=false`` that
  she eats meat again, an assistant turn claiming her budget is now 3000 euros, and a meal-planner
  app syncing (``trusted=false``) that she is no longer allergic to peanuts;
* **ordinary facts** (``EVERYDAY_FACTS`` asked at checkpoints; the file's filler never asked again).

The greetings, goodbyes, assistant replies and filler are picked by a seeded ``random.Random``,
so every run replays the same history. Each user turn also says what a language model would
extract from it (``Turn.memory``), which the scripted LLM of ``--llm scripted`` answers with.
"""

from __future__ import annotations

import random
import tomllib
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from importlib import resources
from importlib.resources.abc import Traversable
from pathlib import Path

from pydantic import AwareDatetime, BaseModel, ConfigDict, PositiveInt, ValidationError, model_validator

from .lifecycle_cases import Attribute, Event, Fact, Poisoning, Preference, Repeat, Role, Turn, bot, chat, said


class _Strict(BaseModel):
    """A table of the data file: unknown keys are errors, so a misspelt one cannot pass unnoticed."""

    model_config = ConfigDict(extra="forbid", frozen=True)


class Exchange(_Strict):
    """A question she asks and the assistant's answer: nothing in it to remember."""

    question: str
    answer: str

    def turns(self) -> tuple[Turn, Turn]:
        """The exchange as two turns, hers then the assistant's."""
        return chat(self.question), bot(self.answer)


class LongTalk(_Strict):
    """A long session (a move's week) whose working window passes the compression threshold."""

    week: int
    exchanges: tuple[Exchange, ...]


class Everyday(_Strict):
    """What fills an ordinary week besides the cases: a statement of the day, a question or none."""

    filler: tuple[str, ...]
    questions: tuple[Exchange, ...]


class SmallTalk(_Strict):
    """Greetings and goodbyes (every week, both sides) and the week that is nothing but small talk."""

    week: int
    burst: tuple[tuple[Role, str], ...]
    greetings: tuple[str, ...]
    goodbyes: tuple[str, ...]
    acknowledgements: tuple[str, ...]
    assistant_greetings: tuple[str, ...]
    assistant_goodbyes: tuple[str, ...]

    def burst_turns(self) -> tuple[Turn, ...]:
        """The small-talk week's turns, in order."""
        return tuple(chat(text) if role == "user" else bot(text) for role, text in self.burst)


class HistoryScript(_Strict):
    """The data file as validated: who, from when, for how long, and every case with its week."""

    user: str
    start: AwareDatetime
    weeks: PositiveInt
    seed: int
    attributes: tuple[Attribute, ...]
    repeated_preferences: tuple[Preference, ...]
    once_said_preferences: tuple[Preference, ...]
    events: tuple[Event, ...]
    exact_repeats: tuple[Repeat, ...]
    poisonings: tuple[Poisoning, ...]
    everyday_facts: tuple[Fact, ...]
    everyday: Everyday
    small_talk: SmallTalk
    long_talks: tuple[LongTalk, ...]

    @model_validator(mode="after")
    def _targets_exist(self) -> HistoryScript:
        """A poisoning must contradict a case that exists, or it would be scored against nothing."""
        known = {a.name for a in self.attributes} | {p.name for p in self.once_said_preferences}
        for poisoning in self.poisonings:
            if poisoning.target not in known:
                raise ValueError(
                    f"poisoning {poisoning.name!r} targets {poisoning.target!r}, not an attribute or preference"
                )
        return self


DATA_FILE: Traversable = resources.files("hindsight_integrations.bench") / "data" / "lifecycle_history.toml"


def load_script(path: Path | None = None) -> HistoryScript:
    """The scripted history from ``path`` (the packaged ``data/lifecycle_history.toml`` by default).

    A file that is not valid TOML, or misses or misspells a field, is a ``ValueError`` naming the
    file and the field, since a case with a wrong shape would otherwise score nonsense.
    """
    source: Traversable | Path = path if path is not None else DATA_FILE
    try:
        return HistoryScript.model_validate(tomllib.loads(source.read_text(encoding="utf-8")))
    except (tomllib.TOMLDecodeError, ValidationError) as exc:
        raise ValueError(f"{source}: {exc}") from None


SCRIPT = load_script()
USER = SCRIPT.user
START: datetime = SCRIPT.start
WEEKS = SCRIPT.weeks
SEED = SCRIPT.seed
ATTRIBUTES = SCRIPT.attributes
REPEATED_PREFERENCES = SCRIPT.repeated_preferences
ONCE_SAID_PREFERENCES = SCRIPT.once_said_preferences
EVENTS = SCRIPT.events
EXACT_REPEATS = SCRIPT.exact_repeats
POISONINGS = SCRIPT.poisonings
EVERYDAY_FACTS = SCRIPT.everyday_facts


@dataclass(frozen=True)
class Session:
    """One week's chat: its index from ``START``, its turns in order."""

    week: int
    turns: tuple[Turn, ...]

    @property
    def session_id(self) -> str:
        """The chat's session id: one per week."""
        return f"week-{self.week:02d}"

    @property
    def starts(self) -> datetime:
        """When the session starts (its first turn)."""
        return START + timedelta(weeks=self.week)


@dataclass
class History:
    """The whole scripted history: the sessions and the cases scored on them."""

    sessions: list[Session]
    attributes: tuple[Attribute, ...] = ATTRIBUTES
    repeated_preferences: tuple[Preference, ...] = REPEATED_PREFERENCES
    once_said_preferences: tuple[Preference, ...] = ONCE_SAID_PREFERENCES
    events: tuple[Event, ...] = EVENTS
    exact_repeats: tuple[Repeat, ...] = EXACT_REPEATS
    poisonings: tuple[Poisoning, ...] = POISONINGS
    everyday_facts: tuple[Fact, ...] = EVERYDAY_FACTS
    weeks: int = WEEKS
    small_talk: list[str] = field(default_factory=list)

    def turns(self) -> list[tuple[Session, Turn]]:
        """Every turn with its session, in order."""
        return [(s, t) for s in self.sessions for t in s.turns]


def planned(weeks: int = WEEKS) -> dict[int, list[Turn]]:
    """The case turns of each week, in the order they are said that week."""
    plan: dict[int, list[Turn]] = {}
    for attribute in ATTRIBUTES:
        for week, _value, turn in attribute.values:
            plan.setdefault(week, []).append(turn)
    for preference in REPEATED_PREFERENCES + ONCE_SAID_PREFERENCES:
        for week, turn in preference.sayings:
            plan.setdefault(week, []).append(turn)
    for event in EVENTS:
        plan.setdefault(event.week, []).append(event.turn)
    for repeat in EXACT_REPEATS:
        for week in repeat.weeks:
            plan.setdefault(week, []).append(said(repeat.text, repeat.kind))
    for poisoning in POISONINGS:
        plan.setdefault(poisoning.week, []).append(poisoning.turn)
    for fact in EVERYDAY_FACTS:
        plan.setdefault(fact.week, []).append(fact.turn)
    return {w: turns for w, turns in plan.items() if w < weeks}


def build_history(weeks: int = WEEKS, *, seed: int = SEED) -> History:
    """The history of ``weeks`` weeks (the full one by default; fewer for a quick run)."""
    rng = random.Random(seed)
    plan = planned(weeks)
    small, everyday = SCRIPT.small_talk, SCRIPT.everyday
    long_talks = {talk.week: [t for exchange in talk.exchanges for t in exchange.turns()] for talk in SCRIPT.long_talks}
    filler = list(everyday.filler)
    rng.shuffle(filler)
    sessions: list[Session] = []
    small_talk: set[str] = set()
    for week in range(weeks):
        if week == small.week:
            burst = small.burst_turns()
            sessions.append(Session(week, burst))
            small_talk.update(t.text for t in burst if t.role == "user")
            continue
        greeting, goodbye = rng.choice(small.greetings), rng.choice(small.goodbyes)
        small_talk.update((greeting, goodbye))
        turns: list[Turn] = [chat(greeting), bot(rng.choice(small.assistant_greetings))]
        content = list(plan.get(week, []))
        if filler:
            content.insert(rng.randrange(len(content) + 1), said(filler.pop()))
        for turn in content:
            turns.append(turn)
            if turn.role == "user" and not turn.untrusted:
                turns.append(bot(rng.choice(small.acknowledgements)))
        if rng.random() < 0.6:
            turns += everyday.questions[rng.randrange(len(everyday.questions))].turns()
        turns += long_talks.get(week, ())
        turns += [chat(goodbye), bot(rng.choice(small.assistant_goodbyes))]
        sessions.append(Session(week, tuple(turns)))
    return History(sessions=sessions, weeks=weeks, small_talk=sorted(small_talk))


def normalised(text: str) -> str:
    """Text as the scripted LLM looks it up: a ``Name:`` label dropped, lower case, no spaces."""
    from ..core.write.conversation import without_speaker

    return "".join(without_speaker(text.strip()).lower().split())


def statement_index(history: History) -> dict[str, Turn]:
    """Every remembered sentence (as said and as extracted) → its turn: what the scripted LLM knows."""
    index: dict[str, Turn] = {}
    for _session, turn in history.turns():
        if turn.remember or turn.sets:
            index.setdefault(normalised(turn.text), turn)
            index.setdefault(normalised(turn.extracted), turn)
    return index


__all__ = [
    "ATTRIBUTES",
    "DATA_FILE",
    "EVENTS",
    "EVERYDAY_FACTS",
    "EXACT_REPEATS",
    "ONCE_SAID_PREFERENCES",
    "POISONINGS",
    "REPEATED_PREFERENCES",
    "SCRIPT",
    "START",
    "USER",
    "WEEKS",
    "Exchange",
    "History",
    "HistoryScript",
    "LongTalk",
    "Session",
    "build_history",
    "load_script",
    "normalised",
    "planned",
    "statement_index",
]
