"""Calls to an OpenAI-compatible LLM: memory extraction, update judgements, summaries, answers.

Everything here is optional: without a key the engine runs on rules. Transient failures
(429, 5xx, timeouts, dropped connections) are retried with exponential backoff by
tenacity; anything else, or a reply we cannot parse, raises ``LLMError`` and the caller
falls back to rules, so a flaky model never loses a turn.

``openai`` is imported only when a client is built or its exception types are needed: it
takes ~0.6 s to import, and most processes (the CLI, an engine without a key) never call it.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from pydantic import BaseModel, Field, ValidationError
from tenacity import retry, retry_if_exception_type, stop_after_attempt, wait_exponential

from .errors import LLMError

T = TypeVar("T")


def transient_errors() -> tuple[type[Exception], ...]:
    """The OpenAI errors worth retrying: rate limits, timeouts, dropped connections, 5xx (imports openai)."""
    import openai

    return (openai.RateLimitError, openai.APITimeoutError, openai.APIConnectionError, openai.InternalServerError)


def __getattr__(name: str) -> Any:
    """``TRANSIENT_ERRORS``, the tuple this module used to build at import, resolved on first use."""
    if name == "TRANSIENT_ERRORS":
        return transient_errors()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def retrying(max_retries: int, *, max_wait: float = 8.0) -> Callable[[Callable[..., T]], Callable[..., T]]:
    """A tenacity decorator for transient OpenAI errors: ``max_retries`` retries after the first try."""
    return retry(
        retry=retry_if_exception_type(transient_errors()),
        stop=stop_after_attempt(max_retries + 1),
        wait=wait_exponential(multiplier=0.2, max=max_wait),
        reraise=True,
    )


class ExtractedMemory(BaseModel):
    """One item of the extraction reply: what the LLM says is worth remembering from an exchange."""

    should_remember: bool = True
    memory_type: str = "fact"
    content: str
    entities: list[str] = Field(default_factory=list)
    importance: float = Field(0.5, ge=0, le=1)


EXTRACTION_PROMPT = """You maintain the long-term memory of an assistant.
From the exchange below, extract what is worth remembering in later conversations:
explicit user preferences, constraints (numbers, deadlines, budgets), corrections of
earlier facts, project context (stack, environment, goals), key decisions and open tasks.
Never extract greetings, thanks, small talk, transient lookups (weather, time) or reasoning.
Each memory: one self-contained sentence about the user or their work, at most 80 words.
Reply with JSON only: {"memories": [{"should_remember": true, "memory_type":
"preference|context|fact|correction|event", "content": "...", "entities": ["..."],
"importance": 0.0-1.0}]} — an empty list if nothing is worth keeping."""

UPDATE_PROMPT = """You keep an assistant's long-term memory consistent.
A NEW memory arrives; for each numbered STORED memory, say how the two relate:
"keep_new" - both give a value for the same attribute of the same subject and the values
differ (a move, a new job, a changed number, date, amount, status or choice);
"keep_old" - the new memory is about the same attribute but is wrong or outdated;
"merge" - they state the same fact with the same values;
"keep_both" - different facts or different attributes (likes red / hates red clothes).
Reply with JSON only: {"verdicts": ["keep_both", ...]}, one verdict per stored memory, in order."""

_VERDICTS = frozenset({"keep_old", "keep_new", "merge", "keep_both"})

CONSOLIDATION_PROMPT = """You keep an assistant's long-term memory tidy.
The numbered STATEMENTS below were recorded at different times and grouped because they seem
to say one thing about the user or their work. If they all state the same fact or preference
with the same values, distil it into one self-contained sentence of at most 40 words that keeps
every value (names, numbers, dates, places) exactly as stated and adds nothing.
Reply with JSON only: {"same_fact": true, "content": "...", "kind":
"preference|fact|context|correction", "importance": 0.0-1.0}
If they do not all state one fact, reply {"same_fact": false}."""

_DISTILLED_KINDS = frozenset({"preference", "fact", "context", "correction"})


class DistilledFact(BaseModel):
    """The consolidation reply: one statement for a cluster of memories, its kind and importance."""

    content: str = Field(min_length=1)
    kind: str
    importance: float = Field(ge=0, le=1)


SUMMARY_PROMPT = """Summarise these conversation turns for the assistant's episodic memory.
Keep key decisions, numeric constraints, facts about the user, corrections and open tasks;
drop small talk. At most 80 words, plain sentences, no preamble."""


class LLMClient:
    """A thin wrapper over ``openai.OpenAI`` with our retry policy and prompts."""

    def __init__(
        self,
        *,
        model: str,
        api_key: str | None = None,
        base_url: str | None = None,
        timeout: float = 30.0,
        max_retries: int = 3,
        client: Any = None,
    ) -> None:
        self.model = model
        if client is None:
            import openai

            client = openai.OpenAI(api_key=api_key or "not-needed", base_url=base_url, timeout=timeout, max_retries=0)
        self._client = client
        self._retry = retrying(max_retries)

    @classmethod
    def from_settings(cls, settings: Any) -> LLMClient | None:
        """A client when settings allow and reach an LLM, else None: the engine then runs on rules."""
        if not settings.llm_configured:
            return None
        return cls(
            model=settings.llm_model,
            api_key=settings.openai_api_key,
            base_url=settings.openai_base_url,
            timeout=settings.llm_timeout,
            max_retries=settings.llm_max_retries,
        )

    def complete(self, messages: Sequence[dict[str, str]], *, json_mode: bool = False, max_tokens: int = 400) -> str:
        """The model's reply text; any API failure (after retries) or an empty reply raises ``LLMError``."""
        import openai

        kwargs: dict[str, Any] = {"model": self.model, "messages": list(messages), "max_tokens": max_tokens}
        if json_mode:
            kwargs["response_format"] = {"type": "json_object"}
        try:
            response = self._retry(self._client.chat.completions.create)(**kwargs)
        except openai.OpenAIError as exc:
            raise LLMError(f"LLM call to {self.model!r} failed: {exc}") from exc
        content = response.choices[0].message.content if response.choices else None
        if not content:
            raise LLMError(f"LLM {self.model!r} returned an empty reply")
        return content

    def extract_memories(self, exchange: str) -> list[ExtractedMemory]:
        """What of ``exchange`` is worth remembering; ``LLMError`` if the reply cannot be parsed, so rules take over."""
        reply, data = self._ask_json(EXTRACTION_PROMPT, exchange, max_tokens=400, what="extraction")
        try:
            items = data.get("memories", []) if isinstance(data, dict) else data
            return [m for m in (ExtractedMemory.model_validate(item) for item in items) if m.should_remember]
        except (ValidationError, AttributeError, TypeError) as exc:
            raise LLMError(f"could not parse the extraction reply: {reply[:200]!r}") from exc

    def judge_update(self, new: str, stored: Sequence[str]) -> list[str]:
        """One verdict per ``stored`` memory on how ``new`` relates to it; ``LLMError`` if the reply is unusable."""
        listing = "\n".join(f"{n}. {text}" for n, text in enumerate(stored, 1))
        reply, data = self._ask_json(
            UPDATE_PROMPT, f"NEW: {new}\nSTORED:\n{listing}", max_tokens=100, what="update verdicts"
        )
        try:
            verdicts = [str(v).strip().lower() for v in (data.get("verdicts", []) if isinstance(data, dict) else data)]
        except (AttributeError, TypeError) as exc:
            raise LLMError(f"could not parse the update verdicts: {reply[:200]!r}") from exc
        if len(verdicts) != len(stored) or not set(verdicts) <= _VERDICTS:
            raise LLMError(f"expected {len(stored)} verdicts out of {sorted(_VERDICTS)}, got {reply[:200]!r}")
        return verdicts

    def distil_fact(self, statements: Sequence[str]) -> DistilledFact | None:
        """One statement for what ``statements`` say, or None when the model says they are not one fact.

        ``LLMError`` if the call fails or the reply is unusable (not JSON, no content, a kind
        outside preference/fact/context/correction, an importance outside 0-1): the caller
        then distils by rules.
        """
        listing = "\n".join(f"{n}. {text}" for n, text in enumerate(statements, 1))
        reply, data = self._ask_json(
            CONSOLIDATION_PROMPT, f"STATEMENTS:\n{listing}", max_tokens=200, what="consolidation"
        )
        try:
            if not isinstance(data, dict) or not isinstance(data.get("same_fact", True), bool):
                raise TypeError("not an object with a boolean same_fact")
            if data.get("same_fact") is False:
                return None
            fact = DistilledFact.model_validate(data)
        except (ValidationError, TypeError) as exc:
            raise LLMError(f"could not parse the consolidation reply: {reply[:200]!r}") from exc
        kind = fact.kind.strip().lower()
        if kind not in _DISTILLED_KINDS or not fact.content.strip():
            raise LLMError(f"the consolidation reply has kind {fact.kind!r} or an empty content: {reply[:200]!r}")
        return fact.model_copy(update={"kind": kind, "content": " ".join(fact.content.split())})

    def _ask_json(self, system: str, user: str, *, max_tokens: int, what: str) -> tuple[str, Any]:
        """The reply to one system + user exchange in JSON mode, and its JSON (code fences tolerated).

        ``LLMError`` when the call fails or the reply is not JSON; the callers check its shape.
        """
        reply = self.complete(
            [{"role": "system", "content": system}, {"role": "user", "content": user}],
            json_mode=True,
            max_tokens=max_tokens,
        )
        try:
            return reply, json.loads(_strip_fences(reply))
        except json.JSONDecodeError as exc:
            raise LLMError(f"could not parse the {what} reply: {reply[:200]!r}") from exc

    def summarize(self, transcript: str) -> str:
        """A short episodic summary of ``transcript``, for compressing working memory."""
        return self.complete(
            [{"role": "system", "content": SUMMARY_PROMPT}, {"role": "user", "content": transcript}], max_tokens=200
        ).strip()


def _strip_fences(text: str) -> str:
    text = text.strip()
    if text.startswith("```"):
        text = text.split("\n", 1)[1] if "\n" in text else ""
        text = text.rsplit("```", 1)[0]
    return text.strip()
