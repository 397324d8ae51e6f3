"""Context vectors embedded in the background, in batches.

A memory written in a conversation has a second vector besides its own: the memory framed by
the turns before it (``indexing.framed_text``), which lets recall find "yes, that one" by what
was being discussed. Embedding it is a second model run, about half of what writing a turn
costs, and nothing in the write needs it: dedup and updates compare the memory's own vector.
So a statement written on its own (a conversation turn, one ``store_memory``) is written and
acknowledged with its own vector, and its context vector follows from here, embedded together
with whatever else is waiting, and written to Chroma a batch at a time.

The context vector is an index derived from the record, like the lexical index: the record
holds the context text, so nothing is lost if the process dies first. A namespace that finds
records without their context vector when it is opened queues them again
(``NamespaceStore``), and a recall first waits for the context vectors queued before it in
this process, so it ranks what was just written exactly as it ranks the rest.
"""

from __future__ import annotations

import atexit
import logging
import os
import sys
import threading
import time
import weakref
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from typing import Protocol

import numpy as np

from ..redaction import describe_error

log = logging.getLogger(__name__)

_BATCH = 32
# What is held is written once nothing more has been embedded for this long. The writes of an
# import or of a conversation replayed come ~30 ms apart and fill batches; an agent's turn ends
# in an LLM call, and its next recall, which waits for what is held to be written, finds it
# written (it lingered a second from the first vector held before, and a recall 0.3 s after a
# turn waited ~8 ms for the write: README §3).
_LINGER_SECONDS = 0.15
_EXIT_WAIT_SECONDS = 10.0
# How long a close waits for the batch being embedded (~0.3 s for 32 texts) to be written after it gave up the rest.
_BATCH_STOP_SECONDS = 30.0


class ContextTarget(Protocol):
    """Where context vectors go: a namespace's store (``NamespaceStore.write_context``)."""

    name: str

    def write_context(self, vectors: Mapping[str, np.ndarray]) -> None:
        """Store these context vectors (memory id → vector) for the memories that still exist."""


class BackgroundContextVectors:
    """One worker thread that embeds queued framed texts and writes them to their namespaces.

    ``embed`` turns texts into a float32 matrix (the engine's ``embed_index_matrix``). Work is
    done in the order it was queued; ``wait`` blocks until everything queued before the call is
    written. Vectors are written to Chroma a batch at a time (``batch_size`` of them, or whatever
    is held once ``linger_seconds`` passed without another being held, or at once when someone
    waits): a Chroma write costs ~5 ms however few records it holds, as much as embedding the
    framed text, and a conversation queues one vector per turn.
    """

    def __init__(
        self,
        embed: Callable[[Sequence[str]], np.ndarray],
        *,
        batch_size: int = _BATCH,
        linger_seconds: float = _LINGER_SECONDS,
    ) -> None:
        self._embed = embed
        self._batch_size = batch_size
        self._linger = linger_seconds
        self._queue: deque[tuple[int, ContextTarget, str, str]] = deque()
        self._changed = threading.Condition()
        self._queued = 0  # sequence number of the last item queued
        self._done = 0  # every item up to this number has been written (or given up on)
        self._last: dict[int, int] = {}  # id(target) → sequence number of its last item queued
        self._held: dict[int, tuple[ContextTarget, dict[str, tuple[int, np.ndarray]]]] = {}  # embedded: (seq, vector)
        self._held_count = 0
        self._held_upto = 0  # every item up to this number is embedded (held) or given up on
        self._last_held = 0.0  # when the last vector was held
        self._waiting = 0  # callers blocked in ``wait``: what is held is written at once
        self._worker: threading.Thread | None = None
        self._exit_hook = False
        self._closed = False
        self._dropped: weakref.WeakSet[ContextTarget] = weakref.WeakSet()  # namespaces deleted: write nothing
        self._superseded: dict[tuple[int, str], int] = {}  # (id(target), memory id) → last item queued when replaced
        self._writing: dict[str, int] = {}  # memory id → item number, of what ``_flush`` is writing now

    def submit(self, target: ContextTarget, framed: Mapping[str, str]) -> None:
        """Queue ``framed`` (memory id → framed text) for ``target``; returns at once."""
        if not framed:
            return
        with self._changed:
            for memory_id, text in framed.items():
                self._queued += 1
                self._queue.append((self._queued, target, memory_id, text))
            self._last[id(target)] = self._queued
            self._start()
            self._changed.notify_all()

    def discard(self, target: ContextTarget) -> None:
        """Embed and write nothing more for ``target``, a namespace being deleted; its queued work counts as done."""
        with self._changed:
            self._dropped.add(target)

    def supersede(self, target: ContextTarget, ids: Sequence[str]) -> None:
        """``target`` is writing context vectors for ``ids`` itself: what was queued for them before is stale.

        An edit writes the edited memory's new context vector at once; the vector of its old text,
        queued when it was first written and still waiting here, must not land over it.
        ``target`` calls this and ``stale`` under its own write lock, so each write sees the other.
        """
        with self._changed:
            if self._last.get(id(target), 0) <= self._done:
                return  # nothing of ``target``'s is waiting: nothing to go stale (a batch import writes its own)
            for memory_id in ids:
                self._superseded[(id(target), memory_id)] = self._queued

    def stale(self, target: ContextTarget, ids: Sequence[str]) -> set[str]:
        """Of ``ids``, being written now to ``target`` (from ``write_context``), those ``supersede`` replaced since."""
        with self._changed:
            writing, superseded = self._writing, self._superseded
            return {i for i in ids if i in writing and writing[i] <= superseded.get((id(target), i), 0)}

    def pending(self) -> int:
        """How many context vectors are queued and not yet written."""
        with self._changed:
            return self._queued - self._done

    def wait(self, timeout: float | None = None, *, target: ContextTarget | None = None) -> bool:
        """Block until everything queued before this call (for ``target``, if given) is written.

        False if ``timeout`` ran out first. Work is done in order, so waiting for a target's
        last item waits for whatever was queued before it, but not for what comes after.
        """
        with self._changed:
            goal = self._queued if target is None else self._last.get(id(target), 0)
            if self._done >= goal:
                return True
            self._waiting += 1
            self._changed.notify_all()
            try:
                return self._changed.wait_for(lambda: self._done >= goal, timeout)
            finally:
                self._waiting -= 1

    def close(self, timeout: float | None = 10.0) -> bool:
        """Write what is queued (False if ``timeout`` ran out first), then stop the worker thread.

        Past ``timeout`` what is still queued is given up (its records are queued again when their
        namespace is next opened) and the worker is joined once its current batch is written, so
        no thread of ours is left inside the model when the caller goes on, or the interpreter exits.
        Work queued after this starts the thread again: a store being closed is refused its
        writes before this is called, so there is none unless a second store shares the worker.
        """
        with self._changed:
            if self._exit_hook:
                atexit.unregister(self._stop)
                self._exit_hook = False
        return self._stop(timeout)

    def _stop(self, timeout: float | None = _EXIT_WAIT_SECONDS) -> bool:
        """``close`` without touching the exit hook: it is the exit hook, run before the interpreter finalises.

        A daemon thread still inside onnxruntime when the interpreter finalises is killed as it
        takes the GIL back, and the C++ frames it unwinds abort the process ("terminate called
        without an active exception", exit code 134): a clean exit needs this thread stopped first.
        """
        written = self.wait(timeout)
        with self._changed:
            self._closed = True
            worker = self._worker
            if not written:
                self._give_up_queued()
            self._changed.notify_all()
        if worker is not None and worker is not threading.current_thread():
            worker.join(_BATCH_STOP_SECONDS)
        return written

    def _give_up_queued(self) -> None:
        """Drop what is queued and not yet taken by the worker; the caller holds ``_changed``."""
        if not self._queue:
            return
        log.info(
            "%d context vectors were not made before the close; they are queued again when the namespace is next "
            "opened",
            len(self._queue),
        )
        self._held_upto = max(self._held_upto, self._queue[-1][0])
        self._queue.clear()

    def _start(self) -> None:
        self._closed = False
        if self._worker is None or not self._worker.is_alive():
            self._worker = threading.Thread(target=self._run, name="hindsight-context-vectors", daemon=True)
            self._worker.start()
        if not self._exit_hook:
            # Give queued work a moment to land, then stop the thread before the interpreter finalises
            # (what does not land is repaired when the namespace is next opened).
            atexit.register(self._stop, _EXIT_WAIT_SECONDS)
            self._exit_hook = True

    def _run(self) -> None:
        _yield_to_foreground()
        while True:
            with self._changed:
                self._changed.wait_for(
                    lambda: bool(self._queue) or self._flush_due() or self._closed, self._linger_left()
                )
                if self._closed and not self._queue and self._held_upto <= self._done:
                    self._worker = None  # under the lock: a ``submit`` from now on starts another
                    return
                batch = [self._queue.popleft() for _ in range(min(self._batch_size, len(self._queue)))]
            try:
                if batch:
                    self._hold(batch)
                with self._changed:
                    due = self._flush_due()
                if due:
                    self._flush()
            except Exception as exc:  # noqa: BLE001 - a worker that died would stall every recall's wait
                _given_up(len(batch), "this batch's namespaces", exc)
                with self._changed:
                    if batch:
                        self._held_upto = max(self._held_upto, batch[-1][0])
                    self._done = max(self._done, self._held_upto)
                    self._held, self._held_count = {}, 0
                    self._changed.notify_all()

    def _flush_due(self) -> bool:
        """Whether what is held should be written now; the caller holds ``_changed``."""
        if self._held_upto <= self._done:
            return False
        if not self._held_count:
            return True  # only given-up items: nothing to write, they are done
        return (
            self._held_count >= self._batch_size
            or self._waiting > 0
            or self._closed
            or time.monotonic() - self._last_held >= self._linger
        )

    def _linger_left(self) -> float | None:
        """Seconds until what is held must be written (None: nothing held); the caller holds ``_changed``."""
        if not self._held_count:
            return None
        return max(0.0, self._last_held + self._linger - time.monotonic())

    def _hold(self, batch: list[tuple[int, ContextTarget, str, str]]) -> None:
        """Embed a batch and hold its vectors for the next write; an embedder outage is logged, never fatal."""
        with self._changed:
            live = [item for item in batch if item[1] not in self._dropped]
        try:
            vectors = self._embed([text for _, _, _, text in live]) if live else np.empty((0, 0))
            if vectors is None or len(vectors) != len(live):
                raise ValueError(
                    f"the embedder returned {0 if vectors is None else len(vectors)} vectors for {len(live)}"
                )
        except Exception as exc:  # noqa: BLE001
            _given_up(len(live), "this batch's namespaces", exc)
            vectors = None
        with self._changed:
            if vectors is not None and live:
                self._last_held = time.monotonic()
                for (seq, target, memory_id, _), vector in zip(live, vectors):
                    self._held.setdefault(id(target), (target, {}))[1][memory_id] = (seq, vector)
                    self._held_count += 1
            self._held_upto = max(self._held_upto, batch[-1][0])  # ``_give_up_queued`` may have passed it

    def _flush(self) -> None:
        """Write what is held, one Chroma write per namespace; a store outage is logged, never fatal."""
        with self._changed:
            held, upto = self._held, self._held_upto
            self._held, self._held_count = {}, 0
        for target, items in held.values():
            if target in self._dropped:
                continue
            self._writing = {memory_id: seq for memory_id, (seq, _) in items.items()}
            try:
                target.write_context({memory_id: vector for memory_id, (_, vector) in items.items()})
            except Exception as exc:  # noqa: BLE001
                _given_up(len(items), f"namespace {target.name!r}", exc)
        with self._changed:
            self._done = max(self._done, upto)
            self._writing = {}
            self._superseded = {key: last for key, last in self._superseded.items() if last > self._done}
            self._changed.notify_all()


_NICENESS = 10
CONTEXT_WAIT_SECONDS = 30.0
"""How long a read of stored context vectors (an export, an archive) waits for those queued before it, and
``NamespaceStore.wait_for_context`` unless told otherwise: a stalled embedder must not hang whoever waits."""


def wait_before_reading(worker: BackgroundContextVectors | None, target: ContextTarget) -> bool:
    """Wait, at most ``CONTEXT_WAIT_SECONDS``, for ``target``'s queued context vectors; past that, log and go on.

    A stalled embedder must not hang an export, nor an archive and the namespace's writes it holds
    back meanwhile. Going on loses nothing: a memory exported or archived without its context
    vector has its context text, and gets the vector again when it is imported or restored.
    """
    if worker is None or worker.wait(CONTEXT_WAIT_SECONDS, target=target):
        return True
    log.warning(
        "context vectors of namespace %r were still being made after %g s (is the embedder stalled?); going on "
        "without them: what is exported or archived without one gets it again when imported or restored",
        target.name,
        CONTEXT_WAIT_SECONDS,
    )
    return False


def wait_for_all(workers: Sequence[BackgroundContextVectors], timeout: float | None) -> bool:
    """Wait for every worker's queue within one ``timeout`` in all (not one each); False if it ran out."""
    deadline = None if timeout is None else time.monotonic() + timeout
    written = [w.wait(None if deadline is None else max(0.0, deadline - time.monotonic())) for w in workers]
    return all(written)


def _yield_to_foreground() -> None:
    """Lower this thread's CPU priority, so the writes and recalls it works behind run first.

    On two cores a write's own model run, Chroma and this thread's model run compete; a turn
    took ~21 ms with this thread at the same priority and ~16 ms with no background work at all.
    Linux schedules threads as tasks, so ``setpriority`` on the thread id lowers this thread
    (and onnxruntime's one-thread runs, which happen on it) only; elsewhere it is left alone.
    """
    if not sys.platform.startswith("linux"):
        return
    try:
        os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), _NICENESS)
    except OSError as exc:  # a container may forbid it: work at the same priority then
        log.debug("could not lower the context-vector thread's priority: %s", exc)


def _given_up(count: int, where: str, exc: Exception) -> None:
    log.warning(
        "%d context vectors of %s were not written (%s); they are queued again when the namespace is next opened",
        count,
        where,
        describe_error(exc),
    )


__all__ = ["CONTEXT_WAIT_SECONDS", "BackgroundContextVectors", "ContextTarget", "wait_before_reading", "wait_for_all"]
