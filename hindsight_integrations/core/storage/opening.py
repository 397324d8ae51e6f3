"""Opening Chroma: a server at a URL, retried until it answers, or a local directory.

A local store is a ``chromadb.PersistentClient`` over a directory, checked writable first and
its SQLite file put in write-ahead-log mode. A directory belongs to one process: processes that
share a store share a Chroma server (README, "Deployment").
"""

from __future__ import annotations

import contextlib
import logging
import tempfile
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

from tenacity import RetryError, retry, stop_after_attempt, wait_exponential

from ..errors import StoreUnavailableError
from .quiet_files import DATABASE_FILE

log = logging.getLogger(__name__)


def open_client(*, path: Path | None = None, url: str | None = None, attempts: int = 5, timeout: float = 10.0) -> Any:
    """Open Chroma: a server at ``url`` (retried with backoff until it answers), else a local path."""
    import chromadb

    if url:
        parsed = urlparse(url)
        host = parsed.hostname or "127.0.0.1"
        port, ssl = parsed.port or (443 if parsed.scheme == "https" else 8000), parsed.scheme == "https"

        @retry(stop=stop_after_attempt(attempts), wait=wait_exponential(multiplier=0.2, max=5), reraise=False)
        def connect() -> Any:
            client = chromadb.HttpClient(host=host, port=port, ssl=ssl, settings=_client_settings(timeout))
            client.heartbeat()
            return client

        try:
            return connect()
        except RetryError as exc:
            cause = exc.last_attempt.exception()
            raise StoreUnavailableError(
                f"Chroma server at {url} did not answer after {attempts} attempts ({cause}). "
                "Start it (`chroma run --path DIR --port 8000`) or fix the URL (--chroma-url or HINDSIGHT_CHROMA_URL)."
            ) from None
    if path is None:
        raise StoreUnavailableError("no store given: pass a path (HINDSIGHT_STORE) or a Chroma server URL")
    # Chroma keeps one client per path *string* in a process: an absolute path makes the relative
    # default (./.hindsight) mean the current directory's store, not the one first opened under that name.
    path = Path(path).resolve()
    _check_writable(path)
    _write_ahead_log(path)
    try:
        return chromadb.PersistentClient(path=str(path), settings=_client_settings())
    except Exception as exc:
        raise StoreUnavailableError(f"could not open the Chroma store at {path}: {exc}") from exc


def _client_settings(timeout: float | None = None) -> Any:
    import chromadb

    settings = chromadb.Settings(anonymized_telemetry=False)
    if timeout is not None and hasattr(settings, "chroma_server_http_timeout"):
        settings.chroma_server_http_timeout = timeout
    return settings


_OPENED: set[Path] = set()  # stores this process has opened (Chroma keeps one client per path)


def _write_ahead_log(path: Path) -> None:
    """Put the store's SQLite file in write-ahead-log mode, once (SQLite keeps the mode in the file).

    Chroma creates it in rollback-journal mode, where every commit writes and syncs a journal
    and the database, and deletes the journal: a conversation commits once a turn, and a one-turn
    ``add`` took ~7 ms, ~1.5 ms of it those extra syncs (5.4 ms in WAL mode, measured on this
    machine). Commits stay durable (``synchronous`` is FULL). A file another connection holds
    (Chroma already opened it in this process) is left as it is; a copy of the store must now
    include ``chroma.sqlite3-wal`` while the store is open.
    """
    import sqlite3

    database = path / DATABASE_FILE
    if path in _OPENED:
        return  # Chroma's own connections hold it: never touch the file under them
    _OPENED.add(path)
    try:
        path.mkdir(parents=True, exist_ok=True)
        with contextlib.closing(sqlite3.connect(database, timeout=0.1)) as connection:
            if connection.execute("PRAGMA journal_mode").fetchone()[0] != "wal":
                connection.execute("PRAGMA journal_mode=WAL")
    except (sqlite3.Error, OSError) as exc:
        log.debug("left the journal mode of %s as it is: %s", database, exc)


def _check_writable(path: Path) -> None:
    if path.exists() and not path.is_dir():
        raise StoreUnavailableError(
            f"the store path {str(path)!r} is a file, not a directory; "
            "choose a directory with --store or HINDSIGHT_STORE"
        )
    try:
        path.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=path, prefix=".write-test-"):
            pass
    except OSError as exc:
        raise StoreUnavailableError(
            f"the store path {str(path)!r} is not writable ({exc.strerror or exc}); "
            "choose another with --store or HINDSIGHT_STORE"
        ) from None


__all__ = ["open_client"]
