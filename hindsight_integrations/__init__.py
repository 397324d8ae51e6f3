"""hindsight-integrations: a three-tier memory for LLM agents on Chroma, written through MCP.

The public API is small: ``MemoryEngine`` (the embedded engine), ``Settings`` (all
configuration), the record types and errors. Framework adapters live in
``hindsight_integrations.langchain`` and ``hindsight_integrations.llama_index``; the MCP
server and client in ``hindsight_integrations.mcp``.
"""

from .core import *  # noqa: F403
from .core import __all__ as _core_all
from .core.config import Settings, load_settings

__version__ = "0.1.0"
__all__ = ["Settings", "load_settings", "__version__", *_core_all]
