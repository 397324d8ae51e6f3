"""`hindsight demo`: the offline demo, two sessions teach and a new one recalls."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated

import typer

from ..core.config import validate_namespace
from ..terminal import console, reported
from . import options


def demo(
    namespace: Annotated[str, typer.Option(help="Namespace the demo writes into (reset first).")] = "demo",
    today: Annotated[
        datetime | None,
        typer.Option(formats=["%Y-%m-%d"], help="Play the demo as if today were this date (default: today)."),
    ] = None,
) -> None:
    """Run the offline demo: two sessions teach, a new session recalls."""
    with reported():
        settings = options.settings()
        validate_namespace(namespace, "--namespace")
        from ..demo import run_demo

        when = today.replace(hour=12, tzinfo=UTC) if today is not None else None
        run_demo(options.engine(settings), namespace=namespace, console=console, today=when)


__all__ = ["demo"]
