"""Recall skips its two currency reads while an embedded store's files show no write since they passed.

Every change to an embedded Chroma store is a commit to its SQLite files, so while their stamps
(inode, size, modification time) stand still the count and the watermark query would answer
as before. A stamp only counts once the files were left alone for ``QUIET_SECONDS`` (a file's
time has its file system's granularity). What must never happen: a write, by this process or
another one, that recall does not see because a stamp said nothing changed.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import chromadb

from hindsight_integrations import MemoryEngine
from hindsight_integrations.core.storage.quiet_files import (
    COUNT_SECONDS,
    QUIET_SECONDS,
    CurrencyMemo,
    StoreFiles,
    store_files,
)

NS = "quiet"
FACTS = [
    "The deploy key for the billing service rotates every Friday.",
    "Our staging cluster runs in the Frankfurt region.",
    "The on-call rota changes hands on Monday mornings.",
]


def _files(root: Path, at: float) -> StoreFiles:
    return StoreFiles(root, now=lambda: at)


def _write(path: Path, text: str, mtime: float) -> None:
    with path.open("a") as file:
        file.write(text)
    os.utime(path, (mtime, mtime))


def test_a_stamp_counts_only_once_the_files_were_left_alone(tmp_path: Path) -> None:
    database = tmp_path / "chroma.sqlite3"
    _write(database, "page", 1_000.0)
    assert _files(tmp_path, 1_000.0 + QUIET_SECONDS / 2).stamp() is None  # written just now: proves nothing
    quiet = _files(tmp_path, 1_000.0 + QUIET_SECONDS + 1).stamp()
    assert quiet is not None and quiet[1] is None  # no write-ahead log beside it
    assert _files(tmp_path, 1_000.0 + QUIET_SECONDS + 5).stamp() == quiet
    _write(tmp_path / "chroma.sqlite3-wal", "frame", 1_001.0)
    with_log = _files(tmp_path, 1_001.0 + QUIET_SECONDS + 1).stamp()
    assert with_log is not None and with_log != quiet
    _write(tmp_path / "chroma.sqlite3-wal", "another frame", 1_001.0)  # same time: the size still tells
    assert _files(tmp_path, 1_001.0 + QUIET_SECONDS + 1).stamp() != with_log


def test_the_memo_spares_the_checks_only_at_the_stamp_and_state_they_all_passed_at(tmp_path: Path) -> None:
    _write(tmp_path / "chroma.sqlite3", "page", 1_000.0)
    memo = CurrencyMemo(_files(tmp_path, 1_000.0 + QUIET_SECONDS + 1))
    answers = {"count": True, "watermark": False}
    made: list[str] = []

    def check(name: str):
        return lambda: made.append(name) or answers[name]

    checks = [check("count"), check("watermark")]
    assert not all(c() for c in memo.checks(checks, state=(3, 3)))
    assert len(memo.checks(checks, state=(3, 3))) == 2  # a failed check is never remembered
    answers["watermark"] = True
    assert all(c() for c in memo.checks(checks, state=(3, 3)))
    made.clear()
    assert memo.checks(checks, state=(3, 3)) == []
    assert len(memo.checks(checks, state=(4, 3))) == 2  # the copies changed size
    _write(tmp_path / "chroma.sqlite3", "another page", 1_000.0)
    assert len(memo.checks(checks, state=(3, 3))) == 2  # the file changed
    assert made == []
    assert len(CurrencyMemo(None).checks(checks, state=(3, 3))) == 2  # a server: no files to look at


def test_through_a_server_a_matching_count_is_trusted_for_count_seconds_and_a_failed_one_never() -> None:
    clock = [100.0]
    memo = CurrencyMemo(None, now=lambda: clock[0])
    answers = {"count": True, "watermark": True}
    made: list[str] = []

    def check(name: str):
        return lambda: made.append(name) or answers[name]

    def run() -> bool:
        results = [c() for c in memo.checks([check("watermark")], state=(3, 3), count=check("count"))]  # every one
        return all(results)

    assert run() and made == ["count", "watermark"]
    made.clear()
    clock[0] += COUNT_SECONDS / 2
    assert run() and made == ["watermark"]  # every recall still reads the watermark
    clock[0] += COUNT_SECONDS / 2
    answers["count"] = False  # another process archived memories
    made.clear()
    assert not run() and made == ["count", "watermark"]
    made.clear()
    assert not run() and made == ["count", "watermark"]  # a count that did not match is made again
    answers["count"] = True
    assert run()
    made.clear()
    assert run() and made == ["watermark"]


def test_only_an_embedded_store_on_disk_has_files_to_look_at(tmp_path: Path) -> None:
    assert isinstance(store_files(chromadb.PersistentClient(path=str(tmp_path / "store"))), StoreFiles)
    assert store_files(chromadb.EphemeralClient()) is None
    assert store_files(object()) is None


def _write_from_another_process(store_path: Path, text: str) -> None:
    code = (
        "import sys\n"
        "from hindsight_integrations import MemoryEngine\n"
        "engine = MemoryEngine(store=sys.argv[1], llm=False)\n"
        "engine.store_memories([sys.argv[2]], namespace=sys.argv[3], apply_filter=False, dedup=False)\n"
        "engine.chroma.flush()\n"
    )
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    subprocess.run([sys.executable, "-c", code, str(store_path), text, NS], check=True, env=env, timeout=180)


def test_recall_skips_the_reads_while_the_store_is_quiet_and_notices_another_process_write(
    store_path: Path, embedder
) -> None:
    engine = MemoryEngine(store=store_path, embedder=embedder, llm=False, lexical_sync_seconds=3600)
    engine.store_memories(FACTS, namespace=NS, apply_filter=False, dedup=False)
    state = engine.chroma.namespace(NS)
    assert state.wait_for_context()
    time.sleep(QUIET_SECONDS + 0.3)
    assert engine.recall("When does the deploy key rotate?", namespace=NS).hits
    assert state.currency_checks() == []  # the files stood still since the reads passed
    assert state.copies_current()

    # One process may open an embedded store at a time (README); what is checked here is that a
    # commit by any other SQLite connection is noticed, so the reads run and find the change.
    _write_from_another_process(store_path, "The staging database is called Nimbus.")
    assert state.currency_checks() != []
    assert not state.copies_current()
    engine.chroma.flush()


def test_a_write_from_this_process_is_seen_at_once(store_path: Path, embedder) -> None:
    engine = MemoryEngine(store=store_path, embedder=embedder, llm=False, lexical_sync_seconds=3600)
    other = MemoryEngine(store=store_path, embedder=embedder, llm=False)  # another engine on the same client
    engine.store_memories(FACTS, namespace=NS, apply_filter=False, dedup=False)
    state = engine.chroma.namespace(NS)
    assert state.wait_for_context()
    time.sleep(QUIET_SECONDS + 0.3)
    assert engine.recall("Which region is staging in?", namespace=NS).hits
    assert state.currency_checks() == []
    other.forget(engine.recall("Which region is staging in?", namespace=NS, top_k=1).hits[0].record.id, namespace=NS)
    assert not state.copies_current()
    contents = [h.record.content for h in engine.recall("Which region is staging in?", namespace=NS).hits]
    assert FACTS[1] not in contents
    engine.chroma.flush()
