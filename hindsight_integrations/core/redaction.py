"""What a log line may say about memory text: its size, a short hash, ids and numbers; never the text.

One HTTP server serves many tenants, and its log goes to whoever runs it (and to their log
pipeline): a memory such as "my bank PIN is 4321" must not reach it, nor a query, metadata
values, entities, context or summaries. Log lines therefore carry ``text_summary`` (length and
an 8-hex-digit hash, enough to correlate two lines about the same text) instead, and error
messages, which may quote what a caller sent (``InvalidInputError`` names the bad value, a
pydantic error echoes the input), pass through ``redact`` first: every quoted span and every
occurrence of a caller's string becomes its summary. Tracebacks keep their frames (code, not
data) and lose their messages the same way (``safe_traceback``).

While a server runs a tool call, ``call_text`` holds the strings that call carried, so any line
logged meanwhile (a warning deep in the engine, a traceback) loses them too, quoted or not.

``HINDSIGHT_LOG_CONTENT=true`` (``Settings.log_content``) turns this off for debugging on a
machine of one's own; it is never safe on a shared server. The switch is process-wide, since
logging is: each ``MemoryEngine`` sets it from its settings as it is built.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import re
import traceback
from collections.abc import Iterable, Iterator
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

_content_in_logs = False


@dataclass(frozen=True)
class CallText:
    """The strings one call carried (``secrets``) and those that may still be shown (``keep``: ids...)."""

    secrets: tuple[str, ...] = ()
    keep: frozenset[str] = frozenset()


_CALL_TEXT: ContextVar[CallText | None] = ContextVar("hindsight_call_text", default=None)
_NO_CALL = CallText()

# A quoted span as repr() and json.dumps() write them, escapes included; one cut short
# (``'my bank PIN is 4…`` then "..." or the end of the message) is a span up to the end.
_QUOTED = re.compile(r"""'(?:[^'\\]|\\.)*(?:'|$)|"(?:[^"\\]|\\.)*(?:"|$)|“[^”]*(?:”|$)""", re.DOTALL)
_SUMMARY = re.compile(r"<#[0-9a-f]{8} \(\d+ chars\)>")
_SHORTEST_SECRET = 4  # shorter caller strings ("u1", "en") would blank out ordinary words of a message


def content_in_logs() -> bool:
    """Whether logs may quote memory text (``HINDSIGHT_LOG_CONTENT``; off by default)."""
    return _content_in_logs


def set_content_in_logs(allowed: bool) -> None:
    """Let logs quote memory text, or not (the engine calls this with ``Settings.log_content``)."""
    global _content_in_logs
    _content_in_logs = bool(allowed)


def fingerprint(text: str) -> str:
    """A short stable hash of ``text``: two log lines about the same text show the same one."""
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=4).hexdigest()


def text_summary(text: str) -> str:
    """``text`` as a log may show it: ``#<hash> (<n> chars)``."""
    return f"#{fingerprint(text)} ({len(text)} chars)"


def caller_strings(value: Any, *, limit: int = 500) -> list[str]:
    """Every string inside ``value`` (arguments: strings, lists, objects, their keys), at most ``limit``."""
    found: list[str] = []

    def walk(item: Any) -> Iterator[str]:
        if isinstance(item, str):
            yield item
        elif isinstance(item, dict):
            for key, inner in item.items():
                yield from walk(key)
                yield from walk(inner)
        elif isinstance(item, (list, tuple, set, frozenset)):
            for inner in item:
                yield from walk(inner)

    for text in walk(value):
        found.append(text)
        if len(found) >= limit:
            break
    return found


@contextlib.contextmanager
def call_text(secrets: Iterable[str], keep: Iterable[str] = ()) -> Iterator[None]:
    """While the block runs (and in the threads it hands work to), ``redact`` also removes ``secrets``."""
    token = _CALL_TEXT.set(CallText(tuple(secrets), frozenset(k for k in keep if k)))
    try:
        yield
    finally:
        _CALL_TEXT.reset(token)


def redact(
    message: str,
    *,
    secrets: Iterable[str] = (),
    keep: Iterable[str] = (),
    quoted: bool = True,
    allow_content: bool | None = None,
) -> str:
    """``message`` with each of ``secrets`` (caller strings) and every quoted span replaced by its summary.

    The strings of the call being served (``call_text``) count as ``secrets`` too. ``keep``
    lists what may stay (ids, the namespace, enum values: an error saying "no memory 'ab12' in
    namespace 'u1'" stays readable); ``quoted=False`` leaves quoted spans alone (our own log
    messages quote namespaces). When content may be logged (``allow_content``, by default
    ``content_in_logs()``) the message is returned as it is.
    """
    if (_content_in_logs if allow_content is None else allow_content) or not message:
        return message
    current = _CALL_TEXT.get() or _NO_CALL
    secrets = [*secrets, *current.secrets]
    kept = {k for k in keep if k} | current.keep
    # Longest first, so a secret that contains another is replaced whole.
    for secret in sorted({s for s in secrets if len(s) >= _SHORTEST_SECRET and s not in kept}, key=len, reverse=True):
        summary = f"<{text_summary(secret)}>"
        for form in dict.fromkeys((secret, json.dumps(secret, ensure_ascii=False)[1:-1], repr(secret)[1:-1])):
            if len(form) >= _SHORTEST_SECRET:
                message = message.replace(form, summary)

    def replace(match: re.Match[str]) -> str:
        span = match.group(0)
        inner = span[1:-1] if len(span) >= 2 and span[-1] in "'\"”" else span[1:]
        if inner in kept or _SUMMARY.fullmatch(inner):
            return span
        return f"<{text_summary(inner)}>"

    return _QUOTED.sub(replace, message) if quoted else message


def describe_error(exc: BaseException) -> str:
    """``Type: message`` of an exception for a log line, its message redacted (see ``redact``)."""
    return f"{type(exc).__name__}: {redact(str(exc))}"


def safe_traceback(exc: BaseException) -> str:
    """The traceback of ``exc`` and what caused it, each exception's message redacted; frames as they are."""
    chain: list[BaseException] = []
    current: BaseException | None = exc
    while current is not None and all(current is not seen for seen in chain) and len(chain) < 10:
        chain.append(current)
        current = current.__cause__ or (None if current.__suppress_context__ else current.__context__)
    parts: list[str] = []
    for n, item in enumerate(reversed(chain)):
        if n:
            parts.append("\nThe above exception led to the following one:\n\n")
        parts.append("Traceback (most recent call last):\n")
        parts.extend(traceback.format_tb(item.__traceback__))
        name = type(item).__qualname__
        module = type(item).__module__
        parts.append(f"{name if module == 'builtins' else f'{module}.{name}'}: {redact(str(item))}\n")
    return "".join(parts).rstrip("\n")


__all__ = [
    "CallText",
    "call_text",
    "caller_strings",
    "content_in_logs",
    "describe_error",
    "fingerprint",
    "redact",
    "safe_traceback",
    "set_content_in_logs",
    "text_summary",
]
