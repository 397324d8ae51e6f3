"""ruff (format and lint) and mypy over the tree, as part of the suite CI runs.

Configured in pyproject.toml. They run here rather than as separate CI steps so that the
README's one test command is all a contributor (and CI) needs.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent


def _run(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, timeout=600)


@pytest.mark.parametrize(
    "argv",
    [
        pytest.param(("ruff", "format", "--check", "."), id="ruff-format"),
        pytest.param(("ruff", "check", "--output-format", "concise", "."), id="ruff-lint"),
        pytest.param(("mypy",), id="mypy"),
    ],
)
def test_tree_is_clean(argv: tuple[str, ...]) -> None:
    tool = BIN / argv[0]
    if not tool.exists():
        pytest.fail(f"{argv[0]} is not installed in this environment: run ./scripts/setup (the dev extra has it)")
    done = _run(str(tool), *argv[1:])
    assert done.returncode == 0, f"{' '.join(argv)} found problems:\n{done.stdout[-6000:]}{done.stderr[-2000:]}"
