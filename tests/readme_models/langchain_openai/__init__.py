"""Stand-in for ``langchain_openai`` while tests/test_readme.py runs the README's blocks (see ../README.md)."""

from __future__ import annotations

from langchain_fakes import PromptEcho


class ChatOpenAI(PromptEcho):
    """``PromptEcho`` (tests/langchain_fakes.py) under ChatOpenAI's name, taking its usual arguments."""

    model: str = "gpt-4o-mini"
    temperature: float | None = None


__all__ = ["ChatOpenAI"]
