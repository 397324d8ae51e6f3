"""The commands on memories: add, recall, forget, dump, stats, review, restore."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.markup import escape  # a memory's text is printed as it is, never read as markup

from ..core.errors import HindsightError, InvalidInputError, MemoryNotFoundError
from ..terminal import console, reported
from . import options
from .options import NamespaceOption

if TYPE_CHECKING:
    from ..core.engine import MemoryEngine


_ADD_OPTIONS = {"kind": "--kind", "importance": "--importance", "session_id": "--session", "ttl_seconds": "--ttl"}


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
    from ..core.model.inputs import parse_inputs
    from ..core.model.limits import InputLimits

    given: dict[str, Any] = {"kind": kind, "importance": importance, "session_id": session, "ttl_seconds": ttl}
    fields = {k: v for k, v in given.items() if v is not None}
    with reported():
        settings = options.settings(namespace)
        try:
            parse_inputs({"content": content, **fields}, limits=InputLimits.from_settings(settings))
        except InvalidInputError as exc:
            raise options.as_option(exc, _ADD_OPTIONS) from None
        result = options.engine(settings).store(content, apply_filter=not force, **fields)
    if as_json:
        console.print_json(result.model_dump_json())
        return
    for record in result.stored:
        console.print(
            f"[green]stored[/green] {record.id} ({record.tier.value}/{record.kind.value}, "
            f"importance {record.importance:.2f})"
        )
    for skipped in result.skipped:
        console.print(f"[yellow]skipped[/yellow]: {escape(skipped.reason)} (use --force to store anyway)")
    for old in result.superseded:
        console.print(f"[dim]superseded {old}[/dim]")


def recall(
    query: Annotated[str, typer.Argument(help="What to recall.")],
    top_k: Annotated[int, typer.Option("--top-k", "-k", help="How many memories.")] = 5,
    budget: Annotated[int | None, typer.Option(help="Token budget for the context block.")] = None,
    history: Annotated[bool, typer.Option("--history", help="Include superseded memories.")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
    namespace: NamespaceOption = None,
) -> None:
    """Recall the memories most relevant to a query."""
    from ..core.model.arguments import whole_number
    from ..core.model.inputs import validate_content
    from ..core.model.limits import MAX_TOKENS

    with reported():
        settings = options.settings(namespace)
        validate_content(query, max_bytes=settings.max_content_bytes, field="query")
        try:
            whole_number(top_k, "--top-k", low=1, high=settings.max_top_k)
        except InvalidInputError as exc:
            raise InvalidInputError(exc.field, f"{exc.message} (the most is HINDSIGHT_MAX_TOP_K)") from None
        if budget is not None:
            whole_number(budget, "--budget", low=1, high=MAX_TOKENS)
        result = options.engine(settings).recall(query, top_k=top_k, token_budget=budget, include_history=history)
    if as_json:
        console.print_json(result.model_dump_json())
        return
    if not result.hits:
        console.print("[dim]nothing recalled[/dim]")
        return
    for hit in result.hits:
        r = hit.record
        console.print(
            f"[bold]{hit.score:.3f}[/bold] ({r.occurred_at.date()}) [cyan]{r.kind.value}[/cyan] {escape(r.content)}  "
            f"[dim]{r.id}[/dim]"
        )
    console.print(f"[dim]{result.tokens} tokens of context[/dim]")


def forget(
    memory_id: Annotated[str, typer.Argument(help="The memory's id, as `add`, `recall` and `dump` show it.")],
    namespace: NamespaceOption = None,
) -> None:
    """Forget one memory (soft): recalled no more, its text gone from the contexts, windows and summaries."""
    with reported():
        engine = options.engine(options.settings(namespace))
        try:
            record = engine.forget(memory_id)
        except MemoryNotFoundError as exc:
            raise HindsightError(
                f"nothing forgotten: {exc} (`hindsight recall` and `hindsight dump` show the ids; "
                "a memory of another namespace needs its --namespace)"
            ) from None
    console.print(f"forgotten {record.id}: {record.content}", markup=False)


def dump(
    history: Annotated[bool, typer.Option(help="Include superseded/archived/deleted memories.")] = True,
    namespace: NamespaceOption = None,
) -> None:
    """Print every memory of the namespace, human-readable, for debugging."""
    with reported():
        text = options.written(options.engine(options.settings(namespace))).dump(include_history=history)
    console.print(text, markup=False, highlight=False)


def stats(as_json: Annotated[bool, typer.Option("--json")] = False, namespace: NamespaceOption = None) -> None:
    """Counts by tier, kind and status."""
    with reported():
        result = options.written(options.engine(options.settings(namespace))).stats()
    if as_json:
        console.print_json(result.model_dump_json())
        return
    console.print(
        f"namespace [bold]{result.namespace}[/bold]: {result.total} memories, {result.tokens} tokens active, "
        f"{result.sessions} sessions, model {result.embedding_model}"
    )
    for title, counts in (("tier", result.by_tier), ("kind", result.by_kind), ("status", result.by_status)):
        console.print(f"  by {title}: " + ", ".join(f"{k}={v}" for k, v in sorted(counts.items())))


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
        engine = options.engine(options.settings(namespace))
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


def restore(
    ids: Annotated[list[str] | None, typer.Argument(help="Memory ids to restore (default: all).")] = None,
    namespace: NamespaceOption = None,
) -> None:
    """Bring memories back from cold storage."""
    with reported():
        engine = options.engine(options.settings(namespace))
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


__all__ = ["add", "dump", "forget", "recall", "restore", "review", "stats"]
