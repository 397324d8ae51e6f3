"""Every script in examples/ runs offline, as a user runs it, and only recalls its own facts.

The examples run one after another on one shared store, in the order the README lists them,
each as its own process (the LangChain and LlamaIndex ones start a second process that must
recall what the first taught). Each writes as a namespace of its own, so no example may
answer with another one's fact: run in README order, the LlamaIndex example once answered
with the LangChain example's "PostgreSQL 16".
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"

# Each example, in README order, with the fact it teaches (which only it may recall).
FACTS = {
    "langchain_agent_executor.py": "48213",
    "langchain_create_agent.py": "PostgreSQL 16",
    "llamaindex_chat_engine.py": "allergic to peanuts",
    "mcp_client.py": "allergic to cashews",
}


def test_every_example_is_listed() -> None:
    assert sorted(FACTS) == sorted(p.name for p in EXAMPLES.glob("*.py"))


@pytest.fixture(scope="module")
def outputs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """Each example's stdout, run in README order on one store (as a user trying them in turn)."""
    workdir = tmp_path_factory.mktemp("examples")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "HINDSIGHT_"))}
    env.update(HINDSIGHT_STORE=str(workdir / "store"), HF_HUB_OFFLINE="1")
    results = {}
    for name in FACTS:
        out = subprocess.run(
            [sys.executable, str(EXAMPLES / name)], env=env, capture_output=True, text=True, timeout=240, cwd=workdir
        )
        assert out.returncode == 0, f"{name}:\n{out.stderr[-2000:]}"
        results[name] = out.stdout
    return results


def answer_of_process_2(stdout: str) -> str:
    (answer,) = [line for line in stdout.splitlines() if line.startswith("[process 2] assistant:")]
    return answer


@pytest.mark.parametrize("name", list(FACTS))
def test_an_example_recalls_only_its_own_facts(outputs: dict[str, str], name: str) -> None:
    stdout = outputs[name]
    assert FACTS[name] in stdout
    for other, fact in FACTS.items():
        if other != name:
            assert fact not in stdout, f"{name} recalled {other}'s fact {fact!r}"


@pytest.mark.parametrize(
    "name", ["langchain_agent_executor.py", "langchain_create_agent.py", "llamaindex_chat_engine.py"]
)
def test_a_second_process_recalls_what_the_first_taught(outputs: dict[str, str], name: str) -> None:
    assert FACTS[name] in answer_of_process_2(outputs[name])


def test_the_mcp_client_example_shows_every_step(outputs: dict[str, str]) -> None:
    stdout = outputs["mcp_client.py"]
    assert "namespace example-mcp-client: 3 memories" in stdout
    assert "not stored: 'thanks!'" in stdout
    assert "a tool error reads like this:" in stdout and "top_k" in stdout
    assert "async recall:" in stdout
