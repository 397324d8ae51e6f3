"""The framework-free memory engine. Nothing in this package imports LangChain, LlamaIndex or MCP.

``MemoryEngine`` is imported on first use: it brings Chroma, and a process that only needs
the record and result types (an MCP client talking to a remote server, the CLI's ``--help``)
should not pay for it.
"""

from typing import TYPE_CHECKING, Any

from .errors import (
    ConfigurationError,
    EmbeddingModelMismatchError,
    HindsightError,
    InvalidInputError,
    LLMError,
    MemoryNotFoundError,
    StoreUnavailableError,
)
from .filters import RecallFilters
from .inputs import MemoryInput
from .ranking import RecallWeights
from .records import Kind, MemoryRecord, Role, Source, Status, Tier
from .results import (
    CompressionResult,
    NamespaceStats,
    RecallHit,
    RecallResult,
    SkippedMemory,
    StoreResult,
    TurnResult,
)

if TYPE_CHECKING:
    from .engine import MemoryEngine


def __getattr__(name: str) -> Any:
    if name == "MemoryEngine":
        from .engine import MemoryEngine

        return MemoryEngine
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "CompressionResult",
    "ConfigurationError",
    "EmbeddingModelMismatchError",
    "HindsightError",
    "InvalidInputError",
    "Kind",
    "LLMError",
    "MemoryEngine",
    "MemoryInput",
    "MemoryNotFoundError",
    "MemoryRecord",
    "NamespaceStats",
    "RecallFilters",
    "RecallHit",
    "RecallResult",
    "RecallWeights",
    "Role",
    "SkippedMemory",
    "Source",
    "Status",
    "StoreResult",
    "StoreUnavailableError",
    "Tier",
    "TurnResult",
]
