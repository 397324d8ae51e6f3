"""`hindsight export`, `hindsight import` and `hindsight reembed`: a namespace to a JSON document and back."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated, Any

import typer

from ..core.config import validate_namespace
from ..core.errors import HindsightError, InvalidInputError, InvalidRecordsError
from ..terminal import check_output_file, console, err_console, fail, progress_bar, reported
from . import options
from .options import NamespaceOption


def export(
    out: Annotated[Path | None, typer.Option("--out", "-o", help="File to write (default: stdout).")] = None,
    embeddings: Annotated[bool, typer.Option(help="Include vectors (faster re-import with the same model).")] = True,
    namespace: NamespaceOption = None,
) -> None:
    """Export the namespace as JSON (every status, every field)."""
    with reported():
        settings = options.settings(namespace)
        if out is not None:
            check_output_file(out, "--out")
        engine = options.written(options.engine(settings))
        with progress_bar() as progress:
            data = engine.export(include_embeddings=embeddings, progress=progress)
            text = json.dumps(data, ensure_ascii=False)
            if out is not None:
                try:
                    out.write_text(text, encoding="utf-8")
                except OSError as exc:
                    raise InvalidInputError("--out", f"cannot write {out}: {exc.strerror or exc}") from None
    if out is not None:
        err_console.print(f"exported {len(data['records'])} memories to {out}")
    else:
        sys.stdout.write(text + "\n")


def _read_export(file: Path) -> dict[str, Any]:
    """The export document in ``file``, or an error saying what the file is instead."""
    from ..core.backup import EXPORT_FORMAT

    try:
        text = file.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise HindsightError(f"{file} is not UTF-8 text, so not a file written by `hindsight export`") from None
    except OSError as exc:
        raise HindsightError(f"cannot read {file}: {exc.strerror or exc}") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise HindsightError(
            f"{file} is not valid JSON ({exc.msg} at line {exc.lineno}, column {exc.colno}); "
            "give a file written by `hindsight export`"
        ) from None
    if not isinstance(data, dict) or data.get("format") != EXPORT_FORMAT:
        if isinstance(data, dict):
            found = f'its "format" is {data.get("format")!r}, not {EXPORT_FORMAT!r}'
        else:
            found = f"it holds a JSON {_json_kind(data)}, not an object"
        raise HindsightError(f"{file} is not a `hindsight export` document ({found})")
    return data


def _json_kind(value: object) -> str:
    return {list: "array", str: "string", int: "number", float: "number", bool: "boolean"}.get(type(value), "null")


def import_(
    file: Annotated[Path, typer.Argument(help="A file written by `hindsight export`.", exists=True, dir_okay=False)],
    namespace: Annotated[
        str | None,
        typer.Option(
            "--namespace",
            "-n",
            help="Namespace to import into (default: the global --namespace, else the one it was exported from).",
        ),
    ] = None,
) -> None:
    """Import an export into the namespace (re-embeds if the model differs)."""
    with reported():
        target = options.chosen_namespace(namespace)
        settings = options.settings(namespace)
        data = _read_export(file)
        if target is None and data.get("namespace") is not None:
            try:
                target = validate_namespace(data["namespace"], f'{file}: "namespace"')
            except InvalidInputError as exc:
                raise InvalidInputError(exc.field, f"{exc.message}; import it under another with --namespace") from None
        engine = options.engine(settings)
        try:
            with progress_bar() as progress:
                count = engine.import_data(data, namespace=target, progress=progress)
        except InvalidRecordsError as exc:
            fail(
                f"{file}: {exc.bad} of {exc.total} records cannot be imported, so nothing was imported. "
                "Fix or remove them (a file written by `hindsight export` imports as it is):",
                *exc.problems,
            )
    console.print(f"imported {count} memories into namespace {target or settings.namespace}")


def reembed(
    model: Annotated[
        str | None,
        typer.Option(
            "--model",
            "-m",
            help="Model to move to (default: HINDSIGHT_EMBEDDING_MODEL; required when that is auto, the default).",
        ),
    ] = None,
    all_namespaces: Annotated[bool, typer.Option("--all", help="Every namespace in the store.")] = False,
    backup_dir: Annotated[
        Path | None,
        typer.Option("--backup-dir", help="Where each namespace's export is kept (default: beside the store)."),
    ] = None,
    namespace: NamespaceOption = None,
) -> None:
    """Embed a namespace (or --all) again with another model; its export is kept as a backup."""
    from ..core.reembedding import reembed as run

    with reported():
        settings = options.settings(namespace)
        if model is not None:
            settings = settings.model_copy(update={"embedding_model": model})
        folder = backup_dir or _default_backup_dir(settings)
        with progress_bar() as progress:
            results = run(
                settings,
                namespaces=None if all_namespaces else [settings.namespace],
                backup_dir=folder,
                progress=progress,
            )
    for result in results:
        if result.changed:
            console.print(
                f"namespace {result.namespace}: {result.memories} memories embedded again with {result.new_model} "
                f"(were {result.old_model}); their export is kept in {result.backup}"
            )
        else:
            console.print(f"namespace {result.namespace}: {result.left}, left as it is")


def _default_backup_dir(settings: Any) -> Path:
    """Beside an embedded store (``.hindsight`` -> ``.hindsight-reembed``), else in the working directory."""
    if settings.chroma_url:
        return Path("hindsight-reembed")
    store = Path(settings.store)
    return store.with_name(store.name + "-reembed")


__all__ = ["export", "import_", "reembed"]
