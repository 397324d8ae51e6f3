"""A script using the engine exits cleanly while context vectors are still being embedded.

The context-vector worker is a daemon thread that spends its time inside onnxruntime. Left
there when the interpreter finalises, it is killed as it takes the GIL back, and the C++
frames it unwinds abort the process: "terminate called without an active exception", exit
code 134, after a script that did everything right. Each child here leaves a backlog the
exit cannot finish (a store whose records lack their context vectors, and no time to wait
for them), with the real bundled model, and must still exit with 0.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]

CHILD = textwrap.dedent(
    """
    import sys
    import time
    from hindsight_integrations import MemoryEngine
    from hindsight_integrations.core.embedding.bundled import MODEL_NAME
    from hindsight_integrations.core.storage import context_vectors

    context_vectors._EXIT_WAIT_SECONDS = 0.0  # no time for the backlog: the worker is mid-batch at exit
    engine = MemoryEngine(store=sys.argv[1], llm=False)
    records = [
        {
            "id": f"m{i:04d}",
            "content": f"Note {i}: " + " ".join(f"topic {i % 37} owner {j} said something" for j in range(25)),
            "tier": "episodic",
            "kind": "fact",
            "role": "user",
            "session_id": f"s{i % 5}",
            "occurred_at": "2024-01-01T00:00:00+00:00",
            "embedding": [((i * 7 + d) % 13 - 6) / 6 for d in range(384)],
        }
        for i in range(400)
    ]
    # Vectors given, context vectors not: the import queues all 400 (long, so the worker is mostly inside the model).
    export = {"format": "hindsight-export", "embedding_model": MODEL_NAME, "records": records}
    engine.import_data(export, namespace="u1")
    worker = engine.chroma.context_vectors
    while worker is not None and worker.pending() > 360:  # its model loaded, the worker is embedding in earnest
        time.sleep(0.02)
    if sys.argv[2] == "close":
        print("closed, all written:", engine.close(timeout=0))
    print("exiting")
    """
)


@pytest.mark.parametrize("ending", ["close", "no-close"])
def test_exit_with_context_vectors_queued_is_clean(tmp_path: Path, ending: str) -> None:
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false", "PYTHONPATH": str(REPO)}
    done = subprocess.run(
        [sys.executable, "-c", CHILD, str(tmp_path / "store"), ending],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert "terminate called" not in done.stderr, done.stderr[-2000:]
    assert done.returncode == 0, done.stderr[-2000:]
    assert "exiting" in done.stdout
    if ending == "close":
        assert "closed, all written: False" in done.stdout  # given up, queued again at the next open
