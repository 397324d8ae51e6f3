"""Errors raised by the engine.

Every error names what was wrong and, where there is one, what the user should do, so a
caller (a person at the CLI, or a model reading an MCP tool error) can act on it.
"""

from __future__ import annotations

from collections.abc import Sequence


class HindsightError(Exception):
    """Base class of every error this package raises on purpose."""


class InvalidInputError(HindsightError, ValueError):
    """An argument failed validation. ``field`` names the offending argument."""

    def __init__(self, field: str, message: str) -> None:
        self.field = field
        self.message = message
        super().__init__(f"{field}: {message}")


class InvalidRecordsError(InvalidInputError):
    """Records of an import are malformed. ``problems`` holds one line per problem, every record checked.

    A hand-edited or damaged export usually has more than one bad record; naming them all at
    once (``records[3].kind: ...``) lets the file be fixed in one go instead of one error per run.
    The message names the first five after the field, ``records[3]`` as ``[3]`` so that the word
    is said once (``records: 1 of 4 cannot be imported, so nothing was imported: [3].kind: ...``);
    ``cold_records[0]`` keeps its name.
    """

    def __init__(self, problems: list[str], *, bad: int, total: int) -> None:
        self.problems = problems
        self.bad = bad
        self.total = total
        shown = "; ".join(problem.removeprefix("records") for problem in problems[:5])
        more = f"; and {len(problems) - 5} more" if len(problems) > 5 else ""
        super().__init__("records", f"{bad} of {total} cannot be imported, so nothing was imported: {shown}{more}")


def never_written(namespace: str, known: Sequence[str]) -> InvalidInputError:
    """The error for a namespace nothing was ever stored in, naming the ones that exist (a typo is the usual cause)."""
    listing = f"the namespaces are: {', '.join(known)}" if known else "the store holds no namespace yet"
    return InvalidInputError("namespace", f"nothing was ever stored in namespace {namespace!r} ({listing})")


class ConfigurationError(HindsightError):
    """Settings are missing or inconsistent; the message says which and how to fix it."""


class ReplicaConflictError(ConfigurationError):
    """Another process writes to the same Chroma server without a lock service shared with this one.

    Chroma has no conditional write, so two such writers lose updates and resurrect forgotten
    memories; this process refuses its writes instead (reads still work) until the other stops
    or both share one ``HINDSIGHT_LOCK_URL`` (``core/storage/replicas.py``).
    """


class StoreUnavailableError(HindsightError):
    """The Chroma store could not be opened or reached (after retries)."""


class StoreClosedError(HindsightError, RuntimeError):
    """The engine was closed (``MemoryEngine.close``): its threads are stopped and Chroma released; open a new one."""


class EngineForkedError(StoreClosedError):
    """The engine was made in a parent process before a fork, and is used in the child.

    A fork copies the engine but not its threads (context vectors, recall counts, syncs), and
    Chroma's client does not survive it: the child's writes would queue work no thread runs. A
    process makes its own engine after the fork (a worker pool's initializer, a server's
    post-fork hook).
    """


class EmbeddingModelMismatchError(HindsightError):
    """A collection was built with one embedding model and opened with another.

    Vectors of two models live in different spaces: mixing them returns noise, so we
    refuse instead and tell the user to re-embed (export + import).
    """

    def __init__(self, namespace: str, stored: str, requested: str) -> None:
        self.namespace = namespace
        self.stored = stored
        self.requested = requested
        super().__init__(
            f"namespace {namespace!r} was embedded with {stored!r} but this engine uses "
            f"{requested!r}. Use the same embedding model (HINDSIGHT_EMBEDDING_MODEL={stored}), or embed the "
            f"namespace again with the new one: `hindsight reembed --namespace {namespace} --model {requested}`."
        )


class MemoryNotFoundError(HindsightError, KeyError):
    """No memory with that id exists in the namespace."""

    def __init__(self, memory_id: str, namespace: str, *, reason: str | None = None) -> None:
        self.memory_id = memory_id
        self.namespace = namespace
        detail = f" ({reason})" if reason else ""
        super().__init__(f"no memory {memory_id!r} in namespace {namespace!r}{detail}")

    def __str__(self) -> str:  # KeyError would repr() the message
        return self.args[0]


class LLMError(HindsightError):
    """The configured LLM failed after retries, or answered with something unusable."""
