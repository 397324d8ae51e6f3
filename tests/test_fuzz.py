"""Property-based fuzzing (#15): whatever a caller sends, a clear error or a result, never a crash.

Every public engine method and every MCP tool gets arguments drawn by hypothesis: odd
Unicode (lone surrogates, line separators, control characters), NaN and infinity, huge and
negative numbers, nested JSON, wrong types. The property: the call returns, or raises one
of the library's own errors (``HindsightError``: invalid input, not found); over MCP the
error is never ``internal_error``; and the engine still stores and recalls afterwards.
"""

from __future__ import annotations

import contextlib
import math
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hindsight_integrations import MemoryEngine
from hindsight_integrations.core.errors import HindsightError
from hindsight_integrations.mcp import MemoryClient
from hindsight_integrations.mcp.errors import MemoryToolError

FUZZ = settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow]
)

odd_text = st.text(alphabet=st.characters(codec=None, exclude_categories=()), max_size=80)
numbers = st.one_of(
    st.integers(min_value=-(10**15), max_value=10**15),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([0, -1, 10**12, math.nan, math.inf, -math.inf]),
)
scalars = st.one_of(st.none(), st.booleans(), numbers, odd_text)
json_values = st.recursive(
    scalars, lambda inner: st.lists(inner, max_size=4) | st.dictionaries(odd_text, inner, max_size=4), max_leaves=12
)
anything = st.one_of(json_values, st.just([]), st.just({}))


def _survives(engine: MemoryEngine) -> None:
    assert engine.store_memories(["The garden gets sun in the morning."], namespace="fz").stored is not None
    engine.recall("garden sun", namespace="fz")


def _call(method: Any, *args: Any, **kwargs: Any) -> None:
    with contextlib.suppress(HindsightError):  # a clear, typed refusal is a fine answer to nonsense
        method(*args, **kwargs)


@FUZZ
@given(
    content=anything,
    metadata=anything,
    entities=anything,
    importance=anything,
    occurred_at=st.one_of(anything, st.datetimes()),
    ttl=anything,
    session=anything,
)
def test_store_memories_fuzzed(
    engine: MemoryEngine, content, metadata, entities, importance, occurred_at, ttl, session
) -> None:  # type: ignore[no-untyped-def]
    item = {
        "content": content,
        "metadata": metadata,
        "entities": entities,
        "importance": importance,
        "occurred_at": occurred_at,
        "ttl_seconds": ttl,
        "session_id": session,
    }
    _call(engine.store_memories, [item], namespace="fz")
    _call(engine.store_memories, item, namespace="fz")
    _survives(engine)


@FUZZ
@given(query=anything, top_k=anything, min_score=anything, budget=anything, filters=anything, weights=anything)
def test_recall_and_list_fuzzed(engine: MemoryEngine, query, top_k, min_score, budget, filters, weights) -> None:  # type: ignore[no-untyped-def]
    _call(
        engine.recall, query, namespace="fz", top_k=top_k, min_score=min_score, token_budget=budget, filters=filters,
        weights=weights,
    )  # fmt: skip
    _call(engine.list, namespace="fz", filters=filters, limit=top_k if isinstance(top_k, int) else 10)
    _survives(engine)


@FUZZ
@given(memory_id=anything, content=anything, importance=anything, metadata=anything, ttl=anything, role=anything)
def test_update_forget_and_turns_fuzzed(
    engine: MemoryEngine, memory_id, content, importance, metadata, ttl, role
) -> None:  # type: ignore[no-untyped-def]
    _call(
        engine.update,
        memory_id,
        namespace="fz",
        content=content,
        importance=importance,
        metadata=metadata,
        ttl_seconds=ttl,
    )
    _call(engine.forget, memory_id, namespace="fz")
    _call(engine.record_turn, content, session_id=memory_id, role=role, namespace="fz", metadata=metadata)
    _call(engine.compress, session_id=memory_id, namespace="fz", threshold_tokens=ttl)
    _call(engine.upkeep, memory_id, dry_run=ttl)
    _survives(engine)


TOOLS = {
    "store_memory": [
        "content",
        "memories",
        "importance",
        "metadata",
        "occurred_at",
        "ttl_seconds",
        "entities",
        "request_id",
    ],
    "retrieve_memory": ["query", "top_k", "min_score", "filters", "token_budget", "include_history"],
    "record_turn": ["content", "session_id", "role", "occurred_at", "metadata", "speaker"],
    "update_memory": ["id", "content", "importance", "metadata", "ttl_seconds"],
    "forget_memory": ["id"],
    "list_memories": ["filters", "limit", "offset", "include_history"],
    "get_working_memory": ["session_id"],
    "compress_memory": ["session_id", "threshold_tokens", "force"],
    "maintain_memory": ["dry_run"],
}


@pytest.fixture
def client(engine: MemoryEngine) -> Any:
    with MemoryClient.in_process(engine, namespace="fz", retries=0) as opened:
        yield opened


@FUZZ
@given(tool=st.sampled_from(sorted(TOOLS)), data=st.data())
def test_every_tool_answers_nonsense_with_a_readable_error(
    client: MemoryClient, engine: MemoryEngine, tool, data
) -> None:  # type: ignore[no-untyped-def]
    names = data.draw(st.lists(st.sampled_from(TOOLS[tool]), unique=True, max_size=len(TOOLS[tool])))
    arguments = {name: data.draw(anything) for name in names}
    try:
        client.call_tool(tool, arguments)
    except MemoryToolError as exc:
        assert exc.error_type != "internal_error", exc
    except HindsightError:
        pass  # refused by the client before sending (e.g. NaN, an oversized call)
    _survives(engine)
