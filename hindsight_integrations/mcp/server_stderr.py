"""What a spawned stdio server said on stderr, and which of it says why the server stopped.

A server that refuses its configuration or crashes prints why on stderr and exits; the client
only sees the connection close. Why is seldom the last line, though: a traceback is followed by
the shutdown's log lines, an error is logged before "server stopped". So the client keeps the
last lines the server wrote and its error quotes the ones that say why: each traceback's
exception ("RuntimeError: database is locked", the leaves of an exception group rather than
the group), error-level log lines (plain "ERROR ..." or our JSON log's ``"level": "error"``,
with its exception's last line) and a CLI's own refusal ("hindsight mcp: invalid
configuration"). Only when none of those is there is the last line quoted.
"""

from __future__ import annotations

import json
import os
import re
import threading
from collections import deque
from collections.abc import Iterable, Sequence
from typing import Any, TextIO

KEPT_LINES = 400
"""The last lines of stderr kept to read why the server stopped: a deep traceback and the log after it."""
QUOTED_LINES = 3
"""At most this many lines are quoted (the latest): a crash's cause and its consequences, not its log."""
QUOTED_CHARS = 300

_TRACEBACK = "Traceback (most recent call last):"
_GROUP_MARGIN = re.compile(r"^\s*\| ?")  # an exception group's sub-traceback lines: "  | ..."
_GROUP_RULE = re.compile(r"^\s*\+[-+]")  # "  +-+---- 1 ----", "    +--------"
_GROUP_WRAPPER = re.compile(r"^(?:[\w.]+\.)?(?:Base)?ExceptionGroup: ")
_CHAINED = ("During handling of the above exception", "The above exception was the direct cause")
_LEVEL_WORD = re.compile(r"\b(?:ERROR|CRITICAL|FATAL)\b")
_OPENS_WITH_ERROR = re.compile(r"^(?:[\w.-]+(?: [\w.-]+)?: )?(?:error|fatal|critical)\b", re.IGNORECASE)
_BARE_EXCEPTION = re.compile(r"^[A-Za-z_][\w.]*(?:Error|Exception)(?::|$)")
_OWN_REFUSAL = re.compile(r"^hindsight\b[\w -]{0,30}: ")  # ``__main__``'s one line before exit status 2
_ERROR_LEVELS = frozenset({"error", "critical", "fatal", "emergency", "alert"})


def why_it_stopped(lines: Sequence[str]) -> str:
    """The lines of ``lines`` (a server's stderr, oldest first) that say why it stopped, joined by " | ".

    The latest ``QUOTED_LINES`` of them, each cut to ``QUOTED_CHARS``; the last non-empty line
    when none says why; "" when there is no line at all.
    """
    telling: list[str] = []
    for line in _telling_lines(lines):
        if not telling or telling[-1] != line:
            telling.append(line)
    if not telling:
        telling = [line.strip() for line in lines if line.strip()][-1:]
    return " | ".join(_cut(line) for line in telling[-QUOTED_LINES:])


def _telling_lines(lines: Iterable[str]) -> Iterable[str]:
    in_traceback = False
    for line in lines:
        if not line.strip():
            continue
        logged = _json_object(line)
        if logged is not None:
            in_traceback = False
            if (said := _logged_error(logged)) is not None:
                yield said
            continue
        if _TRACEBACK in line:
            in_traceback = True
            continue
        if in_traceback:
            exception = _exception_line(line)
            if exception is not None:
                in_traceback = False
                if not _GROUP_WRAPPER.match(exception):
                    yield exception
            continue
        text = line.strip()
        if _LEVEL_WORD.search(text) or any(p.match(text) for p in (_OPENS_WITH_ERROR, _BARE_EXCEPTION, _OWN_REFUSAL)):
            yield text


def _exception_line(line: str) -> str | None:
    """``line`` as a traceback's closing exception line ("KeyError: 'x'"); None for a frame or a separator."""
    if _GROUP_RULE.match(line):
        return None
    body = _GROUP_MARGIN.sub("", line, count=1)
    if not body.strip() or body[0].isspace() or body.startswith(_CHAINED):
        return None
    return body.strip()


def _json_object(line: str) -> dict[str, Any] | None:
    text = line.strip()
    if not (text.startswith("{") and text.endswith("}")):
        return None
    try:
        found = json.loads(text)
    except ValueError:
        return None
    return found if isinstance(found, dict) else None


def _logged_error(logged: dict[str, Any]) -> str | None:
    """A JSON log line at error level as "event: its exception's last line"; None below error level."""
    level = str(logged.get("level") or logged.get("levelname") or logged.get("severity") or "").lower()
    if level not in _ERROR_LEVELS:
        return None
    said = str(logged.get("event") or logged.get("message") or logged.get("msg") or json.dumps(logged))
    exception = logged.get("exception") or logged.get("exc_info")
    if isinstance(exception, str):
        closing = [found for found in _telling_lines(exception.splitlines()) if found]
        if closing:
            said += f": {closing[-1]}"
    return said


def _cut(line: str) -> str:
    return line if len(line) <= QUOTED_CHARS else f"{line[: QUOTED_CHARS - 3]}..."


class StderrTail:
    """Pass a spawned server's stderr on to ``errlog`` line by line, keeping the last ``KEPT_LINES``.

    Kept so that the client's error can say why the server stopped (``why_it_stopped``)
    instead of only "connection closed".
    """

    def __init__(self, errlog: TextIO) -> None:
        self._errlog = errlog
        self._lines: deque[str] = deque(maxlen=KEPT_LINES)
        read_end, write_end = os.pipe()
        self.child_end = os.fdopen(write_end, "w")
        """What the child writes to; close it once the child is started (the child keeps its copy)."""
        self._thread = threading.Thread(target=self._pump, args=(read_end,), name="hindsight-stderr", daemon=True)
        self._thread.start()

    def _pump(self, read_end: int) -> None:
        with os.fdopen(read_end, encoding="utf-8", errors="replace") as lines:
            for line in lines:
                self._lines.append(line.rstrip("\r\n"))
                try:
                    self._errlog.write(line)
                    self._errlog.flush()
                except (OSError, ValueError):  # errlog closed or gone: keep reading, or the child blocks
                    pass

    def last_words(self, wait: float = 1.0) -> str | None:
        """Why the child stopped, once its stderr is closed (it exited) within ``wait`` s; else None.

        "" when it exited without writing a line.
        """
        self._thread.join(wait)
        return None if self._thread.is_alive() else why_it_stopped(list(self._lines))


__all__ = ["StderrTail", "why_it_stopped"]
