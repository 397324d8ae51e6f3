"""A process forked from one that recalled: its recall work is done; the parent's engine is refused there, clearly."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import pytest

from hindsight_integrations import MemoryEngine
from hindsight_integrations.core.errors import EngineForkedError
from hindsight_integrations.core.recall.workers import recall_workers

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="fork() is POSIX-only")


def _in_child(work) -> int:
    """Run ``work`` in a forked child; its exit code: 0 done, 1 failed, -9 killed after a minute (a deadlock)."""
    pid = os.fork()
    if pid == 0:  # pragma: no cover - runs in the child, which reports by its exit code
        try:
            work()
        except BaseException:  # the child's traceback goes to stderr, its verdict to the exit code
            import traceback

            traceback.print_exc()
            os._exit(1)
        os._exit(0)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return os.waitstatus_to_exitcode(status)
        time.sleep(0.05)
    os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)
    return -signal.SIGKILL


def test_the_recall_workers_serve_a_forked_child(tmp_path: Path, embedder) -> None:
    """A child of a process that recalled gets its recall work done (before, its first recall never got an answer).

    The parent's recalls leave the pool's threads idle, and a fork copies the pool but not them. The
    child's own engine is not made here: whether embedded Chroma and the model runtime survive a fork
    of a busy process is theirs to say (docs/reliability.md), and this suite's process is busy.
    """
    with MemoryEngine(store=tmp_path / "parent", embedder=embedder, llm=False) as parent:
        for n in range(3):  # a question naming a time hands its dates to the recall workers
            parent.store(f"Last May I ran marathon number {n}.", namespace="u1")
            assert parent.recall("What did I do last May?", namespace="u1").hits
    idle = [recall_workers().submit(time.sleep, 0.01) for _ in range(4)]
    for task in idle:
        task.result()

    def child() -> None:
        assert recall_workers().submit(lambda: "done").result(timeout=30) == "done"

    assert _in_child(child) == 0  # before, the pool's queue was never served: the child hung


def test_the_parents_engine_is_refused_in_the_child_and_keeps_working_in_the_parent(tmp_path: Path, embedder) -> None:
    with MemoryEngine(store=tmp_path / "store", embedder=embedder, llm=False) as engine:
        engine.store("My dog is called Rex.", namespace="u1")

        def child() -> None:
            with pytest.raises(EngineForkedError, match="create a new MemoryEngine in this process"):
                engine.recall("What is my dog called?", namespace="u1")
            with pytest.raises(EngineForkedError):
                engine.store("My cat is called Tom.", namespace="u1")

        assert _in_child(child) == 0  # before, the child hung on a lock the fork copied held
        assert [h.record.content for h in engine.recall("What is my dog called?", namespace="u1").hits] == [
            "My dog is called Rex."
        ]
        assert engine.stats(namespace="u1").total == 1
