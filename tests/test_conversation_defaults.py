"""The default path a user gets: conversation context and speakers, the default budget, recency, review.

Covers what the write and recall paths do without being told: a memory stored in a session
gets the session's preceding items as context and a "Name:" speaker as an entity, recall
packs at most the default token budget, recency separates facts months apart, a query about
the present favours the newer memory, and quarantined memories are reviewed through MCP and
the CLI.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

from typer.testing import CliRunner

from hindsight_integrations import MemoryEngine
from hindsight_integrations.cli import app
from hindsight_integrations.core.language.speakers import speaker_of
from hindsight_integrations.core.model.records import Status
from hindsight_integrations.core.recall.ranking import RecallWeights
from hindsight_integrations.core.write.conversation import SessionNeighbours
from hindsight_integrations.mcp import MemoryClient

NOW = datetime.now(UTC).replace(microsecond=0)


def test_speaker_of_reads_transcript_names_not_labels() -> None:
    assert speaker_of("Caroline: I went to the LGBTQ support group.") == "Caroline"
    assert speaker_of("Dr Mary Jones: take two a day") == "Dr Mary Jones"
    for text in ("Update: the budget is 5000", "Note: call Bob", "caroline: lower case", "Q: why?", "no colon here"):
        assert speaker_of(text) is None, text


def test_session_neighbours_keep_the_last_two_per_session() -> None:
    recent = SessionNeighbours(max_sessions=2)
    assert recent.context("ns", "s1") is None
    for text in ("one", "two", "three"):
        recent.add("ns", "s1", text)
    assert recent.context("ns", "s1") == "two three"
    assert recent.context("other", "s1") is None
    recent.add("ns", "s2", "a")
    recent.add("ns", "s3", "b")  # the least recently written session is dropped
    assert recent.context("ns", "s1") is None and recent.context("ns", "s3") == "b"


def test_a_memory_in_a_session_gets_its_neighbours_and_speaker(engine: MemoryEngine) -> None:
    first = engine.store_memories(
        [{"content": "Melanie: How many times do you go running?", "session_id": "c1"}], namespace="u"
    )
    assert first.skipped  # a question is a turn, not a memory, but still the next one's context
    (kept,) = engine.store_memories(
        [{"content": "Caroline: Twice a week, in the park.", "session_id": "c1"}], namespace="u"
    ).stored
    assert kept.entities == ["Caroline"]
    assert kept.context == "Melanie: How many times do you go running?"
    assert kept.content == "Caroline: Twice a week, in the park."  # the text is never changed
    given = engine.store_memories(
        [{"content": "Dana: Friday works.", "session_id": "c1", "context": "mine", "entities": ["D"]}], namespace="u"
    ).stored[0]
    assert given.context == "mine" and given.entities == ["D"]  # what the caller gives wins
    hit = engine.recall("How often does Caroline go running?", namespace="u", top_k=1).hits[0]
    assert hit.record.id == kept.id


TRANSCRIPT = [
    ("c1", "Melanie: How many times do you go running?"),
    ("c2", "Jon: I finally fixed the boiler."),
    ("c1", "Caroline: Twice a week, in the park."),
    ("c1", "Melanie: Same park as the charity race?"),
    ("c1", "Caroline: Yes, the one by the river."),
]


def test_a_batch_in_order_gets_what_single_writes_get(engine: MemoryEngine) -> None:
    """An imported history (one store_memories call) is read as its turns were said, session by session."""
    items = [{"content": text, "session_id": session} for session, text in TRANSCRIPT]
    batch = {r.content: r for r in engine.store_memories(items, namespace="batch").stored}
    singles = {}
    for item in items:
        singles.update({r.content: r for r in engine.store_memories([item], namespace="singles").stored})
    assert batch.keys() == singles.keys() and "Caroline: Twice a week, in the park." in batch
    for content, record in batch.items():
        assert (record.context, record.entities) == (singles[content].context, singles[content].entities), content
    river = batch["Caroline: Yes, the one by the river."]
    assert river.context == "Caroline: Twice a week, in the park. Melanie: Same park as the charity race?"
    assert batch["Jon: I finally fixed the boiler."].context is None  # another session: nothing before it
    for namespace in ("batch", "singles"):
        (hit,) = engine.recall("Where does Caroline go running?", namespace=namespace, top_k=1).hits
        assert hit.record.content in {"Caroline: Twice a week, in the park.", "Caroline: Yes, the one by the river."}


def test_the_write_filter_judges_what_a_speaker_said_not_the_name(engine: MemoryEngine) -> None:
    # "Lena: Hi!" used to pass the filter as a short statement (the name hid the greeting), and
    # "Lena: Always use metric units" missed the imperative rule, which reads from the start.
    turns = ["Hi!", "ok thanks", "你好", "Always use metric units, please.", "What should I read next?"]
    results = [engine.record_turn(text, session_id="s1", namespace="u", speaker="Lena") for text in turns]
    stored = [r.stored.stored for r in results]
    assert stored[:3] == [[], [], []] and stored[4] == []
    (instruction,) = stored[3]
    assert instruction.content == "Lena: Always use metric units, please." and instruction.kind.value == "preference"
    labelled = engine.store_memories("Update: we moved the staging database to Postgres 16.", namespace="u").stored
    assert labelled[0].kind.value == "correction"  # a label is not a name: "Update:" still says it changed


def test_error_output_is_not_a_speakers_line(engine: MemoryEngine) -> None:
    # "KeyError: 'user_id'" from a tool was read as "'user_id'" said by a speaker "KeyError": the
    # filter never saw the error, and it was stored as a context memory with KeyError as its entity.
    errors = [
        "KeyError: 'user_id'",
        "ValueError: invalid literal for int() with base 10: 'abc'",
        "ConnectionError: [Errno 111] Connection refused",
        "json.decoder.JSONDecodeError: Expecting value",
        "Fatal: not a git repository",
        "Failed: 3 of 10 checks",
        "E1101: Instance of 'Foo' has no 'bar' member",
    ]
    for text in errors:
        assert speaker_of(text) is None, text
    result = engine.store_memories([{"content": text, "role": "tool"} for text in errors], namespace="u")
    assert result.stored == []
    assert [s.reason for s in result.skipped] == ["error output: not a fact to remember"] * len(errors)
    # Names still read as names, in both packs, even those an error word starts ("Errol", "Fatima").
    named = [("Errol: in Leeds", "Errol"), ("Fatima Ali: yes", "Fatima Ali"), ("孙浩然：我搬到杭州了", "孙浩然")]
    for text, name in named:
        assert speaker_of(text) == name


def test_recall_packs_the_default_budget(engine: MemoryEngine) -> None:
    long = " ".join(f"The cluster node {n} runs the ingest service on port {8000 + n}." for n in range(12))
    engine.store_memories([f"{long} Variant {v}." for v in range(8)], namespace="u", dedup=False)
    assert engine.settings.default_token_budget == 450
    assert engine.recall("which port does the ingest service use", namespace="u", top_k=8).tokens <= 450
    unbounded = engine.recall("which port does the ingest service use", namespace="u", top_k=8, token_budget=100_000)
    assert unbounded.tokens > 450


def test_recency_separates_facts_months_apart(engine: MemoryEngine) -> None:
    for months, city in ((2, "Porto"), (7, "Quito")):
        engine.store_memories(
            [{"content": f"The team offsite was held in {city}.", "occurred_at": NOW - timedelta(days=30 * months)}],
            namespace="u",
        )
    hits = engine.recall("where was the team offsite held", namespace="u", top_k=2).hits
    recency = {h.record.content.split()[-1]: h.recency for h in hits}
    assert recency["Porto."] > recency["Quito."] > 0
    exponential = engine.recall(
        "where was the team offsite held", namespace="u", top_k=2, weights=RecallWeights(recency_lambda=0.01)
    ).hits
    assert all(h.recency < 1e-6 for h in exponential)  # what the old exp(-0.01·hours) gave both


def test_a_question_about_now_weighs_recency_double(engine: MemoryEngine) -> None:
    engine.store_memories(
        [
            {"content": "Lena drives a red Volvo.", "occurred_at": NOW - timedelta(days=400)},
            {"content": "Lena got a blue bike.", "occurred_at": NOW - timedelta(days=3)},
        ],
        namespace="u",
    )
    weights = {"similarity": 1.0, "recency": 0.3, "importance": 0.0, "access": 0.0}
    plain = engine.recall("What does Lena drive?", namespace="u", top_k=2, weights=weights).hits
    now = engine.recall("What does Lena drive now?", namespace="u", top_k=2, weights=weights).hits
    gap = {h.record.content: h.score for h in plain}
    gap_now = {h.record.content: h.score for h in now}
    newer, older = "Lena got a blue bike.", "Lena drives a red Volvo."
    assert gap_now[newer] - gap_now[older] > gap[newer] - gap[older]


def test_review_through_mcp(engine: MemoryEngine) -> None:
    with MemoryClient.in_process(engine, namespace="u") as client:
        important = client.store({"content": "I am allergic to peanuts.", "importance": 1.0, "kind": "preference"})
        held = client.store({"content": "I am no longer allergic to peanuts.", "trusted": False})
        assert held.quarantined == held.ids
        records = client.review(held.ids[0], accept=True)
        assert [r.status for r in records] == [Status.ACTIVE, Status.SUPERSEDED]
        assert records[1].id == important.ids[0]


def test_review_on_the_command_line(tmp_path: Path, embedder) -> None:
    runner = CliRunner()
    store = tmp_path / "store"
    engine = MemoryEngine(store=store, embedder=embedder, llm=False)
    engine.store_memories([{"content": "My blood type is O negative.", "importance": 1.0}], namespace="cli")
    held = engine.store_memories(
        [{"content": "My blood type is A positive.", "role": "tool"}], namespace="cli"
    ).quarantined[0]
    engine.chroma.flush()
    del engine

    def run(*args: str):
        return runner.invoke(app, ["--store", str(store), "--namespace", "cli", "review", *args])

    listed = run()
    assert listed.exit_code == 0 and held in listed.output and "1 quarantined memory" in listed.output
    undecided = run(held)
    assert undecided.exit_code == 2 and "--accept or --reject" in undecided.output
    rejected = run(held, "--reject")
    assert rejected.exit_code == 0 and "rejected" in rejected.output and "deleted" in rejected.output
    again = run(held, "--accept")
    assert again.exit_code == 2 and "not quarantined" in " ".join(again.output.split())
    assert json.loads(runner.invoke(app, ["--store", str(store), "--namespace", "cli", "stats", "--json"]).output)[
        "by_status"
    ] == {"active": 1, "deleted": 1}
