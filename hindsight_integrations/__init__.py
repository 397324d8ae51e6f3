"""hindsight-integrations: a three-tier memory for LLM agents on Chroma, written through MCP.

The public API is small: ``MemoryEngine`` (the embedded engine), ``Settings`` (all
configuration), the record types and errors. Framework adapters live in
``hindsight_integrations.langchain`` and ``hindsight_integrations.llama_index``; the MCP
server and client in ``hindsight_integrations.mcp``. Names load on first use (``MemoryEngine``
brings Chroma), so importing the package, or only its MCP client, stays quick.
"""

from typing import TYPE_CHECKING, Any

from . import core as _core

if TYPE_CHECKING:
    from .core import *  # noqa: F403 - the same names as core's __all__, for type checkers
    from .core.config import Settings, load_settings

__version__ = "0.1.0"
__all__ = [*_core.__all__, "Settings", "__version__", "load_settings"]


def __getattr__(name: str) -> Any:
    if name in ("Settings", "load_settings"):
        from .core import config

        return getattr(config, name)
    try:
        return getattr(_core, name)
    except AttributeError:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}") from None
