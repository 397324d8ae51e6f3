"""What upkeep made of a forgotten memory: the copies of its text that outlive it unless forgetting reaches them.

``forgetting.py`` takes a forgotten text out of the contexts stored after it. Upkeep keeps the
text elsewhere too, and each copy is found from the forgotten record itself, never by reading
the namespace:

* **the originals it absorbed**: the periodic merge (``upkeep/merging.py``) keeps the memory it
  merged away as history (superseded by the survivor, ``MERGED_INTO_KEY``), with its own words,
  listed in history and recalled with ``include_history``. Its ``sources`` entry names it
  (``memory_id``, nested when the original had absorbed another): it is forgotten with the
  survivor. Its words stay in the survivor's ``sources``, as the forgotten record keeps its own.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from ..model.records import MemoryRecord, Status, merged_inputs
from ..storage.namespace_store import NamespaceStore


def absorbed_originals(handle: NamespaceStore, forgotten: Sequence[MemoryRecord], now: datetime) -> list[MemoryRecord]:
    """The history records upkeep merged into ``forgotten`` (or into one of them in turn), now forgotten too.

    Only a record still superseded by the memory that absorbed it: one split back off
    (``unmerge``) or superseded by something else since is a memory of its own.
    """
    named = {
        entry["memory_id"]
        for record in forgotten
        for entry in merged_inputs(record.sources)
        if isinstance(entry.get("memory_id"), str) and entry["memory_id"]
    }
    absorbers = {record.id for record in forgotten}
    found = {record.id: record for record, _ in handle.get(sorted(named - absorbers))}
    originals: list[MemoryRecord] = []
    while True:  # an original absorbed by an original is known once that one is
        fresh = [
            record
            for record in found.values()
            if record.status is Status.SUPERSEDED and record.superseded_by in absorbers and record.id not in absorbers
        ]
        if not fresh:
            return originals
        absorbers.update(record.id for record in fresh)
        originals.extend(record.model_copy(update={"status": Status.DELETED, "updated_at": now}) for record in fresh)


__all__ = ["absorbed_originals"]
