"""Slots read again when the rules that read them change, so a store an older version wrote stays comparable.

A memory's slot (``slots.detect_slot``: "project:language of backend") is read off its text when
it is written and stored with it, and the write path compares slots as stored. When the rules
learn to tell two facts apart (a backend's language from a frontend's, a family plan from a
family membership), the memories written before keep the slot the older rules gave them
(``user:backend``, ``project:language``), so a new statement naming the part was kept beside
them instead of updating them. Reading every slot again costs ~0.2 ms a memory, too much for
every open, so each namespace's collection records the rules its slots were read by
(``SLOT_RULES_KEY``: ``slots.slot_rules``, a digest of the language layer and its packs); a
namespace opened under other rules has its memories' slots read again once, under its write
lock, and those whose slot changed are rewritten.

A correction that names no attribute keeps the slot it took from the memory it corrects
(``corrections.inherited_slot``); turns have none.
"""

from __future__ import annotations

import logging

from ..clock import Clock
from ..language.slots import detect_slot, slot_rules
from ..model.records import Kind, MemoryRecord, Tier
from ..redaction import describe_error
from ..storage.namespace_store import NamespaceStore
from ..storage.store import SLOT_RULES_KEY, ChromaStore

log = logging.getLogger(__name__)

_BATCH = 1000  # records rewritten at once, well under any Chroma's largest batch


def reslot_if_rules_changed(store: ChromaStore, handle: NamespaceStore, clock: Clock) -> int:
    """Read ``handle``'s slots again if its namespace records other rules than these; how many changed.

    Opening a namespace read by these rules costs a look at its collection's metadata. One this
    process may not write (another replica owns the store) is left as it is, to be read again by
    the next open that may.
    """
    rules = slot_rules()
    if (handle.collection.metadata or {}).get(SLOT_RULES_KEY) == rules:
        return 0
    try:
        store.check_writes()
        with handle.writing:
            if store.marks(handle.name).get(SLOT_RULES_KEY) == rules:  # another process did it meanwhile
                return 0
            log.info("namespace %r: reading its slots again, once: the rules changed since", handle.name)
            now = clock.now()
            changed = [
                record.model_copy(update={"slot": slot, "updated_at": now})
                for record, _ in handle.iterate()
                if (slot := slot_now(record)) != record.slot
            ]
            for start in range(0, len(changed), _BATCH):
                handle.rewrite(changed[start : start + _BATCH])
            store.set_mark(handle.name, SLOT_RULES_KEY, rules)
    except Exception as exc:  # noqa: BLE001 - the namespace opens with its slots as stored; the next open retries
        log.warning("namespace %r: reading its slots by the current rules failed: %s", handle.name, describe_error(exc))
        return 0
    if changed:
        log.info("namespace %r: %d memories' slots read again by the current rules", handle.name, len(changed))
    return len(changed)


def slot_now(record: MemoryRecord) -> str | None:
    """The slot the current rules give ``record`` (as ``settle.py`` gives a new one)."""
    if record.tier is Tier.WORKING or record.kind is Kind.TURN:
        return record.slot
    read = detect_slot(record.content)
    if read is None and record.kind is Kind.CORRECTION:
        return record.slot  # taken from the memory it corrects (``corrections.inherited_slot``)
    return read


__all__ = ["reslot_if_rules_changed", "slot_now"]
