"""Benchmarks on tiny inputs: the loader's tolerance, the scoring maths, and every command's output shape."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from hindsight_integrations.bench import synthetic
from hindsight_integrations.bench.distinct import run_distinct
from hindsight_integrations.bench.grid import grid_search, parse_grid
from hindsight_integrations.bench.locomo import evaluate
from hindsight_integrations.bench.locomo_data import load_directory, parse_evidence
from hindsight_integrations.bench.locomo_default import run_default_path
from hindsight_integrations.bench.locomo_report import default_path_table
from hindsight_integrations.bench.locomo_scoring import evidence_scores, reciprocal_rank
from hindsight_integrations.bench.scale import CONTEXT_EMBEDDING_STAGE, EXACT_STAGE, PARALLEL_STAGE, run_scale
from hindsight_integrations.bench.scale_report import scale_table
from hindsight_integrations.core.engine import MemoryEngine

# A nested-layout conversation with the quirks real files have: a session without a date,
# a turn without dia_id, an image caption, evidence written "D1:1; D2:2", zero-padded ids,
# an evidence id that names no turn, a category-5 question and one with no evidence.
NESTED = {
    "sample_id": "tiny-a",
    "conversation": {
        "speaker_a": "Maya",
        "speaker_b": "Tom",
        "session_1_date_time": "1:56 pm on 8 May, 2023",
        "session_1": [
            {"speaker": "Maya", "dia_id": "D1:1", "text": "I adopted a greyhound called Pepper last weekend."},
            {"speaker": "Tom", "dia_id": "D1:2", "text": "Congratulations! How is she settling in?"},
            {
                "speaker": "Maya",
                "dia_id": "D1:3",
                "text": "Great, she loves the beach.",
                "blip_caption": "a dog running on sand",
            },
        ],
        "session_2": [
            {"speaker": "Tom", "dia_id": "D2:1", "text": "I started learning the cello in June."},
            {"speaker": "Maya", "text": "That is brave, my violin lessons were a disaster."},
        ],
    },
    "qa": [
        {"question": "What is the name of Maya's dog?", "answer": "Pepper", "evidence": ["D1:1"], "category": 4},
        {
            "question": "Which instruments do Tom and Maya play?",
            "answer": "cello, violin",
            "evidence": ["D2:1; D2:02"],
            "category": 1,
        },
        {
            "question": "Where does Pepper like to go?",
            "answer": "beach",
            "evidence": ["D1:3", "D9:99"],
            "category": "2",
        },
        {"question": "What is Tom's cat called?", "answer": "", "evidence": [], "category": 5},
        {"question": "When did Tom start?", "answer": "June", "evidence": [], "category": 2},
    ],
}
# A flat-layout file holding a list of samples (how locomo10.json ships).
FLAT_LIST = [
    {
        "sample_id": "tiny-b",
        "session_1_date_time": "10:00 am on 2 January, 2024",
        "session_1": [
            {"speaker": "Ana", "dia_id": "D1:1", "text": "My brother Luis moved to Valencia for a job at the port."},
            {"speaker": "Ben", "dia_id": "D1:2", "text": "Valencia is lovely in spring."},
        ],
        "qa": [
            {"question": "Where did Ana's brother move?", "answer": "Valencia", "evidence": ["D1:1"], "category": 4}
        ],
    }
]


@pytest.fixture
def locomo_dir(tmp_path: Path) -> Path:
    directory = tmp_path / "locomo"
    directory.mkdir()
    (directory / "a.json").write_text(json.dumps(NESTED), encoding="utf-8")
    (directory / "b.json").write_text(json.dumps(FLAT_LIST), encoding="utf-8")
    (directory / "broken.json").write_text("{not json", encoding="utf-8")
    return directory


def test_loader_tolerates_real_world_quirks(locomo_dir: Path) -> None:
    conversations, unreadable = load_directory(locomo_dir)
    assert unreadable == ["broken.json"]
    a, b = conversations
    assert (a.name, b.name) == ("tiny-a", "tiny-b")
    assert [t.dia_id for t in a.turns] == ["D1:1", "D1:2", "D1:3", "D2:1", "D2:2"]
    assert a.turns[2].text.endswith("[shares image: a dog running on sand]")
    # the undated session follows the previous one by a day, so chronology survives
    assert a.turns[3].when.date().isoformat() == "2023-05-09"
    assert [(q.evidence, q.category) for q in a.questions] == [(["D1:1"], 4), (["D2:1", "D2:2"], 1), (["D1:3"], 2)]
    assert a.skipped == {
        "session_without_date": 1,
        "unknown_evidence_id": 1,
        "category_5": 1,
        "question_without_evidence": 1,
    }
    assert len(b.questions) == 1 and b.turns[0].speaker == "Ana"


def test_evidence_parsing_and_scores_by_hand() -> None:
    assert parse_evidence(["D8:6; D9:17", "D30:05", "D8:6"]) == ["D8:6", "D9:17", "D30:5"]
    assert parse_evidence("D:3:4") == ["D3:4"]
    ranked = ["D1:1", "D2:5", "D3:3", "D4:4"]
    assert evidence_scores(ranked, ["D2:5", "D9:9"], 2) == (0.5, False)
    assert evidence_scores(ranked, ["D2:5", "D4:4"], 4) == (1.0, True)
    assert evidence_scores(ranked, ["D2:5", "D4:4"], 3) == (0.5, False)
    assert reciprocal_rank(ranked, ["D3:3", "D4:4"]) == pytest.approx(1 / 3)
    assert reciprocal_rank(ranked, ["D7:7"]) == 0.0


def test_locomo_evaluation_on_a_hand_checkable_corpus(locomo_dir: Path, store_path: Path, embedder) -> None:
    conversations, _ = load_directory(locomo_dir)
    engine = MemoryEngine(store=store_path, embedder=embedder, llm=False)
    result = evaluate(engine, conversations, top_k=10, budget=450)
    # Each conversation has at most 5 turns, so a top-10 recall returns every turn and
    # every evidence id must be found: recall@10 and all_found@10 are exactly 1.
    assert result["questions"] == 4
    assert result["recall@10"] == 1.0 and result["all_found@10"] == 1.0 and result["recall@20"] == 1.0
    assert 0 < result["mrr"] <= 1
    assert set(result["per_category"]) == {"1", "2", "4"}
    assert result["per_category"]["4"]["questions"] == 2
    for row in result["rows"]:
        assert len(row["top10"]) == len(
            {t.dia_id for c in conversations if c.name == row["conversation"] for t in c.turns}
        )
        assert 0 < row["tokens@10"] <= 450
    tokens = result["tokens"]
    # the whole tiny history fits in 450 tokens, so the last-N window holds everything too
    assert tokens["last_n_recall"] == 1.0
    assert tokens["full_history_mean"] >= tokens["last_n_tokens_mean"] > 0
    assert result["context_tokens@10_max"] <= 450
    engine.chroma.flush()


def test_locomo_cli_prints_exactly_one_json_object(locomo_dir: Path) -> None:
    from hindsight_integrations.cli import app

    result = CliRunner().invoke(app, ["bench", "locomo", "--data", str(locomo_dir), "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    for key in (
        "questions",
        "recall@5",
        "recall@10",
        "recall@20",
        "all_found@10",
        "mrr",
        "context_tokens@10",
        "per_category",
    ):
        assert key in data
    assert "rows" not in data
    assert data["questions"] == 4


def test_locomo_cli_reports_a_directory_without_conversations(tmp_path: Path) -> None:
    from hindsight_integrations.cli import app

    result = CliRunner().invoke(app, ["bench", "locomo", "--data", str(tmp_path), "--json"])
    assert result.exit_code == 2
    assert result.stdout == ""


def test_grid_reranks_one_ingested_corpus(locomo_dir: Path, store_path: Path, embedder) -> None:
    conversations, _ = load_directory(locomo_dir)
    engine = MemoryEngine(store=store_path, embedder=embedder, llm=False)
    grid = parse_grid("dense=0.3,0.7;context=0;entity_boost=0,0.2;top_k=1,10;budget=none,60")
    result = grid_search(engine, conversations, grid, max_tokens=450)
    assert result["settings"] == 2 * 1 * 2 * 2 * 2 == len(result["rows"])
    top10 = [r for r in result["rows"] if r["top_k"] == 10 and r["budget"] is None]
    # every turn comes back at top_k=10, so recall is 1 and precision is evidence/turns
    assert all(r["recall"] == 1.0 for r in top10)
    assert all(r["precision"] < 1.0 for r in top10)
    tight = [r for r in result["rows"] if r["budget"] == 60]
    assert all(r["tokens_mean"] <= 60 for r in tight)
    assert result["best"]["tokens_mean"] <= 450
    with pytest.raises(ValueError):
        parse_grid("speed=1")
    engine.chroma.flush()


def test_synthetic_questions_are_unique_and_memories_seeded() -> None:
    questions = synthetic.questions(500)
    assert len(set(questions)) == 500
    assert [m["content"] for m in synthetic.memories(50)] == [m["content"] for m in synthetic.memories(50)]


def test_scale_on_200_memories(tmp_path: Path, embedder) -> None:
    out = tmp_path / "scale.json"
    results = run_scale(sizes=[200], queries=15, mode="embedded", out=out, embedder=embedder, raw_sample=200)
    (run,) = results["runs"]
    assert run["stored"] == 200 and run["queries"] == 15 and run["settled_queries"] == 15
    assert run["recall_p50_ms"] <= run["recall_p99_ms"]
    assert run["settled_recall_p50_ms"] <= run["settled_recall_p99_ms"] and run["context_vectors_wait_s"] >= 0
    assert "settled p50 / p99 ms" in scale_table(results)
    # the synthetic memories carry sessions: a batch frames each with what came before it in its session
    assert run["store_stages_s"][CONTEXT_EMBEDDING_STAGE] > 0
    assert run["store_per_second"] > 0 and run["raw_embed_per_second"] > 0
    # 200 memories: the copies are searched in memory, not Chroma
    assert set(run["profile"]["stages_ms"]) >= {"query embedding (MiniLM)", EXACT_STAGE, PARALLEL_STAGE}
    assert json.loads(out.read_text())["runs"][0]["size"] == 200
    assert out.with_suffix(".png").stat().st_size > 0


@pytest.mark.server
def test_scale_server_mode_on_200_memories(tmp_path: Path, embedder) -> None:
    results = run_scale(
        sizes=[200], queries=10, mode="server", out=None, embedder=embedder, raw_sample=100, profile=False
    )
    (run,) = results["runs"]
    assert run["mode"] == "server" and run["stored"] == 200
    assert run["server_peak_rss_mb"] > 0


def test_peers_score_the_same_way(locomo_dir: Path, tmp_path: Path, embedder, monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("langchain_chroma")
    pytest.importorskip("llama_index.vector_stores.chroma")
    from hindsight_integrations.bench.peers import run_peers

    # No package index (as on a machine without network): mem0's venv cannot be built.
    (tmp_path / "no-wheels").mkdir()
    monkeypatch.setenv("PIP_NO_INDEX", "1")
    monkeypatch.setenv("PIP_FIND_LINKS", str(tmp_path / "no-wheels"))
    result = run_peers(
        locomo_dir,
        embedder=embedder,
        only=["hindsight", "langchain", "llamaindex", "mem0"],
        mem0_venv=tmp_path / "mem0-venv",
    )
    by_name = {p["name"].split(" ")[0]: p for p in result["peers"]}
    for name in ("hindsight", "LangChain", "LlamaIndex"):
        peer = by_name[name]
        assert peer["status"] == "ok" and peer["questions"] == 4
        # at most 5 turns per conversation: a top-10 retrieval returns all of them
        assert peer["recall@10"] == 1.0
    mem0 = by_name["mem0"]
    assert mem0["status"] == "not run"
    assert "pip install mem0ai==" in mem0["reason"] and "No matching distribution" in mem0["reason"]
    assert "Traceback" not in mem0["reason"]


@pytest.mark.server
def test_peers_through_a_chroma_server(locomo_dir: Path, embedder) -> None:
    pytest.importorskip("langchain_chroma")
    pytest.importorskip("llama_index.vector_stores.chroma")
    from hindsight_integrations.bench.peers import run_peers
    from hindsight_integrations.bench.peers_report import peers_table

    result = run_peers(
        locomo_dir, embedder=embedder, only=["hindsight-defaults", "langchain", "llamaindex"], chroma="server"
    )
    assert result["chroma"] == "server"
    by_name = {p["name"].split(" ")[0]: p for p in result["peers"]}
    assert sorted(by_name) == ["LangChain", "LlamaIndex", "hindsight"]
    for peer in by_name.values():
        assert peer["status"] == "ok" and peer["questions"] == 4 and peer["recall@10"] == 1.0
    assert "`chroma run` server" in peers_table(result)


def test_an_unknown_chroma_mode_is_refused(locomo_dir: Path, tmp_path: Path) -> None:
    from hindsight_integrations.cli import app

    out = tmp_path / "peers.json"
    result = CliRunner().invoke(
        app, ["bench", "peers", "--data", str(locomo_dir), "--chroma", "cloud", "--out", str(out)]
    )
    assert result.exit_code != 0 and "chroma must be one of embedded, server, not 'cloud'" in result.output
    assert not out.exists()


def test_an_unknown_peer_is_refused_before_anything_runs(locomo_dir: Path, tmp_path: Path) -> None:
    from hindsight_integrations.cli import app

    out = tmp_path / "peers.json"
    result = CliRunner().invoke(
        app, ["bench", "peers", "--data", str(locomo_dir), "--only", "langchian,engram", "--out", str(out)]
    )
    assert result.exit_code != 0 and "unknown peer(s) langchian" in result.output
    assert "langchain" in result.output and not out.exists()


def test_default_path_rows_write_as_users_do(locomo_dir: Path, store_path: Path, embedder) -> None:
    conversations, _ = load_directory(locomo_dir)
    engine = MemoryEngine(store=store_path, embedder=embedder, llm=False)
    rows = run_default_path(engine, conversations, modes=["record_turn", "store_memory", "export_import"])
    assert [r["mode"] for r in rows] == ["record_turn", "store_memory", "export_import"]
    moved = rows[2]  # exported without vectors and imported elsewhere, it finds what it found where it was written
    assert (moved["recall@10"], moved["off_topic_empty"]) == (rows[0]["recall@10"], rows[0]["off_topic_empty"])
    assert not [n for n in engine.chroma.list_namespaces() if n.endswith("-source")]  # the source is dropped
    for row in rows:
        assert row["questions"] == 4 and 0 < row["recall@10"] <= 1
        assert row["context_tokens@10_max"] <= engine.settings.default_token_budget
        assert row["ingest_turns_per_second"] > 0
        # a tiny corpus about pets, music and a move: nearly every off-topic question recalls nothing
        assert row["off_topic_asked"] == 20 * len(conversations)
        assert row["off_topic_asked"] * 0.8 <= row["off_topic_empty"] <= row["off_topic_asked"]
        by_category = row["per_category"]  # what each kind of question finds on the path users take
        assert sum(c["questions"] for c in by_category.values()) == row["questions"]
        assert {c["name"] for c in by_category.values()} <= {"multi-hop", "temporal", "open-domain", "single-hop"}
    table = default_path_table({"recall@10": 1, "all_found@10": 1, "context_tokens@10": 1, "default_path": rows[:1]})
    assert f"| {rows[0]['off_topic_empty']} of 40 |" in table  # two conversations, 20 off-topic questions each
    with pytest.raises(ValueError, match="unknown default-path mode"):
        run_default_path(engine, conversations, modes=["typo"])


def test_the_reranked_row_recalls_with_the_second_stage_beside_the_default(
    locomo_dir: Path, store_path: Path, embedder
) -> None:
    conversations, _ = load_directory(locomo_dir)
    engine = MemoryEngine(store=store_path, embedder=embedder, llm=False)
    plain, reranked = run_default_path(engine, conversations, modes=["record_turn", "record_turn_reranked"])
    assert reranked["name"].startswith("opt-in") and reranked["questions"] == plain["questions"] == 4
    assert 0 < reranked["recall@10"] <= 1 and reranked["recall_ms_p50"] > 0
    assert (plain["reranked_recalls"], reranked["reranked_recalls"]) == (0, 4)  # every question read by the model
    assert reranked["off_topic_asked"] == plain["off_topic_asked"]
    assert "| opt-in: record_turn, recalled with HINDSIGHT_RERANK=cross-encoder |" in default_path_table(
        {"recall@10": 1, "all_found@10": 1, "context_tokens@10": 1, "default_path": [plain, reranked]}
    )


def test_distinct_facts_are_kept_and_repeats_merged(tmp_path: Path) -> None:
    result = run_distinct(count=21, repeat_share=0.3, unrelated=300, store=tmp_path / "store")
    assert result["distinct_facts"] == 21 and result["repeats_written"] == 6
    assert result["distinct_kept"] == 1.0 and result["copies_per_repeated_fact"] == 1.0
    assert result["unrelated_statements"] == 300 and 0 <= result["unrelated_made_history"] <= 6
    assert result["active_memories"] == 21


@pytest.mark.server
@pytest.mark.timeout(600)
def test_adversarial_command_reports_every_attack_against_a_real_server(tmp_path: Path) -> None:
    """``hindsight bench adversarial`` on small inputs: every row, its ratio, the other tenant's waits, the JSON."""
    from hindsight_integrations.cli import app

    out = tmp_path / "adversarial.json"
    arguments = ["--size", "600", "--recalls", "1", "--filter-keys", "20", "--depth", "20", "--idle-seconds", "0.5"]
    result = CliRunner().invoke(app, ["bench", "adversarial", *arguments, "--out", str(out)])
    assert result.exit_code == 0, result.output
    data = json.loads(out.read_text())
    assert data["benchmark"] == "adversarial" and data["size_bytes"] == 600
    assert set(data["other_tenant_idle"]) == {"recalls", "p50_ms", "max_ms", "errors"}
    rows = data["rows"]
    calls = {(row["input"], row["call"]) for row in rows}
    assert ('"a@b.c" × n', "store_memory") in calls and ("digits", "record_turn") in calls
    assert ("20-key metadata filter", "list_memories") in calls and rows[-1]["input"] == "20-key metadata filter"
    assert len(rows) == 9 * 3 + 2 + 3
    for row in rows:
        assert row["result"] and row["normal_result"] and row["ratio"] >= 0
        assert row["other_tenant"]["recalls"] + row["other_tenant"]["errors"] >= 1
    assert "| input | call | result |" in result.output
