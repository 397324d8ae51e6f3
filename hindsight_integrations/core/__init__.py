"""The framework-free memory engine. Nothing in this package imports LangChain, LlamaIndex or MCP."""

from .engine import CompressionResult, MemoryEngine, NamespaceStats, RecallResult, SkippedMemory, StoreResult, TurnResult
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
from .recall import RecallHit, RecallWeights
from .records import Kind, MemoryRecord, Role, Source, Status, Tier

__all__ = [
    "MemoryEngine", "StoreResult", "RecallResult", "TurnResult", "CompressionResult", "NamespaceStats", "SkippedMemory",
    "HindsightError", "InvalidInputError", "ConfigurationError", "StoreUnavailableError", "EmbeddingModelMismatchError",
    "MemoryNotFoundError", "LLMError", "RecallFilters", "MemoryInput", "RecallHit", "RecallWeights",
    "Kind", "MemoryRecord", "Role", "Source", "Status", "Tier",
]
