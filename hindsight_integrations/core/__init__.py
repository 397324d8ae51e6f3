"""The framework-free memory engine. Nothing in this package imports LangChain, LlamaIndex or MCP.

Names are imported on first use (PEP 562): ``MemoryEngine`` brings Chroma, and even the
record types bring numpy and pydantic models, which a process that only needs one of them
(the CLI's ``--help``, an MCP client) should not pay for.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .engine import MemoryEngine
    from .errors import (
        ConfigurationError,
        EmbeddingModelMismatchError,
        HindsightError,
        InvalidInputError,
        InvalidRecordsError,
        LLMError,
        MemoryNotFoundError,
        StoreUnavailableError,
    )
    from .model.inputs import MemoryInput
    from .model.records import Kind, MemoryRecord, Role, Source, Status, Tier
    from .model.results import (
        CompressionResult,
        ConsolidationReport,
        MergedRepeat,
        NamespaceStats,
        RecallHit,
        RecallResult,
        SkippedMemory,
        StoreResult,
        TurnResult,
    )
    from .recall.filters import RecallFilters
    from .recall.ranking import RecallWeights

_WHERE = {
    "MemoryEngine": "engine",
    **dict.fromkeys(
        [
            "ConfigurationError",
            "EmbeddingModelMismatchError",
            "HindsightError",
            "InvalidInputError",
            "InvalidRecordsError",
            "LLMError",
            "MemoryNotFoundError",
            "StoreUnavailableError",
        ],
        "errors",
    ),
    "RecallFilters": "recall.filters",
    "MemoryInput": "model.inputs",
    "RecallWeights": "recall.ranking",
    **dict.fromkeys(["Kind", "MemoryRecord", "Role", "Source", "Status", "Tier"], "model.records"),
    **dict.fromkeys(
        [
            "CompressionResult",
            "ConsolidationReport",
            "MergedRepeat",
            "NamespaceStats",
            "RecallHit",
            "RecallResult",
            "SkippedMemory",
            "StoreResult",
            "TurnResult",
        ],
        "model.results",
    ),
}

__all__ = [
    "CompressionResult",
    "ConfigurationError",
    "ConsolidationReport",
    "EmbeddingModelMismatchError",
    "HindsightError",
    "InvalidInputError",
    "InvalidRecordsError",
    "Kind",
    "LLMError",
    "MemoryEngine",
    "MemoryInput",
    "MemoryNotFoundError",
    "MemoryRecord",
    "MergedRepeat",
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


def __getattr__(name: str) -> Any:
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *_WHERE])
