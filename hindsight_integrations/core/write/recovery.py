"""Finishing supersedes a crash interrupted: the one repair the write path needs after a process dies.

A new memory that makes an older one history is two Chroma writes: the new record is added
first, naming what it supersedes (``model.reserved.SUPERSEDES_KEY``), then the older one is
rewritten as history. A process that dies between the two leaves both active. Each namespace
is checked when this process opens it (``ChromaStore.on_open``), and a ``request_id``
replayed after a crash finishes its own (``settle.py``). The open also reads again the slots an
older version's rules gave (``reslot.py``).
"""

from __future__ import annotations

import logging

from ..clock import Clock
from ..model.records import Status
from ..storage.namespace_store import NamespaceStore
from ..storage.store import ChromaStore
from .reslot import reslot_if_rules_changed
from .supersede import history_of

log = logging.getLogger(__name__)


def bring_up_to_date(store: ChromaStore, handle: NamespaceStore, clock: Clock) -> None:
    """What opening a namespace repairs: supersedes a crash interrupted, slots read by older rules."""
    finish_interrupted_supersedes(handle, clock)
    reslot_if_rules_changed(store, handle, clock)


def finish_interrupted_supersedes(handle: NamespaceStore, clock: Clock) -> int:
    """Make history of what a memory superseded when the process died before writing it; how many.

    Takes the namespace's write lock, and only when there is something to finish: opening a
    namespace whose writes all landed costs a look at the facts index.
    """
    if not handle.facts.unfinished_supersedes():
        return 0
    with handle.writing:
        return finish_supersedes_locked(handle, clock)


def finish_supersedes_locked(handle: NamespaceStore, clock: Clock, among: set[str] | None = None) -> int:
    """``finish_interrupted_supersedes`` for the memories ``among`` (all when None); the caller holds the write lock."""
    pending = {n: o for n, o in handle.facts.unfinished_supersedes().items() if among is None or n in among}
    if not pending:
        return 0
    found = {r.id: r for r, _ in handle.get([*pending, *(o for olds in pending.values() for o in olds)])}
    now = clock.now()
    made = [
        history_of(found[old], found[new], now)
        for new, olds in pending.items()
        if new in found
        for old in olds
        if old in found and found[old].status is Status.ACTIVE
    ]
    handle.rewrite(made)
    if made:
        log.warning("namespace %r: finished %d supersedes a crash had interrupted", handle.name, len(made))
    return len(made)


__all__ = ["bring_up_to_date", "finish_interrupted_supersedes", "finish_supersedes_locked"]
