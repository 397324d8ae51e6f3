"""`hindsight bench adversarial`: what pathological inputs cost a shared HTTP server, and what another tenant waits.

Starts one ``hindsight serve --transport http`` on 127.0.0.1 with two tokens (two namespaces:
an attacker and a victim, as on a server shared by tenants), then sends each pathological
input through the tools it reaches (``store_memory``, ``record_turn``, ``retrieve_memory``,
``list_memories``), one raw JSON-RPC request at a time, and reports for each:

* its cost as a ratio to an ordinary input of the same size and the same call, measured in
  the same run just before it (so machine load affects both alike);
* what came of it: stored, refused (with the error type), timed out, or "server died";
* how long the other tenant waited meanwhile: a second client recalls in a loop on its own
  connection during the attack; its p50 and max latency against the same loop while idle.

The engine works in worker threads under the GIL, so a rule that backtracks over a 32 KB
memory holds the CPU and every tenant waits (security issue #24). The inputs that bound the
metadata filter and nesting (other defences) run last; a server they crash is restarted for
the rows after, and the row says "server died".
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

import httpx

from ..mcp import MemoryClient
from ..processes import free_port, running
from .scale import percentile

VICTIM_QUERY = "What grows in my garden?"
_HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
_ORDINARY = (
    "On {day} I met {name} at {hour}pm to go over the {topic} plan.",
    "The {topic} budget is {amount} euros, and {name} signs it off by Friday.",
    "{name} moved the {topic} review to room {room}; the invoice is INV-{room}{hour}.",
    "My colleague {name} prefers the {topic} notes in plain text.",
    "We agreed that the {topic} release ships after the tests pass on {day}.",
)
_NAMES = ("Dana", "Priya", "Marco", "Kenji", "Amara", "Sofia")
_DAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday")
_TOPICS = ("garden", "orchard", "database", "holiday", "budget", "guitar")


def ordinary_text(size: int, seed: int) -> str:
    """``size`` characters of ordinary prose (sentences with names, days, amounts, codes), varied by ``seed``."""
    parts: list[str] = []
    length = 0
    n = seed * 7919
    while length < size:
        template = _ORDINARY[n % len(_ORDINARY)]
        sentence = template.format(
            day=_DAYS[n % 5],
            name=_NAMES[(n // 5) % 6],
            hour=1 + n % 11,
            topic=_TOPICS[(n // 3) % 6],
            amount=100 + (n * 37) % 9000,
            room=100 + n % 900,
        )
        parts.append(sentence)
        length += len(sentence) + 1
        n += 1
    return " ".join(parts)[:size]


def _repeat(fragment: str, size: int, tail: str = "") -> str:
    """``fragment`` repeated (then ``tail``) to ``size`` bytes of UTF-8 at most: the content limit is in bytes."""
    count = (size - len(tail.encode())) // len(fragment.encode())
    return fragment * count + tail


@dataclass(frozen=True)
class ContentAttack:
    """A pathological text sent as content (and as a query), against ordinary text of its size."""

    name: str
    text: str


def content_attacks(size: int) -> list[ContentAttack]:
    """The 32 KB texts of issue #24 and those the pattern audit found, each about ``size`` bytes."""
    return [
        ContentAttack('"a@b.c" × n', _repeat("a@b.c", size)),
        ContentAttack('"a" × n + "!"', _repeat("a", size, "!")),
        ContentAttack("digits", _repeat("7", size)),
        ContentAttack('"goodbye" × n', _repeat("goodbye", size)),
        ContentAttack('"A-" × n', _repeat("A-", size)),
        ContentAttack('"A" × n', _repeat("A", size)),
        ContentAttack('"万" × n', _repeat("万", size)),
        ContentAttack('"my phone " × n', _repeat("my phone ", size)),
        ContentAttack('"手机" × n', _repeat("手机", size)),
    ]


@dataclass
class Outcome:
    """One timed call: seconds, and what came of it."""

    seconds: float
    result: str


@dataclass
class Waits:
    """The other tenant's recall latencies (ms) over a window."""

    latencies_ms: list[float] = field(default_factory=list)
    errors: int = 0

    def summary(self) -> dict[str, Any]:
        """Count, p50 and max in milliseconds (and errors)."""
        values = self.latencies_ms
        return {
            "recalls": len(values),
            "p50_ms": round(percentile(values, 50), 1),
            "max_ms": round(max(values), 1) if values else 0.0,
            "errors": self.errors,
        }


class Server:
    """A ``hindsight serve --transport http`` process with an attacker's and a victim's token; restartable."""

    def __init__(self, workdir: Path, *, startup_seconds: float = 180.0) -> None:
        self.attacker = "attacker-" + uuid.uuid4().hex
        self.victim = "victim-" + uuid.uuid4().hex
        self._workdir = workdir
        self._startup = startup_seconds
        self._stack: ExitStack | None = None
        self._process: Any = None
        self.base = ""
        self.restarts = 0

    def start(self) -> None:
        """Start (or start again, on the same store) and wait until ``/health`` answers."""
        self.stop()
        port = free_port()
        self.base = f"http://127.0.0.1:{port}"
        env = {k: v for k, v in os.environ.items() if not k.startswith("HINDSIGHT_")}
        env.update(
            {
                "HINDSIGHT_STORE": str(self._workdir / "store"),
                "HINDSIGHT_TOKENS": f"{self.attacker}=attacker,{self.victim}=victim",
                "HF_HUB_OFFLINE": "1",
                "TOKENIZERS_PARALLELISM": "false",
            }
        )
        command = [sys.executable, "-m", "hindsight_integrations.mcp", "--transport", "http", "--port", str(port)]
        stack = ExitStack()
        log = stack.enter_context(open(self._workdir / f"server-{self.restarts}.log", "ab"))  # noqa: SIM115
        self._process = stack.enter_context(
            running(command, health_url=f"{self.base}/health", env=env, log=log, startup_seconds=self._startup)
        )
        self._stack = stack

    def stop(self) -> None:
        """Stop the process (if any)."""
        if self._stack is not None:
            self._stack.close()
            self._stack = None

    def alive(self) -> bool:
        """Whether the process runs and ``/health`` answers."""
        if self._process is None or self._process.poll() is not None:
            return False
        try:
            return httpx.get(f"{self.base}/health", timeout=10).status_code == 200
        except httpx.HTTPError:
            return False

    def call(self, token: str, tool: str, arguments: dict[str, Any] | bytes, *, timeout: float) -> Outcome:
        """One raw ``tools/call`` (``arguments`` as JSON bytes when the caller built them itself), timed."""
        if isinstance(arguments, bytes):
            body = b'{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "%s", "arguments": %s}}' % (
                tool.encode(),
                arguments,
            )
        else:
            body = json.dumps(
                {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": tool, "arguments": arguments}}
            ).encode()
        headers = {**_HEADERS, "Authorization": f"Bearer {token}"}
        started = time.perf_counter()
        try:
            response = httpx.post(f"{self.base}/mcp", content=body, headers=headers, timeout=timeout)
        except httpx.TimeoutException:
            return Outcome(time.perf_counter() - started, f"timed out (> {timeout:.0f} s)")
        except httpx.HTTPError as exc:
            seconds = time.perf_counter() - started
            return Outcome(seconds, "server died" if not self.alive() else f"connection error: {type(exc).__name__}")
        seconds = time.perf_counter() - started
        return Outcome(seconds, _result_of(response))

    def __enter__(self) -> Server:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def _result_of(response: httpx.Response) -> str:
    """ "ok", or the error a tool call answered with ("refused: invalid_input", "internal_error", "http 413")."""
    try:
        payload = response.json()
    except ValueError:
        return f"http {response.status_code}"
    if "error" in payload:
        return f"refused: http {response.status_code}"
    result = payload.get("result") or {}
    if not result.get("isError"):
        return "ok"
    error = (result.get("structuredContent") or {}).get("error") or {}
    kind = error.get("type", "error")
    return "internal_error" if kind == "internal_error" else f"refused: {kind}"


@contextmanager
def other_tenant(server: Server) -> Iterator[Waits]:
    """The victim recalling in a loop on its own connection for as long as the block runs.

    The block starts once the victim's connection is up and has answered one recall (not
    counted), so what is measured is the wait the attack causes, not the connection's setup.
    """
    waits = Waits()
    ready = threading.Event()
    stop = threading.Event()

    def loop() -> None:
        try:
            # A recall unanswered after a minute is counted as failed: the server may have died under it.
            with MemoryClient.http(f"{server.base}/mcp", token=server.victim, retries=0, timeout=60) as client:
                client.recall(VICTIM_QUERY)
                ready.set()
                while not stop.is_set() or not (waits.latencies_ms or waits.errors):
                    started = time.perf_counter()
                    try:
                        client.recall(VICTIM_QUERY)
                        waits.latencies_ms.append((time.perf_counter() - started) * 1000)
                    except Exception:  # noqa: BLE001 - counted: a refused or failed recall is what we measure
                        waits.errors += 1
                        if stop.is_set():
                            return
                        time.sleep(0.1)
        except Exception:  # noqa: BLE001 - the connection itself failed (server down): counted
            waits.errors += 1
        finally:
            ready.set()

    thread = threading.Thread(target=loop, daemon=True)
    thread.start()
    ready.wait(timeout=120)
    try:
        yield waits
    finally:
        stop.set()
        thread.join(timeout=120)


def _attack_row(
    server: Server,
    name: str,
    tool: str,
    attack: Callable[[], Outcome],
    normal: Callable[[], Outcome],
    progress: Callable[[str], None] | None,
) -> dict[str, Any]:
    """Time ``normal`` then ``attack`` (the other tenant recalling during the attack); restart a server that died."""
    if not server.alive():
        server.restarts += 1
        server.start()
    baseline = normal()
    with other_tenant(server) as waits:
        outcome = attack()
    if outcome.result != "server died" and not server.alive():
        outcome.result = "server died"
    if outcome.result == "server died":
        server.restarts += 1
        server.start()
    ratio = outcome.seconds / baseline.seconds if baseline.seconds > 0 else 0.0
    row = {
        "input": name,
        "call": tool,
        "result": outcome.result,
        "seconds": round(outcome.seconds, 3),
        "normal_seconds": round(baseline.seconds, 3),
        "normal_result": baseline.result,
        "ratio": round(ratio, 2),
        "other_tenant": waits.summary(),
    }
    if progress:
        progress(f"{name} via {tool}: {outcome.result} in {outcome.seconds:.2f} s ({ratio:.1f}× normal)")
    return row


def run_adversarial(
    *,
    size: int = 32_000,
    recalls: int = 3,
    filter_keys: int = 10_000,
    depth: int = 10_000,
    idle_seconds: float = 5.0,
    call_timeout: float = 600.0,
    progress: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    """Run every attack (see the module docstring) against a fresh server; return the figures."""
    with tempfile.TemporaryDirectory(prefix="hindsight-adversarial-") as tmp, Server(Path(tmp)) as server:
        seed = iter(range(1, 1_000_000))

        def call(tool: str, arguments: dict[str, Any] | bytes) -> Outcome:
            return server.call(server.attacker, tool, arguments, timeout=call_timeout)

        victim = server.call(server.victim, "store_memory", {"content": "My garden has three apple trees."}, timeout=60)
        if victim.result != "ok":
            raise RuntimeError(f"the victim's memory was not stored: {victim.result}")
        with other_tenant(server) as idle:
            time.sleep(idle_seconds)
        if progress:
            progress(f"server up; the other tenant's idle recall p50 {idle.summary()['p50_ms']} ms")
        rows: list[dict[str, Any]] = []

        def row(name: str, tool: str, attack: Callable[[], Outcome], normal: Callable[[], Outcome]) -> None:
            rows.append(_attack_row(server, name, tool, attack, normal, progress))

        for item in content_attacks(size):
            for tool, arguments in _content_calls(item.text, next(seed)):
                normal = _content_calls(ordinary_text(size, next(seed)), next(seed))
                row(item.name, tool, partial(call, tool, arguments), partial(call, tool, dict(normal)[tool]))
        rows.extend(_recall_attacks(server, call, size, recalls, seed, progress))
        rows.extend(_structure_attacks(server, call, filter_keys, depth, progress))
        return {
            "benchmark": "adversarial",
            "size_bytes": size,
            "recalls_per_row": recalls,
            "filter_keys": filter_keys,
            "metadata_depth": depth,
            "server_restarts": server.restarts,
            "other_tenant_idle": idle.summary(),
            "rows": rows,
        }


def _content_calls(text: str, session: int) -> list[tuple[str, dict[str, Any]]]:
    """The calls a content attack is sent through: stored, recorded as a turn, asked as a query."""
    return [
        ("store_memory", {"content": text}),
        ("record_turn", {"content": text, "session_id": f"session-{session}"}),
        ("retrieve_memory", {"query": text}),
    ]


def _recall_attacks(
    server: Server,
    call: Callable[[str, dict[str, Any] | bytes], Outcome],
    size: int,
    recalls: int,
    seed: Iterator[int],
    progress: Callable[[str], None] | None,
) -> list[dict[str, Any]]:
    """Long memories stored, then ordinary recalls that pack them into the default budget (finding 3).

    The normal case stores the same number of characters as ordinary memories of ~300
    characters; each case's memories are forgotten before the next is stored.
    """
    unbroken = _repeat("lorem ipsum dolor sit amet ", size)
    document = " ".join(
        f"Note {n}: the orchard's row {n} was pruned on day {n} and watered twice." for n in range(400)
    )[:size]
    cases = [
        (
            f"{size:,} bytes without a sentence break × 3, then recalls",
            [f"orchard {n} {unbroken}"[:size] for n in range(3)],
        ),
        (f"400-sentence document ({len(document):,} bytes), then recalls", [document]),
    ]

    def recalled(texts: list[str]) -> Outcome:
        """Store ``texts``, time ``recalls`` ordinary recalls (the mean), forget them again."""
        ids = _store_all(server, texts)
        spent = Outcome(0.0, "ok")
        for _ in range(recalls):
            one = call("retrieve_memory", {"query": "What happened in the orchard?"})
            spent = Outcome(spent.seconds + one.seconds, one.result if one.result != "ok" else spent.result)
        for memory_id in ids:
            server.call(server.attacker, "forget_memory", {"id": memory_id}, timeout=60)
        return Outcome(spent.seconds / max(1, recalls), spent.result)

    rows = []
    for name, memories in cases:
        total = sum(len(m) for m in memories)
        ordinary = [ordinary_text(300, next(seed)) + " orchard" for _ in range(max(1, total // 300))]
        rows.append(
            _attack_row(
                server, name, "retrieve_memory", partial(recalled, memories), partial(recalled, ordinary), progress
            )
        )
    return rows


def _store_all(server: Server, texts: list[str]) -> list[str]:
    """Store ``texts`` as the attacker (one batch, no dedup); the ids stored."""
    body = json.dumps({"memories": [{"content": t} for t in texts], "dedup": False}).encode()
    response = httpx.post(
        f"{server.base}/mcp",
        content=b'{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "store_memory", '
        b'"arguments": ' + body + b"}}",
        headers={**_HEADERS, "Authorization": f"Bearer {server.attacker}"},
        timeout=600,
    )
    content = (response.json().get("result") or {}).get("structuredContent") or {}
    return list(content.get("ids") or [])


def _structure_attacks(
    server: Server,
    call: Callable[[str, dict[str, Any] | bytes], Outcome],
    keys: int,
    depth: int,
    progress: Callable[[str], None] | None,
) -> list[dict[str, Any]]:
    """Huge metadata filters and deeply nested metadata (bounded by other defences): run last, may crash."""
    many = {f"key{n}": f"value{n}" for n in range(keys)}
    one = {"key": "v" * max(1, len(json.dumps(many)) - 12)}  # a filter of the same size, one key
    nested = b'{"a": ' * depth + b'"deep"' + b"}" * depth
    flat = json.dumps({"note": "x" * max(1, len(nested) - 12)}).encode()
    rows = [
        _attack_row(
            server,
            f"metadata nested {depth:,} deep",
            "store_memory",
            partial(call, "store_memory", b'{"content": "A note.", "metadata": ' + nested + b"}"),
            partial(call, "store_memory", b'{"content": "A note.", "metadata": ' + flat + b"}"),
            progress,
        )
    ]
    for tool, extra in (("retrieve_memory", {"query": "What happened in the orchard?"}), ("list_memories", {})):
        rows.append(
            _attack_row(
                server,
                f"{keys:,}-key metadata filter",
                tool,
                partial(call, tool, {**extra, "filters": {"metadata": many}}),
                partial(call, tool, {**extra, "filters": {"metadata": one}}),
                progress,
            )
        )
    return rows


def adversarial_table(result: dict[str, Any]) -> str:
    """The run as Markdown: one row per input and call."""
    idle = result["other_tenant_idle"]
    lines = [
        "| input | call | result | seconds | × normal | other tenant's recall p50 / max ms |",
        "|---|---|---|---|---|---|",
    ]
    for row in result["rows"]:
        waits = row["other_tenant"]
        failed = f", {waits['errors']} failed" if waits["errors"] else ""
        lines.append(
            f"| {row['input']} | {row['call']} | {row['result']} | {row['seconds']:.2f} | {row['ratio']:.1f} "
            f"| {waits['p50_ms']:.0f} / {waits['max_ms']:.0f}{failed} |"
        )
    lines.append(
        f"\nInputs of {result['size_bytes']:,} bytes; the other tenant's recall while idle: "
        f"p50 {idle['p50_ms']:.0f} ms, max {idle['max_ms']:.0f} ms; server restarts: {result['server_restarts']}"
    )
    return "\n".join(lines)


__all__ = ["Server", "adversarial_table", "content_attacks", "ordinary_text", "run_adversarial"]
