"""Read-only MCP resources, for hosts that let a person browse memory rather than call tools.

``hindsight://stats`` (the namespace's counts), ``hindsight://memory/{memory_id}`` (one memory,
whatever its status) and ``hindsight://session/{session_id}/working`` (a session's live
turns, oldest first). Every read uses the caller's namespace, resolved like a tool call's
(the server's own, or the bearer token's), so a resource never shows another user's memory.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from .tools import in_thread

if TYPE_CHECKING:
    from ..core.engine import MemoryEngine
    from .server import HindsightMCP

JSON = "application/json"
STATS_URI = "hindsight://stats"
MEMORY_URI = "hindsight://memory/{memory_id}"
WORKING_URI = "hindsight://session/{session_id}/working"


def _json(data: Any) -> str:
    return json.dumps(data, ensure_ascii=False, indent=2)


def register_resources(server: HindsightMCP, engine: MemoryEngine) -> None:
    """Add the stats resource and the memory and working-window resource templates to ``server``."""

    @server.resource(STATS_URI, name="stats", title="Memory statistics", mime_type=JSON)
    async def stats() -> str:
        """Counts by tier, kind and status, active tokens and sessions of your namespace."""
        result = await in_thread(engine.stats, namespace=server.resolve_namespace())
        return _json(result.model_dump(mode="json"))

    @server.resource(MEMORY_URI, name="memory", title="A memory by id", mime_type=JSON)
    async def memory(memory_id: str) -> str:
        """One memory of your namespace with provenance and history fields, whatever its status."""
        record = await in_thread(engine.get, memory_id, namespace=server.resolve_namespace())
        return _json(record.model_dump(mode="json"))

    @server.resource(WORKING_URI, name="working_window", title="A session's working memory", mime_type=JSON)
    async def working_window(session_id: str) -> str:
        """The session's live turns, oldest first (compressed turns are replaced by their summaries)."""
        turns = await in_thread(engine.working_window, session_id=session_id, namespace=server.resolve_namespace())
        return _json({"session_id": session_id, "turns": [t.model_dump(mode="json") for t in turns]})


__all__ = ["MEMORY_URI", "STATS_URI", "WORKING_URI", "register_resources"]
