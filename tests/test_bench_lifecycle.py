"""``hindsight bench lifecycle``: a tiny run of the command in both modes, and the scoring itself.

The scoring is checked on hand-made cases that must fail (an engine that does not supersede, a
question whose expected value was never said, a duplicate) as well as pass, and the scripted
LLM on its own, through the real ``openai`` client, with every fault it injects.
"""

from __future__ import annotations

import json
import tomllib
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from fnmatch import fnmatch
from pathlib import Path

import pytest
from typer.testing import CliRunner

from hindsight_integrations import MemoryEngine
from hindsight_integrations.bench.lifecycle import NAMESPACE, checkpoint_weeks, run_lifecycle
from hindsight_integrations.bench.lifecycle_cases import Attribute, said
from hindsight_integrations.bench.lifecycle_history import DATA_FILE, SCRIPT, History, build_history, load_script
from hindsight_integrations.bench.lifecycle_scoring import (
    Checkpoint,
    Scores,
    consolidated_memory,
    current_first,
    history_shown,
    mentions,
    one_copy,
)
from hindsight_integrations.bench.scripted_llm import FAULTS, ScriptedLLM, ScriptedLLMServer
from hindsight_integrations.core.errors import LLMError
from hindsight_integrations.core.llm import LLMClient
from hindsight_integrations.core.model.records import MemoryRecord, Source, Status, Tier
from hindsight_integrations.mcp import MemoryClient

T0 = datetime(2024, 1, 8, 19, tzinfo=UTC)


def _record(content: str, status: Status = Status.ACTIVE, **fields) -> MemoryRecord:
    return MemoryRecord(namespace=NAMESPACE, content=content, status=status, **fields)


# -- the command -------------------------------------------------------------------------------
def test_a_tiny_run_of_both_modes_prints_one_json_object_and_writes_the_plot(tmp_path: Path) -> None:
    from hindsight_integrations.cli import app

    out = tmp_path / "results" / "lifecycle.json"
    result = CliRunner().invoke(
        app, ["bench", "lifecycle", "--llm", "both", "--weeks", "4", "--json", "--out", str(out)]
    )
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert json.loads(out.read_text()) == data and out.with_suffix(".png").stat().st_size > 0
    offline, scripted = data["runs"]
    assert (offline["llm"], scripted["llm"]) == ("none", "scripted")
    for run in data["runs"]:
        assert run["weeks"] == 4 and run["upkeep"]["rounds"] == 4 and run["upkeep"]["failed_steps"] == {}
        (point,) = run["checkpoints"]  # week 3
        assert point["week"] == 3 and point["recalls"] > 0 and point["tokens_per_recall"] > 0
        assert point["store"]["active"]["semantic"] > 0 and point["store"]["history"] == 0
        assert run["overall"]["current_first"] == {"passed": 4, "cases": 4, "score": 1.0}  # city, job, phone, diet
        assert set(run["overall"]) >= {"history_on_request", "expired_hidden", "poisoning_quarantined"}
    calls = scripted["llm_calls"]
    assert calls["requests"]["extraction"] > 0 and calls["faults_total"] == sum(calls["faults"].values()) > 0
    assert "llm_calls" not in offline
    assert "lifecycle" in CliRunner().invoke(app, ["bench", "--help"]).stdout


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--llm", "gpt"], "--llm: 'gpt' is not none, scripted or both"),
        (["--weeks", "0"], "weeks: must be between 1 and 62"),
        (["--weeks", "63"], "weeks: must be between 1 and 62"),
        (["--fault-rate", "1.5"], "fault_rate: must be a number between 0 and 1"),
    ],
)
def test_bad_options_are_refused_before_anything_runs(args: list[str], message: str, tmp_path: Path) -> None:
    from hindsight_integrations.cli import app

    out = tmp_path / "never.json"
    result = CliRunner().invoke(app, ["bench", "lifecycle", *args, "--out", str(out)])
    assert result.exit_code == 2 and message in result.output and not out.exists()


def test_unknown_modes_and_lengths_are_clear_errors() -> None:
    with pytest.raises(ValueError, match="unknown --llm mode gpt"):
        run_lifecycle(modes=["gpt"])
    with pytest.raises(ValueError, match="weeks must be between 1 and 62"):
        run_lifecycle(weeks=0)


# -- the scoring -------------------------------------------------------------------------------
def test_values_are_matched_however_they_are_spaced_or_cased() -> None:
    assert mentions("Call me on +351 912 345 687.", "+351912345687")
    assert mentions("I live in PORTO now", "Porto") and not mentions("I live in Lisbon", "Porto")


def test_the_current_value_must_be_recalled_and_come_before_older_ones() -> None:
    lisbon, berlin = _record("I moved to Lisbon."), _record("I live in Berlin.")
    assert current_first([lisbon, berlin], "Lisbon", ["Berlin"])
    assert not current_first([berlin, lisbon], "Lisbon", ["Berlin"])  # an older value first fails
    assert not current_first([], "Lisbon", ["Berlin"])  # nothing recalled fails
    assert not current_first([_record("My cat is called Miso.")], "Lisbon", ["Berlin"])  # not recalled at all
    assert current_first([_record("I moved from Berlin to Lisbon.")], "Lisbon", ["Berlin"])  # naming both is current


def test_history_must_be_marked_superseded_and_rank_below_the_current_value() -> None:
    lisbon = _record("I moved to Lisbon.")
    old = _record("I live in Berlin.", Status.SUPERSEDED)
    assert history_shown([lisbon, old], "Lisbon", "Berlin")
    assert not history_shown([old, lisbon], "Lisbon", "Berlin")  # above the current value
    assert not history_shown([lisbon, _record("I live in Berlin.")], "Lisbon", "Berlin")  # not marked superseded
    assert not history_shown([lisbon], "Lisbon", "Berlin")  # not returned


def test_a_repeat_is_one_copy_or_waits_in_cold_storage() -> None:
    assert one_copy(1, 0) and one_copy(0, 1) and one_copy(1, 1)
    assert not one_copy(2, 0) and not one_copy(0, 0)


def test_a_consolidated_memory_needs_its_provenance() -> None:
    members = [{"id": "a", "message_ids": ["t1"]}, {"id": "b", "message_ids": ["t2"]}]
    full = Source(origin="consolidation", memory_ids=["a", "b"], message_ids=["t1", "t2"], members=members)
    made = _record("I prefer concise answers.", tier=Tier.SEMANTIC, source=full)
    assert consolidated_memory([made], "concise", T0) is made
    one_source = full.model_copy(update={"memory_ids": ["a"]})
    no_turns = full.model_copy(update={"members": [{"id": "a", "message_ids": []}, members[1]]})
    for source in (one_source, no_turns, Source(origin="turn")):
        assert consolidated_memory([made.model_copy(update={"source": source})], "concise", T0) is None
    assert consolidated_memory([made.model_copy(update={"tier": Tier.EPISODIC})], "concise", T0) is None


def test_scores_count_cases_and_name_what_failed() -> None:
    scores = Scores()
    scores.case("current_first", "a", True)
    scores.case("current_first", "b", False, "recalled nothing")
    summary = scores.summary()
    assert summary["current_first"] == {"passed": 1, "cases": 2, "score": 0.5}
    assert summary["expired_hidden"] == {"passed": 0, "cases": 0, "score": None}
    assert scores.failures == [{"metric": "current_first", "case": "b", "why": "recalled nothing"}]
    with pytest.raises(ValueError, match="unknown metric"):
        scores.case("vibes", "c", True)


# -- the history's data file -------------------------------------------------------------------
ROOT = Path(__file__).resolve().parents[1]


def test_the_history_is_a_data_file_shipped_with_the_package() -> None:
    assert (SCRIPT.user, SCRIPT.weeks, len(SCRIPT.attributes)) == ("Lena", 62, 5)
    assert SCRIPT.start == T0 and SCRIPT.events[0].lasts == timedelta(days=2)
    package = ROOT / "hindsight_integrations" / "bench"
    shipped = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["setuptools"]
    patterns = shipped["package-data"]["hindsight_integrations.bench"]
    relative = Path(str(DATA_FILE)).relative_to(package).as_posix()
    assert any(fnmatch(relative, pattern) for pattern in patterns), (relative, patterns)


def _edited(tmp_path: Path, old: str, new: str) -> Path:
    text = DATA_FILE.read_text(encoding="utf-8")
    assert old in text
    path = tmp_path / "history.toml"
    path.write_text(text.replace(old, new, 1), encoding="utf-8")
    return path


@pytest.mark.parametrize(
    ("old", "new", "message"),
    [
        ('marker = "Miso"', 'markr = "Miso"', r"exact_repeats\.0\.markr"),  # misspelt: unknown and missing
        ('lasts = "P2D"', 'lasts = "two days"', r"events\.0\.lasts"),
        ('kind = "event"', 'kind = "appointment"', r"events\.0\.turn\.kind"),
        ('target = "diet"', 'target = "diett"', "targets 'diett', not an attribute or preference"),
        ("weeks = 62", "weeks = [62", "history.toml: "),  # not TOML at all
    ],
)
def test_a_broken_history_file_is_an_error_naming_the_file_and_the_field(
    tmp_path: Path, old: str, new: str, message: str
) -> None:
    path = _edited(tmp_path, old, new)
    with pytest.raises(ValueError, match=message) as caught:
        load_script(path)
    assert str(caught.value).startswith(f"{path}: ")
    assert load_script(_edited(tmp_path, old, old)) == SCRIPT  # the file as shipped loads unchanged


def test_checkpoints_fall_every_four_weeks_and_at_the_end() -> None:
    assert checkpoint_weeks(62) == [3, 7, 11, 15, 19, 23, 27, 31, 35, 39, 43, 47, 51, 55, 59, 61]
    assert checkpoint_weeks(4) == [3] and checkpoint_weeks(5) == [3, 4] and checkpoint_weeks(2) == [1]


MOVES = Attribute(
    "location",
    "Which city do I live in?",
    (
        (0, "Berlin", said("I live in Berlin.", "context")),
        (1, "Lisbon", said("I moved to Lisbon.", "context")),
    ),
)


def _history(*attributes: Attribute) -> History:
    return History(
        sessions=[],
        attributes=attributes,
        repeated_preferences=(),
        once_said_preferences=(),
        events=(),
        exact_repeats=(),
        poisonings=(),
        everyday_facts=(),
    )


@pytest.fixture
def client(engine: MemoryEngine) -> Iterator[MemoryClient]:
    with MemoryClient.in_process(engine, namespace=NAMESPACE) as opened:
        yield opened


def _checkpoint(engine: MemoryEngine, client: MemoryClient, history: History) -> Scores:
    records = [r for r, _ in engine.chroma.namespace(NAMESPACE).iterate()]
    return Checkpoint(client, records, history, 1, datetime.now(UTC)).run()


def _moves(client: MemoryClient, *, supersede: bool) -> None:
    start = datetime.now(UTC) - timedelta(days=30)
    client.store("I live in Berlin.", occurred_at=start, supersede=supersede)
    client.store("I moved to Lisbon.", occurred_at=start + timedelta(days=7), supersede=supersede)


def test_a_move_the_engine_supersedes_scores_full_marks(engine: MemoryEngine, client: MemoryClient) -> None:
    _moves(client, supersede=True)
    summary = _checkpoint(engine, client, _history(MOVES)).summary()
    assert summary["current_first"]["score"] == 1.0 and summary["history_on_request"]["score"] == 1.0


def test_without_supersede_history_on_request_fails(engine: MemoryEngine, client: MemoryClient) -> None:
    _moves(client, supersede=False)  # both stay current: nothing is history
    scores = _checkpoint(engine, client, _history(MOVES))
    assert scores.summary()["history_on_request"]["score"] == 0.0
    assert scores.failures[-1]["case"] == "location: Berlin"


def test_a_value_never_said_is_not_recalled(engine: MemoryEngine, client: MemoryClient) -> None:
    _moves(client, supersede=True)
    porto = Attribute("location", "Which city do I live in?", (*MOVES.values, (1, "Porto", said("We moved to Porto."))))
    summary = _checkpoint(engine, client, _history(porto)).summary()
    assert summary["current_first"] == {"passed": 0, "cases": 1, "score": 0.0}
    assert summary["history_on_request"]["score"] < 1.0


# -- the scripted LLM --------------------------------------------------------------------------
@pytest.fixture(scope="module")
def script() -> ScriptedLLM:
    return ScriptedLLM(build_history())


def test_extraction_keeps_what_a_turn_says_and_drops_small_talk(script: ScriptedLLM) -> None:
    assert script.extract("assistant: Hello!\nuser: Hi!") == {"memories": []}
    assert script.extract("user: What should I read next?") == {"memories": []}
    (memory,) = script.extract("user: Actually it's +351 912 345 687, I mixed up the last two digits.")["memories"]
    assert memory["content"] == "My phone number is +351 912 345 687." and memory["memory_type"] == "correction"


def test_judgements_follow_the_attribute_and_value_each_statement_sets(script: ScriptedLLM) -> None:
    prompt = (
        "NEW: I moved to Lisbon last weekend, the boxes are everywhere.\nSTORED:\n"
        "1. Lena: I live in Berlin, in a small flat in Kreuzberg.\n2. Lena: My cat is called Miso.\n"
        "3. I moved to Lisbon last weekend, the boxes are everywhere."
    )
    assert script.judge(prompt) == {"verdicts": ["keep_new", "keep_both", "merge"]}


def test_distillation_names_the_preference_or_the_shortest_statement(script: ScriptedLLM) -> None:
    sayings = "STATEMENTS:\n1. Lena: I prefer concise answers.\n2. Lena: I really prefer concise answers in chat."
    assert script.distil(sayings)["content"] == "I prefer concise answers."
    other = script.distil("STATEMENTS:\n1. Lena: My cat is called Miso.\n2. Lena: My cat is called Miso, really.")
    assert other["same_fact"] is True and other["content"] == "Lena: My cat is called Miso."
    assert script.distil("no numbered statements") == {"same_fact": False}
    assert script.summarise("user: Hi!\nassistant: Hello") == "Small talk only; nothing to keep."


def _llm(server: ScriptedLLMServer, **options) -> LLMClient:
    return LLMClient(model="scripted", base_url=server.base_url, api_key=server.api_key, **options)


def test_the_server_answers_the_real_openai_client() -> None:
    with ScriptedLLMServer(build_history(), fault_rate=0.0) as server:
        (memory,) = _llm(server).extract_memories("user: I'm allergic to peanuts.")
        assert memory.memory_type == "preference" and memory.content == "I'm allergic to peanuts."
        assert _llm(server).summarize("user: I'm allergic to peanuts.") == "I'm allergic to peanuts."
        with pytest.raises(LLMError):  # a request without the server's key is refused
            LLMClient(model="scripted", base_url=server.base_url, api_key="wrong", max_retries=0).summarize("x")
        stats = server.stats()
    assert stats["faults_total"] == 0 and stats["requests"] == {"extraction": 1, "summary": 1}


def test_every_fault_is_served_and_fails_the_call_without_retries() -> None:
    with ScriptedLLMServer(build_history(), fault_rate=1.0, seed=3, slow_seconds=0.4) as server:
        client = _llm(server, timeout=0.15, max_retries=0)
        for _ in range(16):
            with pytest.raises(LLMError):
                client.extract_memories("user: I'm allergic to peanuts.")
        stats = server.stats()
    assert stats["faults_total"] == 16 and all(stats["faults"][kind] > 0 for kind in FAULTS)


def test_the_engine_falls_back_to_its_rules_when_every_reply_is_a_fault(store_path: Path, embedder) -> None:
    with ScriptedLLMServer(build_history(), fault_rate=1.0, seed=5, slow_seconds=0.4) as server:
        engine = MemoryEngine(store=store_path, embedder=embedder, llm=_llm(server, timeout=0.15, max_retries=1))
        result = engine.record_turn("I'm allergic to peanuts.", session_id="s1", namespace="u", speaker="Lena")
        assert [m.content for m in result.stored.stored] == ["Lena: I'm allergic to peanuts."]  # the rule path's text
        assert result.stored.stored[0].kind.value == "preference"
        assert server.stats()["faults_total"] >= 1
        engine.chroma.flush()


def test_a_fault_rate_outside_zero_to_one_is_refused() -> None:
    with pytest.raises(ValueError, match="fault_rate"):
        ScriptedLLMServer(build_history(), fault_rate=1.5)
