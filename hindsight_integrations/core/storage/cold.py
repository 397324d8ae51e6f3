"""Cold storage: the JSONL file per namespace that upkeep moves archived memories to, outside Chroma.

Each line is one archived record as an export writes it (``public_dict``) with its own and
context vectors (``embedding``, ``window_embedding``), so ``restore`` and ``import_data`` read
it as an export. One id has one row: an id archived again (after a backup brought it back,
or an import carried it in) replaces its earlier row, so ``restore`` never meets two versions
of one memory. Files written before that may hold an id twice; the last row, the latest
archive, is the one read. Rows of new ids are appended; to replace or drop a row the file is copied without it.
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
_ID_OPENING = '{"id": "'  # how each row's line starts: ``public_dict`` puts the id first
_DECODER = json.JSONDecoder()


def archived_row(record: MemoryRecord, vector: list[float] | None, window: list[float] | None) -> ColdRow:
    """The cold-storage row of ``record``, marked archived, with its own and context vectors."""
    row: ColdRow = record.model_copy(update={"status": Status.ARCHIVED}).public_dict()
    row["embedding"], row["window_embedding"] = vector, window
    return row


class ColdStorage:
    """The cold files of a store, one per namespace, in ``folder``."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self._held: dict[str, tuple[tuple[int, ...], set[str]]] = {}  # by namespace: file signature, ids

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

        ``leaving``: ids restored, or imported again. Rows of ids the file does not hold are appended,
        at the cost of what is written once the process knows the file's ids (``_ids``): an archive of
        100,000 rows (1.6 GB with their vectors) was parsed and written whole for each, three to four
        minutes a put. A row replaced or dropped is taken out of the file, copied without it, not
        parsed (a forget must leave no old copy of its text there).
        """
        new = list(rows)
        gone = {row["id"] for row in new} | set(leaving)
        if not gone:
            return
        held = self._ids(namespace)
        if gone.isdisjoint(held):
            if new:
                self._append(namespace, new)
        else:
            self._rewrite(namespace, gone, new)

    def drop(self, namespace: str) -> None:
        """Delete the namespace's cold file (the namespace itself is being deleted)."""
        self._held.pop(namespace, None)
        self.path(namespace).unlink(missing_ok=True)

    def _ids(self, namespace: str) -> set[str]:
        """The ids of the namespace's cold file, read once and kept while the file is as this process left it.

        Each is read from the start of its line (``{"id": ...``, as ``archived_row`` writes it), not
        the row and its vectors; a line written otherwise is parsed whole. The file's identity, size
        and time tell when another process wrote it since.
        """
        path = self.path(namespace)
        try:
            signature = _signature(path)
        except (FileNotFoundError, NotADirectoryError):  # none yet; or no folder to hold it, which a write reports
            self._held.pop(namespace, None)
            return set()
        cached = self._held.get(namespace)
        if cached is not None and cached[0] == signature:
            return cached[1]
        ids = {row_id for _, row_id, _ in self._line_ids(namespace) if row_id is not None}
        self._held[namespace] = (signature, ids)
        return ids

    def _line_ids(self, namespace: str) -> Iterator[tuple[int, str | None, str]]:
        """Each line of the namespace's cold file with its number and its row's id (None for a row without one)."""
        for number, line in self._lines(namespace):
            if not line.strip():
                continue
            try:
                if line.startswith(_ID_OPENING):
                    row_id, _ = _DECODER.raw_decode(line, len(_ID_OPENING) - 1)
                else:
                    row = json.loads(line)
                    row_id = row.get("id") if isinstance(row, dict) else None
            except json.JSONDecodeError as exc:
                raise self._damaged(namespace, number, exc.msg) from None
            yield number, row_id if isinstance(row_id, str) else None, line

    def _append(self, namespace: str, rows: list[ColdRow]) -> None:
        """Add ``rows`` at the file's end; a failure takes back what it wrote, leaving the file as it was.

        A file whose last line has no newline (a hand edit, a process killed mid-append) gets one
        first, so no row is glued to it: a torn line stays a line of its own, named as damaged.
        """
        path = self.path(namespace)
        path.parent.mkdir(parents=True, exist_ok=True)
        held = self._ids(namespace)
        with path.open("ab") as out:
            size = out.tell()
            try:
                if size and not _ends_a_line(path, size):
                    out.write(b"\n")
                out.write("".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows).encode("utf-8"))
                out.flush()
                os.fsync(out.fileno())
            except BaseException:
                out.truncate(size)
                raise
        self._held[namespace] = (_signature(path), held | {row["id"] for row in rows})

    def _rewrite(self, namespace: str, gone: set[str], new: list[ColdRow]) -> None:
        """Copy the file without the rows of ``gone`` (and the earlier rows of an id written twice), then add ``new``.

        The lines kept are copied as they are, not parsed; the copy is swapped in whole, so a
        failure mid-write leaves the old file.
        """
        last = {row_id: number for number, row_id, _ in self._line_ids(namespace) if row_id is not None}
        kept = (
            line if line.endswith("\n") else line + "\n"
            for number, row_id, line in self._line_ids(namespace)
            if row_id is None or (row_id not in gone and last[row_id] == number)
        )
        path = self.path(namespace)
        partial = path.with_name(path.name + ".partial")
        with partial.open("w", encoding="utf-8", newline="\n") as out:
            out.writelines(kept)
            out.writelines(json.dumps(row, ensure_ascii=False) + "\n" for row in new)
            out.flush()
            os.fsync(out.fileno())
        os.replace(partial, path)
        self._held[namespace] = (_signature(path), {*(set(last) - gone), *(row["id"] for row in new)})


def _signature(path: Path) -> tuple[int, ...]:
    """What changes when a file is written: its identity (a file swapped in), its size and its times."""
    stat = path.stat()
    return stat.st_ino, stat.st_size, stat.st_mtime_ns, stat.st_ctime_ns


def _ends_a_line(path: Path, size: int) -> bool:
    with path.open("rb") as file:
        file.seek(size - 1)
        return file.read(1) == b"\n"


__all__ = ["COLD_VECTOR_KEYS", "ColdRow", "ColdStorage", "archived_row"]
