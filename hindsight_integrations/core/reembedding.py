"""Moving a namespace to another embedding model: export, keep the export, drop, import.

A namespace records the model its vectors came from and is never searched with another
model's (``EmbeddingModelMismatchError``), so changing the model of a store that has memories
means embedding every memory again. This does it per namespace with the parts that already
exist: the namespace is exported through an engine of its own model (every record, every
status, no vectors), the export is written to a file first, so nothing can be lost whatever
happens next, then the namespace is dropped and the export imported through an engine of the
new model, which embeds each record and its context frame again (``backup.Backup``).

Every namespace is looked at before any is moved: one that holds no memories (a read of an
older version created it) is left as it is, and one that does not record its model stops the
run before anything changed. A namespace that fails mid-way stops the run with an error naming
the namespaces already moved and those left as they were.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from .config import AUTO_MODEL, DEFAULT_LOCAL_MODEL, Settings
from .embedding.factory import routes_by_script, runs_locally
from .embedding.multilingual import MULTILINGUAL_MODEL
from .engine import MemoryEngine
from .errors import ConfigurationError, HindsightError
from .progress import ProgressCallback, prefixed


@dataclass(frozen=True)
class Reembedded:
    """What happened to one namespace: its old model, how many memories, and where their export is kept."""

    namespace: str
    old_model: str | None
    new_model: str
    memories: int
    backup: Path | None  # None when the namespace was left alone (see ``left``)
    left: str | None = None  # why it was left as it is: it had the new model already, or it holds nothing

    @property
    def changed(self) -> bool:
        """Whether the namespace was embedded again (False: it had the new model already)."""
        return self.backup is not None


def stored_model(engine: MemoryEngine, namespace: str) -> str | None:
    """The embedding model a namespace's collection was written with, or None for one older than that record."""
    return engine.chroma.stored_model(namespace)


def reembed(
    settings: Settings,
    *,
    namespaces: Sequence[str] | None = None,
    backup_dir: Path,
    progress: ProgressCallback | None = None,
) -> list[Reembedded]:
    """Embed ``namespaces`` (default: every one in the store) again with ``settings``' model.

    A namespace already on that model, or holding no memories, is left as it is. The others are
    exported through an engine of their own model to ``backup_dir`` (a JSON file each, kept
    afterwards: ``hindsight import FILE`` with the old model restores one), dropped and imported
    with the new model; ``progress`` is told of each namespace's stages, named ``"<namespace>: <stage>"``.
    """
    if routes_by_script(settings):
        raise ConfigurationError(
            f"re-embedding needs the model to move to, and HINDSIGHT_EMBEDDING_MODEL is {AUTO_MODEL!r} (which picks "
            f"a model for new namespaces only): name one, e.g. --model {MULTILINGUAL_MODEL} or --model "
            f"{DEFAULT_LOCAL_MODEL}"
        )
    target = MemoryEngine(settings, llm=False)
    names = list(namespaces) if namespaces is not None else target.namespaces()
    missing = sorted(set(names) - set(target.namespaces()))
    if missing:
        raise HindsightError(f"no namespace named {', '.join(map(repr, missing))} in this store; nothing was changed")
    planned: dict[str, Reembedded | str | None] = {}  # a result when left alone, else its old model
    for name in names:
        old = stored_model(target, name)
        if old == target.embedder.name:
            planned[name] = Reembedded(name, old, old, 0, None, left=f"already embedded with {old}")
        elif old is None and _holds_nothing(target, name):
            planned[name] = Reembedded(name, None, target.embedder.name, 0, None, left="holds no memories")
        else:
            planned[name] = old
    unrecorded = [name for name, old in planned.items() if old is None]
    if unrecorded:
        raise HindsightError(
            f"namespace {', '.join(map(repr, unrecorded))} does not record its embedding model, so it cannot be "
            "read with the right one; export it with the version that wrote it and import the file. Nothing was changed"
        )
    results: list[Reembedded] = []
    for name, plan in planned.items():
        if isinstance(plan, Reembedded):
            results.append(plan)
            continue
        try:
            results.append(_move(settings, target, name, str(plan), backup_dir, prefixed(progress, name)))
        except HindsightError as exc:
            moved = [r.namespace for r in results if r.changed]
            waiting = list(planned)[len(results) + 1 :]
            raise HindsightError(
                f"{exc}. Moved before it: {', '.join(moved) or 'none'}; not yet moved: {', '.join(waiting) or 'none'}"
            ) from exc
    return results


def _holds_nothing(engine: MemoryEngine, name: str) -> bool:
    """Whether namespace ``name`` holds no memory, in Chroma or in cold storage (a read used to create such ones)."""
    handle = engine.chroma.namespace(name, create=False)
    return (handle is None or handle.count() == 0) and not engine.archived_ids(namespace=name)


def _move(
    settings: Settings,
    target: MemoryEngine,
    name: str,
    old: str,
    backup_dir: Path,
    progress: ProgressCallback | None,
) -> Reembedded:
    provider = "local" if runs_locally(old) else settings.embedding_provider
    source = MemoryEngine(
        settings.model_copy(update={"embedding_model": old, "embedding_provider": provider}), llm=False
    )
    data = source.export(namespace=name, include_embeddings=False, progress=progress)
    backup_dir.mkdir(parents=True, exist_ok=True)
    stamp = target.clock.now().strftime("%Y%m%dT%H%M%S")
    backup = backup_dir / f"{name}.{old.replace('/', '_')}.{stamp}.json"
    backup.write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")
    target.drop_namespace(name)
    try:
        count = target.import_data(data, namespace=name, progress=progress)
    except Exception as exc:
        raise HindsightError(
            f"namespace {name!r} could not be embedded again ({exc}); its memories are in {backup}: "
            f"`hindsight import {backup}` with HINDSIGHT_EMBEDDING_MODEL={old} restores them"
        ) from exc
    return Reembedded(name, old, target.embedder.name, count, backup)


__all__ = ["Reembedded", "reembed", "stored_model"]
