"""A small BM25 index is rebuilt in the background once its writes pause (``storage/lexical.py``).

An agent writes a turn and recalls on the next one: the rebuild a search would otherwise make
first (milliseconds that grow with the index) happens in between. Searches stay exact either way.
"""

from __future__ import annotations

import inspect
import logging
import math
import threading
import time

import pytest

from hindsight_integrations.core.storage import lexical
from hindsight_integrations.core.storage.lexical import LexicalIndex

DOCS = [
    ("boat", "The boat is moored at pier 9 in the old harbour.", ""),
    ("cat", "Our cat Miso sleeps on the piano all afternoon.", "we talked about pets"),
    ("tea", "I drink green tea every morning before work.", ""),
]


def _due(index: LexicalIndex) -> bool:
    """Whether ``index`` waits for a quiet rebuild: by its weak reference, as a dead index's id may be reused."""
    return any(ref() is index for _, ref in list(lexical._QUIET._due.values()))


def _rebuilt(index: LexicalIndex, seconds: float = 30.0) -> bool:
    """Whether nothing is pending within ``seconds`` (the background thread's time, not a speed asserted)."""
    deadline = time.monotonic() + seconds
    while index._pending_ids and time.monotonic() < deadline:
        time.sleep(0.01)
    return not index._pending_ids


def test_a_small_index_is_rebuilt_once_its_writes_pause(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(lexical, "QUIET_SECONDS", 0.01)
    index = LexicalIndex()
    index.upsert(DOCS)
    assert _rebuilt(index)  # no search asked for it
    index.upsert([("bike", "I ride a blue bike to the office.", "")])
    assert _rebuilt(index)
    assert index.search("which bike do I ride", 2)[0][0] == "bike"


def test_writes_that_keep_coming_leave_the_rebuild_to_the_search(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(lexical, "QUIET_SECONDS", 3600.0)
    index = LexicalIndex()
    index.upsert(DOCS)
    time.sleep(0.2)
    assert index._pending_ids  # still within its quiet period: not rebuilt behind an import
    assert index.search("where is the boat moored", 3)[0][0] == "boat"
    assert not index._pending_ids  # the search rebuilt it, as before


def test_removing_ids_the_index_never_held_starts_no_quiet_period(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(lexical, "QUIET_SECONDS", 3600.0)
    index = LexicalIndex()
    index.upsert(DOCS)
    index.rebuild()
    monkeypatch.setattr(lexical._QUIET, "_due", {})
    index.remove(["never-written"])
    assert not _due(index)
    index.remove(["boat"])
    assert _due(index)  # a real removal does
    assert [m for m, _ in index.search("where is the boat moored", 3)] != ["boat"]


def test_prepare_folds_pending_writes_in_before_the_search_asks(monkeypatch: pytest.MonkeyPatch) -> None:
    """A recall calls ``prepare`` first: the rebuild runs while it embeds its query and waits for context vectors."""
    monkeypatch.setattr(lexical, "QUIET_SECONDS", 3600.0)
    index = LexicalIndex()
    index.upsert(DOCS)
    index.prepare()
    assert _rebuilt(index)  # no search, no quiet period: prepare started it
    index.prepare()  # nothing pending: starts nothing
    assert index.search("where is the boat moored", 3)[0][0] == "boat"


def test_a_large_index_is_left_to_its_own_background_rebuild(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(lexical, "QUIET_SECONDS", 0.01)
    index = LexicalIndex(sync_rebuild_max_docs=2)
    index.upsert(DOCS)
    time.sleep(0.2)
    assert index._pending_ids and not _due(index)


def test_searches_beside_quiet_rebuilds_are_exact(monkeypatch: pytest.MonkeyPatch) -> None:
    """Writers, searchers and the background thread at once: no error, and the end equals an index built at once."""
    monkeypatch.setattr(lexical, "QUIET_SECONDS", 0.001)
    index, failures = LexicalIndex(), []
    words = ["harbour", "piano", "tea", "bike", "garden", "violin"]

    def write(start: int) -> None:
        for n in range(start, start + 60):
            index.upsert([(f"m{n}", f"note {n} about the {words[n % len(words)]}", "")])
            if n % 7 == 0:
                time.sleep(0.002)

    def search() -> None:
        for n in range(80):
            try:
                index.search(f"the {words[n % len(words)]}", 5)
            except Exception as exc:  # collected and reported below
                failures.append(repr(exc))

    threads = [threading.Thread(target=write, args=(s,)) for s in (0, 100, 200)]
    threads += [threading.Thread(target=search) for _ in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)
    assert not failures
    fresh = LexicalIndex()
    fresh.upsert(
        [(f"m{n}", f"note {n} about the {words[n % len(words)]}", "") for s in (0, 100, 200) for n in range(s, s + 60)]
    )
    assert _rebuilt(index)
    for word in words:
        every = dict(fresh.search(f"the {word}", 1000))  # every match: ties may come in another order
        assert dict(index.search(f"the {word}", 1000)) == pytest.approx(every)


def test_building_an_index_logs_nothing_below_a_warning(caplog: pytest.LogCaptureFixture) -> None:
    """bm25s logs each build at DEBUG on a logger it sets to DEBUG; a server's log must stay JSON lines."""
    with caplog.at_level(logging.DEBUG):
        index = LexicalIndex()
        index.upsert(DOCS)
        index.search("where is the boat", 3)
    assert not [r for r in caplog.records if r.name.startswith("bm25s")]


def test_waiting_for_a_stalled_rebuild_ends_and_says_it_had_not_landed(monkeypatch: pytest.MonkeyPatch) -> None:
    """``wait_for_rebuild`` waited with no bound unless told one, and said nothing: a stalled rebuild hung its caller.

    Now it waits ``REBUILD_WAIT_SECONDS`` unless told otherwise, and returns whether the rebuild landed.
    """
    monkeypatch.setattr(lexical, "QUIET_SECONDS", 3600.0)
    index = LexicalIndex(sync_rebuild_max_docs=2)  # a search leaves the rebuild to a background thread
    index.upsert(DOCS)
    stalled, real = threading.Event(), index.settle

    def stalling() -> None:
        stalled.wait(60)  # the test is over long before, unless the wait ignores its bound
        real()

    monkeypatch.setattr(index, "settle", stalling)
    assert index.search("where is the boat moored", 3)[0][0] == "boat"  # pending documents are searched meanwhile
    try:
        assert index.wait_for_rebuild(0.2) is False
    finally:
        stalled.set()
    assert index.wait_for_rebuild() is True and not index._pending_ids
    default = inspect.signature(LexicalIndex.wait_for_rebuild).parameters["timeout"].default
    assert default == lexical.REBUILD_WAIT_SECONDS and math.isfinite(default)
    assert LexicalIndex().wait_for_rebuild() is True  # no rebuild ever started: nothing to wait for
