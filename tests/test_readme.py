"""Every fenced code block in README.md runs as written.

The blocks are read from README.md at test time and run as a user would run them:

* ``python``: the block's text, saved as a script, run in a fresh empty directory with no
  ``HINDSIGHT_*`` variable set, so it uses the embedded default ``./.hindsight`` there.
  Blocks that need a chat model import the usual packages (``langchain_openai``,
  ``llama_index.llms.openai``); ``tests/readme_models`` is first on ``PYTHONPATH`` and
  provides them as scripted models that answer with their prompt (no key, no network), so
  the printed answers show which memories reached the model. Everything else is real:
  Chroma, the MCP sessions, the embedding model.
* ``bash`` / ``sh`` / untagged: each command line runs with ``bash -c`` in a fresh
  directory shared by the block's commands (``export`` then ``import`` a file), and must
  exit 0. A command that serves until stopped (``SERVERS``) is started, must answer its
  health check, and must exit 0 when stopped with Ctrl-C (SIGINT).
* ``json``: must parse.

Nothing is skipped silently: a command is skipped only when ``SKIPPED`` names it with the
reason, a skip entry the README no longer has fails the test, and a block in a language
this file does not know fails it too.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from hindsight_integrations.mcp.auth import load_token_map

REPO = Path(__file__).resolve().parents[1]
README = REPO / "README.md"
SCRIPTED_MODELS = Path(__file__).resolve().parent / "readme_models"

SHELL_LANGUAGES = ("bash", "sh", "shell", "")

# Commands not run, each with the reason. Keys are the command as written, comment removed.
SKIPPED = {
    "./scripts/demo": "sets up .venv with pip (network, ~1.5 min), then runs `hindsight demo`, which is run here",
    "./scripts/test": "the test suite itself, of which this test is a part",
    "hindsight --namespace alice forget ID": "needs the id of a memory this block does not print; tests/test_cli.py "
    "forgets one by id",
    "hindsight bench scale": "a benchmark of up to 100k memories (~26 min); tests/test_bench.py runs it on 200",
    "hindsight bench startup": "times 7 runs of three commands (~1 min); tests/test_bench.py covers the command",
    "pip install -e '.[local,bench]'": "installs packages (network); tests/test_packaging.py installs into fresh venvs",
    "benchmarks/run_all.sh": "every benchmark at full size (hours); tests/test_bench.py runs each command small",
}

# Commands that serve until stopped: the URL that must answer 200 while they run.
SERVERS = {
    "hindsight serve --transport http --port 8765": "http://127.0.0.1:8765/health",
}

# Commands that read the checkout (benchmarks/results) and so run from it, not from a fresh directory.
FROM_CHECKOUT = {"python benchmarks/tables.py"}

# What a python block must print, by the README section it is in: proof that it did its job
# (the scripted models echo their prompt, so a recalled memory shows in the answer).
PRINTS = {
    "Using the engine": ["Correction: the project uses PostgreSQL, not MySQL."],
    "The MCP server": ["I prefer concise answers"],
    "LangChain": ["[human] Where do we deploy?", "Kubernetes on GKE", "editor: Helix"],
    "LlamaIndex": ["<hindsight>", "Kubernetes on GKE", "Query: deploy target"],
}


@dataclass(frozen=True)
class Block:
    """One fenced code block of the README."""

    language: str
    text: str
    line: int  # of the opening fence
    section: str  # the heading it sits under

    @property
    def name(self) -> str:
        return f"README.md:{self.line} {self.language or 'untagged'} ({self.section})"


def readme_blocks(text: str) -> list[Block]:
    """The fenced blocks of ``text``, in order."""
    blocks: list[Block] = []
    section = ""
    opened: tuple[str, int, list[str]] | None = None
    for number, line in enumerate(text.splitlines(), start=1):
        if opened is None:
            if line.startswith("#"):
                section = line.lstrip("#").strip()
            elif line.startswith("```"):
                opened = (line[3:].strip(), number, [])
        elif line.startswith("```"):
            language, start, lines = opened
            blocks.append(Block(language, "\n".join(lines) + "\n", start, section))
            opened = None
        else:
            opened[2].append(line)
    assert opened is None, f"README.md:{opened[1]}: a code fence is never closed"
    return blocks


BLOCKS = readme_blocks(README.read_text(encoding="utf-8"))


def command_key(line: str) -> str:
    """The command without its trailing comment and extra spaces: how ``SKIPPED`` and ``SERVERS`` name it."""
    return " ".join(re.sub(r"(^|\s)#.*$", "", line).split())


def commands(block: Block) -> list[str]:
    """The command lines of a shell block (comment-only and blank lines are not commands)."""
    return [line for line in block.text.splitlines() if command_key(line)]


def block_env() -> dict[str, str]:
    """This interpreter's environment without any store or model configuration, offline."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HINDSIGHT_", "OPENAI_"))}
    env["HF_HUB_OFFLINE"] = "1"
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    paths = [str(SCRIPTED_MODELS), str(SCRIPTED_MODELS.parent), env.get("PYTHONPATH", "")]
    env["PYTHONPATH"] = os.pathsep.join(p for p in paths if p)
    return env


def fail_with(what: str, out: subprocess.CompletedProcess[str]) -> str:
    return f"{what} exited {out.returncode}\n--- stdout\n{out.stdout[-3000:]}\n--- stderr\n{out.stderr[-3000:]}"


def test_every_block_is_of_a_known_kind() -> None:
    assert len(BLOCKS) >= 8, "README.md has lost its code blocks, or the fence parser is broken"
    unknown = [b.name for b in BLOCKS if b.language not in ("python", "json", "text", *SHELL_LANGUAGES)]
    assert not unknown, f"teach tests/test_readme.py to run these blocks: {unknown}"


def test_the_lists_name_only_what_the_readme_has() -> None:
    """A skip, server or expected print the README no longer has would hide that its block changed."""
    written = {command_key(c) for b in BLOCKS if b.language in SHELL_LANGUAGES for c in commands(b)}
    assert set(SKIPPED) <= written, f"not in README.md any more: {sorted(set(SKIPPED) - written)}"
    assert set(SERVERS) <= written and written >= FROM_CHECKOUT
    sections = {b.section for b in BLOCKS if b.language == "python"}
    assert set(PRINTS) <= sections, f"no python block under: {sorted(set(PRINTS) - sections)}"


@pytest.mark.parametrize("block", [b for b in BLOCKS if b.language == "python"], ids=lambda b: b.name)
def test_python_block_runs(block: Block, tmp_path: Path) -> None:
    script = tmp_path / "block.py"
    script.write_text(block.text, encoding="utf-8")
    workdir = tmp_path / "work"
    workdir.mkdir()
    out = subprocess.run(
        [sys.executable, str(script)], cwd=workdir, env=block_env(), capture_output=True, text=True, timeout=300
    )
    assert out.returncode == 0, fail_with(block.name, out)
    for expected in PRINTS.get(block.section, []):
        assert expected in out.stdout, f"{block.name} did not print {expected!r}:\n{out.stdout[-3000:]}"
    assert (workdir / ".hindsight").is_dir(), f"{block.name} did not use the embedded default ./.hindsight"


DEMO_COMMANDS = [["hindsight", "demo", "--today", "2026-12-01"]]
"""The runs whose output the README's first ``text`` blocks show, word for word, in the order they come.

The Chinese demo's block (the last) is an example run: its tier counts moved by one between
runs of the same code (a write-time judgement that depends on timing, not yet found), so
``test_multilingual.py::test_the_chinese_demo_tells_the_story_on_e5`` checks what it shows.
"""


@pytest.mark.parametrize("command", DEMO_COMMANDS, ids=lambda c: " ".join(c[1:]))
def test_the_demo_output_shown_is_what_the_demo_prints(command: list[str], tmp_path: Path) -> None:
    """Each README ``text`` block is its demo's output, word for word (the run it names, COLUMNS=100)."""
    shown = [b for b in BLOCKS if b.language == "text"]
    assert len(shown) == len(DEMO_COMMANDS) + 1  # + the Chinese demo's example run
    block = shown[DEMO_COMMANDS.index(command)]
    assert f"COLUMNS=100 {' '.join(command)}" in README.read_text(encoding="utf-8")
    env = {**block_env(), "COLUMNS": "100"}
    out = subprocess.run(command, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, fail_with(" ".join(command), out)
    printed = [line.rstrip() for line in out.stdout.rstrip("\n").splitlines()]
    assert printed == block.text.rstrip("\n").splitlines()


@pytest.mark.parametrize("block", [b for b in BLOCKS if b.language in SHELL_LANGUAGES], ids=lambda b: b.name)
def test_shell_block_runs(block: Block, tmp_path: Path) -> None:
    assert shutil.which("hindsight", path=str(Path(sys.executable).parent)), "the `hindsight` command is not installed"
    env = block_env()
    ran = 0
    for command in commands(block):
        key = command_key(command)
        if key in SKIPPED:
            continue
        ran += 1
        if key in SERVERS:
            serve_until_healthy(command, SERVERS[key], cwd=tmp_path, env=env)
            continue
        cwd = REPO if key in FROM_CHECKOUT else tmp_path
        out = subprocess.run(
            ["bash", "-c", command],
            cwd=cwd,
            env=env,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert out.returncode == 0, fail_with(f"{block.name}: {command!r}", out)
    if ran == 0:
        pytest.skip(
            "every command of this block is skipped: " + "; ".join(SKIPPED[command_key(c)] for c in commands(block))
        )


def serve_until_healthy(command: str, health_url: str, *, cwd: Path, env: dict[str, str]) -> None:
    """Start a server command, wait until ``health_url`` answers 200, stop it with SIGINT (Ctrl-C)."""
    with contextlib.suppress(httpx.TransportError):
        httpx.get(health_url, timeout=2)
        pytest.fail(f"something already answers {health_url}: stop it, {command!r} needs its port")
    process = subprocess.Popen(
        ["bash", "-c", f"exec {command}"],
        cwd=cwd,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 120
        healthy = False
        while not healthy and process.poll() is None and time.monotonic() < deadline:
            try:
                healthy = httpx.get(health_url, timeout=2).status_code == 200
            except httpx.TransportError:
                with contextlib.suppress(subprocess.TimeoutExpired):
                    process.wait(timeout=0.2)  # returns at once if the server died
        assert healthy, f"{command!r} never answered {health_url} (exit code {process.poll()})"
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGINT)
        try:
            _, stderr = process.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            _, stderr = process.communicate()
    assert process.returncode == 0, f"{command!r} exited {process.returncode} on Ctrl-C:\n{stderr[-3000:]}"


def test_json_blocks_parse() -> None:
    for block in BLOCKS:
        if block.language == "json":
            try:
                json.loads(block.text)
            except json.JSONDecodeError as exc:
                pytest.fail(f"{block.name}: {exc}")


def test_the_token_examples_are_accepted(tmp_path: Path) -> None:
    """The prose's ``HINDSIGHT_TOKENS`` and ``--tokens-file`` examples, given to the server's own loader."""
    readme = README.read_text(encoding="utf-8")
    variables = re.findall(r'`HINDSIGHT_TOKENS="([^"`]+)"`', readme)
    files = re.findall(r'`(\{"tokens": \{[^`]+\}\})`', readme)
    assert variables and files, "README.md no longer shows a token example"
    for value in variables:
        assert load_token_map(environ={"HINDSIGHT_TOKENS": value})
    for document in files:
        path = tmp_path / "tokens.json"
        path.write_text(document, encoding="utf-8")
        assert load_token_map(path, environ={})
