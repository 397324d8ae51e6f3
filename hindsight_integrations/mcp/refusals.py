"""What an adapter does with a message the memory server refuses for its text.

A chat goes on whatever one message holds: a 40 KB paste, a tool result over the size limit,
text left empty once cleaned. So the adapters (LangChain's and LlamaIndex's) recall for the
tail of a long message (``query_tail``) and, when the server refuses a turn's text, log it and
record the rest (``skip_refused_text``). Any other invalid argument (a bad namespace, a bad
filter) is a configuration mistake and is raised.
"""

from __future__ import annotations

import logging

from ..core.errors import InvalidInputError
from ..core.redaction import describe_error

log = logging.getLogger(__name__)

MAX_QUERY_CHARS = 2000
"""How much of a message an adapter recalls for: its end, where a long message's question is."""


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


__all__ = ["MAX_QUERY_CHARS", "query_tail", "rejected_text", "skip_refused_text"]
