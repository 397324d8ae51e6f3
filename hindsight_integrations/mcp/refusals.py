"""What an adapter does with a message the memory server refuses for its text.

A chat goes on whatever one message holds: a 40 KB paste, a tool result over the size limit,
text left empty once cleaned. So the adapters (LangChain's and LlamaIndex's) recall for the
tail of a long message (``query_tail``) and, when the server refuses a turn's text, log it and
record the rest (``skip_refused_text``). A memory whose working window *is* the prompt
(LlamaIndex's chat memory) cannot leave a message out, or the model never sees it: it records
the message ``shortened`` to its beginning and end instead. Any other invalid argument (a bad
namespace, a bad filter) is a configuration mistake and is raised. A server that predates an
argument an adapter sends only to spare the memories' access counts (``touch``) is asked again
without it (``without_touch``).
"""

from __future__ import annotations

import logging
from typing import Any

from ..core.errors import InvalidInputError
from ..core.redaction import describe_error

log = logging.getLogger(__name__)

MAX_QUERY_CHARS = 2000
"""How much of a message an adapter recalls for: its end, where a long message's question is."""


SHORTENED_BYTES = 16_000
"""What a message over the server's size limit is first shortened to: half the default limit (32 KB)."""


def shortened(text: str, max_bytes: int) -> str:
    """``text`` cut to its beginning and end in ``max_bytes`` of UTF-8 (≥ 200), with a line saying what was left out.

    The end gets three quarters of the room: a long paste's question is usually at its end, and
    its beginning says what it is.
    """
    data = text.encode()
    if len(data) <= max_bytes:
        return text
    note = "\n[... {} characters left out here: the message was over the memory server's size limit ...]\n"
    room = max(max_bytes - len(note.format(len(text)).encode()), 0)
    head = data[: room // 4].decode(errors="ignore")
    tail = data[len(data) - (room - room // 4) :].decode(errors="ignore") if room else ""
    return head + note.format(len(text) - len(head) - len(tail)) + tail


def query_tail(text: str) -> str:
    """The last ``MAX_QUERY_CHARS`` characters of ``text``, stripped: what an adapter recalls for."""
    return text.strip()[-MAX_QUERY_CHARS:]


def rejected_text(exc: InvalidInputError, *fields: str) -> bool:
    """Whether the server refused the message text itself (too large, empty after cleaning), in ``fields``."""
    field = getattr(exc, "field", None) or ""
    return any(field == f or field.endswith(f".{f}") for f in fields)


def skip_refused_text(exc: InvalidInputError, what: str = "message") -> None:
    """Log ``what`` as not recorded when ``exc`` refused its text (``content``); raise ``exc`` otherwise."""
    if not rejected_text(exc, "content"):
        raise exc
    log.warning("%s not recorded in memory: %s", what, describe_error(exc))


def without_touch(refused: InvalidInputError, args: dict[str, Any]) -> dict[str, Any]:
    """Recall ``args`` without ``touch`` for a server that predates it and refused it; any other refusal is raised."""
    if getattr(refused, "field", None) != "touch" or "touch" not in args:
        raise refused
    return {name: value for name, value in args.items() if name != "touch"}


__all__ = [
    "MAX_QUERY_CHARS",
    "SHORTENED_BYTES",
    "query_tail",
    "rejected_text",
    "shortened",
    "skip_refused_text",
    "without_touch",
]
