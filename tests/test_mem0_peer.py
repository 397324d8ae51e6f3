"""mem0 in ``hindsight bench peers``: the embedding endpoint, the runner protocol, its own venv.

The fast tests need no mem0: a stand-in ``mem0`` package (stdlib only, the calls the runner
makes) lives in a real virtual environment made here without pip, and fetches its vectors
from the real endpoint over HTTP, so the runner script, the client, the endpoint and the
venv reuse are all exercised for real; only mem0 itself is replaced. The slow test builds
the venv with pip (``MEM0_SPEC`` from the package index) and runs real mem0 end to end.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import httpx
import numpy as np
import openai
import pytest

from hindsight_integrations.bench.embedding_server import EmbeddingServer
from hindsight_integrations.bench.locomo_data import load_directory
from hindsight_integrations.bench.mem0_peer import (
    MARKER,
    MEM0_SPEC,
    MEM0_VERSION,
    Mem0Runner,
    Mem0Unavailable,
    RunnerError,
    ensure_venv,
    venv_python,
)
from hindsight_integrations.bench.peer_systems import Mem0System, peer_text
from hindsight_integrations.bench.peers import run_peers

from .test_bench import locomo_dir  # noqa: F401

STAND_IN = '''
"""A stand-in for mem0 (tests only): the calls mem0_runner.py makes, vectors from the configured endpoint."""
import json
import os
import sys
import threading
import urllib.request

if os.environ.get("STANDIN_BROKEN"):
    raise ImportError("stand-in mem0 broken on purpose")

__version__ = "stand-in"


class _Embedder:
    def __init__(self, config):
        self.config = config

    def embed(self, text, memory_action=None):
        body = {
            "input": [text],
            "model": self.config["model"],
            "dimensions": self.config["embedding_dims"],
            "encoding_format": "float",
        }
        request = urllib.request.Request(
            self.config["openai_base_url"] + "/embeddings",
            data=json.dumps(body).encode(),
            headers={"authorization": "Bearer " + self.config["api_key"], "content-type": "application/json"},
        )
        with urllib.request.urlopen(request, timeout=30) as response:
            return json.load(response)["data"][0]["embedding"]


class Memory:
    def __init__(self, config):
        self.embedding_model = _Embedder(config["embedder"]["config"])
        self.items = []

    @classmethod
    def from_config(cls, config):
        return cls(config)

    def add(self, text, *, user_id, metadata, infer):
        assert infer is False
        print("stand-in chatter on stdout", flush=True)
        self.items.append((user_id, text, metadata, self.embedding_model.embed(text, "add")))
        return {"results": [{"memory": text, "event": "ADD"}]}

    def search(self, query, *, top_k, filters):
        if os.environ.get("STANDIN_CRASH_ON", "\\0") in query:
            sys.stderr.write("stand-in crashing on purpose\\n")
            sys.stderr.flush()
            os._exit(3)
        if "hang" in query:
            threading.Event().wait()
        vector = self.embedding_model.embed(query, "search")
        scored = sorted(
            ((sum(a * b for a, b in zip(vector, v)), text, meta) for uid, text, meta, v in self.items
             if uid == filters["user_id"]),
            key=lambda s: -s[0],
        )
        return {"results": [{"memory": t, "metadata": m, "score": s} for s, t, m in scored[:top_k]]}
'''


@pytest.fixture
def standin_venv(tmp_path: Path) -> Path:
    """A real venv (no pip) holding the stand-in as mem0ai MEM0_VERSION, marked as built by the benchmark."""
    venv = tmp_path / "mem0-venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, capture_output=True)
    site = venv / "lib" / f"python{sys.version_info.major}.{sys.version_info.minor}" / "site-packages"
    (site / "mem0").mkdir()
    (site / "mem0" / "__init__.py").write_text(STAND_IN, encoding="utf-8")
    (site / f"mem0ai-{MEM0_VERSION}.dist-info").mkdir()
    (site / f"mem0ai-{MEM0_VERSION}.dist-info" / "METADATA").write_text(
        f"Metadata-Version: 2.1\nName: mem0ai\nVersion: {MEM0_VERSION}\n", encoding="utf-8"
    )
    (venv / MARKER).write_text(json.dumps({"spec": MEM0_SPEC, "complete": True}), encoding="utf-8")
    return venv


def test_embedding_endpoint_serves_the_local_model(embedder) -> None:
    texts = ["I adopted a greyhound called Pepper.", "Valencia is lovely in spring."]
    expected = np.array(embedder.embed(texts))
    with EmbeddingServer(embedder) as server:
        client = openai.OpenAI(api_key=server.api_key, base_url=server.base_url, max_retries=0)
        as_floats = client.embeddings.create(input=texts, model=embedder.name, encoding_format="float")
        assert [d.index for d in as_floats.data] == [0, 1] and as_floats.model == embedder.name
        assert np.allclose([d.embedding for d in as_floats.data], expected, atol=1e-6)
        # without encoding_format the client asks for base64 and decodes it itself
        decoded = client.embeddings.create(input=texts[1], model=embedder.name, dimensions=embedder.dimension)
        assert np.allclose(decoded.data[0].embedding, expected[1], atol=1e-6)
        assert server.requests == 2 and server.texts == 3

        with pytest.raises(openai.BadRequestError, match="not 'text-embedding-3-small'"):
            client.embeddings.create(input=texts, model="text-embedding-3-small")
        with pytest.raises(openai.BadRequestError, match="not 1536"):
            client.embeddings.create(input=texts, model=embedder.name, dimensions=1536)
        stranger = openai.OpenAI(api_key="guess", base_url=server.base_url, max_retries=0)
        with pytest.raises(openai.AuthenticationError):
            stranger.embeddings.create(input=texts, model=embedder.name)
        headers = {"authorization": f"Bearer {server.api_key}"}
        assert httpx.post(f"{server.base_url}/chat/completions", json={}, headers=headers).status_code == 404
        assert httpx.post(f"{server.base_url}/embeddings", content=b"{not json", headers=headers).status_code == 400
        assert server.requests == 2  # refused requests embed nothing


def test_runner_protocol_with_a_stand_in_mem0(standin_venv: Path, locomo_dir: Path, tmp_path: Path, embedder) -> None:
    # The stand-in venv has no pip: reaching the build step would fail, so this is reuse.
    python = ensure_venv(standin_venv)
    assert python == venv_python(standin_venv)
    conversation = load_directory(locomo_dir)[0][0]
    workdir = tmp_path / "run"
    with EmbeddingServer(embedder) as server, Mem0Runner(python, workdir=workdir) as runner:
        hello = runner.request("hello")
        assert hello["mem0"] == "stand-in" and hello["packages"]["mem0ai"] == MEM0_VERSION
        with pytest.raises(RunnerError, match="nothing is loaded"):
            runner.request("search", query="anything", top_k=10)
        with pytest.raises(RunnerError, match="unknown op 'teleport'"):
            runner.request("teleport")

        system = Mem0System(runner, server, workdir, hello)
        system.load(conversation, 0)  # the stand-in prints to stdout on every add: replies stay intact
        assert server.requests == len(conversation.turns)
        question = "Who started learning the cello?"
        ranked, context, ms = system.ask_timed(question)
        # the stand-in ranks by the vectors it fetched over HTTP: in-process MiniLM gives the same order
        scores = np.array(embedder.embed([peer_text(t) for t in conversation.turns])) @ embedder.embed([question])[0]
        assert ranked == [conversation.turns[i].dia_id for i in np.argsort(-scores)]
        assert ranked[0] == "D2:1" and context.splitlines()[0] == peer_text(conversation.turns[3])
        assert 0 < system.embed_ms[-1] <= ms
        assert system.details["query_embedding_p50_ms"] == pytest.approx(system.embed_ms[-1], abs=0.01)

        with pytest.raises(RunnerError, match="no reply to 'search' within"):
            runner.request("search", query="hang", top_k=10, timeout=0.3)
        with pytest.raises(RunnerError, match="has exited"):
            runner.request("hello")
    assert "stand-in chatter on stdout" in (workdir / "mem0-runner.log").read_text()


def test_runner_crash_is_reported_with_its_last_words(
    standin_venv: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("STANDIN_CRASH_ON", "boom")
    with Mem0Runner(venv_python(standin_venv), workdir=tmp_path / "run") as runner:
        runner.request("load", config={"embedder": {"config": {}}}, user_id="u", turns=[])
        with pytest.raises(RunnerError, match=r"exited \(code 3\) during 'search'.*stand-in crashing on purpose"):
            runner.request("search", query="boom", top_k=10)


def test_peers_run_mem0_from_its_venv_and_survive_its_failures(
    standin_venv: Path, locomo_dir: Path, embedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    result = run_peers(locomo_dir, embedder=embedder, only=["mem0"], mem0_venv=standin_venv)
    (row,) = result["peers"]
    assert row["status"] == "ok" and row["name"] == "mem0 OSS" and row["questions"] == 4
    assert (
        row["recall@10"] == 1.0 and row["mem0ai"] == "stand-in" and row["items_returned_mean"] == 4.25
    )  # 3 questions x 5 turns, 1 x 2
    assert 0 < row["query_embedding_p50_ms"] <= row["latency_p50_ms"]

    # A crash mid-run: mem0's row says where and why, the other peers finish.
    monkeypatch.setenv("STANDIN_CRASH_ON", "instruments")
    result = run_peers(locomo_dir, embedder=embedder, only=["langchain", "mem0"], mem0_venv=standin_venv)
    langchain, mem0 = result["peers"]
    assert langchain["status"] == "ok" and langchain["questions"] == 4
    assert mem0["status"] == "failed"
    assert "failed after 1 questions" in mem0["reason"] and "stand-in crashing on purpose" in mem0["reason"]

    # mem0 that does not import: not run, with the import error.
    monkeypatch.delenv("STANDIN_CRASH_ON")
    monkeypatch.setenv("STANDIN_BROKEN", "1")
    (row,) = run_peers(locomo_dir, embedder=embedder, only=["mem0"], mem0_venv=standin_venv)["peers"]
    assert row["status"] == "not run" and "stand-in mem0 broken on purpose" in row["reason"]


def test_venv_is_not_built_over_a_directory_it_did_not_make(tmp_path: Path) -> None:
    foreign = tmp_path / "mine"
    foreign.mkdir()
    (foreign / "notes.txt").write_text("keep me", encoding="utf-8")
    with pytest.raises(Mem0Unavailable, match="not a virtual environment this benchmark made"):
        ensure_venv(foreign)
    assert (foreign / "notes.txt").read_text(encoding="utf-8") == "keep me"


@pytest.mark.slow
@pytest.mark.timeout(1800)
def test_mem0_end_to_end_in_the_venv_the_benchmark_builds(locomo_dir: Path, tmp_path: Path, embedder) -> None:
    venv = tmp_path / "mem0-venv"
    result = run_peers(locomo_dir, embedder=embedder, only=["langchain", "mem0"], mem0_venv=venv)
    langchain, mem0 = result["peers"]
    assert mem0["status"] == "ok", mem0.get("reason")
    assert mem0["mem0ai"] == MEM0_VERSION and mem0["questions"] == 4
    # At most 5 turns per conversation: LangChain returns them all. mem0's default threshold
    # (0.1 cosine) drops "Great, she loves the beach." (-0.01) for "Where does Pepper like to
    # go?", so one question of four finds nothing, and fewer than 5 items come back on average.
    assert langchain["recall@10"] == 1.0 and mem0["recall@10"] == 0.75
    assert mem0["items_returned_mean"] < 4.5
    assert 0 < mem0["query_embedding_p50_ms"] <= mem0["latency_p50_ms"]

    marker = (venv / MARKER).read_text(encoding="utf-8")
    assert json.loads(marker)["complete"] is True
    assert ensure_venv(venv) == venv_python(venv)
    assert (venv / MARKER).read_text(encoding="utf-8") == marker  # reused, not rebuilt

    # mem0 ranks with the endpoint's MiniLM vectors: plain cosine order over the texts it stored,
    # less what falls under its default 0.1 threshold.
    conversation = load_directory(locomo_dir)[0][0]
    vectors = np.array(embedder.embed([peer_text(t) for t in conversation.turns]))
    workdir = tmp_path / "run"
    with EmbeddingServer(embedder) as server, Mem0Runner(venv_python(venv), workdir=workdir) as runner:
        system = Mem0System(runner, server, workdir, runner.request("hello"))
        system.load(conversation, 0)
        for question in conversation.questions:
            ranked, context, _ms = system.ask_timed(question.question)
            scores = vectors @ np.array(embedder.embed([question.question])[0])
            expected = [conversation.turns[i].dia_id for i in np.argsort(-scores) if scores[i] >= 0.1]
            assert ranked == expected
            assert context.splitlines()[0] == peer_text(conversation.turns[int(np.argmax(scores))])
