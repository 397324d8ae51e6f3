"""The offline demo behind `hindsight demo`: two sessions teach, a third recalls.

It exercises the whole write path (working memory, write filter, conflict supersede, TTL)
and shows, for a few questions asked in a fresh session, what is injected and how many
tokens that costs next to replaying the whole history. With ``OPENAI_API_KEY`` (or
``OPENAI_BASE_URL``) set, a real model also answers from the injected memories.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from rich.console import Console
from rich.panel import Panel
from rich.table import Table

from .core.engine import MemoryEngine
from .core.errors import LLMError
from .core.records import Role, Status

SESSIONS: list[tuple[str, list[tuple[str, str]]]] = [
    (
        "monday",
        [
            ("user", "Hi there!"),
            ("assistant", "Hello! How can I help you today?"),
            ("user", "I prefer concise answers, and please always show code examples in Python."),
            ("assistant", "Got it: concise answers with Python examples."),
            ("user", "We're building an order-tracking service for a bike shop. The database is MySQL."),
            ("assistant", "Understood. What does the service need to do first?"),
            ("user", "The first milestone is the order status API. Our deadline is Friday, March 15."),
            ("assistant", "Noted: order status API first, deadline Friday March 15."),
            ("user", "ok thanks"),
        ],
    ),
    (
        "wednesday",
        [
            ("user", "Correction: the project actually uses PostgreSQL, not MySQL. We migrated last week."),
            ("assistant", "Thanks for the correction: PostgreSQL it is."),
            ("user", "I have a meeting with the design team tomorrow at 10am about the tracking page."),
            ("assistant", "Good luck with the meeting."),
            ("user", "The test customer's order number is ORD-7731-KX, use it when you write examples."),
            ("assistant", "I'll use ORD-7731-KX in examples."),
            ("user", "cool"),
        ],
    ),
]

QUESTIONS = [
    "Which database does the project use?",
    "Write a query that looks up the test customer's order.",
    "How should you format your answers for me?",
    "When is the deadline for the first milestone?",
]


@dataclass
class DemoReport:
    """What the demo showed, for a caller to check: memories stored, turns not stored, history vs injected tokens."""

    stored: int
    skipped: int
    history_tokens: int
    injected_tokens: list[int]


def run_demo(engine: MemoryEngine, *, namespace: str = "demo", console: Console | None = None) -> DemoReport:
    """Run the scripted conversation into ``namespace`` (reset first) and print what is recalled."""
    console = console or Console()
    engine.drop_namespace(namespace)
    start = datetime.now(UTC) - timedelta(days=2)
    stored = skipped = 0
    history: list[str] = []
    for day, (session, turns) in enumerate(SESSIONS):
        console.rule(f"[bold]Session {day + 1}: {session}[/bold]")
        for n, (role, content) in enumerate(turns):
            result = engine.record_turn(
                content,
                session_id=session,
                role=Role(role),
                namespace=namespace,
                occurred_at=start + timedelta(days=day, minutes=n),
            )
            history.append(f"{role}: {content}")
            if result.stored.stored:
                stored += len(result.stored.stored)
                note = f"[green]remembered[/green] as {result.stored.stored[0].kind.value}"
                if result.stored.superseded:
                    note += f" [yellow](supersedes {len(result.stored.superseded)} older memory)[/yellow]"
            else:
                skipped += 1
                reason = result.stored.skipped[0].reason if result.stored.skipped else "working memory only"
                note = f"[dim]not stored: {reason}[/dim]"
            console.print(f"  [cyan]{role:>9}[/cyan] {content}\n            {note}")

    history_tokens = engine.tokens.count("\n".join(history))
    console.rule("[bold]Session 3: a new session, later[/bold]")
    table = Table(title="What a fresh session recalls", show_lines=True)
    table.add_column("question")
    table.add_column("injected context")
    table.add_column("tokens", justify="right")
    injected = []
    for question in QUESTIONS:
        recalled = engine.recall(question, namespace=namespace, top_k=3, token_budget=200)
        injected.append(recalled.tokens)
        lines = "\n".join(line for line in recalled.context.splitlines() if line.startswith("- "))
        table.add_row(question, lines or "(nothing)", str(recalled.tokens))
        if engine.llm is not None:
            try:
                answer = engine.llm.complete(
                    [
                        {"role": "system", "content": "Answer using the memories below.\n" + recalled.context},
                        {"role": "user", "content": question},
                    ],
                    max_tokens=200,
                )
                console.print(Panel(answer, title=f"model answer: {question}"))
            except LLMError as exc:
                console.print(f"[red]model call failed: {exc}[/red]")
    console.print(table)

    history_view = engine.recall(
        "which database does the project use", namespace=namespace, top_k=3, include_history=True
    )
    old = [h.record for h in history_view.hits if h.record.status is Status.SUPERSEDED]
    if old:
        console.print(f"History kept for the correction: [dim]{old[0].content}[/dim] (superseded)")
    average = sum(injected) / len(injected)
    console.print(
        Panel(
            f"memories stored: {stored}, turns not stored: {skipped}\n"
            f"full history: {history_tokens} tokens per call; injected memories: {average:.0f} tokens on average "
            f"({100 * (1 - average / history_tokens):.0f}% fewer)\n"
            f"store: {engine.settings.chroma_url or engine.settings.store}, namespace: {namespace}",
            title="summary",
        )
    )
    if engine.llm is None:
        console.print(
            "[dim]Set OPENAI_API_KEY (or OPENAI_BASE_URL) to have a real model answer from these memories.[/dim]"
        )
    return DemoReport(stored=stored, skipped=skipped, history_tokens=history_tokens, injected_tokens=injected)
