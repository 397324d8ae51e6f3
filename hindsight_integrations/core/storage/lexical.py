"""Lexical (BM25) ranking for exact terms: order numbers, names, file names.

Local Chroma has no sparse/BM25 search, so we keep our own index with ``bm25s`` (sparse
matrices, ~1 ms a query at 100k documents). bm25s indexes are static, while a memory is
written every turn, so the index has two parts:

* the *main* index, rebuilt from all documents when enough has changed, and
* a *pending* segment of documents written since the last rebuild.

Small indexes (the common case: one user's memories) are rebuilt before the next search, so
their scores are always exact. A rebuild costs milliseconds that grow with the index (~18 ms
at 500 memories, ~50 at 1,500), and an agent writes a turn and recalls on the next one, so a
small index is also rebuilt in the background once its writes have paused for
``QUIET_SECONDS`` (``_QuietRebuilds``): the recall a turn later finds it rebuilt, and a
recall that comes sooner waits for the build in flight or rebuilds as before. An import, whose
writes never pause that long, rebuilds nothing until it ends. Large ones are rebuilt in a
background thread; until it lands, pending documents are ranked by a small bm25s index of
their own, scaled to the main index's best score so that a fresh exact match (an order number
said a second ago) still comes first. Nothing written is ever missing from a search.

The index is a cache derived from Chroma (the source of truth): the store fills it on open
and keeps it in step, so several processes or replicas can share one Chroma.
"""

from __future__ import annotations

import logging
import os
import threading
import time
import weakref
from collections.abc import Iterable
from functools import lru_cache

import bm25s
import numpy as np
import Stemmer

from ..language.rules import clear_with_packs, every
from ..language.text import ranking_terms, ranking_tokens

log = logging.getLogger(__name__)
# bm25s sets its own logger to DEBUG, so every index build ("Building index from tokens") reaches
# any root handler of the process: plain lines in a server's JSON log, noise in a user's app.
logging.getLogger("bm25s").setLevel(logging.WARNING)


@lru_cache(maxsize=1)
def _stemmer() -> Stemmer.Stemmer | None:
    """The stemmer of the packs' first language that names one (English's ``stemmer = "english"``).

    One stemmer for the whole index, as its tokens are compared across texts of any language.
    """
    name = every().property("stemmer")
    return Stemmer.Stemmer(name) if name else None


def _stem(tokens: list[str]) -> list[str]:
    stemmer = _stemmer()
    return stemmer.stemWords(tokens) if stemmer else tokens


# (body tokens, context tokens). Tuples of strings, unlike lists, drop out of the garbage
# collector's tracking, so 100k indexed memories add nothing to each full collection.
_Doc = tuple[tuple[str, ...], tuple[str, ...]]


class _Segment:
    """Immutable bm25s indexes over a fixed list of documents: one for bodies, one for contexts.

    A memory's context (e.g. the turns around it) should help it match, but less than its
    own words: the context field's scores count ``context_weight`` times.
    """

    def __init__(self, ids: list[str], docs: list[_Doc], context_weight: float) -> None:
        self.ids = ids
        self.position = {memory_id: i for i, memory_id in enumerate(ids)}
        self.live = np.ones(len(ids), dtype=np.float32)
        self.context_weight = context_weight
        self.body = bm25s.BM25()
        self.context: bm25s.BM25 | None = None
        if ids:
            self.body.index([d[0] or ("",) for d in docs], show_progress=False)
            if context_weight > 0 and any(d[1] for d in docs):
                self.context = bm25s.BM25()
                self.context.index([d[1] or ("",) for d in docs], show_progress=False)

    def scores(self, terms: list[str]) -> np.ndarray:
        if not self.ids:
            return np.zeros(0, dtype=np.float32)
        scores = self.body.get_scores(terms)
        if self.context is not None:
            scores = scores + self.context_weight * self.context.get_scores(terms)
        return scores * self.live

    def kill(self, memory_id: str) -> None:
        i = self.position.get(memory_id)
        if i is not None:
            self.live[i] = 0.0


REBUILD_WAIT_SECONDS = 60.0
"""How long ``wait_for_rebuild`` waits unless told otherwise: a rebuild of 100k documents takes seconds."""

QUIET_SECONDS = 0.2
"""How long a small index's writes must pause before it is rebuilt in the background.

Longer than the gap between two writes of an import or a conversation replayed (~30 ms), far
shorter than an LLM's turn, which is what separates an agent's write from its next recall.
"""


class _QuietRebuilds:
    """One daemon thread that rebuilds each small index ``QUIET_SECONDS`` after its last write."""

    def __init__(self) -> None:
        self._due: dict[int, tuple[float, weakref.ref[LexicalIndex]]] = {}
        self._wake = threading.Condition()
        self._thread: threading.Thread | None = None

    def forget(self) -> None:
        """Start afresh in a forked child, which has none of its parent's threads (nor its lock's holder)."""
        self._due, self._wake, self._thread = {}, threading.Condition(), None

    def after_write(self, index: LexicalIndex) -> None:
        """(Re)start ``index``'s quiet period."""
        with self._wake:
            self._due[id(index)] = (time.monotonic() + QUIET_SECONDS, weakref.ref(index))
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="hindsight-bm25-quiet", daemon=True)
                self._thread.start()
            self._wake.notify()

    def _run(self) -> None:
        while True:
            with self._wake:
                while not self._due:
                    self._wake.wait()
                key, (due, ref) = min(self._due.items(), key=lambda entry: entry[1][0])
                wait = due - time.monotonic()
                if wait > 0:
                    self._wake.wait(wait)  # a write meanwhile moves its index's time on
                    continue
                del self._due[key]
            index = ref()
            if index is not None:
                try:
                    index.settle()
                except Exception as exc:  # noqa: BLE001 - a dead thread would rebuild nothing again
                    log.warning("rebuilding a lexical index in the background failed (%s); the next search will", exc)


_QUIET = _QuietRebuilds()
os.register_at_fork(after_in_child=_QUIET.forget)


class LexicalIndex:
    """BM25 over (memory id, body, context) documents with incremental upsert/remove."""

    def __init__(self, *, context_weight: float = 0.3, sync_rebuild_max_docs: int = 5000) -> None:
        self._lock = threading.RLock()
        self._building = threading.Lock()  # one rebuild at a time: a search waits for the one in flight
        self._context_weight = context_weight
        self._tokens: dict[str, _Doc] = {}
        self._main = _Segment([], [], context_weight)
        self._pending_ids: set[str] = set()
        self._pending: _Segment | None = None
        self._sync_rebuild_max_docs = sync_rebuild_max_docs
        self._rebuilding: threading.Thread | None = None

    def __len__(self) -> int:
        with self._lock:
            return len(self._tokens)

    def __contains__(self, memory_id: object) -> bool:
        return memory_id in self._tokens

    def upsert(self, items: Iterable[tuple[str, str, str]]) -> None:
        """Add or replace ``(memory id, body text, context text)`` documents."""
        prepared = [
            (m, (tuple(_stem(ranking_tokens(body))), tuple(_stem(ranking_tokens(context)))))
            for m, body, context in items
        ]
        with self._lock:
            for memory_id, tokens in prepared:
                self._main.kill(memory_id)
                self._tokens[memory_id] = tokens
                self._pending_ids.add(memory_id)
            if prepared:
                self._pending = None
        if prepared:
            self._changed()

    def remove(self, memory_ids: Iterable[str]) -> None:
        """Stop returning these ids (hard deletes); they leave the main index at its next rebuild."""
        removed = False
        with self._lock:
            for memory_id in memory_ids:
                self._main.kill(memory_id)
                removed = self._tokens.pop(memory_id, None) is not None or removed
                if memory_id in self._pending_ids:
                    self._pending_ids.discard(memory_id)
                    self._pending = None
        if removed:  # ids it never held leave nothing to rebuild
            self._changed()

    def _changed(self) -> None:
        if len(self._tokens) <= self._sync_rebuild_max_docs:
            _QUIET.after_write(self)

    def settle(self) -> None:
        """Rebuild now if anything is pending, after any rebuild in flight (which may have done it)."""
        with self._building:
            if self._pending_ids:
                self.rebuild()

    def rebuild(self) -> None:
        """Fold every pending document into a fresh main index, now."""
        with self._lock:
            snapshot = dict(self._tokens)
        self._install(_Segment(list(snapshot), list(snapshot.values()), self._context_weight), snapshot)

    def _install(self, segment: _Segment, snapshot: dict[str, _Doc]) -> None:
        with self._lock:
            # Anything written or removed while the segment was built stays pending / dead.
            for memory_id, tokens in snapshot.items():
                if self._tokens.get(memory_id) is not tokens:
                    segment.kill(memory_id)
            self._main = segment
            self._pending_ids = {m for m, t in self._tokens.items() if snapshot.get(m) is not t}
            self._pending = None

    def prepare(self) -> None:
        """Start folding in what is pending now, in the background, for a search that comes soon.

        A recall calls this first, so a small index written a moment ago is rebuilt while the
        recall embeds its query and waits for its context vectors, rather than after them.
        """
        if self._pending_ids:
            self._rebuild_in_background()

    def _rebuild_in_background(self) -> None:
        if self._rebuilding is not None and self._rebuilding.is_alive():
            return
        self._rebuilding = threading.Thread(target=self.settle, name="hindsight-bm25-rebuild", daemon=True)
        self._rebuilding.start()

    def wait_for_rebuild(self, timeout: float = REBUILD_WAIT_SECONDS) -> bool:
        """Block until a background rebuild (if any) has landed, at most ``timeout`` seconds; False if it had not.

        Bounded, so a stalled rebuild cannot hang whoever waits (a benchmark waits longer, by saying so);
        searches do not need it, since pending documents are searched beside the main index.
        """
        thread = self._rebuilding
        if thread is not None:
            thread.join(timeout)
        return thread is None or not thread.is_alive()

    def search(self, query: str, limit: int) -> list[tuple[str, float]]:
        """Best ``limit`` matches as (memory id, BM25 score), higher is better."""
        terms = _stem(ranking_terms(query))
        if not terms or limit <= 0:
            return []
        if self._pending_ids:
            if len(self._tokens) <= self._sync_rebuild_max_docs:
                self.settle()
            else:
                self._rebuild_in_background()
        with self._lock:
            hits = _top(self._main, terms, limit)
            if self._pending_ids:
                if self._pending is None:
                    ids = sorted(self._pending_ids)
                    self._pending = _Segment(ids, [self._tokens[i] for i in ids], self._context_weight)
                fresh = _top(self._pending, terms, limit)
                if fresh:
                    scale = (hits[0][1] if hits else 1.0) / max(score for _, score in fresh)
                    hits.extend((memory_id, score * scale) for memory_id, score in fresh)
        hits.sort(key=lambda hit: hit[1], reverse=True)
        return hits[:limit]


def _top(segment: _Segment, terms: list[str], limit: int) -> list[tuple[str, float]]:
    scores = segment.scores(terms)
    matched = np.flatnonzero(scores > 0)  # usually a small share of a large index: partition only those
    if matched.size > limit:
        matched = matched[np.argpartition(scores[matched], matched.size - limit)[matched.size - limit :]]
    hits = [(segment.ids[i], float(scores[i])) for i in matched]
    hits.sort(key=lambda hit: hit[1], reverse=True)
    return hits


clear_with_packs(_stemmer)
