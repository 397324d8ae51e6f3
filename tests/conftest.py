"""Shared fixtures: one embedding model per test session, a fresh embedded store per test."""

from __future__ import annotations

import os
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest
from hypothesis import settings as hypothesis_settings

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
# Tests must never reach a paid LLM or pick up a developer's key by accident.
for _var in (
    "OPENAI_API_KEY",
    "OPENAI_BASE_URL",
    "HINDSIGHT_OPENAI_API_KEY",
    "HINDSIGHT_OPENAI_BASE_URL",
    "HINDSIGHT_STORE",
    "HINDSIGHT_CHROMA_URL",
):
    os.environ.pop(_var, None)

# Property tests draw the same examples on every run (``derandomize``), so a fresh clone's test run
# cannot fail at random and stop a landing; what random search once found is kept as an explicit
# ``@example``. ``HYPOTHESIS_PROFILE=explore`` searches anew (and keeps failures in .hypothesis/).
hypothesis_settings.register_profile("ci", derandomize=True, database=None, print_blob=True)
hypothesis_settings.register_profile("explore", derandomize=False)
hypothesis_settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))

from hindsight_integrations import MemoryEngine  # noqa: E402
from hindsight_integrations.core.clock import ManualClock  # noqa: E402
from hindsight_integrations.core.embedding.bundled import bundled_minilm_folder  # noqa: E402
from hindsight_integrations.core.embedding.local import LocalEmbedder  # noqa: E402

CLOCK_START = datetime(2024, 3, 1, 9, 0, tzinfo=UTC)
"""Where the ``clock`` fixture starts: a fixed moment, so tests that move time read the same on any day."""


def cache_with_the_installed_model(cache: Path) -> Path:
    """An export cache at ``cache`` holding no export, whose bundled-model folder is the one already written.

    The bundled MiniLM's folder is written into the cache (``core/embedding/bundled.py``). A test
    of the export cache starts from no export, not from an uninstalled model, and the session's
    ``embedder`` (whose path is that folder) stays the model a new embedder resolves there.
    """
    cache.mkdir(parents=True, exist_ok=True)
    (cache / "models").symlink_to(bundled_minilm_folder().parent, target_is_directory=True)
    return cache


@pytest.fixture(scope="session")
def embedder() -> LocalEmbedder:
    """The real local all-MiniLM-L6-v2, loaded once for the whole run."""
    model = LocalEmbedder()
    model.warm()
    return model


@pytest.fixture
def store_path(tmp_path: Path) -> Path:
    return tmp_path / "store"


@pytest.fixture
def engine(store_path: Path, embedder: LocalEmbedder) -> Iterator[MemoryEngine]:
    """An engine on a fresh embedded Chroma directory, no LLM."""
    eng = MemoryEngine(store=store_path, embedder=embedder, llm=False)
    yield eng
    eng.close()


@pytest.fixture
def clock() -> ManualClock:
    """A clock the test moves instead of sleeping, at ``CLOCK_START``."""
    return ManualClock(CLOCK_START)


@pytest.fixture
def timed(store_path: Path, embedder: LocalEmbedder, clock: ManualClock) -> Iterator[MemoryEngine]:
    """An engine on a fresh store whose time is ``clock``."""
    eng = MemoryEngine(store=store_path, embedder=embedder, llm=False, clock=clock)
    yield eng
    eng.close()


@pytest.fixture
def elsewhere(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty working directory: a memory that fell back to ``./.hindsight`` would create it here."""
    cwd = tmp_path / "elsewhere"
    cwd.mkdir()
    monkeypatch.chdir(cwd)
    return cwd
