"""The offline demo behind `hindsight demo`: a week-old project conversation, remembered.

It tells the product's story on the conversation path every adapter uses (``record_turn``):
two long sessions fill each session's working window until it is compressed; what carries
content goes to the episodic or semantic tier (and why), small talk does not; a correction
supersedes the older fact and keeps it as history; a fresh session a week later gets a few
hundred tokens of memories instead of the whole history, and an off-topic question gets
nothing. With ``OPENAI_API_KEY`` (or ``OPENAI_BASE_URL``) set, a real model also answers from
the recalled memories.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

from rich.console import Console
from rich.panel import Panel
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn
from rich.table import Table

from .core.engine import MemoryEngine
from .core.errors import LLMError
from .core.model.records import Kind, MemoryRecord, Role, Status, Tier
from .core.model.results import TurnResult
from .demo_conversation import ENGLISH, DemoScript, Session, Turn

_WHY = {
    Tier.WORKING: "the live window of each session; compressed into summaries past the threshold",
    Tier.EPISODIC: "what happened and what was said: events, project facts, compression summaries",
    Tier.SEMANTIC: "what lasts: preferences, corrections and important facts",
}


@dataclass
class DemoReport:
    """What the demo showed, for a caller to check."""

    turns: int = 0
    stored: int = 0
    skipped: int = 0
    compressions: int = 0
    history_tokens: int = 0
    injected_tokens: list[int] = field(default_factory=list)
    off_topic_hits: int = 0
    by_tier: dict[str, int] = field(default_factory=dict)
    live_turns: int = 0


def run_demo(
    engine: MemoryEngine,
    *,
    namespace: str = "demo",
    console: Console | None = None,
    today: datetime | None = None,
    script: DemoScript = ENGLISH,
) -> DemoReport:
    """Play ``script``'s conversation into ``namespace`` (reset first) and show what memory made of it."""
    console = console or Console()
    engine.drop_namespace(namespace)
    today = today or datetime.now(UTC)
    report = DemoReport()
    history: list[str] = []
    sessions = script.build_sessions(today.date())
    for number, session in enumerate(sessions, start=1):
        console.rule(f"[bold]Session {number}: {session.title}[/bold] ({len(session.turns)} turns)")
        _play(engine, session, namespace, console, report, history)
    report.history_tokens = engine.tokens.count("\n".join(history))
    stats = engine.stats(namespace=namespace)
    report.by_tier = {tier: stats.by_tier.get(tier, 0) for tier in ("working", "episodic", "semantic")}
    report.live_turns = sum(len(engine.working_window(session_id=s.session_id, namespace=namespace)) for s in sessions)
    _show_tiers(engine, namespace, console, report)
    # The new session comes a week later, when every context vector is long written; recall
    # alone waits at most a few seconds for them, and the multilingual model on a loaded
    # machine can take longer than that for two sessions' worth, which would change the output.
    engine.chroma.namespace(namespace).wait_for_context(timeout=300)
    console.rule(f"[bold]Session 3: {today:%A} {today.day} {today:%B %Y}, a new session[/bold]")
    _ask(engine, namespace, console, report, script)
    _show_correction(engine, namespace, console, script)
    _summary(engine, namespace, console, report)
    return report


def _play(
    engine: MemoryEngine, session: Session, namespace: str, console: Console, report: DemoReport, history: list[str]
) -> None:
    """Record every turn; print the key turns with what became of them, the chatter as a progress bar."""
    start = session.start()
    chatter = sum(not t.key for t in session.turns)
    with Progress(
        TextColumn("  [dim]everyday project chat[/dim]"),
        BarColumn(),
        MofNCompleteColumn(),
        console=console,
        transient=True,
    ) as progress:
        task = progress.add_task("chat", total=chatter)
        for n, turn in enumerate(session.turns):
            result = engine.record_turn(
                turn.content,
                session_id=session.session_id,
                role=Role(turn.role),
                namespace=namespace,
                occurred_at=start + timedelta(minutes=2 * n),
            )
            history.append(f"{turn.role}: {turn.content}")
            report.turns += 1
            report.stored += len(result.stored.stored)
            report.skipped += len(result.stored.skipped)
            if turn.key:
                progress.console.print(_turn_line(turn, result))
            else:
                progress.advance(task)
            if result.compression is not None:
                report.compressions += 1
                progress.console.print(_compression_line(engine, result))
    console.print(f"  [dim]… and {chatter} turns of everyday project chat (CI, reviews, styling, webhooks)[/dim]")


def _compression_line(engine: MemoryEngine, result: TurnResult) -> str:
    c = result.compression
    assert c is not None
    settings = engine.settings
    if c.summaries:
        plural = "y" if len(c.summaries) == 1 else "ies"
        folded = f"folded into {len(c.summaries)} episodic summar{plural} of what no memory holds"
    else:
        folded = "archived: all they said worth keeping is in long-term memory already"
    return (
        f"  [magenta]working window at {c.tokens_before:,} tokens, past the threshold of "
        f"{settings.compress_threshold_tokens:,} ({settings.compress_ratio:.0%} of the "
        f"{settings.context_window_tokens:,}-token context): the {len(c.archived_ids)} oldest turns {folded}; "
        f"window now {c.tokens_after:,} tokens[/magenta]"
    )


def _turn_line(turn: Turn, result: TurnResult) -> str:
    stored, skipped = result.stored.stored, result.stored.skipped
    if stored:
        memory = stored[0]
        note = f"[green]remembered[/green] as {memory.kind.value} in the [bold]{memory.tier.value}[/bold] tier"
        if result.stored.superseded:
            note += f" [yellow](supersedes {len(result.stored.superseded)} older memory, kept as history)[/yellow]"
        if memory.expires_at is not None:
            ends = memory.expires_at
            note += f" [dim](time-bound: expires {ends:%A} {ends.day} {ends:%B})[/dim]"
    elif skipped:
        note = f"[dim]kept in the working window only: {skipped[0].reason}[/dim]"
    else:
        note = "[dim]kept in the working window only[/dim]"
    return f"  [cyan]{turn.role:>9}[/cyan] {turn.content}\n            {note}"


def _show_tiers(engine: MemoryEngine, namespace: str, console: Console, report: DemoReport) -> None:
    table = Table(title="Where the two sessions went", show_lines=True)
    table.add_column("tier")
    table.add_column("memories", justify="right")
    table.add_column("what goes there")
    table.add_column("for example", overflow="fold")  # CJK has no spaces to wrap at
    for tier in (Tier.WORKING, Tier.EPISODIC, Tier.SEMANTIC):
        example = _example(engine.list(namespace=namespace, filters={"tiers": [tier.value]}, limit=200), tier)
        count = str(report.by_tier.get(tier.value, 0))
        if tier is Tier.WORKING:
            count = f"{report.live_turns} live\n{report.by_tier.get(tier.value, 0) - report.live_turns} archived"
        table.add_row(tier.value, count, _WHY[tier], example)
    console.print(table)
    console.print(
        f"  {report.turns} turns recorded; {report.stored} long-term memories written; {report.skipped} turns "
        f"stayed in the working window only (assistant replies, greetings, acknowledgements); "
        f"{report.compressions} compression{'s' if report.compressions != 1 else ''}."
    )


def _example(records: list[MemoryRecord], tier: Tier) -> str:
    if not records:
        return "–"
    preferred = {Tier.SEMANTIC: Kind.PREFERENCE, Tier.EPISODIC: Kind.SUMMARY}.get(tier)
    chosen = next((r for r in records if r.kind is preferred), records[0])
    text = chosen.content if len(chosen.content) <= 160 else chosen.content[:157] + "…"
    return f"{text} [dim]({chosen.kind.value})[/dim]"


def _ask(engine: MemoryEngine, namespace: str, console: Console, report: DemoReport, script: DemoScript) -> None:
    table = Table(title="What a fresh session recalls (defaults: top 5, 450-token budget)", show_lines=True)
    table.add_column("question")
    table.add_column("recalled memories", overflow="fold")
    table.add_column("tokens", justify="right")
    for question in [*script.questions, script.off_topic]:
        recalled = engine.recall(question, namespace=namespace)
        lines = "\n".join(line for line in recalled.context.splitlines() if line.startswith("- "))
        if question == script.off_topic:
            report.off_topic_hits = len(recalled.hits)
            lines = lines or "[dim](nothing: no memory reaches the relevance floor)[/dim]"
        else:
            report.injected_tokens.append(recalled.tokens)
        table.add_row(question, lines or "(nothing)", str(recalled.tokens))
        if engine.llm is not None and question != script.off_topic:
            _answer(engine, console, question, recalled.context)
    console.print(table)


def _answer(engine: MemoryEngine, console: Console, question: str, context: str) -> None:
    assert engine.llm is not None
    try:
        answer = engine.llm.complete(
            [
                {"role": "system", "content": "Answer using the memories below.\n" + context},
                {"role": "user", "content": question},
            ],
            max_tokens=200,
        )
        console.print(Panel(answer, title=f"model answer: {question}"))
    except LLMError as exc:
        console.print(f"[red]model call failed: {exc}[/red]")


def _show_correction(engine: MemoryEngine, namespace: str, console: Console, script: DemoScript) -> None:
    found = engine.recall(script.correction_question, namespace=namespace, include_history=True, top_k=5)
    active = (h.record for h in found.hits if h.record.status is Status.ACTIVE)
    current = next((r for r in active if script.current_marker in r.content), None)
    old = next((h.record for h in found.hits if h.record.status is Status.SUPERSEDED), None)
    if current is None or old is None:
        return
    until = f"{old.valid_until:%A %d %B}" if old.valid_until else "?"
    console.print(
        Panel(
            f"now:     {current.content}\n"
            f"history: {old.content} [dim](superseded, true until {until}; recalled only with include_history)[/dim]",
            title="a correction and its history",
        )
    )


def _summary(engine: MemoryEngine, namespace: str, console: Console, report: DemoReport) -> None:
    average = sum(report.injected_tokens) / max(1, len(report.injected_tokens))
    kinds = Counter(r.kind.value for r in engine.list(namespace=namespace, limit=1000))
    console.print(
        Panel(
            f"history: {report.turns} turns, {report.history_tokens:,} tokens to replay on every call\n"
            f"recalled instead: {average:.0f} tokens per question on average "
            f"({100 * (1 - average / max(1, report.history_tokens)):.1f}% fewer)\n"
            f"long-term memories by kind: {', '.join(f'{k} {n}' for k, n in kinds.most_common())}\n"
            f"store: {engine.settings.chroma_url or engine.settings.store}, namespace: {namespace}, "
            f"model: {engine.embedding_model(namespace)}",
            title="summary",
        )
    )
    if engine.llm is None:
        console.print(
            "[dim]Set OPENAI_API_KEY (or OPENAI_BASE_URL) to have a real model answer from these memories.[/dim]"
        )
