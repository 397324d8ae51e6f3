"""The `hindsight` command: demo, add, recall, dump, export, import, stats, compress, serve, bench.

Global options pick the store (``--store PATH`` or ``--chroma-url URL``) and namespace;
they default to ``HINDSIGHT_*`` environment variables, then ``./.hindsight`` and
``default``. Errors are printed as one line naming what to fix, with exit code 2.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated, Any, Optional

import typer
from rich.console import Console

from .core.config import load_settings
from .core.errors import HindsightError

app = typer.Typer(help="Hindsight: long-term memory for LLM agents.", no_args_is_help=True, pretty_exceptions_enable=False)
bench_app = typer.Typer(help="Benchmarks: recall quality, speed at scale, peers.", no_args_is_help=True)
app.add_typer(bench_app, name="bench")

console = Console()
err_console = Console(stderr=True)


class _Options:
    store: Optional[Path] = None
    chroma_url: Optional[str] = None
    namespace: Optional[str] = None


_opts = _Options()


@app.callback()
def _global(
    store: Annotated[Optional[Path], typer.Option("--store", help="Embedded Chroma directory (env HINDSIGHT_STORE).")] = None,
    chroma_url: Annotated[Optional[str], typer.Option("--chroma-url", help="Chroma server URL (env HINDSIGHT_CHROMA_URL).")] = None,
    namespace: Annotated[Optional[str], typer.Option("--namespace", "-n", help="Namespace / user (env HINDSIGHT_NAMESPACE).")] = None,
) -> None:
    _opts.store, _opts.chroma_url, _opts.namespace = store, chroma_url, namespace


def _engine(**overrides: Any) -> Any:
    from .core.engine import MemoryEngine

    settings = load_settings(store=_opts.store, chroma_url=_opts.chroma_url, namespace=_opts.namespace, **overrides)
    return MemoryEngine(settings)


def _fail(exc: Exception) -> None:
    err_console.print(f"[red]error:[/red] {exc}")
    raise typer.Exit(2)


@app.command()
def demo(namespace: Annotated[str, typer.Option(help="Namespace the demo writes into (reset first).")] = "demo") -> None:
    """Run the offline demo: two sessions teach, a new session recalls."""
    from .demo import run_demo

    try:
        run_demo(_engine(), namespace=namespace, console=console)
    except HindsightError as exc:
        _fail(exc)


@app.command()
def add(
    content: Annotated[str, typer.Argument(help="Text to remember.")],
    kind: Annotated[Optional[str], typer.Option(help="preference|context|fact|correction|event|summary")] = None,
    importance: Annotated[Optional[float], typer.Option(min=0, max=1)] = None,
    session: Annotated[Optional[str], typer.Option(help="Session id.")] = None,
    ttl: Annotated[Optional[int], typer.Option(help="Expire after this many seconds.")] = None,
    force: Annotated[bool, typer.Option(help="Store even if the write filter would skip it.")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """Store one memory (through the write filter unless --force)."""
    try:
        result = _engine().store(
            content, kind=kind, importance=importance, session_id=session, ttl_seconds=ttl, apply_filter=not force
        )
    except HindsightError as exc:
        _fail(exc)
        return
    if as_json:
        console.print_json(result.model_dump_json())
        return
    for record in result.stored:
        console.print(f"[green]stored[/green] {record.id} ({record.tier.value}/{record.kind.value}, importance {record.importance:.2f})")
    for skipped in result.skipped:
        console.print(f"[yellow]skipped[/yellow]: {skipped.reason} (use --force to store anyway)")
    for old in result.superseded:
        console.print(f"[dim]superseded {old}[/dim]")


@app.command()
def recall(
    query: Annotated[str, typer.Argument(help="What to recall.")],
    top_k: Annotated[int, typer.Option("--top-k", "-k", help="How many memories.")] = 5,
    budget: Annotated[Optional[int], typer.Option(help="Token budget for the context block.")] = None,
    history: Annotated[bool, typer.Option("--history", help="Include superseded memories.")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """Recall the memories most relevant to a query."""
    try:
        result = _engine().recall(query, top_k=top_k, token_budget=budget, include_history=history)
    except HindsightError as exc:
        _fail(exc)
        return
    if as_json:
        console.print_json(result.model_dump_json())
        return
    if not result.hits:
        console.print("[dim]nothing recalled[/dim]")
        return
    for hit in result.hits:
        r = hit.record
        console.print(f"[bold]{hit.score:.3f}[/bold] ({r.occurred_at.date()}) [cyan]{r.kind.value}[/cyan] {r.content}  [dim]{r.id}[/dim]")
    console.print(f"[dim]{result.tokens} tokens of context[/dim]")


@app.command()
def dump(history: Annotated[bool, typer.Option(help="Include superseded/archived/deleted memories.")] = True) -> None:
    """Print every memory of the namespace, human-readable, for debugging."""
    try:
        console.print(_engine().dump(include_history=history), markup=False, highlight=False)
    except HindsightError as exc:
        _fail(exc)


@app.command()
def export(
    out: Annotated[Optional[Path], typer.Option("--out", "-o", help="File to write (default: stdout).")] = None,
    embeddings: Annotated[bool, typer.Option(help="Include vectors (faster re-import with the same model).")] = True,
) -> None:
    """Export the namespace as JSON (every status, every field)."""
    try:
        data = _engine().export(include_embeddings=embeddings)
    except HindsightError as exc:
        _fail(exc)
        return
    text = json.dumps(data, ensure_ascii=False)
    if out:
        out.write_text(text, encoding="utf-8")
        err_console.print(f"exported {len(data['records'])} memories to {out}")
    else:
        sys.stdout.write(text + "\n")


@app.command("import")
def import_(file: Annotated[Path, typer.Argument(help="A file written by `hindsight export`.", exists=True, dir_okay=False)]) -> None:
    """Import an export into the namespace (re-embeds if the model differs)."""
    try:
        data = json.loads(file.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        _fail(HindsightError(f"could not read {file}: {exc}"))
        return
    try:
        count = _engine().import_data(data, namespace=_opts.namespace)
    except HindsightError as exc:
        _fail(exc)
        return
    console.print(f"imported {count} memories")


@app.command()
def stats(as_json: Annotated[bool, typer.Option("--json")] = False) -> None:
    """Counts by tier, kind and status."""
    try:
        result = _engine().stats()
    except HindsightError as exc:
        _fail(exc)
        return
    if as_json:
        console.print_json(result.model_dump_json())
        return
    console.print(f"namespace [bold]{result.namespace}[/bold]: {result.total} memories, {result.tokens} tokens active, {result.sessions} sessions, model {result.embedding_model}")
    for title, counts in (("tier", result.by_tier), ("kind", result.by_kind), ("status", result.by_status)):
        console.print(f"  by {title}: " + ", ".join(f"{k}={v}" for k, v in sorted(counts.items())))


@app.command()
def compress(
    session: Annotated[str, typer.Option(help="Session whose working memory to compress.")],
    threshold: Annotated[Optional[int], typer.Option(help="Token threshold (default: 40% of the context window).")] = None,
    force: Annotated[bool, typer.Option(help="Compress the oldest group even if under the threshold.")] = False,
) -> None:
    """Compress a session's working memory into episodic summaries."""
    try:
        result = _engine().compress(session_id=session, threshold_tokens=threshold, force=force)
    except HindsightError as exc:
        _fail(exc)
        return
    if result is None:
        console.print("nothing to compress")
        return
    console.print(f"{len(result.archived_ids)} turns archived into {len(result.summaries)} summaries ({result.tokens_before} → {result.tokens_after} tokens)")
    for summary in result.summaries:
        console.print(f"  - {summary.content}")


@app.command()
def maintain() -> None:
    """Upkeep: decay idle memories, move stale or over-cap ones to cold storage (SPEC §7)."""
    try:
        report = _engine().maintain()
    except HindsightError as exc:
        _fail(exc)
        return
    console.print(
        f"decayed {len(report.decayed)}, archived {len(report.archived)}, evicted {len(report.evicted)} "
        f"(cold storage: {report.cold_store})"
    )


@app.command()
def restore(ids: Annotated[Optional[list[str]], typer.Argument(help="Memory ids to restore (default: all).")] = None) -> None:
    """Bring memories back from cold storage."""
    try:
        count = _engine().restore(ids=ids or None)
    except HindsightError as exc:
        _fail(exc)
        return
    console.print(f"restored {count} memories")


@app.command()
def serve(
    transport: Annotated[str, typer.Option(help="stdio or http")] = "stdio",
    host: Annotated[str, typer.Option()] = "127.0.0.1",
    port: Annotated[int, typer.Option()] = 8765,
    tokens_file: Annotated[Optional[str], typer.Option(help="JSON {\"tokens\": {token: namespace}} for HTTP auth.")] = None,
) -> None:
    """Run the MCP memory server (stdio for local agents, streamable HTTP for shared use)."""
    from .mcp.server import run

    try:
        run(
            transport=transport, host=host, port=port, namespace=_opts.namespace, tokens_file=tokens_file,
            store=str(_opts.store) if _opts.store else None, chroma_url=_opts.chroma_url,
        )
    except HindsightError as exc:
        _fail(exc)


@bench_app.command("scale")
def bench_scale(
    sizes: Annotated[str, typer.Option(help="Comma-separated namespace sizes.")] = "1000,10000,100000",
    queries: Annotated[int, typer.Option(help="Timed recalls per size.")] = 200,
    mode: Annotated[str, typer.Option(help="embedded, server, or both")] = "embedded",
    out: Annotated[Path, typer.Option(help="JSON results file.")] = Path("benchmarks/results/scale.json"),
) -> None:
    """Recall latency (p50/p99, query embedding included) and store throughput at scale."""
    from .bench.scale import run_scale

    run_scale(sizes=[int(s) for s in sizes.split(",") if s.strip()], queries=queries, mode=mode, out=out, console=console)


def main() -> None:
    try:
        app()
    except HindsightError as exc:  # configuration errors raised before a command runs
        err_console.print(f"[red]error:[/red] {exc}")
        sys.exit(2)


if __name__ == "__main__":
    main()
