"""Whether an embedded store was written since recall last found its copies current, told by its files.

Recall searches this process's in-memory copies only while Chroma holds nothing they lack
(``NamespaceStore.copies_current``): two Chroma reads per recall, a count and the records newer
than the watermark. Each costs at least ~0.7 ms in Chroma's bindings, and run beside the query's
embedding they slow it by ~1-2 ms, since the bindings hold the interpreter lock part of the
time. Yet every change to an embedded store, by this process or any other, is a commit to its
SQLite file (``chroma.sqlite3``, in write-ahead-log mode its ``-wal`` beside it): while neither
file's size, modification time and inode moved, the two reads would answer what they answered
last time. A ``stat`` of two files takes microseconds and holds no lock.

A file's modification time has the granularity of the file system's clock (a few milliseconds
on ext4, a second or two on some others), so two writes within one tick can leave the same
time. A stamp is therefore trusted only when both files were last written at least
``QUIET_SECONDS`` before it was read: a later write then falls in a later tick and changes it.
Within that window after a write, recall makes the two reads as before. A Chroma server has no
files here to look at, so its clients make them, the count at most once every ``COUNT_SECONDS``
(``CurrencyMemo``).
"""

from __future__ import annotations

import math
import os
import threading
import time
from collections.abc import Callable, Hashable, Sequence
from pathlib import Path

QUIET_SECONDS = 2.0
"""How long both files must have been left alone for their stamp to prove no write since: above the
coarsest common file-time granularity (2 s)."""

COUNT_SECONDS = 1.0
"""Through a server, how long a count that matched the copy is trusted: within it, a hard delete by
another process (the cold archive) shows in at most this long (``CurrencyMemo``)."""

DATABASE_FILE = "chroma.sqlite3"
"""The SQLite file an embedded Chroma store commits every change to (``store.py`` sets its journal mode)."""
_FILES = (DATABASE_FILE, DATABASE_FILE + "-wal")

Stamp = tuple[tuple[int, int, int] | None, ...]


class StoreFiles:
    """The files of an embedded Chroma store whose stamp tells whether anything was committed since."""

    def __init__(self, root: Path, *, quiet_seconds: float = QUIET_SECONDS, now: Callable[[], float] = time.time):
        self._paths = tuple(root / name for name in _FILES)
        self._quiet_ns = int(quiet_seconds * 1e9)
        self._now = now

    def stamp(self) -> Stamp | None:
        """(inode, size, modification time) of each file (None for a file that is not there).

        None as a whole when a file was written within ``QUIET_SECONDS`` or cannot be read: no stamp
        then proves that nothing is written after it.
        """
        now = int(self._now() * 1e9)
        stamp: list[tuple[int, int, int] | None] = []
        for path in self._paths:
            try:
                stat = os.stat(path)
            except FileNotFoundError:
                stamp.append(None)
                continue
            except OSError:
                return None
            if now - stat.st_mtime_ns < self._quiet_ns:
                return None
            stamp.append((stat.st_ino, stat.st_size, stat.st_mtime_ns))
        return tuple(stamp)


def store_files(client: object) -> StoreFiles | None:
    """The files of ``client``'s store when it is an embedded one on disk (None for a server or an in-memory one)."""
    get_settings = getattr(client, "get_settings", None)
    if get_settings is None:
        return None
    settings = get_settings()
    if not getattr(settings, "is_persistent", False) or not getattr(settings, "persist_directory", None):
        return None
    return StoreFiles(Path(settings.persist_directory))


class CurrencyMemo:
    """Remembers the files' stamp (and the copies' sizes) at which every currency check last passed.

    ``checks`` hands back no check at all while that is still the stamp, and otherwise the
    checks, each noting its result, so that the stamp read *before* they ran is remembered once
    they all pass: a write while they run leaves a newer stamp, and the next recall checks again.

    Without files (a Chroma server), each check is a round trip, and beside the query's embedding
    the two took ~1 ms of its time on two cores. The count is then made at most once every
    ``count_seconds``: it is the check for what the records newer than the watermark cannot show,
    a hard delete by another process (the cold archive moving memories out) or a batch written
    after its stamps had fallen behind the sync's look-back. Those then show within that time;
    another process's writes, edits and forgets still show at once, in the watermark read every
    recall makes.
    """

    def __init__(
        self, files: StoreFiles | None, *, count_seconds: float = COUNT_SECONDS, now: Callable[[], float] | None = None
    ) -> None:
        self._files = files
        self._passed: tuple[Stamp, Hashable] | None = None
        self._count_seconds = count_seconds
        self._now = now or time.monotonic
        self._counted_at = -math.inf  # when a count last matched, through a server

    def checks(
        self, checks: Sequence[Callable[[], bool]], state: Hashable, *, count: Callable[[], bool] | None = None
    ) -> list[Callable[[], bool]]:
        """The checks still to make; ``state`` is what else they depend on (the copies' sizes).

        ``count`` is the check comparing Chroma's count with the copy's, spaced out through a server.
        """
        every = [*([count] if count is not None else []), *checks]
        if self._files is None:  # a server: no files to look at
            return [*self._spaced(count), *checks] if count is not None else every
        stamp = self._files.stamp()
        if stamp is None:  # written within QUIET_SECONDS: both reads, as another process may have deleted
            return every
        key = (stamp, state)
        if key == self._passed:
            return []
        results: list[bool] = []
        lock = threading.Lock()

        def noting(check: Callable[[], bool]) -> Callable[[], bool]:
            def run() -> bool:
                passed = check()
                with lock:
                    results.append(passed)
                    if len(results) == len(every) and all(results):
                        self._passed = key
                return passed

            return run

        return [noting(check) for check in every]

    def _spaced(self, count: Callable[[], bool]) -> list[Callable[[], bool]]:
        """``count`` unless one matched within ``count_seconds``; noting when this one matches."""
        started = self._now()
        if started - self._counted_at < self._count_seconds:
            return []

        def run() -> bool:
            matched = count()
            if matched:
                self._counted_at = max(self._counted_at, started)
            return matched

        return [run]


__all__ = ["COUNT_SECONDS", "DATABASE_FILE", "QUIET_SECONDS", "CurrencyMemo", "StoreFiles", "store_files"]
