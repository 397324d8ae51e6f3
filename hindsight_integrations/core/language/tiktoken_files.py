"""tiktoken encodings from this machine's cache, never downloaded, and the check of ``HINDSIGHT_TOKENIZER``.

tiktoken fetches an encoding's file from the network the first time it is asked for it, then keeps
it in its cache (``TIKTOKEN_CACHE_DIR``, else ``<tmp>/data-gym-cache``). The engine runs offline, so
a counter is built only from a file already there: an encoding that would need a download is a
configuration error at start-up that says how to get the file, not a network call (or a hang)
in the middle of a command.
"""

from __future__ import annotations

import os
import tempfile
import threading
from difflib import get_close_matches
from typing import Any

from ..errors import ConfigurationError

ESTIMATE = "estimate"
"""The counter that needs nothing: ``tokens.estimate_tokens``."""

_NO_DOWNLOAD = threading.Lock()


class _WouldDownload(Exception):
    """tiktoken asked for a file by URL: it is not in the cache."""


def offline_encoding(name: str) -> Any:
    """The tiktoken ``Encoding`` called ``name``, read from tiktoken's cache; else a ConfigurationError saying why."""
    try:
        import tiktoken
    except ImportError:
        raise ConfigurationError(
            f"{name!r} is a tiktoken encoding, and tiktoken is not installed: "
            f"pip install 'hindsight-integrations[tokens]', or count with {ESTIMATE!r}"
        ) from None
    known = tiktoken.list_encoding_names()
    if name not in known:
        close = get_close_matches(name, [ESTIMATE, *known], n=1)
        raise ConfigurationError(
            f"{name!r} is not a token counter{f' (did you mean {close[0]!r}?)' if close else ''}: "
            f"use one that works offline here: {_listed(offline_counters())} (tiktoken's own, once its file is "
            f"in tiktoken's cache: {', '.join(known)})"
        )
    encoding = _cached(name)
    if encoding is None:
        raise ConfigurationError(
            f"the tiktoken encoding {name!r} is not in tiktoken's cache ({cache_dir()}) and nothing is downloaded: "
            f"fetch it once with network (python -c \"import tiktoken; tiktoken.get_encoding('{name}')\", with "
            f"TIKTOKEN_CACHE_DIR set to a directory that is kept), or use one that works offline here: "
            f"{_listed(offline_counters())}"
        )
    return encoding


def offline_counters() -> list[str]:
    """``estimate`` and every tiktoken encoding this machine can load without the network."""
    try:
        import tiktoken
    except ImportError:
        return [ESTIMATE]
    return [ESTIMATE, *(name for name in tiktoken.list_encoding_names() if _cached(name) is not None)]


def _cached(name: str) -> Any:
    """tiktoken's encoding ``name`` if its files are in the cache, else None: never a download.

    tiktoken has no offline switch, so its one downloading function (``tiktoken.load.read_file``,
    called only when the cache lacks a file) is swapped for one that refuses URLs while the
    encoding loads; a loaded encoding is kept by tiktoken and asked for again at no cost.
    """
    import tiktoken
    import tiktoken.load

    with _NO_DOWNLOAD:
        download = tiktoken.load.read_file

        def cached_only(blobpath: str) -> bytes:
            if "://" in blobpath:
                raise _WouldDownload(blobpath)
            return download(blobpath)  # a local file, as a plugin may name

        tiktoken.load.read_file = cached_only
        try:
            return tiktoken.get_encoding(name)
        except _WouldDownload:
            return None
        finally:
            tiktoken.load.read_file = download


def check_tokenizer(name: str) -> str:
    """``name`` if a counter can be built from it here and now (``estimate``, or a cached encoding)."""
    if name != ESTIMATE:
        offline_encoding(name)
    return name


def cache_dir() -> str:
    """Where tiktoken keeps downloaded encodings: where it looks for them (``tiktoken.load.read_file_cached``)."""
    return os.environ.get(
        "TIKTOKEN_CACHE_DIR",
        os.environ.get("DATA_GYM_CACHE_DIR", os.path.join(tempfile.gettempdir(), "data-gym-cache")),
    )


def _listed(names: list[str]) -> str:
    return ", ".join(repr(n) for n in names)


__all__ = ["ESTIMATE", "cache_dir", "check_tokenizer", "offline_counters", "offline_encoding"]
