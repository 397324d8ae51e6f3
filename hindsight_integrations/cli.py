"""The `hindsight` command: demo, add, recall, dump, export, import, stats, compress, serve, bench.

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
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.console import Console

from .core.config import load_settings
from .core.errors import HindsightError, InvalidInputError

if TYPE_CHECKING:
    from .core.config import Settings
    from .core.engine import MemoryEngine

app = typer.Typer(
    help="Hindsight: long-term memory for LLM agents.", no_args_is_help=True, pretty_exceptions_enable=False
)
bench_app = typer.Typer(help="Benchmarks: recall quality, speed at scale, peers, start-up.", no_args_is_help=True)
app.add_typer(bench_app, name="bench")

console = Console()
err_console = Console(stderr=True)


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


def _fail(exc: Exception) -> None:
    err_console.print(f"[red]error:[/red] {exc}")
    raise typer.Exit(2)


@contextmanager
def _reported() -> Iterator[None]:
    """Turn an engine error into one clear line and exit code 2, never a traceback."""
    try:
        yield
    except HindsightError as exc:
        _fail(exc)


@app.command()
def demo(
    namespace: Annotated[str, typer.Option(help="Namespace the demo writes into (reset first).")] = "demo",
) -> None:
    """Run the offline demo: two sessions teach, a new session recalls."""
    from .core.config import validate_namespace

    with _reported():
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
    with _reported():
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

    with _reported():
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
    with _reported():
        text = _engine(_settings()).dump(include_history=history)
    console.print(text, markup=False, highlight=False)


@app.command()
def export(
    out: Annotated[Path | None, typer.Option("--out", "-o", help="File to write (default: stdout).")] = None,
    embeddings: Annotated[bool, typer.Option(help="Include vectors (faster re-import with the same model).")] = True,
) -> None:
    """Export the namespace as JSON (every status, every field)."""
    with _reported():
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
    with _reported():
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
    with _reported():
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

    with _reported():
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
    """Upkeep: decay idle memories, move stale or over-cap ones to cold storage (SPEC §7)."""
    with _reported():
        report = _engine(_settings()).maintain()
    console.print(
        f"decayed {len(report.decayed)}, archived {len(report.archived)}, evicted {len(report.evicted)} "
        f"(cold storage: {report.cold_store})"
    )


@app.command()
def restore(
    ids: Annotated[list[str] | None, typer.Argument(help="Memory ids to restore (default: all).")] = None,
) -> None:
    """Bring memories back from cold storage."""
    with _reported():
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
    with _reported():
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


DEV_DATA = Path("../shared/data/locomo_dev")
RESULTS = Path("benchmarks/results")


def _emit(result: dict[str, Any], *, as_json: bool, out: Path | None, table: str, plot: Any = None) -> None:
    """One JSON object on stdout with --json (nothing else), else a Markdown table; optional file + PNG."""
    if out is not None:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(result, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
        if plot is not None:
            plot(result, out.with_suffix(".png"))
        err_console.print(f"[dim]wrote {out}{' and ' + str(out.with_suffix('.png')) if plot else ''}[/dim]")
    if as_json:
        sys.stdout.write(json.dumps(result, ensure_ascii=False) + "\n")
    else:
        sys.stdout.write(table + "\n")  # raw, so Markdown rows are never wrapped


def _bench_env() -> None:
    import os

    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


@bench_app.command("locomo")
def bench_locomo(
    data: Annotated[
        Path, typer.Option(help="Directory of LoCoMo conversation *.json files.", exists=True, file_okay=False)
    ] = DEV_DATA,
    as_json: Annotated[
        bool, typer.Option("--json", help="Print one JSON object (and nothing else) on stdout.")
    ] = False,
    store: Annotated[
        Path | None, typer.Option("--store", help="Keep the store here (default: a temporary directory).")
    ] = None,
    out: Annotated[Path | None, typer.Option(help="Also write the JSON here, with a PNG plot beside it.")] = None,
    top_k: Annotated[int, typer.Option("--top-k", min=1, max=50)] = 10,
    budget: Annotated[int, typer.Option(min=50, help="Token budget of the recalled context.")] = 450,
    rows: Annotated[bool, typer.Option("--rows", help="Include one row per question.")] = False,
) -> None:
    """Evidence recall@5/10/20, all-found, MRR and context tokens on LoCoMo conversations."""
    _bench_env()
    from .bench.locomo import run_locomo
    from .bench.report import locomo_table, plot_locomo, tokens_table

    try:
        result = run_locomo(
            data, store=store, top_k=top_k, budget=budget, progress=lambda m: err_console.print(f"[dim]{m}[/dim]")
        )
    except (FileNotFoundError, ValueError) as exc:
        _fail(HindsightError(str(exc)))
        return
    if not rows:
        result.pop("rows", None)
    _emit(
        result, as_json=as_json, out=out, table=locomo_table(result) + "\n\n" + tokens_table(result), plot=plot_locomo
    )


@bench_app.command("tokens")
def bench_tokens(
    data: Annotated[
        Path, typer.Option(help="Directory of LoCoMo conversation *.json files.", exists=True, file_okay=False)
    ] = DEV_DATA,
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON object on stdout.")] = False,
    out: Annotated[Path | None, typer.Option(help="Also write the JSON here.")] = None,
    budget: Annotated[int, typer.Option(min=50)] = 450,
) -> None:
    """Tokens injected per question vs the full history and a same-budget last-N-turns window."""
    _bench_env()
    from .bench.locomo import run_locomo
    from .bench.report import tokens_table

    try:
        result = run_locomo(data, budget=budget, progress=lambda m: err_console.print(f"[dim]{m}[/dim]"))
    except (FileNotFoundError, ValueError) as exc:
        _fail(HindsightError(str(exc)))
        return
    summary = {
        "benchmark": "tokens",
        "questions": result["questions"],
        "recall@10": result["recall@10"],
        **result["tokens"],
        "per_category": {
            c: {
                "recall@10": p["recall@10"],
                "last_n_recall": p["last_n_recall"],
                "context_tokens@10": p["context_tokens@10"],
            }
            for c, p in result["per_category"].items()
        },
    }
    _emit(summary, as_json=as_json, out=out, table=tokens_table(result))


@bench_app.command("grid")
def bench_grid(
    data: Annotated[
        Path, typer.Option(help="Labelled LoCoMo-style directory (dev data only).", exists=True, file_okay=False)
    ] = DEV_DATA,
    grid: Annotated[
        str | None,
        typer.Option(help='e.g. "dense=0.3,0.5,0.7;window=0,0.5;entity_boost=0,0.2;top_k=3,5,10;budget=none,450"'),
    ] = None,
    max_tokens: Annotated[
        int, typer.Option(help="Pick the best setting among those using at most this many tokens.")
    ] = 450,
    as_json: Annotated[bool, typer.Option("--json")] = False,
    out: Annotated[Path | None, typer.Option(help="JSON results file (PNG beside it).")] = RESULTS / "grid.json",
) -> None:
    """Grid search over fusion weights, top_k and budget: recall, precision, MRR (ingest once, re-rank)."""
    _bench_env()
    from .bench.grid import parse_grid, run_grid
    from .bench.report import grid_table, plot_grid

    try:
        result = run_grid(
            data, grid=parse_grid(grid), max_tokens=max_tokens, progress=lambda m: err_console.print(f"[dim]{m}[/dim]")
        )
    except (FileNotFoundError, ValueError) as exc:
        _fail(HindsightError(str(exc)))
        return
    best = result["best"]
    table = grid_table(result) + (
        f"\n\nbest within {max_tokens} tokens: dense={best['dense']} lexical={best['lexical']} window={best['window']} "
        f"entity_boost={best['entity_boost']} top_k={best['top_k']} budget={best['budget']} "
        f"→ recall {best['recall']:.3f}"
    )
    _emit(result, as_json=as_json, out=out, table=table, plot=plot_grid)


@bench_app.command("peers")
def bench_peers(
    data: Annotated[
        Path, typer.Option(help="Directory of LoCoMo conversation *.json files.", exists=True, file_okay=False)
    ] = DEV_DATA,
    only: Annotated[
        str | None,
        typer.Option(help="Comma-separated subset: hindsight,hindsight-defaults,langchain,llamaindex,mem0"),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json")] = False,
    out: Annotated[Path | None, typer.Option(help="JSON results file (PNG beside it).")] = RESULTS / "peers.json",
) -> None:
    """Hindsight next to LangChain, LlamaIndex and mem0 memories: same data, same model, one run."""
    _bench_env()
    from .bench.peers import run_peers
    from .bench.report import peers_table, plot_peers

    try:
        result = run_peers(
            data,
            only=[s.strip() for s in only.split(",")] if only else None,
            progress=lambda m: err_console.print(f"[dim]{m}[/dim]"),
        )
    except (FileNotFoundError, ValueError) as exc:
        _fail(HindsightError(str(exc)))
        return
    _emit(result, as_json=as_json, out=out, table=peers_table(result), plot=plot_peers)


@bench_app.command("scale")
def bench_scale(
    sizes: Annotated[str, typer.Option(help="Comma-separated namespace sizes.")] = "1000,10000,100000",
    queries: Annotated[int, typer.Option(help="Timed recalls per size.")] = 200,
    mode: Annotated[str, typer.Option(help="embedded, server, or both")] = "embedded",
    out: Annotated[Path, typer.Option(help="JSON results file.")] = Path("benchmarks/results/scale.json"),
    torch_threads: Annotated[
        int | None, typer.Option(min=1, help="torch intra-op threads (default: one per core).")
    ] = None,
) -> None:
    """Recall latency (p50/p99, query embedding included) and store throughput at scale."""
    _bench_env()
    from .bench.report import scale_table
    from .bench.scale import run_scale

    try:
        results = run_scale(
            sizes=[int(s) for s in sizes.split(",") if s.strip()],
            queries=queries,
            mode=mode,
            out=out,
            console=err_console,
            torch_threads=torch_threads,
        )
    except ValueError as exc:
        _fail(HindsightError(str(exc)))
        return
    sys.stdout.write(scale_table(results) + "\n")


@bench_app.command("startup")
def bench_startup(
    runs: Annotated[int, typer.Option(help="Timed runs of each command.")] = 7,
    warmup: Annotated[int, typer.Option(help="Untimed runs of each command first (file cache, bytecode).")] = 1,
    memories: Annotated[int, typer.Option(help="Memories written to the temporary store first.")] = 30,
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON object on stdout.")] = False,
    out: Annotated[Path | None, typer.Option(help="JSON results file.")] = RESULTS / "startup.json",
) -> None:
    """Whole-process time of `hindsight --help`, `stats` and `recall` (min/median), and whether torch was imported."""
    from .core.arguments import whole_number

    with _reported():
        whole_number(runs, "runs", low=1, high=1000)
        whole_number(warmup, "warmup", low=0, high=100)
        whole_number(memories, "memories", low=1, high=10_000)
    _bench_env()
    from .bench.startup import run_startup, startup_table

    with _reported():
        result = run_startup(
            runs=runs, warmup=warmup, memories=memories, progress=lambda m: err_console.print(f"[dim]{m}[/dim]")
        )
    _emit(result, as_json=as_json, out=out, table=startup_table(result))


def main() -> None:
    """The console script: run the app; a configuration error raised before any command is one line, exit 2."""
    try:
        app()
    except HindsightError as exc:  # configuration errors raised before a command runs
        err_console.print(f"[red]error:[/red] {exc}")
        sys.exit(2)


if __name__ == "__main__":
    main()
