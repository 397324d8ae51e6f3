"""The conversation `hindsight demo` plays: two working sessions of a small project, weeks of chat long.

A handful of *key turns* carry what an assistant should still know days later (a preference,
the project's database and its correction, a deadline, a meeting, a test order number);
around them runs the everyday chatter of a project (CI, reviews, styling, webhooks), which
is what makes a real history long. The chatter is generated from templates with a fixed
seed, so every run writes the same history and the demo's figures are reproducible.
"""

from __future__ import annotations

import itertools
import random
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta


@dataclass(frozen=True)
class Turn:
    """One message: who said it, what, and whether it is one of the demo's key turns."""

    role: str
    content: str
    key: bool = False


@dataclass(frozen=True)
class Session:
    """One session: its id, the day it happened and its turns, oldest first."""

    session_id: str
    day: date
    turns: list[Turn]

    @property
    def title(self) -> str:
        """The session's real weekday and date, e.g. "Monday 23 November 2026"."""
        return f"{self.day:%A} {self.day.day} {self.day:%B %Y}"

    def start(self) -> datetime:
        """When the session's first turn was written (9:00 UTC on its day)."""
        return datetime.combine(self.day, time(9, 0), tzinfo=UTC)


@dataclass(frozen=True)
class DemoScript:
    """One language's demo: its sessions, the questions a fresh session asks, and how to find the correction.

    ``correction_question`` is asked with history included; the active memory holding
    ``current_marker`` and the superseded one beside it are shown as the correction.
    """

    language: str
    build_sessions: Callable[[date], list[Session]]
    questions: tuple[str, ...]
    off_topic: str
    correction_question: str
    current_marker: str


QUESTIONS = [
    "Which database does the project use?",
    "Write a query that looks up the test customer's order.",
    "How should you format your answers for me?",
    "When is the deadline for the first milestone?",
]
OFF_TOPIC = "What is the capital of Peru?"

_COMPONENTS = ["tracking page", "courier webhook", "order list", "status badge", "admin panel", "email digest"]
_PEOPLE = ["Priya", "Marco", "Lena", "Tomás", "Aiko"]
_CHATTER: list[tuple[str, str]] = [
    (
        "The CI run for the {c} failed on a flaky snapshot test again.",
        "Pin the snapshot's clock; flaky snapshots are usually time.",
    ),
    ("{p} left {n} review comments on the {c} pull request.", "Batch the small ones into one follow-up commit."),
    ("I renamed the {c} module so the imports read better.", "Good; keep the old name as an alias for one release."),
    ("The {c} renders {n} ms slower on the staging phones.", "Profile it with the throttled-CPU preset first."),
    (
        "{p} asked whether the {c} should show a spinner or a skeleton.",
        "A skeleton: the layout stays still while it loads.",
    ),
    ("I split the {c} tests into {n} smaller files.", "Nice, smaller files make failures easier to read."),
    ("The logs from the {c} are too noisy at info level.", "Move the per-request lines to debug."),
    ("{p} found a typo in the {c} copy, fixed it already.", "Thanks to them; copy fixes are cheap wins."),
    ("The docker image for the {c} grew to {n} MB.", "A slim base image and a multi-stage build should halve it."),
    (
        "I added retries with jitter to the {c} calls.",
        "Cap the total retry time too, or a slow partner stalls the queue.",
    ),
    (
        "{p} wants the {c} colours to match the new brand palette.",
        "Put the palette in CSS variables so it changes in one place.",
    ),
    ("The {c} pagination skips an item at page boundaries.", "Use a cursor on (created_at, id) instead of offsets."),
    (
        "I wrote a small script to seed {n} fake orders for the {c}.",
        "Keep it in the repo; new contributors will need it.",
    ),
    ("The lint job complains about line length in the {c}.", "Let the formatter decide and drop the manual wrapping."),
    ("{p} is on holiday until next week, so the {c} review waits.", "Ask someone else for a first pass meanwhile."),
    ("The {c} shows times in UTC and shop staff find that confusing.", "Render in the shop's time zone, store in UTC."),
    ("I bumped the HTTP client in the {c} to the latest minor version.", "Run the contract tests before merging that."),
    ("The {c} error message just says 'something went wrong'.", "Say what failed and what the user can do next."),
    ("{p} suggested feature flags for the {c} rollout.", "A flag per shop lets you roll back one shop at a time."),
    ("Our test coverage for the {c} is at {n} percent now.", "Cover the error paths before chasing the number."),
    ("{p} paired with me on the {c} accessibility fixes.", "Check the focus order with a keyboard only."),
    ("The {c} sends {n} duplicate events when the network drops.", "Give each event an id and ignore repeats."),
    ("I moved the {c} settings into environment variables.", "Document each one with its default."),
    ("The {c} build takes {n} seconds on CI now.", "Cache the dependencies between runs."),
    ("{p} proposed dark mode for the {c}.", "Worth it if it is just the palette variables."),
    ("I removed {n} lines of dead code from the {c}.", "Deleting code is the best kind of refactor."),
    ("The {c} crashes when an order has no items.", "Treat the empty order as a valid state and add a test."),
    ("{p} is writing the release notes for the {c}.", "Lead with what changes for shop staff."),
    ("The {c} fonts look blurry on Windows.", "Check the font-smoothing settings and the weights loaded."),
    ("I set up error tracking for the {c}.", "Group errors by cause, not by message text."),
]


@dataclass(frozen=True)
class KeyTurns:
    """A demo's key turns, where they sit around the chatter; ``opening`` gets the milestone's deadline."""

    opening: Callable[[date], list[Turn]]
    end_of_first: list[Turn]
    start_of_second: list[Turn]
    middle_of_second: list[Turn]
    end_of_second: list[Turn]


@dataclass(frozen=True)
class Chatter:
    """Everyday chatter: user/assistant template pairs filled with a component, a person and a number."""

    templates: list[tuple[str, str]]
    components: list[str]
    people: list[str]


def two_sessions(
    today: date, keys: KeyTurns, chatter: Chatter, *, chatter_per_session: tuple[int, int] = (120, 60), seed: int = 7
) -> list[Session]:
    """The Monday and Wednesday sessions of the week before ``today``: key turns, chatter between them."""
    monday = today - timedelta(days=today.weekday() + 7)
    wednesday = monday + timedelta(days=2)
    deadline = monday + timedelta(days=11)  # the Friday after the sessions' week
    rng = random.Random(seed)
    # Each chatter template is used once per component at most: a real history rarely repeats itself.
    combinations = [(pair, component) for pair in chatter.templates for component in chatter.components]
    rng.shuffle(combinations)
    pairs = iter(combinations)

    def chat(count: int) -> list[Turn]:
        turns = []
        for (user, reply), component in itertools.islice(pairs, count):
            values = {"c": component, "p": rng.choice(chatter.people), "n": rng.randint(3, 400)}
            turns += [Turn("user", user.format(**values)), Turn("assistant", reply.format(**values))]
        return turns

    first_count, second_count = chatter_per_session
    first = [*keys.opening(deadline), *chat(first_count), *keys.end_of_first]
    second = [
        *keys.start_of_second,
        *chat(second_count // 2),
        *keys.middle_of_second,
        *chat(second_count - second_count // 2),
        *keys.end_of_second,
    ]
    return [Session("project-kickoff", monday, first), Session("project-followup", wednesday, second)]


def _opening(deadline: date) -> list[Turn]:
    day = f"{deadline:%A}, {deadline:%B} {deadline.day}"
    return [
        Turn("user", "Hi there!", key=True),
        Turn("assistant", "Hello! How can I help you today?"),
        Turn("user", "I prefer concise answers, and please always show code examples in Python.", key=True),
        Turn("assistant", "Got it: concise answers with Python examples."),
        Turn("user", "We're building an order-tracking service for a bike shop. The database is MySQL.", key=True),
        Turn("assistant", "Understood. What does the service need to do first?"),
        Turn("user", f"The first milestone is the order status API. Our deadline is {day}.", key=True),
        Turn("assistant", f"Noted: order status API first, deadline {day}."),
    ]


_KEYS = KeyTurns(
    opening=_opening,
    end_of_first=[Turn("user", "ok thanks", key=True)],
    start_of_second=[
        Turn("user", "Correction: the project actually uses PostgreSQL, not MySQL. We migrated last week.", key=True),
        Turn("assistant", "Thanks for the correction: PostgreSQL it is."),
    ],
    middle_of_second=[
        Turn("user", "I have a meeting with the design team tomorrow at 10am about the tracking page.", key=True),
        Turn("assistant", "Good luck with the meeting."),
        Turn("user", "The test customer's order number is ORD-7731-KX, use it when you write examples.", key=True),
        Turn("assistant", "I'll use ORD-7731-KX in examples."),
    ],
    end_of_second=[Turn("user", "cool", key=True)],
)


def build_sessions(today: date, *, chatter_per_session: tuple[int, int] = (120, 60), seed: int = 7) -> list[Session]:
    """The English demo's two sessions, dated on the Monday and Wednesday of the week before ``today``."""
    chatter = Chatter(_CHATTER, _COMPONENTS, _PEOPLE)
    return two_sessions(today, _KEYS, chatter, chatter_per_session=chatter_per_session, seed=seed)


ENGLISH = DemoScript(
    language="en",
    build_sessions=build_sessions,
    questions=tuple(QUESTIONS),
    off_topic=OFF_TOPIC,
    correction_question="Which database does the project use?",
    current_marker="PostgreSQL",
)
"""The English demo (`hindsight demo`)."""

__all__ = [
    "ENGLISH",
    "OFF_TOPIC",
    "QUESTIONS",
    "Chatter",
    "DemoScript",
    "KeyTurns",
    "Session",
    "Turn",
    "build_sessions",
    "two_sessions",
]
