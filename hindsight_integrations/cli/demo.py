"""`hindsight demo`: the offline demo, two sessions teach and a new one recalls (in English or Chinese)."""

from __future__ import annotations

from datetime import UTC, datetime
from enum import Enum
from typing import Annotated

import typer

from ..core.config import validate_namespace
from ..terminal import console, reported
from . import options


class DemoLanguage(str, Enum):
    """The demo's languages: ``zh`` is the same project told in Chinese, with one question in English."""

    EN = "en"
    ZH = "zh"


def demo(
    namespace: Annotated[
        str | None, typer.Option(help="Namespace the demo writes into (reset first; default demo, or demo-zh).")
    ] = None,
    today: Annotated[
        datetime | None,
        typer.Option(formats=["%Y-%m-%d"], help="Play the demo as if today were this date (default: today)."),
    ] = None,
    lang: Annotated[
        DemoLanguage,
        typer.Option(
            "--lang",
            help="en, or zh: the Chinese conversation, on the bundled multilingual model (multilingual-e5-small).",
        ),
    ] = DemoLanguage.EN,
) -> None:
    """Run the offline demo: two sessions teach, a new session recalls."""
    with reported():
        settings = options.settings()
        chosen = namespace or ("demo" if lang is DemoLanguage.EN else "demo-zh")
        validate_namespace(chosen, "--namespace")
        from ..demo import run_demo
        from ..demo_conversation import ENGLISH

        script = ENGLISH
        if lang is DemoLanguage.ZH:
            from ..core.embedding.factory import routes_by_script
            from ..core.embedding.multilingual import MULTILINGUAL_MODEL
            from ..demo_conversation_zh import CHINESE

            script = CHINESE
            if not routes_by_script(settings):
                # English-only MiniLM cannot read Chinese (the default, auto, gives a Chinese
                # namespace the multilingual model by itself); the namespace records its model.
                local = {"embedding_provider": "local", "embedding_model": MULTILINGUAL_MODEL}
                settings = settings.model_copy(update=local)
        when = today.replace(hour=12, tzinfo=UTC) if today is not None else None
        run_demo(options.engine(settings), namespace=chosen, console=console, today=when, script=script)


__all__ = ["demo"]
