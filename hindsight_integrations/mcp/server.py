"""The Hindsight MCP memory server: where to import it from.

``build_server`` builds a ``HindsightMCP`` over an engine (``app``: the FastMCP subclass that
dispatches every tool call, and the tables of tools, resources, routes and viewer pages it
serves); ``run`` (``startup``) is the process entry point used by ``hindsight serve`` and
``python -m hindsight_integrations.mcp``.
"""

from __future__ import annotations

from .app import INSTRUCTIONS, SERVER_NAME, HindsightMCP, build_server
from .startup import run

__all__ = ["INSTRUCTIONS", "SERVER_NAME", "HindsightMCP", "build_server", "run"]
