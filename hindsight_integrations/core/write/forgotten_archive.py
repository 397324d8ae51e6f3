"""The copies of a forgotten text in cold storage: archived memories upkeep moved out of Chroma.

Upkeep archives idle memories (``upkeep/retention.py``) to the namespace's cold file
(``storage/cold.py``), from which ``restore`` brings them back as they were written there. What
forgetting changes in Chroma it changes in the archive too, or ``restore`` would bring it back:
an archived context holding the text (``forgetting.py``), an archived summary that told a turn
forgotten, an archived member of a consolidated memory forgotten (``forgotten_copies.py``).

Each row is found by an id or a text its line holds (``ColdStorage.rows_naming``,
``rows_saying``), so a forget parses the rows it changes, not the whole archive. A row changed
stays archived, with its vectors (embedded again when its own text changed); one forgotten (a
summary, a member: copies of the text) leaves the archive for good, as it leaves Chroma, so
``restore`` never brings it back and nothing holds the forgotten words.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence

from ..model.records import Kind, MemoryRecord
from ..parts import EngineParts
from ..storage.cold import COLD_VECTOR_KEYS, ColdRow, ColdStorage, archived_row


def _record(row: ColdRow) -> MemoryRecord:
    return MemoryRecord.model_validate({k: v for k, v in row.items() if k not in COLD_VECTOR_KEYS})


class ArchivedCopies:
    """The archived rows forgetting reaches, read and changed, for one lane's namespaces (none without cold storage)."""

    def __init__(self, parts: EngineParts, cold: ColdStorage | None) -> None:
        self._parts = parts
        self._cold = cold

    def named(self, namespace: str, ids: Collection[str]) -> list[MemoryRecord]:
        """The archived records whose row names one of ``ids`` (its own id, or a link to one of them)."""
        if self._cold is None or not ids:
            return []
        return [_record(row) for row in self._cold.rows_naming(namespace, ids).values()]

    def saying(self, namespace: str, texts: Collection[str]) -> list[MemoryRecord]:
        """The archived records whose row holds one of ``texts``."""
        if self._cold is None or not texts:
            return []
        return [_record(row) for row in self._cold.rows_saying(namespace, texts).values()]

    def summaries_telling(self, namespace: str, turns: Collection[str]) -> list[MemoryRecord]:
        """The archived summaries of compressed turns that told one of ``turns``."""
        return [
            record
            for record in self.named(namespace, turns)
            if record.kind is Kind.SUMMARY and not set(turns).isdisjoint(record.source.message_ids)
        ]

    def rewrite(self, namespace: str, records: Sequence[MemoryRecord], *, retold: bool = False) -> None:
        """Write ``records`` back to the archive; ``retold``: their own texts changed, so they are embedded again.

        A context changed leaves the row without its context vector, which ``restore`` embeds again.
        """
        if self._cold is None or not records:
            return
        held = self._cold.rows_naming(namespace, [r.id for r in records])
        if retold:
            vectors, framed = self._parts.embed_records(records)
            rows = [
                archived_row(r, v.tolist(), framed[r.id].tolist() if r.id in framed else None)
                for r, v in zip(records, vectors)
            ]
        else:
            rows = [
                archived_row(r, held.get(r.id, {}).get("embedding"), _same_context(r, held.get(r.id, {})))
                for r in records
            ]
        self._cold.put(namespace, rows)

    def forget(self, namespace: str, records: Sequence[MemoryRecord]) -> None:
        """Take ``records`` out of the archive for good: copies of a forgotten text, which no one reads back."""
        if self._cold is None or not records:
            return
        self._cold.put(namespace, [], leaving={r.id for r in records})


def _same_context(record: MemoryRecord, row: ColdRow) -> list[float] | None:
    """The row's context vector while its context is the one it was framed from; else None (embedded at restore)."""
    return row.get("window_embedding") if row.get("context") == record.context else None


__all__ = ["ArchivedCopies"]
