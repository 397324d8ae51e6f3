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

The pieces: ``adversarial_inputs`` (the attacks and the ordinary text they are measured
against), ``adversarial_server`` (the server, its raw calls, the other tenant), this module
(each row timed, the run) and ``adversarial_report`` (the table).
"""

from __future__ import annotations

import json
import tempfile
import time
from collections.abc import Callable, Iterator
from functools import partial
from pathlib import Path
from typing import Any

from .adversarial_inputs import content_attacks, content_calls, ordinary_text, repeated
from .adversarial_server import Outcome, Server, other_tenant, store_all


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
            for tool, arguments in content_calls(item.text, next(seed)):
                normal = content_calls(ordinary_text(size, next(seed)), next(seed))
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
    unbroken = repeated("lorem ipsum dolor sit amet ", size)
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
        ids = store_all(server, texts)
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


__all__ = ["run_adversarial"]
