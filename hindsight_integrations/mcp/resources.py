"""Read-only MCP resources, for hosts that let a person browse memory rather than call tools.

``hindsight://stats`` (the namespace's counts), ``hindsight://memory/{memory_id}`` (one memory,
whatever its status) and ``hindsight://session/{session_id}/working`` (a session's live
turns, oldest first). Every read uses the caller's namespace, resolved like a tool call's
(the server's own, or the bearer token's), so a resource never shows another user's memory.

Each resource is a function of the server (``serving.ServerHost``) and the template's values;
FastMCP matches a template's ``{names}`` to its function's parameters, so ``register_resources``
gives it a function of those values alone.
"""

from __future__ import annotations

import json
from typing import Any

from mcp.server.fastmcp import FastMCP
from starlette.concurrency import run_in_threadpool

from .serving import ServerHost

JSON = "application/json"
STATS_URI = "hindsight://stats"
MEMORY_URI = "hindsight://memory/{memory_id}"
WORKING_URI = "hindsight://session/{session_id}/working"


def _json(data: Any) -> str:
    return json.dumps(data, ensure_ascii=False, indent=2)


async def stats(host: ServerHost) -> str:
    """Counts by tier, kind and status, active tokens and sessions of your namespace."""
    result = await run_in_threadpool(host.engine.stats, namespace=host.resolve_namespace())
    return _json(result.model_dump(mode="json"))


async def memory(host: ServerHost, memory_id: str) -> str:
    """One memory of your namespace with provenance and history fields, whatever its status."""
    record = await run_in_threadpool(host.engine.get, memory_id, namespace=host.resolve_namespace())
    return _json(record.model_dump(mode="json"))


async def working_window(host: ServerHost, session_id: str) -> str:
    """The session's live turns, oldest first (compressed turns are replaced by their summaries)."""
    turns = await run_in_threadpool(
        host.engine.working_window, session_id=session_id, namespace=host.resolve_namespace()
    )
    return _json({"session_id": session_id, "turns": [t.model_dump(mode="json") for t in turns]})


def register_resources(app: FastMCP, host: ServerHost) -> None:
    """Add the stats resource and the memory and working-window resource templates to ``app``, served by ``host``."""

    @app.resource(STATS_URI, name="stats", title="Memory statistics", mime_type=JSON, description=stats.__doc__)
    async def stats_of_host() -> str:
        return await stats(host)

    @app.resource(MEMORY_URI, name="memory", title="A memory by id", mime_type=JSON, description=memory.__doc__)
    async def memory_of_host(memory_id: str) -> str:
        return await memory(host, memory_id)

    @app.resource(
        WORKING_URI,
        name="working_window",
        title="A session's working memory",
        mime_type=JSON,
        description=working_window.__doc__,
    )
    async def working_window_of_host(session_id: str) -> str:
        return await working_window(host, session_id)


__all__ = ["MEMORY_URI", "STATS_URI", "WORKING_URI", "memory", "register_resources", "stats", "working_window"]
