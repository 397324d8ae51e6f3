"""A scripted OpenAI-compatible chat server on 127.0.0.1, with faults injected at a seeded rate.

``hindsight bench lifecycle --llm scripted`` points the engine's real ``openai`` client at it, so
every LLM path of the engine runs over HTTP (extraction, update judgement, consolidation's
distillation, summaries: the prompts of ``core/llm.py``) without a paid model. It answers from
the benchmark's history (``lifecycle_history``): what each turn says, which attribute and value it
sets, which preference a saying belongs to. That is the reply a good model would give; the
benchmark measures the engine's handling of it, not the model.

A share of requests (``fault_rate``, drawn from ``random.Random(seed)``, so a run is repeatable)
get a fault instead, one of:

* ``429`` and ``500``: an OpenAI-style error body, which the engine's tenacity retries;
* ``timeout``: the right reply, but only after ``slow_seconds`` (longer than the engine's
  ``llm_timeout``), so the client gives up first and retries;
* ``malformed``: a reply that is not the JSON asked for (or, for a summary, an empty one),
  which the engine does not retry: it falls back to its rules.

The server counts requests by call and faults served by kind and call (``stats``).
"""

from __future__ import annotations

import json
import random
import re
import secrets
import threading
import time
from collections import Counter
from typing import Any, Protocol

from ..core.llm import CONSOLIDATION_PROMPT, EXTRACTION_PROMPT, SUMMARY_PROMPT, UPDATE_PROMPT
from .http_json import LoopbackServer, QuietHandler, error_body, send_json
from .lifecycle_cases import Turn
from .lifecycle_history import History, normalised, statement_index

FAULTS = ("429", "500", "timeout", "malformed")
CALLS = {
    EXTRACTION_PROMPT: "extraction",
    UPDATE_PROMPT: "update_judgement",
    CONSOLIDATION_PROMPT: "distillation",
    SUMMARY_PROMPT: "summary",
}
_NUMBERED = re.compile(r"^\s*\d+\.\s+(.*)$")


def judged_statements(prompt: str) -> tuple[str, list[str]]:
    """The new statement and the stored ones of an update-judgement prompt (``core/llm.py``)."""
    new_line, _, stored_part = prompt.partition("\nSTORED:\n")
    return new_line.removeprefix("NEW:").strip(), [
        m.group(1) for line in stored_part.splitlines() if (m := _NUMBERED.match(line))
    ]


def numbered_statements(prompt: str) -> list[str]:
    """The numbered statements of a distillation prompt."""
    return [m.group(1) for line in prompt.splitlines() if (m := _NUMBERED.match(line))]


class Script(Protocol):
    """What a scripted server answers each of the engine's prompts with."""

    def extract(self, transcript: str) -> dict[str, Any]:
        """The memories of an extraction prompt's exchange."""
        ...

    def judge(self, prompt: str) -> dict[str, Any]:
        """A verdict for each stored statement of an update-judgement prompt."""
        ...

    def distil(self, prompt: str) -> dict[str, Any]:
        """The one fact a distillation prompt's statements say, or ``same_fact: false``."""
        ...

    def summarise(self, transcript: str) -> str:
        """A summary of a transcript's turns."""
        ...


class ScriptedLLM:
    """The replies a good model would give to the engine's prompts, for one ``History``."""

    def __init__(self, history: History) -> None:
        self._turns = statement_index(history)
        self._distilled: dict[str, str] = {}
        for preference in history.repeated_preferences:
            for _week, turn in preference.sayings:
                self._distilled[normalised(turn.text)] = preference.statement

    def turn(self, text: str) -> Turn | None:
        """The history's turn that said (or is extracted as) ``text``."""
        return self._turns.get(normalised(text))

    def extract(self, transcript: str) -> dict[str, Any]:
        """The memories of the exchange's last user line: its extracted sentence, or none for small talk."""
        lines = [line[len("user:") :].strip() for line in transcript.splitlines() if line.startswith("user:")]
        turn = self.turn(lines[-1]) if lines else None
        if turn is None or not turn.remember:
            return {"memories": []}
        memory: dict[str, Any] = {
            "should_remember": True,
            "memory_type": turn.kind,
            "content": turn.extracted,
            "entities": [],
            "importance": turn.weight,
        }
        return {"memories": [memory]}

    def judge(self, prompt: str) -> dict[str, Any]:
        """One verdict per stored memory: same attribute and value merge, another value replaces, else both stay."""
        new, stored = judged_statements(prompt)
        return {"verdicts": [self._verdict(new, old) for old in stored]}

    def _verdict(self, new: str, old: str) -> str:
        if normalised(new) == normalised(old):
            return "merge"
        a, b = self.turn(new), self.turn(old)
        if a is None or b is None or a.sets is None or b.sets is None or a.sets[0] != b.sets[0]:
            return "keep_both"
        return "merge" if a.sets[1] == b.sets[1] else "keep_new"

    def distil(self, prompt: str) -> dict[str, Any]:
        """The preference the statements say, in one sentence; a repeat as it was said; else the shortest."""
        statements = numbered_statements(prompt)
        if not statements:
            return {"same_fact": False}
        preferences = {self._distilled.get(normalised(s)) for s in statements}
        if len(preferences) == 1 and (statement := preferences.pop()):
            return {"same_fact": True, "content": statement, "kind": "preference", "importance": 0.9}
        shortest = min(statements, key=len)
        turn = self.turn(shortest)
        kind = (
            turn.kind if turn is not None and turn.kind in ("preference", "fact", "context", "correction") else "fact"
        )
        return {"same_fact": True, "content": shortest, "kind": kind, "importance": turn.weight if turn else 0.5}

    def summarise(self, transcript: str) -> str:
        """What the turns said worth keeping, in their own words, at most 80 words."""
        kept: list[str] = []
        for line in transcript.splitlines():
            role, _, text = line.partition(": ")
            turn = self.turn(text)
            if role == "user" and turn is not None and turn.remember:
                kept.append(turn.extracted)
        words = " ".join(kept).split()[:80]
        return " ".join(words) if words else "Small talk only; nothing to keep."


class ScriptedLLMServer(LoopbackServer):
    """Serve ``ScriptedLLM`` replies at ``base_url`` with faults injected; a context manager.

    ``fault_rate`` of the requests get a fault (``FAULTS``), chosen by ``random.Random(seed)``;
    a ``timeout`` fault answers after ``slow_seconds``. Requests need the random ``api_key``.
    Another benchmark's ``script`` answers instead of ``history``'s when given.
    """

    def __init__(
        self,
        history: History | None = None,
        *,
        script: Script | None = None,
        fault_rate: float = 0.15,
        seed: int = 7,
        slow_seconds: float = 2.0,
        host: str = "127.0.0.1",
        port: int = 0,
    ) -> None:
        if not 0.0 <= fault_rate <= 1.0:
            raise ValueError(f"fault_rate must be between 0 and 1, got {fault_rate}")
        if script is None:
            if history is None:
                raise ValueError("a scripted server needs a history or a script to answer from")
            script = ScriptedLLM(history)
        self.script: Script = script
        self.fault_rate = fault_rate
        self.slow_seconds = slow_seconds
        self.requests: Counter[str] = Counter()
        self.faults: Counter[str] = Counter()
        self.faults_by_call: Counter[str] = Counter()
        self._rng = random.Random(seed)
        self._lock = threading.Lock()
        server = self

        class Handler(QuietHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("content-length") or 0))
                if self.path.rstrip("/") != "/v1/chat/completions":
                    send_json(self, 404, error_body(f"no such endpoint: POST {self.path}"))
                    return
                if not server.authorised(self):
                    send_json(self, 401, error_body("missing or wrong API key"))
                    return
                try:
                    request = json.loads(body or b"{}")
                    messages = request["messages"]
                    system, user = messages[0]["content"], messages[-1]["content"]
                except (ValueError, KeyError, IndexError, TypeError):
                    send_json(self, 400, error_body("expected a chat completion request with messages"))
                    return
                status, payload, delay = server.respond(system, user, str(request.get("model", "scripted")))
                if delay:
                    time.sleep(delay)
                send_json(self, status, payload)

        super().__init__(Handler, host=host, port=port, name="scripted-llm")

    def engine_options(self, *, timeout: float, retries: int) -> dict[str, Any]:
        """``MemoryEngine`` settings that make its LLM this server, with the client's ``timeout`` and ``retries``."""
        return {
            "openai_base_url": self.base_url,
            "openai_api_key": self.api_key,
            "llm_model": "scripted",
            "llm_timeout": timeout,
            "llm_max_retries": retries,
            "use_llm": True,
        }

    def respond(self, system: str, user: str, model: str) -> tuple[int, dict[str, Any], float]:
        """(status, body, delay in seconds) for one chat request: the scripted reply, or a fault."""
        call = CALLS.get(system, "other")
        with self._lock:
            self.requests[call] += 1
            fault = self._rng.choice(FAULTS) if self._rng.random() < self.fault_rate else None
            if fault is not None:
                self.faults[fault] += 1
                self.faults_by_call[f"{call}:{fault}"] += 1
        if fault in ("429", "500"):
            kind = "rate_limit_error" if fault == "429" else "server_error"
            return int(fault), error_body(f"injected {fault}", kind), 0.0
        if fault == "malformed":
            content = "" if call == "summary" else '{"memories": [{"content": "unterminated'
            return 200, chat_completion(content, model), 0.0
        return 200, chat_completion(self._reply(call, user), model), self.slow_seconds if fault == "timeout" else 0.0

    def _reply(self, call: str, user: str) -> str:
        if call == "extraction":
            return json.dumps(self.script.extract(user), ensure_ascii=False)
        if call == "update_judgement":
            return json.dumps(self.script.judge(user))
        if call == "distillation":
            return json.dumps(self.script.distil(user), ensure_ascii=False)
        if call == "summary":
            return self.script.summarise(user)
        return "I can only answer the memory engine's prompts."

    def stats(self) -> dict[str, Any]:
        """Requests by call, faults served by kind and by call:kind."""
        with self._lock:
            return {
                "requests": dict(sorted(self.requests.items())),
                "requests_total": sum(self.requests.values()),
                "faults": {kind: self.faults.get(kind, 0) for kind in FAULTS},
                "faults_total": sum(self.faults.values()),
                "faults_by_call": dict(sorted(self.faults_by_call.items())),
            }


def chat_completion(content: str, model: str) -> dict[str, Any]:
    """A chat completion body with one choice saying ``content``."""
    return {
        "id": f"chatcmpl-{secrets.token_hex(6)}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0},
    }


__all__ = [
    "CALLS",
    "FAULTS",
    "Script",
    "ScriptedLLM",
    "ScriptedLLMServer",
    "chat_completion",
    "judged_statements",
    "numbered_statements",
]
