"""The MCP memory server and the client every integration writes through.

``MemoryClient`` (stdio / HTTP / in-process) is the public entry point for adapters;
``build_server`` / ``run`` live in ``hindsight_integrations.mcp.server``.
"""

from .client import MemoryClient
from .errors import (
    MemoryAuthError,
    MemoryNamespaceError,
    MemoryServerUnavailableError,
    MemorySessionEndedError,
    MemoryStoreUnavailableError,
    MemoryTimeoutError,
    MemoryToolError,
    MemoryToolInputError,
    MemoryToolNotFoundError,
)
from .wire import MAX_BATCH

__all__ = [
    "MAX_BATCH",
    "MemoryAuthError",
    "MemoryClient",
    "MemoryNamespaceError",
    "MemoryServerUnavailableError",
    "MemorySessionEndedError",
    "MemoryStoreUnavailableError",
    "MemoryTimeoutError",
    "MemoryToolError",
    "MemoryToolInputError",
    "MemoryToolNotFoundError",
]
