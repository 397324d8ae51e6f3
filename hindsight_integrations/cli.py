"""The `hindsight` command: demo, add, recall, dump, export, import, stats, compress, maintain, consolidate, review,
restore, serve, token, ui, bench.

Global options pick the store (``--store PATH`` or ``--chroma-url URL``) and namespace;
they default to ``HINDSIGHT_*`` environment variables, then ``./.hindsight`` and
``default``. Every command that works on a namespace also takes ``--namespace`` itself
(``hindsight stats -n alice``), which wins over the global one.

Errors are one line on stderr naming what to fix and where the bad value came from (an
option or an environment variable), with exit code 2, also when a command had nothing to
act on (an unknown id); never a traceback, unless ``--debug``. Results go to stdout;
progress bars and spinners go to stderr, and only when it is a terminal (``terminal.py``).

Start-up is kept short (see ``hindsight bench startup``): this module imports only typer,
rich and the settings; the engine (Chroma), the MCP server and the benchmarks are imported
inside the commands that use them, and every command checks its settings and arguments
before it builds the engine, so a typo costs milliseconds, not a model load.
"""

from __future__ import annotations

import json
import os
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from .bench.commands import bench_app
from .core.config import load_settings
from .core.errors import HindsightError, InvalidInputError
from .terminal import (
    EXIT_ERROR,
    check_output_file,
    console,
    debug,
    err_console,
    error_line,
    fail,
    progress_bar,
    reported,
    spinner,
)

if TYPE_CHECKING:
    from rich.table import Table

    from .core.config import Settings
    from .core.engine import MemoryEngine
    from .core.upkeep.runner import UpkeepReport

app = typer.Typer(
    help="Hindsight: long-term memory for LLM agents.", no_args_is_help=True, pretty_exceptions_enable=False
)
app.add_typer(bench_app, name="bench")

# Where each global option's value came from, for error messages (see ``load_settings``).
_SOURCES = {"store": "--store", "chroma_url": "--chroma-url", "namespace": "--namespace"}

NamespaceOption = Annotated[
    str | None,
    typer.Option(
        "--namespace", "-n", help="Namespace / user (default: the global --namespace, else env HINDSIGHT_NAMESPACE)."
    ),
]


class _Options:
    store: Path | None = None
    chroma_url: str | None = None
    namespace: str | None = None


_opts = _Options()


@app.callback()
def _global(
    store: Annotated[
        Path | None, typer.Option("--store", help="Embedded Chroma directory (env HINDSIGHT_STORE).")
    ] = None,
    chroma_url: Annotated[
        str | None, typer.Option("--chroma-url", help="Chroma server URL (env HINDSIGHT_CHROMA_URL).")
    ] = None,
    namespace: Annotated[
        str | None, typer.Option("--namespace", "-n", help="Namespace / user (env HINDSIGHT_NAMESPACE).")
    ] = None,
    show_tracebacks: Annotated[
        bool, typer.Option("--debug", help="Show the traceback of an error instead of one line (env HINDSIGHT_DEBUG).")
    ] = False,
) -> None:
    _opts.store, _opts.chroma_url, _opts.namespace = store, chroma_url, namespace
    debug.tracebacks = show_tracebacks or os.environ.get("HINDSIGHT_DEBUG", "").lower() in ("1", "true", "yes")


def _namespace(option: str | None) -> str | None:
    """The namespace a command was given: its own ``--namespace``, else the global one, else None (from the env)."""
    return option if option is not None else _opts.namespace


def _settings(namespace: str | None = None) -> Settings:
    """The options and environment as validated settings; an error names the option or variable to fix."""
    return load_settings(
        store=_opts.store, chroma_url=_opts.chroma_url, namespace=_namespace(namespace), sources=_SOURCES
    )


def _engine(settings: Settings) -> MemoryEngine:
    """The engine, built only once the command's arguments passed their checks (it imports Chroma).

    The first use of the local model on a machine exports it to ONNX (10-30 s): a spinner says so.
    """
    from .core.embedding.factory import slow_model_start
    from .core.engine import MemoryEngine

    with spinner(slow_model_start(settings)):
        return MemoryEngine(settings)


def _as_option(exc: InvalidInputError, options: dict[str, str]) -> InvalidInputError:
    """``exc`` naming the option the user typed (``--ttl``) instead of the engine's field (``ttl_seconds``)."""
    return InvalidInputError(options.get(exc.field, exc.field), exc.message)


@app.command()
def demo(
    namespace: Annotated[str, typer.Option(help="Namespace the demo writes into (reset first).")] = "demo",
    today: Annotated[
        datetime | None,
        typer.Option(formats=["%Y-%m-%d"], help="Play the demo as if today were this date (default: today)."),
    ] = None,
) -> None:
    """Run the offline demo: two sessions teach, a new session recalls."""
    from .core.config import validate_namespace

    with reported():
        settings = _settings()
        validate_namespace(namespace, "--namespace")
        from .demo import run_demo

        when = today.replace(hour=12, tzinfo=UTC) if today is not None else None
        run_demo(_engine(settings), namespace=namespace, console=console, today=when)


_ADD_OPTIONS = {"kind": "--kind", "importance": "--importance", "session_id": "--session", "ttl_seconds": "--ttl"}


@app.command()
def add(
    content: Annotated[str, typer.Argument(help="Text to remember.")],
    kind: Annotated[str | None, typer.Option(help="preference|context|fact|correction|event|summary")] = None,
    importance: Annotated[float | None, typer.Option(min=0, max=1)] = None,
    session: Annotated[str | None, typer.Option(help="Session id.")] = None,
    ttl: Annotated[int | None, typer.Option(help="Expire after this many seconds.")] = None,
    force: Annotated[bool, typer.Option(help="Store even if the write filter would skip it.")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
    namespace: NamespaceOption = None,
) -> None:
    """Store one memory (through the write filter unless --force)."""
    from .core.model.inputs import parse_inputs
    from .core.model.limits import InputLimits

    given: dict[str, Any] = {"kind": kind, "importance": importance, "session_id": session, "ttl_seconds": ttl}
    fields = {k: v for k, v in given.items() if v is not None}
    with reported():
        settings = _settings(namespace)
        try:
            parse_inputs({"content": content, **fields}, limits=InputLimits.from_settings(settings))
        except InvalidInputError as exc:
            raise _as_option(exc, _ADD_OPTIONS) from None
        result = _engine(settings).store(content, apply_filter=not force, **fields)
    if as_json:
        console.print_json(result.model_dump_json())
        return
    for record in result.stored:
        console.print(
            f"[green]stored[/green] {record.id} ({record.tier.value}/{record.kind.value}, "
            f"importance {record.importance:.2f})"
        )
    for skipped in result.skipped:
        console.print(f"[yellow]skipped[/yellow]: {skipped.reason} (use --force to store anyway)")
    for old in result.superseded:
        console.print(f"[dim]superseded {old}[/dim]")


@app.command()
def recall(
    query: Annotated[str, typer.Argument(help="What to recall.")],
    top_k: Annotated[int, typer.Option("--top-k", "-k", help="How many memories.")] = 5,
    budget: Annotated[int | None, typer.Option(help="Token budget for the context block.")] = None,
    history: Annotated[bool, typer.Option("--history", help="Include superseded memories.")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
    namespace: NamespaceOption = None,
) -> None:
    """Recall the memories most relevant to a query."""
    from .core.model.arguments import whole_number
    from .core.model.inputs import validate_content
    from .core.model.limits import MAX_TOKENS

    with reported():
        settings = _settings(namespace)
        validate_content(query, max_bytes=settings.max_content_bytes, field="query")
        try:
            whole_number(top_k, "--top-k", low=1, high=settings.max_top_k)
        except InvalidInputError as exc:
            raise InvalidInputError(exc.field, f"{exc.message} (the most is HINDSIGHT_MAX_TOP_K)") from None
        if budget is not None:
            whole_number(budget, "--budget", low=1, high=MAX_TOKENS)
        result = _engine(settings).recall(query, top_k=top_k, token_budget=budget, include_history=history)
    if as_json:
        console.print_json(result.model_dump_json())
        return
    if not result.hits:
        console.print("[dim]nothing recalled[/dim]")
        return
    for hit in result.hits:
        r = hit.record
        console.print(
            f"[bold]{hit.score:.3f}[/bold] ({r.occurred_at.date()}) [cyan]{r.kind.value}[/cyan] {r.content}  "
            f"[dim]{r.id}[/dim]"
        )
    console.print(f"[dim]{result.tokens} tokens of context[/dim]")


@app.command()
def dump(
    history: Annotated[bool, typer.Option(help="Include superseded/archived/deleted memories.")] = True,
    namespace: NamespaceOption = None,
) -> None:
    """Print every memory of the namespace, human-readable, for debugging."""
    with reported():
        text = _engine(_settings(namespace)).dump(include_history=history)
    console.print(text, markup=False, highlight=False)


@app.command()
def export(
    out: Annotated[Path | None, typer.Option("--out", "-o", help="File to write (default: stdout).")] = None,
    embeddings: Annotated[bool, typer.Option(help="Include vectors (faster re-import with the same model).")] = True,
    namespace: NamespaceOption = None,
) -> None:
    """Export the namespace as JSON (every status, every field)."""
    with reported():
        settings = _settings(namespace)
        if out is not None:
            check_output_file(out, "--out")
        engine = _engine(settings)
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
    from .core.backup import EXPORT_FORMAT

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


@app.command("import")
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
    from .core.config import validate_namespace
    from .core.errors import InvalidRecordsError

    with reported():
        target = _namespace(namespace)
        settings = _settings(namespace)
        data = _read_export(file)
        if target is None and data.get("namespace") is not None:
            try:
                target = validate_namespace(data["namespace"], f'{file}: "namespace"')
            except InvalidInputError as exc:
                raise InvalidInputError(exc.field, f"{exc.message}; import it under another with --namespace") from None
        engine = _engine(settings)
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


@app.command()
def stats(as_json: Annotated[bool, typer.Option("--json")] = False, namespace: NamespaceOption = None) -> None:
    """Counts by tier, kind and status."""
    with reported():
        result = _engine(_settings(namespace)).stats()
    if as_json:
        console.print_json(result.model_dump_json())
        return
    console.print(
        f"namespace [bold]{result.namespace}[/bold]: {result.total} memories, {result.tokens} tokens active, "
        f"{result.sessions} sessions, model {result.embedding_model}"
    )
    for title, counts in (("tier", result.by_tier), ("kind", result.by_kind), ("status", result.by_status)):
        console.print(f"  by {title}: " + ", ".join(f"{k}={v}" for k, v in sorted(counts.items())))


@app.command()
def compress(
    session: Annotated[str, typer.Option(help="Session whose working memory to compress.")],
    threshold: Annotated[int | None, typer.Option(help="Token threshold (default: 40% of the context window).")] = None,
    force: Annotated[bool, typer.Option(help="Compress the oldest group even if under the threshold.")] = False,
    namespace: NamespaceOption = None,
) -> None:
    """Compress a session's working memory into episodic summaries."""
    from .core.model.arguments import whole_number
    from .core.model.limits import MAX_TOKENS

    with reported():
        settings = _settings(namespace)
        if not session.strip():
            raise InvalidInputError("--session", "is empty; give the id the session's turns were recorded under")
        if threshold is not None:
            whole_number(threshold, "--threshold", low=1, high=MAX_TOKENS)
        engine = _engine(settings)
        result = engine.compress(session_id=session, threshold_tokens=threshold, force=force)
        if result is None:
            console.print(_why_nothing_to_compress(engine, session, threshold))
            return
    console.print(
        f"{len(result.archived_ids)} turns archived into {len(result.summaries)} summaries "
        f"({result.tokens_before} → {result.tokens_after} tokens)"
    )
    for summary in result.summaries:
        console.print(f"  - {summary.content}")


def _why_nothing_to_compress(engine: MemoryEngine, session: str, threshold: int | None) -> str:
    """Why ``compress`` did nothing, and what would make it act; an error if the session does not exist."""
    from .core.model.records import Status

    namespace = engine.settings.namespace
    window = engine.working_window(session_id=session)
    if not window:
        every_status = {"session_id": session, "statuses": [s.value for s in Status]}
        if not engine.list(filters=every_status, limit=1):
            raise HindsightError(
                f"no session {session!r} in namespace {namespace!r}: nothing was recorded under that id "
                "(`hindsight dump` shows the session of each memory)"
            )
        return (
            f"nothing to compress: session {session!r} has no live turns in working memory "
            "(they were compressed already, or it holds only long-term memories)"
        )
    tokens = sum(turn.token_count for turn in window)
    settings = engine.settings
    if threshold is not None:
        limit = f"the threshold of {threshold} tokens (--threshold)"
    else:
        limit = (
            f"the threshold of {settings.compress_threshold_tokens} tokens ({settings.compress_ratio:.0%} of the "
            f"{settings.context_window_tokens}-token context window; set --threshold, or HINDSIGHT_COMPRESS_RATIO "
            "and HINDSIGHT_CONTEXT_WINDOW_TOKENS)"
        )
    return (
        f"nothing to compress: session {session!r} holds {len(window)} live turns, {tokens} tokens, within {limit}. "
        "--force summarises its oldest turns anyway."
    )


@app.command()
def maintain(
    namespace: NamespaceOption = None,
    every: Annotated[bool, typer.Option("--all", help="Every namespace of the store, one report each.")] = False,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Say what would happen; change nothing.")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print the reports as a JSON list.")] = False,
) -> None:
    """Upkeep: compress sessions past their threshold, decay idle memories, move stale or over-cap ones to cold storage.

    One namespace (--namespace), or every namespace of the store (--all). A step that fails is
    reported and the next still runs; the command then exits with 2 (see docs/architecture.md, "Upkeep").
    """
    with reported():
        settings = _settings(namespace)
        if every and _namespace(namespace) is not None:
            raise InvalidInputError("--all", "runs every namespace of the store; leave out --namespace")
        engine = _engine(settings)
        names = engine.namespaces() if every else [settings.namespace]
        reports = [engine.upkeep(name, dry_run=dry_run) for name in names]
    if as_json:
        console.print_json(json.dumps([r.model_dump(mode="json") for r in reports]))
    elif not reports:
        console.print("nothing to maintain: the store holds no namespaces")
    else:
        console.print(_upkeep_table(reports, dry_run=dry_run))
        for report in reports:
            if not report.steps:
                console.print(f"namespace {report.namespace!r} holds nothing yet: nothing to maintain", markup=False)
        console.print(f"[dim]cold storage: {settings.resolved_cold_store}[/dim]")
    failed = [f"{r.namespace}: {step} failed: {error}" for r in reports for step, error in r.errors.items()]
    if failed:
        fail(
            f"upkeep failed in {len(failed)} step{'s' if len(failed) > 1 else ''} (the other steps ran):",
            *failed,
        )


_TABLE_COUNTS = frozenset({"compressed", "merged", "consolidated", "decayed", "archived", "evicted"})


def _upkeep_table(reports: list[UpkeepReport], *, dry_run: bool) -> Table:
    """One row per namespace, a column per kind of change to memories (compressed, merged, decayed, ...).

    A failed step's cells say "failed" (its error goes to stderr), a namespace holding nothing
    has dashes; sessions, summaries and times are in ``--json``, so the table fits 80 columns
    (a pipe's width).
    """
    from rich import box
    from rich.table import Table

    columns: dict[tuple[str, str], None] = {}
    for report in reports:
        for done in report.steps:
            columns.update(dict.fromkeys((done.step, key) for key in done.counts if key in _TABLE_COUNTS))
    names = [key for _, key in columns]
    title = "Upkeep, dry run: what would happen (nothing was changed)" if dry_run else "Upkeep"
    table = Table(title=title, title_justify="left", box=box.SIMPLE_HEAD, show_edge=False, collapse_padding=True)
    table.add_column("namespace", overflow="fold")
    for step, key in columns:
        table.add_column(key if names.count(key) == 1 else f"{step} {key}", justify="right")
    for report in reports:
        steps = {step.step: step for step in report.steps}
        cells = [
            "–" if step not in steps else str(steps[step].counts.get(key, 0)) if steps[step].ok else "failed"
            for step, key in columns
        ]
        table.add_row(report.namespace, *cells)
    return table


@app.command()
def consolidate(
    namespace: NamespaceOption = None,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Say what would happen; change nothing.")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print the report as JSON.")] = False,
) -> None:
    """Upkeep: merge repeats; distil facts said in several sessions into semantic memories (docs/architecture.md)."""
    from .mcp.render import consolidate_text

    with reported():
        report = _engine(_settings(namespace)).consolidate(dry_run=dry_run)
    if as_json:
        console.print_json(report.model_dump_json())
        return
    console.print(consolidate_text(report), markup=False, highlight=False)


@app.command()
def review(
    memory_id: Annotated[str | None, typer.Argument(help="The quarantined memory (omit to list them).")] = None,
    accept: Annotated[
        bool | None, typer.Option("--accept/--reject", help="Apply it, or reject it (forgotten).")
    ] = None,
    namespace: NamespaceOption = None,
) -> None:
    """List quarantined memories, or accept/reject one (low-trust contradictions of important memories)."""
    with reported():
        if memory_id is not None and accept is None:
            raise HindsightError(
                f"say --accept or --reject for memory {memory_id} (`hindsight review` without an id lists them)"
            )
        engine = _engine(_settings(namespace))
        if memory_id is None:
            waiting = engine.list(filters={"statuses": ["quarantined"]}, limit=10_000)
            for record in waiting:
                console.print(f"[{record.id}] contradicts {record.conflicts_with}: {record.content}", markup=False)
            console.print(f"{len(waiting)} quarantined memor{'y' if len(waiting) == 1 else 'ies'}")
            return
        records = engine.review(memory_id, accept=bool(accept))
    first, *rest = records
    console.print(f"{'accepted' if accept else 'rejected'} {first.id} (now {first.status.value})", markup=False)
    for record in rest:
        console.print(f"now history: {record.id}: {record.content}", markup=False)


@app.command()
def restore(
    ids: Annotated[list[str] | None, typer.Argument(help="Memory ids to restore (default: all).")] = None,
    namespace: NamespaceOption = None,
) -> None:
    """Bring memories back from cold storage."""
    with reported():
        engine = _engine(_settings(namespace))
        archived = engine.archived_ids()
        if ids:
            _check_archived(engine, list(dict.fromkeys(ids)), set(archived))
        elif not archived:
            console.print(
                f"nothing to restore: the cold storage of namespace {engine.settings.namespace!r} is empty "
                "(`hindsight maintain` moves stale memories there)"
            )
            return
        count = engine.restore(ids=ids or None)
    console.print(f"restored {count} memories")


def _check_archived(engine: MemoryEngine, ids: list[str], archived: set[str]) -> None:
    """Refuse (restoring none of them) ids that are not in cold storage, saying what each one is instead."""
    from .core.errors import MemoryNotFoundError

    problems = []
    for memory_id in ids:
        if memory_id in archived:
            continue
        try:
            problems.append(f"{memory_id} is {engine.get(memory_id).status.value}, not in cold storage")
        except MemoryNotFoundError:
            problems.append(f"no memory {memory_id}")
    if problems:
        raise HindsightError(
            f"nothing restored: {'; '.join(problems)} (namespace {engine.settings.namespace!r}, "
            f"{len(archived)} memories in cold storage; `hindsight restore` without ids restores them all)"
        )


@app.command()
def serve(
    transport: Annotated[str, typer.Option(help="stdio or http")] = "stdio",
    host: Annotated[str, typer.Option()] = "127.0.0.1",
    port: Annotated[int, typer.Option()] = 8765,
    tokens_file: Annotated[str | None, typer.Option(help='JSON {"tokens": {token: namespace}} for HTTP auth.')] = None,
    namespace: NamespaceOption = None,
) -> None:
    """Run the MCP memory server (stdio for local agents, streamable HTTP for shared use)."""
    with reported():
        _settings(namespace)
        if transport not in ("stdio", "http"):
            raise InvalidInputError("--transport", f"{transport!r} is not 'stdio' or 'http'")
        if not 0 < port < 65536:
            raise InvalidInputError("--port", f"must be between 1 and 65535, got {port}")
        from .mcp.server import run

        run(
            transport=transport,
            host=host,
            port=port,
            namespace=_namespace(namespace),
            tokens_file=tokens_file,
            store=str(_opts.store) if _opts.store else None,
            chroma_url=_opts.chroma_url,
        )


@app.command()
def token() -> None:
    """Print a new random bearer token for HINDSIGHT_TOKENS or a --tokens-file (43 URL-safe characters)."""
    import secrets

    from .mcp.auth import token_weakness

    value = secrets.token_urlsafe(32)  # 256 random bits
    while token_weakness(value) is not None:  # fewer than 10 distinct characters: never in practice
        value = secrets.token_urlsafe(32)
    typer.echo(value)


@app.command()
def ui(
    port: Annotated[int, typer.Option(help="Port on 127.0.0.1.")] = 8765,
    browser: Annotated[bool, typer.Option("--browser/--no-browser", help="Open the page in a web browser.")] = True,
) -> None:
    """See the memory: serve the viewer on 127.0.0.1 over this store and open it in your browser."""
    with reported():
        _settings()
        if not 0 < port < 65536:
            raise InvalidInputError("port", f"must be between 1 and 65535, got {port}")
        from .mcp.server import run
        from .mcp.viewer import open_when_ready

        base = f"http://127.0.0.1:{port}"
        console.print(f"Memory viewer: {base}/ui  (Ctrl+C stops it)")
        if browser:
            open_when_ready(f"{base}/ui", health_url=f"{base}/health")
        run(
            transport="http",
            host="127.0.0.1",
            port=port,
            namespace=_opts.namespace,
            store=str(_opts.store) if _opts.store else None,
            chroma_url=_opts.chroma_url,
            upkeep=False,  # a viewer shows the memory as it is; `hindsight serve` keeps it
        )


def main() -> None:
    """The console script: run the app; a configuration error raised before any command runs is one line, exit 2.

    Click itself turns Ctrl-C into "Aborted!" and a reader that stops early
    (``hindsight export | head``) into a quiet exit; ``reported`` lets both through to it.
    """
    try:
        app()
    except HindsightError as exc:
        if debug.tracebacks:
            raise
        error_line(exc)
        sys.exit(EXIT_ERROR)


if __name__ == "__main__":
    main()
