"""The embedded store's SQLite file runs in write-ahead-log mode: cheaper commits, nothing lost."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
from pathlib import Path

WRITE = """
import sys
from hindsight_integrations import MemoryEngine
engine = MemoryEngine(store=sys.argv[1], llm=False)
engine.record_turn("The staging host is zeus-1.", session_id="s1", namespace="u1")
"""
READ = """
import sys
from hindsight_integrations import MemoryEngine
engine = MemoryEngine(store=sys.argv[1], llm=False)
print("|".join(sorted(r.content for r in engine.list(namespace="u1"))))
"""
PLAIN_CHROMA = """
import sys, chromadb
client = chromadb.PersistentClient(path=sys.argv[1])
client.create_collection("not-ours", embedding_function=None).add(ids=["x"], embeddings=[[1.0, 0.0]])
"""


def _python(code: str, store: Path) -> str:
    done = subprocess.run([sys.executable, "-c", code, str(store)], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def _journal(store: Path) -> str:
    connection = sqlite3.connect(store / "chroma.sqlite3")
    try:
        return str(connection.execute("PRAGMA journal_mode").fetchone()[0])
    finally:
        connection.close()


def test_a_new_store_writes_ahead_and_keeps_what_it_wrote(tmp_path: Path) -> None:
    store = tmp_path / "store"
    _python(WRITE, store)
    assert _journal(store) == "wal"
    assert _python(READ, store) == "The staging host is zeus-1."  # a new process finds it


def test_a_store_chroma_made_in_journal_mode_is_switched_when_opened(tmp_path: Path) -> None:
    store = tmp_path / "store"
    _python(PLAIN_CHROMA, store)
    assert _journal(store) == "delete"
    _python(WRITE, store)
    assert _journal(store) == "wal"
    assert _python(READ, store) == "The staging host is zeus-1."
