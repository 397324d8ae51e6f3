"""mem0 OSS behind a JSON-lines protocol, for ``hindsight bench peers`` (see ``mem0_peer``).

This script runs in mem0's own virtual environment (``python -I mem0_runner.py``), so it
imports only the standard library and ``mem0``: nothing of hindsight, whose dependencies
mem0's pins clash with. It knows nothing of LoCoMo either; the benchmark sends it a mem0
config, texts and queries.

Protocol: one JSON object a line on stdin, one reply a line on stdout, in order. Every
reply has ``"ok"``; a failed request gets ``{"ok": false, "error": "Type: message"}`` (the
traceback goes to stderr) and the runner keeps serving. End of input, or ``exit``, ends it.

* ``{"op": "hello"}`` → ``{"ok": true, "mem0": "<version>", "python": "3.11.7", "packages":
  {"mem0ai": ..., "qdrant-client": ..., "openai": ...}}`` (mem0 imported, versions as installed)
* ``{"op": "load", "config": {...}, "user_id": "u", "turns": [{"text": "...", "metadata": {...}}]}``
  → ``{"ok": true, "stored": n, "seconds": s}``: a fresh ``Memory.from_config(config)``, then
  one ``Memory.add(text, user_id=u, metadata=..., infer=False)`` per turn (no LLM: each
  text is stored as it is, one memory per turn).
* ``{"op": "search", "query": "...", "top_k": 10}`` → ``{"ok": true, "results": [{"memory":
  "...", "metadata": {...}, "score": x}], "seconds": s, "embed_seconds": e}``: ``Memory.search``
  scoped to the loaded user; ``seconds`` is the wall time of that call alone, query embedding
  included, and ``embed_seconds`` the part of it spent in mem0's embedder (timed by a
  pass-through wrapper around the Memory's ``embedding_model.embed``).
* ``{"op": "exit"}`` → ``{"ok": true}``, and the runner exits.

stdout carries only the protocol: the real stdout is kept for replies and file descriptor 1
is pointed at stderr, so whatever mem0 or its dependencies print cannot corrupt a reply.
Telemetry is switched off before mem0 is imported.
"""

from __future__ import annotations

import json
import os
import sys
import time
import traceback
from typing import Any


class Runner:
    """One mem0 ``Memory`` at a time: ``load`` replaces it, ``search`` queries it."""

    def __init__(self) -> None:
        self.memory: Any = None
        self.user_id = ""
        self.embed_seconds = 0.0

    def handle(self, request: dict[str, Any]) -> dict[str, Any]:
        """The reply's fields (besides ``ok``) for one request; raises on a bad request or a mem0 error."""
        op = request.get("op")
        if op == "hello":
            return self.hello()
        if op == "load":
            return self.load(request["config"], str(request["user_id"]), request["turns"])
        if op == "search":
            return self.search(str(request["query"]), int(request.get("top_k", 10)))
        raise ValueError(f"unknown op {op!r} (hello, load, search, exit)")

    def hello(self) -> dict[str, Any]:
        """Import mem0 and say which version answers."""
        import importlib.metadata

        import mem0

        packages: dict[str, str | None] = {}
        for name in ("mem0ai", "qdrant-client", "openai"):
            try:
                packages[name] = importlib.metadata.version(name)
            except importlib.metadata.PackageNotFoundError:
                packages[name] = None
        return {
            "mem0": str(getattr(mem0, "__version__", packages["mem0ai"])),
            "python": sys.version.split()[0],
            "packages": packages,
        }

    def load(self, config: dict[str, Any], user_id: str, turns: list[dict[str, Any]]) -> dict[str, Any]:
        """A fresh Memory from ``config``, one ``add(..., infer=False)`` per turn."""
        from mem0 import Memory

        started = time.perf_counter()
        self.memory, self.user_id = None, user_id
        memory = Memory.from_config(config)
        self._time_embeddings(memory)
        stored = 0
        for turn in turns:
            result = memory.add(turn["text"], user_id=user_id, metadata=turn.get("metadata") or {}, infer=False)
            stored += len(result.get("results", [])) if isinstance(result, dict) else 0
        self.memory = memory
        return {"stored": stored, "seconds": time.perf_counter() - started}

    def search(self, query: str, top_k: int) -> dict[str, Any]:
        """``Memory.search`` for the loaded user, timed around that call alone."""
        if self.memory is None:
            raise RuntimeError("nothing is loaded: send a load request first")
        self.embed_seconds = 0.0
        started = time.perf_counter()
        found = self.memory.search(query, top_k=top_k, filters={"user_id": self.user_id})
        seconds = time.perf_counter() - started
        hits = found.get("results", []) if isinstance(found, dict) else found
        results = [
            {"memory": hit.get("memory", ""), "metadata": hit.get("metadata") or {}, "score": hit.get("score")}
            for hit in hits
        ]
        return {"results": results, "seconds": seconds, "embed_seconds": self.embed_seconds}

    def _time_embeddings(self, memory: Any) -> None:
        """Add the time of every call to the Memory's embedder to ``embed_seconds`` (same arguments, same result)."""
        embed = memory.embedding_model.embed

        def timed(*args: Any, **kwargs: Any) -> Any:
            started = time.perf_counter()
            try:
                return embed(*args, **kwargs)
            finally:
                self.embed_seconds += time.perf_counter() - started

        memory.embedding_model.embed = timed


def main() -> int:
    """Serve requests from stdin until it closes or an ``exit`` request comes."""
    os.environ["MEM0_TELEMETRY"] = "False"
    replies = os.fdopen(os.dup(1), "w", encoding="utf-8")
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    runner = Runner()
    for line in sys.stdin:
        if not line.strip():
            continue
        request: Any = None
        try:
            request = json.loads(line)
            if not isinstance(request, dict):
                raise ValueError("a request must be a JSON object")
            reply = {"ok": True} if request.get("op") == "exit" else {"ok": True, **runner.handle(request)}
        except Exception as exc:  # noqa: BLE001 - every failure becomes a reply; the runner keeps serving
            traceback.print_exc()
            reply = {"ok": False, "error": f"{type(exc).__name__}: {exc}"}
        replies.write(json.dumps(reply) + "\n")
        replies.flush()
        if isinstance(request, dict) and request.get("op") == "exit":
            break
    return 0


if __name__ == "__main__":
    sys.exit(main())
