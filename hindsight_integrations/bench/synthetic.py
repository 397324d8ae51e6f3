"""Seeded synthetic memories and questions for the scale benchmark.

Real memories are short, varied, first- or third-person statements with names, places,
dates and identifiers. Templates × vocabularies give that variety (so the HNSW graph and
the BM25 vocabulary look like a real namespace, not 100k copies of one sentence), and a
seeded ``random.Random`` makes every run store the same texts. The templates avoid the
phrasings the conflict detector treats as "subject:attribute" updates ("I live in", "my X
is"), so storing them never supersedes anything and the count stays exact.

Questions are drawn from their own templates and made unique (a fresh order number or a
different combination every time), so the engine's query-vector LRU never hides the cost
of embedding the query.
"""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta
from typing import Any

NAMES = [
    "Alice",
    "Bruno",
    "Chen",
    "Dana",
    "Emeka",
    "Farah",
    "Goran",
    "Hana",
    "Ivan",
    "Jules",
    "Kofi",
    "Lena",
    "Mateo",
    "Nadia",
    "Oscar",
    "Priya",
    "Quinn",
    "Rosa",
    "Sven",
    "Tariq",
    "Uma",
    "Viktor",
    "Wen",
    "Ximena",
    "Yusuf",
    "Zoe",
]
CITIES = [
    "Lisbon",
    "Nairobi",
    "Osaka",
    "Denver",
    "Krakow",
    "Lima",
    "Montreal",
    "Hanoi",
    "Seville",
    "Tallinn",
    "Perth",
    "Bogota",
    "Tunis",
    "Oslo",
    "Austin",
    "Chennai",
    "Quito",
    "Porto",
    "Dublin",
    "Cusco",
]
THINGS = [
    "budget review",
    "design doc",
    "quarterly report",
    "launch checklist",
    "vendor contract",
    "onboarding guide",
    "security audit",
    "pricing page",
    "data migration",
    "customer survey",
    "hiring plan",
    "release notes",
]
PROJECTS = [
    "Atlas",
    "Borealis",
    "Cobalt",
    "Delta",
    "Ember",
    "Falcon",
    "Granite",
    "Helix",
    "Iris",
    "Juniper",
    "Kestrel",
    "Lumen",
    "Meridian",
    "Nimbus",
    "Orchid",
    "Pioneer",
]
FOODS = [
    "ramen",
    "lentil soup",
    "tacos",
    "sushi",
    "falafel",
    "pad thai",
    "risotto",
    "dumplings",
    "paella",
    "pho",
    "shakshuka",
    "pierogi",
    "jollof rice",
    "bibimbap",
]
HOBBIES = [
    "bouldering",
    "watercolour painting",
    "trail running",
    "chess",
    "sourdough baking",
    "salsa dancing",
    "birdwatching",
    "pottery",
    "sailing",
    "woodworking",
    "kayaking",
    "photography",
    "gardening",
]
RELATIVES = ["sister", "brother", "daughter", "son", "cousin", "grandmother", "uncle", "niece", "partner", "neighbour"]
WEEKDAYS = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"]
TEAMS = ["platform", "mobile", "billing", "support", "research", "growth", "infra", "design", "sales", "legal"]
EVENTS = ["offsite", "hackathon", "town hall", "retro", "demo day", "planning week", "workshop", "board meeting"]
ITEMS = [
    "headphones",
    "standing desk",
    "espresso machine",
    "road bike",
    "tent",
    "laptop stand",
    "camera lens",
    "kettle",
]
ISSUES = ["a cracked screen", "a late delivery", "a wrong size", "a missing cable", "a billing error", "a dead battery"]
ALLERGIES = ["peanuts", "shellfish", "gluten", "lactose", "sesame", "pollen", "cats"]
BOOKS = ["Dune", "Middlemarch", "The Overstory", "Piranesi", "Beloved", "Stoner", "Kindred", "The Remains of the Day"]

MEMORY_TEMPLATES = [
    "{name} said the {thing} for project {project} is due on {weekday}.",
    "{name} had {food} in {city} and still talks about it.",
    "{name}'s {relative} started {hobby} lessons in {city} last month.",
    "The {team} team moved the {event} to {city} for the week of {date}.",
    "Order {code} for {name} was delayed because of {issue}.",
    "{name} is allergic to {allergy}, so avoid it when ordering {food}.",
    "{name} recommended {book} to the {team} team after the {event}.",
    "{name} bought a {item} on {date} and returned it due to {issue}.",
    "Project {project} shipped the {thing} after {name} reviewed it on {weekday}.",
    "{name} wants to visit {city} with their {relative} to go {hobby}.",
    "Ticket {code} about the {thing} was assigned to {name} from the {team} team.",
    "{name} prefers meetings before noon and blocks {weekday} afternoons for {hobby}.",
    "The {event} in {city} ran over budget by {number} percent, according to {name}.",
    "{name} finished reading {book} during the flight to {city}.",
    "{name} asked for a vegetarian {food} option at the {team} {event}.",
    "Invoice {code} for the {item} was paid by {name} on {date}.",
]
QUESTION_TEMPLATES = [
    "When is the {thing} for project {project} due?",
    "What happened with order {code}?",
    "Who on the {team} team recommended {book}?",
    "What food did {name} enjoy in {city}?",
    "Which hobby did {name}'s {relative} pick up?",
    "Where is the {team} {event} this time?",
    "What is {name} allergic to?",
    "Why did {name} return the {item}?",
    "Who reviewed the {thing} for project {project}?",
    "Which city does {name} want to visit with their {relative}?",
    "Who is handling ticket {code}?",
    "How much did the {event} in {city} go over budget?",
    "Which book did {name} read on the way to {city}?",
    "Who paid invoice {code}?",
]
_BASE = datetime(2024, 1, 1, tzinfo=UTC)
_CODE_LETTERS = "ABCDEFGHJKLMNPQRSTUVWXYZ"  # no I or O: codes read like real order/ticket ids


def _fill(template: str, rng: random.Random) -> tuple[str, str]:
    """The filled template and the person it names."""
    when = _BASE + timedelta(days=rng.randrange(0, 730))
    name = rng.choice(NAMES)
    return template.format(
        name=name,
        city=rng.choice(CITIES),
        thing=rng.choice(THINGS),
        project=rng.choice(PROJECTS),
        food=rng.choice(FOODS),
        hobby=rng.choice(HOBBIES),
        relative=rng.choice(RELATIVES),
        weekday=rng.choice(WEEKDAYS),
        team=rng.choice(TEAMS),
        event=rng.choice(EVENTS),
        item=rng.choice(ITEMS),
        issue=rng.choice(ISSUES),
        allergy=rng.choice(ALLERGIES),
        book=rng.choice(BOOKS),
        number=rng.randrange(3, 60),
        code=f"{rng.choice(_CODE_LETTERS)}{rng.choice(_CODE_LETTERS)}-{rng.randrange(1000, 99999)}",
        date=f"{when.day} {when.strftime('%B')} {when.year}",
    ), name


def memories(count: int, *, seed: int = 7) -> list[dict[str, Any]]:
    """``count`` store_memories items: varied content, spread over two years, one entity each."""
    rng = random.Random(seed)
    items = []
    for n in range(count):
        content, name = _fill(rng.choice(MEMORY_TEMPLATES), rng)
        items.append(
            {
                "content": content,
                "occurred_at": _BASE + timedelta(minutes=n * 7 + rng.randrange(0, 7)),
                "kind": "event",
                "tier": "episodic",
                "importance": round(rng.uniform(0.3, 0.9), 2),
                "entities": [name],
                "session_id": f"s{n // 40}",
            }
        )
    return items


def questions(count: int, *, seed: int = 11) -> list[str]:
    """``count`` distinct questions (never repeated, so the query-vector cache never hits)."""
    rng = random.Random(seed)
    seen: dict[str, None] = {}
    while len(seen) < count:
        seen.setdefault(_fill(rng.choice(QUESTION_TEMPLATES), rng)[0], None)
    return list(seen)
