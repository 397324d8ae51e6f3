"""The `hindsight` command: demo, add, recall, dump, export, import, stats, compress, review, serve, ui, bench.

Global options pick the store (``--store PATH`` or ``--chroma-url URL``) and namespace;
they default to ``HINDSIGHT_*`` environment variables, then ``./.hindsight`` and
``default``. Errors are printed as one line naming what to fix, with exit code 2.

Start-up is kept short (see ``hindsight bench startup``): this module imports only typer,
rich and the settings; the engine (Chroma), the MCP server and the benchmarks are imported
inside the commands that use them, and every command checks its settings and arguments
before it builds the engine, so a typo costs milliseconds, not a model load.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from .bench.commands import bench_app
from .core.config import load_settings
from .core.errors import HindsightError, InvalidInputError
from .terminal import console, err_console, reported

if TYPE_CHECKING:
    from .core.config import Settings
    from .core.engine import MemoryEngine

app = typer.Typer(
    help="Hindsight: long-term memory for LLM agents.", no_args_is_help=True, pretty_exceptions_enable=False
)
app.add_typer(bench_app, name="bench")


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
) -> None:
    _opts.store, _opts.chroma_url, _opts.namespace = store, chroma_url, namespace


def _settings(**overrides: Any) -> Settings:
    """The global options and environment as validated settings (namespace, URL, every variable)."""
    return load_settings(store=_opts.store, chroma_url=_opts.chroma_url, namespace=_opts.namespace, **overrides)


def _engine(settings: Settings) -> MemoryEngine:
    """The engine, built only once the command's arguments passed their checks (it imports Chroma)."""
    from .core.engine import MemoryEngine

    return MemoryEngine(settings)


@app.command()
def demo(
    namespace: Annotated[str, typer.Option(help="Namespace the demo writes into (reset first).")] = "demo",
) -> None:
    """Run the offline demo: two sessions teach, a new session recalls."""
    from .core.config import validate_namespace

    with reported():
        settings = _settings()
        validate_namespace(namespace)
        from .demo import run_demo

        run_demo(_engine(settings), namespace=namespace, console=console)


@app.command()
def add(
    content: Annotated[str, typer.Argument(help="Text to remember.")],
    kind: Annotated[str | None, typer.Option(help="preference|context|fact|correction|event|summary")] = None,
    importance: Annotated[float | None, typer.Option(min=0, max=1)] = None,
    session: Annotated[str | None, typer.Option(help="Session id.")] = None,
    ttl: Annotated[int | None, typer.Option(help="Expire after this many seconds.")] = None,
    force: Annotated[bool, typer.Option(help="Store even if the write filter would skip it.")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """Store one memory (through the write filter unless --force)."""
    from .core.inputs import parse_inputs

    given: dict[str, Any] = {"kind": kind, "importance": importance, "session_id": session, "ttl_seconds": ttl}
    fields = {k: v for k, v in given.items() if v is not None}
    with reported():
        settings = _settings()
        parse_inputs({"content": content, **fields}, max_bytes=settings.max_content_bytes)
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
) -> None:
    """Recall the memories most relevant to a query."""
    from .core.arguments import whole_number
    from .core.inputs import validate_content

    with reported():
        settings = _settings()
        validate_content(query, max_bytes=settings.max_content_bytes, field="query")
        whole_number(top_k, "top_k", low=1, high=settings.max_top_k)
        if budget is not None:
            whole_number(budget, "token_budget", low=1)
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
def dump(history: Annotated[bool, typer.Option(help="Include superseded/archived/deleted memories.")] = True) -> None:
    """Print every memory of the namespace, human-readable, for debugging."""
    with reported():
        text = _engine(_settings()).dump(include_history=history)
    console.print(text, markup=False, highlight=False)


@app.command()
def export(
    out: Annotated[Path | None, typer.Option("--out", "-o", help="File to write (default: stdout).")] = None,
    embeddings: Annotated[bool, typer.Option(help="Include vectors (faster re-import with the same model).")] = True,
) -> None:
    """Export the namespace as JSON (every status, every field)."""
    with reported():
        settings = _settings()
        if out is not None and out.is_dir():
            raise InvalidInputError("--out", f"{out} is a directory; give a file name")
        data = _engine(settings).export(include_embeddings=embeddings)
    text = json.dumps(data, ensure_ascii=False)
    if out:
        out.write_text(text, encoding="utf-8")
        err_console.print(f"exported {len(data['records'])} memories to {out}")
    else:
        sys.stdout.write(text + "\n")


@app.command("import")
def import_(
    file: Annotated[Path, typer.Argument(help="A file written by `hindsight export`.", exists=True, dir_okay=False)],
) -> None:
    """Import an export into the namespace (re-embeds if the model differs)."""
    with reported():
        settings = _settings()
        try:
            data = json.loads(file.read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError) as exc:
            raise HindsightError(f"could not read {file}: {exc}") from None
        if not isinstance(data, dict):
            raise InvalidInputError("file", f"{file} is not a `hindsight export` document")
        count = _engine(settings).import_data(data, namespace=_opts.namespace)
    console.print(f"imported {count} memories")


@app.command()
def stats(as_json: Annotated[bool, typer.Option("--json")] = False) -> None:
    """Counts by tier, kind and status."""
    with reported():
        result = _engine(_settings()).stats()
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
) -> None:
    """Compress a session's working memory into episodic summaries."""
    from .core.arguments import whole_number

    with reported():
        settings = _settings()
        if threshold is not None:
            whole_number(threshold, "threshold_tokens", low=1)
        result = _engine(settings).compress(session_id=session, threshold_tokens=threshold, force=force)
    if result is None:
        console.print("nothing to compress")
        return
    console.print(
        f"{len(result.archived_ids)} turns archived into {len(result.summaries)} summaries "
        f"({result.tokens_before} → {result.tokens_after} tokens)"
    )
    for summary in result.summaries:
        console.print(f"  - {summary.content}")


@app.command()
def maintain() -> None:
    """Upkeep: decay idle memories, move stale or over-cap ones to cold storage (see docs/architecture.md)."""
    with reported():
        report = _engine(_settings()).maintain()
    console.print(
        f"decayed {len(report.decayed)}, archived {len(report.archived)}, evicted {len(report.evicted)} "
        f"(cold storage: {report.cold_store})"
    )


@app.command()
def review(
    memory_id: Annotated[str | None, typer.Argument(help="The quarantined memory (omit to list them).")] = None,
    accept: Annotated[
        bool | None, typer.Option("--accept/--reject", help="Apply it, or reject it (forgotten).")
    ] = None,
) -> None:
    """List quarantined memories, or accept/reject one (low-trust contradictions of important memories)."""
    if memory_id is not None and accept is None:
        err_console.print("error: say --accept or --reject for the memory to review")
        raise typer.Exit(2)
    with reported():
        engine = _engine(_settings())
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
) -> None:
    """Bring memories back from cold storage."""
    with reported():
        count = _engine(_settings()).restore(ids=ids or None)
    console.print(f"restored {count} memories")


@app.command()
def serve(
    transport: Annotated[str, typer.Option(help="stdio or http")] = "stdio",
    host: Annotated[str, typer.Option()] = "127.0.0.1",
    port: Annotated[int, typer.Option()] = 8765,
    tokens_file: Annotated[str | None, typer.Option(help='JSON {"tokens": {token: namespace}} for HTTP auth.')] = None,
) -> None:
    """Run the MCP memory server (stdio for local agents, streamable HTTP for shared use)."""
    with reported():
        _settings()
        if transport not in ("stdio", "http"):
            raise InvalidInputError("transport", f"{transport!r} is not 'stdio' or 'http'")
        if not 0 < port < 65536:
            raise InvalidInputError("port", f"must be between 1 and 65535, got {port}")
        from .mcp.server import run

        run(
            transport=transport,
            host=host,
            port=port,
            namespace=_opts.namespace,
            tokens_file=tokens_file,
            store=str(_opts.store) if _opts.store else None,
            chroma_url=_opts.chroma_url,
        )


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
        )


def main() -> None:
    """The console script: run the app; a configuration error raised before any command is one line, exit 2."""
    try:
        app()
    except HindsightError as exc:  # configuration errors raised before a command runs
        err_console.print(f"[red]error:[/red] {exc}")
        sys.exit(2)


if __name__ == "__main__":
    main()
