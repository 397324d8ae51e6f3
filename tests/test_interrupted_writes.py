"""A write and the supersede it makes both take effect, even when the process dies between them (#15)."""

from __future__ import annotations

from pathlib import Path

import pytest

from hindsight_integrations import MemoryEngine, Status
from hindsight_integrations.core.storage.namespace_store import NamespaceStore


class Crash(BaseException):
    """Stands for the process dying: nothing after it runs (a SIGKILL test is below)."""


def _crash_before_the_supersede(monkeypatch: pytest.MonkeyPatch) -> None:
    real = NamespaceStore.rewrite

    def rewrite(self: NamespaceStore, records, *args, **kwargs):  # type: ignore[no-untyped-def]
        if any(r.status is Status.SUPERSEDED for r in records):
            raise Crash
        return real(self, records, *args, **kwargs)

    monkeypatch.setattr(NamespaceStore, "rewrite", rewrite)


def test_an_interrupted_supersede_is_finished_when_the_namespace_opens(
    store_path: Path, embedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = MemoryEngine(store=store_path, embedder=embedder, llm=False)
    (old,) = first.store_memories(["I live in Berlin."], namespace="u1").stored
    _crash_before_the_supersede(monkeypatch)
    with pytest.raises(Crash):
        first.store_memories(["I moved to Lisbon last month."], namespace="u1")
    monkeypatch.undo()
    assert {r.content for r in first.list(namespace="u1")} == {"I live in Berlin.", "I moved to Lisbon last month."}

    restarted = MemoryEngine(store=store_path, embedder=embedder, llm=False)  # as a new process would
    current = restarted.list(namespace="u1")
    assert [r.content for r in current] == ["I moved to Lisbon last month."]
    history = restarted.get(old.id, namespace="u1")
    assert history.status is Status.SUPERSEDED and history.superseded_by == current[0].id


def test_replaying_the_request_id_finishes_the_supersede(
    store_path: Path, embedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    engine = MemoryEngine(store=store_path, embedder=embedder, llm=False)
    (old,) = engine.store_memories(["My phone number is 555-0100."], namespace="u1").stored
    _crash_before_the_supersede(monkeypatch)
    with pytest.raises(Crash):
        engine.store_memories(["I have a new phone number: 555-0199."], namespace="u1", request_id="r-1")
    monkeypatch.undo()
    replay = engine.store_memories(["I have a new phone number: 555-0199."], namespace="u1", request_id="r-1")
    assert replay.replayed
    assert engine.get(old.id, namespace="u1").status is Status.SUPERSEDED
    assert [r.content for r in engine.list(namespace="u1")] == ["I have a new phone number: 555-0199."]


CHECK = (
    "import sys\n"
    "from hindsight_integrations import MemoryEngine\n"
    "engine = MemoryEngine(store=sys.argv[1], llm=False)\n"
    "for r in engine.list(namespace='u1', limit=1000):\n"
    "    print(r.content)\n"
)


@pytest.mark.slow
def test_sigkill_rounds_leave_one_current_value(store_path: Path) -> None:
    """A writer moving house again and again is SIGKILLed mid-stream; after each round one city is current."""
    import os
    import signal
    import subprocess
    import sys
    import time

    script = (
        "import sys, itertools\n"
        "from hindsight_integrations import MemoryEngine\n"
        "engine = MemoryEngine(store=sys.argv[1], llm=False)\n"
        "for n in itertools.count():\n"
        "    engine.store_memories([f'I moved to city number {sys.argv[2]}-{n} last week.'], namespace='u1')\n"
        "    print(n, flush=True)\n"
    )
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    for round_ in range(5):
        writer = subprocess.Popen(
            [sys.executable, "-c", script, str(store_path), str(round_)], stdout=subprocess.PIPE, env=env
        )
        assert writer.stdout is not None
        for _ in range(3 + round_):  # let it write a few, then kill it somewhere inside the next write
            assert writer.stdout.readline(), "the writer died on its own"
        time.sleep(0.01 * round_)
        writer.send_signal(signal.SIGKILL)
        writer.wait(30)
        # Checked from a new process, as a restart would (an embedded store serves one process at a time).
        check = subprocess.run([sys.executable, "-c", CHECK, str(store_path)], capture_output=True, text=True, env=env)
        assert check.returncode == 0, check.stderr[-2000:]
        current = check.stdout.strip().splitlines()
        assert len(current) == 1, current
