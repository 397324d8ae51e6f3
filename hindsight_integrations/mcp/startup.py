"""The server process: ``run`` (``hindsight serve``, ``python -m hindsight_integrations.mcp``).

Start-up builds the engine from the environment, warms it (so the first tool call does not
pay for loading the embedding model), and serves stdio or streamable HTTP until stopped. In
stdio mode stdout is the protocol stream, so it is reserved before anything can print.
"""

from __future__ import annotations

import gc
import io
import os
import sys
import time
from typing import TYPE_CHECKING

import anyio

from ..core.config import load_settings
from ..core.errors import InvalidInputError, StoreUnavailableError
from .app import HindsightMCP, build_server
from .auth import load_token_map
from .hosts import bind_address_problem, is_loopback
from .observability import configure_logging, log
from .open_files import raise_open_file_limit
from .slow_heads import HEAD_TIMEOUT_SECONDS, guarded

if TYPE_CHECKING:
    from ..core.engine import MemoryEngine
    from ..core.upkeep.schedule import UpkeepSchedule


SOURCES = {"store": "--store", "chroma_url": "--chroma-url", "namespace": "--namespace", "rate_limit": "--rate-limit"}
"""The server command's options, by the setting each gives: a refusal names the option, not the argument."""


def run(
    *,
    transport: str = "stdio",
    host: str = "127.0.0.1",
    port: int = 8765,
    namespace: str | None = None,
    tokens_file: str | None = None,
    store: str | None = None,
    chroma_url: str | None = None,
    stateless: bool = True,
    rate_limit_per_minute: float | None = None,
    upkeep: bool = True,
) -> None:
    """Start the server and block until it stops (stdin closes, or the HTTP server is stopped).

    Over HTTP the server also runs upkeep on its schedule (``start_scheduled_upkeep``) unless
    ``upkeep`` is False (the local viewer) or ``HINDSIGHT_UPKEEP_INTERVAL_SECONDS`` is 0. A stdio
    server does not: it is one agent's child process, often alive for one task.
    """
    if transport not in ("stdio", "http"):
        raise InvalidInputError("transport", f"{transport!r} is not 'stdio' or 'http'")
    if transport == "http" and (problem := bind_address_problem(host)):
        raise InvalidInputError("host", f"{host!r} {problem}")
    protocol_out = _protect_stdout() if transport == "stdio" else None
    # Every setting, the server's own (rate limit, log levels) too, is checked before the model loads.
    settings = load_settings(
        store=store, chroma_url=chroma_url, namespace=namespace, rate_limit=rate_limit_per_minute, sources=SOURCES
    )
    configure_logging(settings.log_level, sdk_level=settings.mcp_sdk_log_level)

    from ..core.engine import MemoryEngine  # here: it brings Chroma, and a bad option is refused before

    token_map = load_token_map(tokens_file) if transport == "http" else None
    engine = MemoryEngine(settings)
    server = build_server(
        engine,
        namespace=namespace,
        token_map=token_map,
        rate_limit_per_minute=settings.rate_limit,
        stateless=stateless,
    )
    open_files = raise_open_file_limit() if transport == "http" else None
    started = time.perf_counter()
    engine.warm()
    _freeze_startup_heap()
    writes = _register_writer(engine)
    log.info(
        "ready",
        extra={
            "fields": {
                "transport": transport,
                "namespace": None if token_map else server.namespace,
                "auth": token_map is not None,
                "namespaces_by_token": len(token_map or {}),
                "store": engine.settings.chroma_url or str(engine.settings.store),
                "embedding_model": engine.configured_model,
                "warm_ms": round((time.perf_counter() - started) * 1000, 1),
                "writes": writes,
                **(
                    {"url": f"http://{host}:{port}{server.settings.streamable_http_path}"}
                    if transport == "http"
                    else {}
                ),
                **(open_files.log_fields() if open_files is not None else {}),
            }
        },
    )
    if open_files is not None and open_files.low:
        log.warning(
            f"this server may hold at most {open_files.limit} open files, each connection one, and may not raise "
            "that: raise the hard limit (ulimit -Hn, systemd LimitNOFILE=, docker --ulimit nofile=N:N)",
            extra={"fields": open_files.log_fields()},
        )
    schedule = start_scheduled_upkeep(server) if transport == "http" and upkeep else None
    try:
        if protocol_out is not None:
            anyio.run(_serve_stdio, server, protocol_out)
        else:
            _serve_http(server, host, port)
    finally:
        if schedule is not None and not schedule.stop():
            log.warning("the upkeep thread was still busy at shutdown; its lease expires by itself")
        engine.close()  # queued writes land, and a replica this one blocked may write at once
        log.info("stopped", extra={"fields": {"transport": transport}})


def _freeze_startup_heap() -> None:
    """Leave what start-up made (libraries, the model, the date parser's tables) out of later full collections.

    A warmed server tracks ~175k objects that live as long as it does, and a full (generation-2)
    garbage collection walks every one: 50-70 ms on two cores, spent inside whichever request
    triggered it. Frozen after start-up's own garbage is collected, they are walked no more
    (``gc.freeze``), and a full collection costs what requests made since.
    """
    gc.collect()
    gc.freeze()


def _register_writer(engine: MemoryEngine) -> str:
    """Enter the Chroma server's writer registry now (``core/storage/replicas.py``), so a replica that must
    refuse writes says so in its log at start-up, not at its first write; what writes will do."""
    writers = engine.chroma.writers
    if writers is None:
        return "allowed (embedded store)"
    try:
        return "allowed" if writers.may_write() else "refused (another replica writes without a shared lock)"
    except StoreUnavailableError as exc:
        log.warning(
            "could not enter the writer registry; every write checks again", extra={"fields": {"error": str(exc)}}
        )
        return "unknown"


def start_scheduled_upkeep(server: HindsightMCP) -> UpkeepSchedule | None:
    """Run upkeep rounds in a background thread over the namespaces ``server`` serves; None when it is off.

    With a token map those are the tokens' namespaces, else every namespace in the store. Each
    namespace's run is logged and counted in ``/metrics`` (``HindsightMCP.record_upkeep``), and
    ``hindsight_upkeep_lease_held`` says whether this replica is running a round.
    """
    from ..core.upkeep.schedule import UpkeepSchedule

    engine = server.engine
    settings = engine.settings
    if settings.upkeep_interval_seconds <= 0:
        return None
    tokens = server.token_map
    namespaces = (lambda: sorted(set(tokens.values()))) if tokens else None
    schedule = UpkeepSchedule(engine, namespaces=namespaces)
    schedule.on_report(
        lambda report, number: server.record_upkeep(report, trigger="schedule", round=number, holder=schedule.holder)
    )
    server.metrics.upkeep_lease_held.set_function(lambda: 1.0 if schedule.holds_lease else 0.0)
    if settings.chroma_url and not settings.lock_url:
        log.warning(
            "upkeep: replicas sharing this Chroma server need HINDSIGHT_LOCK_URL, or two of them may run "
            "the same round at once (each namespace's writes stay serialised within each replica only)"
        )
    schedule.start()
    log.info(
        "upkeep scheduled",
        extra={
            "fields": {
                "interval_seconds": settings.upkeep_interval_seconds,
                "lease_seconds": settings.upkeep_lease_seconds,
                "holder": schedule.holder,
                "namespaces": "by token" if tokens else "every namespace in the store",
            }
        },
    )
    return schedule


def _protect_stdout() -> io.TextIOWrapper:
    """Reserve the real stdout for the protocol; point fd 1 at stderr for everything else.

    Libraries (and C extensions) sometimes print; one stray line on stdout corrupts the
    JSON-RPC stream of a stdio server, so nothing but the protocol may reach it.
    """
    sys.stdout.flush()
    protocol_fd = os.dup(1)
    os.dup2(2, 1)
    return io.TextIOWrapper(os.fdopen(protocol_fd, "wb"), encoding="utf-8", newline="\n")


async def _serve_stdio(server: HindsightMCP, protocol_out: io.TextIOWrapper) -> None:
    from mcp.server.stdio import stdio_server

    async with stdio_server(stdout=anyio.wrap_file(protocol_out)) as (read_stream, write_stream):
        lowlevel = server._mcp_server
        await lowlevel.run(read_stream, write_stream, lowlevel.create_initialization_options())


def _serve_http(server: HindsightMCP, host: str, port: int) -> None:
    import uvicorn

    # Which Host names every route answers (DNS rebinding): see hosts.allowed_hosts.
    server.serve_on(host)
    app = server.streamable_http_app()
    settings = server.engine.settings
    # A request head gets at most as long as a body to arrive (slow_heads: uvicorn would wait for ever).
    protocol = guarded(head_timeout=min(HEAD_TIMEOUT_SECONDS, settings.body_timeout_seconds))
    uvicorn.run(app, host=host, port=port, log_level=settings.uvicorn_log_level, access_log=False, http=protocol)


__all__ = ["is_loopback", "run", "start_scheduled_upkeep"]
