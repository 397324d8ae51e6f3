"""The upkeep commands: compress a session, maintain (every step of upkeep), consolidate."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Annotated

import typer

from ..core.errors import HindsightError, InvalidInputError
from ..terminal import console, fail, reported
from . import options
from .options import NamespaceOption

if TYPE_CHECKING:
    from rich.table import Table

    from ..core.engine import MemoryEngine
    from ..core.upkeep.runner import UpkeepReport


def compress(
    session: Annotated[str, typer.Option(help="Session whose working memory to compress.")],
    threshold: Annotated[int | None, typer.Option(help="Token threshold (default: 40% of the context window).")] = None,
    force: Annotated[bool, typer.Option(help="Compress the oldest group even if under the threshold.")] = False,
    namespace: NamespaceOption = None,
) -> None:
    """Compress a session's working memory into episodic summaries."""
    from ..core.model.arguments import whole_number
    from ..core.model.limits import MAX_TOKENS

    with reported():
        settings = options.settings(namespace)
        if not session.strip():
            raise InvalidInputError("--session", "is empty; give the id the session's turns were recorded under")
        if threshold is not None:
            whole_number(threshold, "--threshold", low=1, high=MAX_TOKENS)
        engine = options.engine(settings)
        result = engine.compress(session_id=session, threshold_tokens=threshold, force=force)
        if result is None:
            console.print(_why_nothing_to_compress(engine, session, threshold))
            return
    console.print(
        f"{len(result.archived_ids)} turns archived into {len(result.summaries)} summaries "
        f"({result.tokens_before} → {result.tokens_after} tokens)"
    )
    for summary in result.summaries:
        console.print(f"  - {summary.content}", markup=False)


def _why_nothing_to_compress(engine: MemoryEngine, session: str, threshold: int | None) -> str:
    """Why ``compress`` did nothing, and what would make it act; an error if the session does not exist."""
    from ..core.model.records import Status

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
        settings = options.settings(namespace)
        if every and options.chosen_namespace(namespace) is not None:
            raise InvalidInputError("--all", "runs every namespace of the store; leave out --namespace")
        engine = options.engine(settings)
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


def consolidate(
    namespace: NamespaceOption = None,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Say what would happen; change nothing.")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print the report as JSON.")] = False,
) -> None:
    """Upkeep: merge repeats; distil facts said in several sessions into semantic memories (docs/architecture.md)."""
    from ..mcp.render import consolidate_text

    with reported():
        report = options.engine(options.settings(namespace)).consolidate(dry_run=dry_run)
    if as_json:
        console.print_json(report.model_dump_json())
        return
    console.print(consolidate_text(report), markup=False, highlight=False)


__all__ = ["compress", "consolidate", "maintain"]
