"""Cold storage: the JSONL file per namespace that upkeep moves archived memories to, outside Chroma.

Each line is one archived record as an export writes it (``public_dict``) with its own and
context vectors (``embedding``, ``window_embedding``), so ``restore`` and ``import_data`` read
it as an export. One id has one row: an id archived again (after a backup brought it back,
or an import carried it in) replaces its earlier row, so ``restore`` never meets two versions
of one memory. Files written before that may hold an id twice; the last row, the latest
archive, is the one read.
"""

from __future__ import annotations

import json
import os
from collections.abc import Collection, Iterable, Iterator
from pathlib import Path
from typing import Any

from ..errors import StoreUnavailableError
from ..model.records import MemoryRecord, Status

ColdRow = dict[str, Any]
"""One archived record in export form, with ``embedding`` and ``window_embedding`` (a list or None)."""
COLD_VECTOR_KEYS = ("embedding", "window_embedding")


def archived_row(record: MemoryRecord, vector: list[float] | None, window: list[float] | None) -> ColdRow:
    """The cold-storage row of ``record``, marked archived, with its own and context vectors."""
    row: ColdRow = record.model_copy(update={"status": Status.ARCHIVED}).public_dict()
    row["embedding"], row["window_embedding"] = vector, window
    return row


class ColdStorage:
    """The cold files of a store, one per namespace, in ``folder``."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder

    def path(self, namespace: str) -> Path:
        """The namespace's cold file (it may not exist yet)."""
        return self.folder / f"{namespace}.jsonl"

    def rows(self, namespace: str) -> list[ColdRow]:
        """Every archived record of ``namespace``, one per id (the last written), oldest archive first."""
        rows: dict[Any, ColdRow] = {}
        for number, row in self._parsed(namespace):
            key = row.get("id") if isinstance(row, dict) else None
            rows.pop(key, None)  # a later archive of the same id is the one kept, in its own place
            rows[key if key is not None else ("line", number)] = row
        return list(rows.values())

    def row(self, namespace: str, memory_id: str) -> ColdRow | None:
        """The archived row of ``memory_id`` (the last written), if any.

        Only the lines holding the id's text are parsed: a lookup that misses (``get`` of an id
        that is not there) reads the file but parses none of its rows and their vectors.
        """
        return self.rows_naming(namespace, [memory_id]).get(memory_id)

    def rows_naming(self, namespace: str, ids: Collection[str]) -> dict[str, ColdRow]:
        """The archived rows whose line names one of ``ids`` (as its own id or in a field), by id (the last written).

        Only those lines are parsed: a row that links to an id (a consolidated member's
        ``consolidated_into``, a summary's turns) is found by it, without reading every row and its vectors.
        """
        return self._rows_holding(namespace, {json.dumps(i, ensure_ascii=False) for i in ids})

    def rows_saying(self, namespace: str, texts: Collection[str]) -> dict[str, ColdRow]:
        """The archived rows whose line holds one of ``texts`` (in a content, a context), by id; as ``rows_naming``."""
        return self._rows_holding(namespace, {json.dumps(t, ensure_ascii=False)[1:-1] for t in texts if t})

    def _rows_holding(self, namespace: str, needles: set[str]) -> dict[str, ColdRow]:
        found: dict[str, ColdRow] = {}
        if needles:
            for _, row in self._parsed(namespace, holding=needles):
                if isinstance(row, dict) and isinstance(row.get("id"), str):
                    found[row["id"]] = row
        return found

    def _parsed(self, namespace: str, holding: Collection[str] | None = None) -> Iterator[tuple[int, Any]]:
        """Each line of the namespace's cold file (those holding one of ``holding``), parsed, with its number.

        A damaged line (a disk filled up mid-write, a hand edit) is named with its line number,
        so the user can repair or drop that one line instead of losing the file.
        """
        for number, line in self._lines(namespace):
            if not line.strip() or (holding is not None and not any(needle in line for needle in holding)):
                continue
            try:
                yield number, json.loads(line)
            except json.JSONDecodeError as exc:
                raise self._damaged(namespace, number, exc.msg) from None

    def _lines(self, namespace: str) -> Iterator[tuple[int, str]]:
        """Each line of the namespace's cold file with its number, read as it goes; a line ends at a newline only.

        A row's text may hold a character other readers take for a line's end, which JSON leaves as it
        is (U+2028, U+0085, with ``ensure_ascii=False``): split there, the row was two damaged lines.
        """
        path = self.path(namespace)
        if not path.exists():
            return
        with path.open(encoding="utf-8", newline="\n") as lines:
            yield from enumerate(lines, start=1)

    def _damaged(self, namespace: str, number: int, problem: str) -> StoreUnavailableError:
        return StoreUnavailableError(
            f"the cold storage file {self.path(namespace)} is damaged at line {number} ({problem}); "
            "repair or delete that line"
        )

    def put(self, namespace: str, rows: Iterable[ColdRow], *, leaving: Collection[str] = ()) -> None:
        """Add ``rows`` to the namespace's cold file, each replacing its id's row, and drop the rows of ``leaving``.

        ``leaving``: ids restored, or imported again. One read and at most one write, none when nothing changes.
        """
        new = list(rows)
        gone = {row["id"] for row in new} | set(leaving)
        if not gone:
            return
        held = self.rows(namespace)
        kept = [r for r in held if r.get("id") not in gone]
        if new or len(kept) != len(held):
            self._write(namespace, [*kept, *new])

    def drop(self, namespace: str) -> None:
        """Delete the namespace's cold file (the namespace itself is being deleted)."""
        self.path(namespace).unlink(missing_ok=True)

    def _write(self, namespace: str, rows: list[ColdRow]) -> None:
        """Write the whole file anew and swap it in, so a failure mid-write leaves the old file whole."""
        path = self.path(namespace)
        path.parent.mkdir(parents=True, exist_ok=True)
        partial = path.with_name(path.name + ".partial")
        with partial.open("w", encoding="utf-8") as out:
            out.writelines(json.dumps(row, ensure_ascii=False) + "\n" for row in rows)
            out.flush()
            os.fsync(out.fileno())
        os.replace(partial, path)


__all__ = ["COLD_VECTOR_KEYS", "ColdRow", "ColdStorage", "archived_row"]
