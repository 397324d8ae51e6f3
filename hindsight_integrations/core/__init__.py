"""The framework-free memory engine. Nothing in this package imports LangChain, LlamaIndex or MCP."""

from .engine import (
    CompressionResult,
    MemoryEngine,
    NamespaceStats,
    RecallResult,
    SkippedMemory,
    StoreResult,
    TurnResult,
)
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
from .results import RecallHit
from .records import Kind, MemoryRecord, Role, Source, Status, Tier

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
