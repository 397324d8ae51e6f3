"""The ONNX export cache: where exports live, how one is named and found, and the sidecar beside each.

An export is cached on disk, keyed by the model's files and the exporter versions
(``model_fingerprint``), so a process pays the export only the first time a model is used on
a machine. Beside it a JSON sidecar keeps what running it needs (``ExportInfo``: embedding
dimension, maximum sequence length, lower-case flag, the graph's input names, the
``tokenizer.json`` and its padding). Finding a cached export (``cached_export``) imports
neither torch nor transformers. Files are written under temporary names and renamed
(``temp_file``, ``write_file``), so a process never reads another's half-written file; a cache
directory that cannot be written gives way to a private one for this process (``private_dir``).

What makes an export is ``export.py``; what runs one is ``encoder.py``; the int8 copy beside
it is ``quantize.py``. All of them report a model the ONNX path cannot serve with
``OnnxUnavailable``.
"""

from __future__ import annotations

import atexit
import functools
import hashlib
import importlib.metadata
import json
import logging
import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

logger = logging.getLogger(__name__)

OPSET = 17
# Bump when the exported graph or its sidecar changes: old cache files are then ignored.
# 2: a JSON sidecar beside each export; the fingerprint reads versions from package metadata.
EXPORT_FORMAT = 2
# Bump when the graph ``build.py`` writes changes.
BUILD_FORMAT = 1
_KEY_SUFFIXES = (".safetensors", ".bin", ".pt", ".pth", ".json")
INSTALL_HINT = "pip install 'hindsight-integrations[local]'"


class OnnxUnavailable(Exception):
    """The ONNX path cannot serve this model here; the message says why."""


def cache_root(explicit: str | os.PathLike[str] | None = None) -> Path:
    """Where exported models live: ``explicit``, else ``HINDSIGHT_CACHE_DIR``, else the user cache.

    The environment is read here as well as in ``Settings`` because ``LocalEmbedder`` is
    often built directly (benchmarks, tests, adapters) without a ``Settings`` object.
    """
    if explicit:
        return Path(explicit).expanduser()
    if env := os.environ.get("HINDSIGHT_CACHE_DIR"):
        return Path(env).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg) if xdg else Path.home() / ".cache") / "hindsight"


@functools.cache
def _exporter_versions() -> tuple[str, str]:
    """torch's and transformers' versions, read from package metadata: importing them to ask costs seconds."""
    return installed_version("torch"), installed_version("transformers")


def installed_version(package: str) -> str:
    """``package``'s version from its metadata (no import), or ``"absent"``: part of the cache keys."""
    try:
        return importlib.metadata.version(package)
    except importlib.metadata.PackageNotFoundError:
        return "absent"


def model_fingerprint(path: str, exporter: str = "torch") -> str:
    """A short hash of what the exported graph depends on: the model's files and the exporter.

    Computed without importing torch or transformers, so a process can find its cached
    export before deciding whether it needs them at all. ``exporter`` is ``"torch"``
    (``export.py``: torch's and transformers' versions are part of the key) or ``"build"``
    (``build.py``: its own format number is, and torch is not).
    """
    root = Path(path)
    if not root.is_dir():
        raise OnnxUnavailable(f"{path!r} is not a local model directory")
    files = []
    for file in sorted(root.rglob("*")):
        relative = file.relative_to(root)
        if file.suffix in _KEY_SUFFIXES and file.is_file() and not any(p.startswith(".") for p in relative.parts):
            stat = file.stat()
            files.append([str(relative), stat.st_size, stat.st_mtime_ns])
    made_by = list(_exporter_versions()) if exporter == "torch" else [exporter, BUILD_FORMAT]
    key = [str(root.resolve()), files, *made_by, OPSET, EXPORT_FORMAT]
    return hashlib.sha256(json.dumps(key).encode()).hexdigest()[:20]


def export_stem(path: str, exporter: str = "torch") -> str:
    """The cache file name of the model at ``path``, without suffix: its directory's name and fingerprint."""
    return f"{os.path.basename(path.rstrip('/')) or 'model'}-{model_fingerprint(path, exporter)}"


def sidecar_for(file: Path) -> Path:
    """The JSON sidecar of the export ``file`` (same name, ``.json``)."""
    return file.with_suffix(".json")


@dataclass(frozen=True)
class ExportInfo:
    """What running an export needs, kept in its JSON sidecar so that no model is loaded to learn it.

    ``dimension`` lets a store check its collection's embedding size without running the
    model; the tokenizer fields rebuild, with the ``tokenizers`` library, exactly the
    padding and truncation sentence-transformers applied when the export was checked.
    """

    file: Path
    dimension: int
    max_length: int
    lower_case: bool
    inputs: tuple[str, ...]
    tokenizer: Path
    pad_id: int = 0
    pad_token: str = "[PAD]"
    pad_type_id: int = 0
    padding_side: str = "right"
    truncation_side: str = "right"

    def to_json(self) -> dict[str, Any]:
        """The sidecar's content; ``onnx`` names the export so a sidecar is never paired with another file."""
        return {
            "format": EXPORT_FORMAT,
            "onnx": self.file.name,
            "dimension": self.dimension,
            "max_seq_length": self.max_length,
            "lower_case": self.lower_case,
            "inputs": list(self.inputs),
            "tokenizer": str(self.tokenizer),
            "padding": {
                "pad_id": self.pad_id,
                "pad_token": self.pad_token,
                "pad_type_id": self.pad_type_id,
                "side": self.padding_side,
            },
            "truncation": {"side": self.truncation_side},
        }

    @classmethod
    def read(cls, file: Path) -> ExportInfo | None:
        """The sidecar of ``file``, or None when either is missing, unreadable or of another format.

        None means "export again": an old cache file without a sidecar, or a sidecar whose
        tokenizer file has gone, is replaced on the next export rather than trusted.
        """
        try:
            data = json.loads(sidecar_for(file).read_text(encoding="utf-8"))
            if data.get("format") != EXPORT_FORMAT or data.get("onnx") != file.name:
                return None
            padding, truncation = data.get("padding", {}), data.get("truncation", {})
            info = cls(
                file=file,
                dimension=int(data["dimension"]),
                max_length=int(data["max_seq_length"]),
                lower_case=bool(data["lower_case"]),
                inputs=tuple(str(n) for n in data["inputs"]),
                tokenizer=Path(data["tokenizer"]),
                pad_id=int(padding.get("pad_id", 0)),
                pad_token=str(padding.get("pad_token", "[PAD]")),
                pad_type_id=int(padding.get("pad_type_id", 0)),
                padding_side=str(padding.get("side", "right")),
                truncation_side=str(truncation.get("side", "right")),
            )
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            return None
        if info.dimension <= 0 or not file.is_file() or not info.tokenizer.is_file():
            return None
        return info


def cached_export(
    path: str, cache_dir: str | os.PathLike[str] | None = None, exporters: tuple[str, ...] = ("build", "torch")
) -> ExportInfo | None:
    """The cached graph of the model at ``path`` with its sidecar, or None. Loads no model, imports no torch.

    A graph ``build.py`` wrote is preferred to a torch export of the same model: it is what a
    torch-free install makes, so every machine runs the same graph whether torch is there or not.
    """
    try:
        stems = [export_stem(path, exporter) for exporter in exporters]
    except (OnnxUnavailable, OSError):
        return None
    for stem in stems:
        for directory in (cache_root(cache_dir) / "onnx", _private):
            if directory is not None and (info := ExportInfo.read(directory / f"{stem}.onnx")) is not None:
                return info
    return None


def temp_file(directory: Path, name: str) -> str:
    """A new empty temporary file in ``directory`` for ``name``, hidden, to be renamed onto it when complete."""
    handle, temp = tempfile.mkstemp(prefix=f".{name}.", suffix=".tmp", dir=directory)
    os.close(handle)
    return temp


def write_file(target: Path, text: str) -> None:
    """Write ``text`` to ``target`` through a temporary file and a rename: readers see all of it or nothing."""
    temp = temp_file(target.parent, target.name)
    try:
        Path(temp).write_text(text, encoding="utf-8")
        os.chmod(temp, 0o644)
        os.replace(temp, target)
    finally:
        if os.path.exists(temp):
            os.unlink(temp)


def new_cache_file(cache_dir: str | os.PathLike[str] | None, name: str) -> tuple[Path, str]:
    """The directory ``name`` goes in and an empty temporary file there to write it to, then rename.

    The cache's ``onnx`` directory, or this process's private one when it cannot be written.
    """
    directory = cache_root(cache_dir) / "onnx"
    try:
        directory.mkdir(parents=True, exist_ok=True)
        return directory, temp_file(directory, name)
    except OSError as exc:
        logger.warning("ONNX cache %s is not writable (%s); writing %s to a temporary directory", directory, exc, name)
        directory = private_dir()
        return directory, temp_file(directory, name)


_private: Path | None = None


def private_dir() -> Path:
    """This process's own cache directory, made on first use and removed at exit: for a cache that cannot be written."""
    global _private
    if _private is None:
        _private = Path(tempfile.mkdtemp(prefix="hindsight-onnx-"))
        atexit.register(shutil.rmtree, _private, ignore_errors=True)
    return _private


__all__ = [
    "BUILD_FORMAT",
    "EXPORT_FORMAT",
    "INSTALL_HINT",
    "OPSET",
    "ExportInfo",
    "OnnxUnavailable",
    "cache_root",
    "cached_export",
    "export_stem",
    "installed_version",
    "model_fingerprint",
    "new_cache_file",
    "private_dir",
    "sidecar_for",
    "temp_file",
    "write_file",
]
