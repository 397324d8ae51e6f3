"""A store repeated with its ``request_id``: what the first call did, answered again, and nothing written twice.

A request that wrote records is found by the ``request_id`` they carry (``Settler.store``), and its
answer rebuilt from them (``replayed``): its new records in the order they were written, and the
stored memories its other items merged into at their places, which the first of its records keeps
(``REQUEST_MERGES_KEY``, ``merges_note``). A request whose every item merged into stored memories
wrote no record: its items are found in those memories' ``sources`` (``RetriedMerges``), so a retry
does not merge them a second time.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..errors import InvalidInputError
from ..model.records import MemoryRecord
from ..model.reserved import REQUEST_HASH_KEY, REQUEST_MERGES_KEY
from ..model.results import StoreResult
from ..storage.namespace_store import NamespaceStore


def reused(request_id: str) -> InvalidInputError:
    """The error of a request id already used for different content."""
    return InvalidInputError(
        "request_id", f"{request_id!r} was already used for different content; use a new request_id"
    )


def merges_note(merged_at: Sequence[tuple[int, str]]) -> str:
    """``REQUEST_MERGES_KEY``'s value: each merged item's place in the answer and the memory it merged into."""
    return ",".join(f"{position}:{memory_id}" for position, memory_id in merged_at)


def replayed(handle: NamespaceStore, written: list[MemoryRecord]) -> StoreResult:
    """The answer to a request again, from the records it ``written``: every item in input order."""
    answer = sorted(written, key=lambda r: r.created_at)  # a batch's records are a microsecond apart, in order
    note = next((r.metadata[REQUEST_MERGES_KEY] for r in answer if REQUEST_MERGES_KEY in r.metadata), "")
    places = [p.partition(":") for p in note.split(",")] if note else []
    merged_at = [(int(position), memory_id) for position, _, memory_id in places]
    found = {record.id: record for record, _ in handle.get(sorted({memory_id for _, memory_id in merged_at}))}
    for position, memory_id in merged_at:
        if memory_id in found:  # gone only if dropped since
            answer.insert(position, found[memory_id])
    return StoreResult(stored=answer, merged=[i for _, i in merged_at if i in found], replayed=True)


class RetriedMerges:
    """Which items of a store are a retry of what its request id already merged into stored memories.

    Such a request wrote no record carrying its id (the ``request_id`` lookup finds nothing), only
    ``sources`` entries of the memories it reinforced: a retry must find those and not merge again.
    """

    def __init__(self, stored: dict[str, MemoryRecord]) -> None:
        self._stored = stored  # as they were before this call, by id
        self._claimed: dict[str, int] = {}
        self.count = 0

    def merged_before(self, record: MemoryRecord, target_id: str) -> bool:
        """Whether ``record`` repeats stored ``target_id`` as an input of its request merged into it already did.

        A request id that merged other content there is refused, as one whose records hold other content is.
        """
        target = self._stored.get(target_id)
        if record.request_id is None or target is None:
            return False
        entries = [s for s in target.sources if s.get("request_id") == record.request_id]
        request_hash = record.metadata.get(REQUEST_HASH_KEY)
        if any((s.get("metadata") or {}).get(REQUEST_HASH_KEY) not in (None, request_hash) for s in entries):
            raise reused(record.request_id)
        if self._claimed.get(target_id, 0) >= len(entries):
            return False
        self._claimed[target_id] = self._claimed.get(target_id, 0) + 1
        self.count += 1
        return True


__all__ = ["RetriedMerges", "merges_note", "replayed", "reused"]
