"""Tool input models and the JSON/text shapes of tool results.

Inputs are lenient where models are sloppy (a batch item given as a bare string or as a
JSON string, enum values in the wrong case) and strict about everything else (unknown
fields, out-of-range numbers), so a mistake comes back as a message naming the field.
Outputs are built here, once, so the server and the client agree on the shape: every
record is ``MemoryRecord.public_dict()``, which the client turns back into the model.
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, ValidationError, field_validator, model_validator

from ..core.context import memory_line
from ..core.engine import CompressionResult, NamespaceStats, RecallResult, StoreResult, TurnResult
from ..core.records import Kind, MemoryRecord, Role, Tier

MAX_BATCH = 1000
"""Largest ``memories`` batch one ``store_memory`` call accepts; larger batches must be split."""

CAPABILITY = "hindsight"
"""Key of the server's experimental capability that reports the namespace a session serves.

The MCP initialize result is the one answer every transport gets before any tool call, and
over HTTP it is computed for the request's bearer token, so it is where a client learns
(and checks) whose memories it is about to read and write.
"""


def capability(namespace: str | None) -> dict[str, dict[str, Any]]:
    """The experimental capabilities a server announces for a session serving ``namespace``."""
    return {CAPABILITY: {"namespace": namespace}} if namespace else {}


def announced_namespace(experimental: dict[str, dict[str, Any]] | None) -> str | None:
    """The namespace a server announced in its initialize result (None: an older server, or none)."""
    value = (experimental or {}).get(CAPABILITY, {}).get("namespace")
    return value if isinstance(value, str) else None


def _lower_enum(value: Any) -> Any:
    return value.strip().lower() if isinstance(value, str) else value


Flag = BeforeValidator(_lower_enum)
"""Booleans that models send as text (``"false"``, ``" True"``): trimmed and lower-cased so
pydantic reads them as booleans instead of refusing the call."""


class MemoryItem(BaseModel):
    """One memory of a ``store_memory`` batch."""

    model_config = ConfigDict(extra="forbid")

    content: str = Field(..., description="The text to remember, self-contained (max 32 KB).")
    role: Role = Field(Role.USER, description="Who said it.")
    kind: Kind | None = Field(
        None, description="preference, fact, context, correction or event; inferred when omitted."
    )
    tier: Tier | None = Field(
        None, description="Force a tier; normally inferred (preferences and corrections are semantic)."
    )
    importance: float | None = Field(None, ge=0, le=1, description="0-1; inferred when omitted.")
    metadata: dict[str, Any] = Field(
        default_factory=dict, description="Free-form JSON; scalar values can be filtered on."
    )
    occurred_at: datetime | None = Field(None, description="ISO 8601 time the fact was stated; defaults to now.")
    ttl_seconds: int | None = Field(None, gt=0, description="Forget automatically after this many seconds.")
    session_id: str | None = Field(None, description="Conversation the memory came from.")
    agent_id: str | None = None
    entities: list[str] = Field(default_factory=list)
    context: str | None = Field(
        None, description="Surrounding text indexed with the memory but not returned as its content."
    )

    @model_validator(mode="before")
    @classmethod
    def _bare_string(cls, value: Any) -> Any:
        if isinstance(value, str):
            stripped = value.strip()
            if stripped.startswith("{"):
                try:
                    return json.loads(stripped)
                except json.JSONDecodeError:
                    pass
            return {"content": value}
        return value

    @field_validator("role", "kind", "tier", mode="before")
    @classmethod
    def _case(cls, value: Any) -> Any:
        return _lower_enum(value)

    @field_validator("metadata", mode="before")
    @classmethod
    def _json_object(cls, value: Any) -> Any:
        if isinstance(value, str):
            try:
                return json.loads(value)
            except json.JSONDecodeError:
                return value
        return value

    def engine_dict(self) -> dict[str, Any]:
        return self.model_dump(exclude_none=True, exclude_defaults=False)


def validation_message(exc: ValidationError) -> tuple[str, str]:
    """(field, message) of the first pydantic error, phrased for a model to act on.

    Locations read like the arguments the model wrote: ``memories[3].importance``.
    """
    err = exc.errors()[0]
    loc = ""
    for part in err["loc"]:
        if isinstance(part, int):
            loc += f"[{part}]"
        elif part not in ("function-after", "function-before", "str", "int", "float", "dict", "list"):
            loc += f".{part}" if loc else str(part)
    message = err["msg"]
    if err["type"] != "missing" and "input" in err:
        shown = repr(err["input"])
        if len(shown) > 80:
            shown = shown[:77] + "..."
        message = f"{message} (got {shown})"
    return loc or "arguments", message


# -- outputs ----------------------------------------------------------------------------------


def record_out(record: MemoryRecord) -> dict[str, Any]:
    return record.public_dict()


def store_out(result: StoreResult, request_id: str | None) -> dict[str, Any]:
    return {
        "ids": result.ids,
        "stored": [record_out(r) for r in result.stored],
        "skipped": [s.model_dump(mode="json") for s in result.skipped],
        "superseded": result.superseded,
        "merged": result.merged,
        "replayed": result.replayed,
        "request_id": request_id,
    }


def store_text(data: dict[str, Any]) -> str:
    lines = []
    if data["replayed"]:
        lines.append(f"request_id {data['request_id']!r} was already processed; nothing new written.")
    lines.append(f"Stored {len(data['stored'])} memor{'y' if len(data['stored']) == 1 else 'ies'}.")
    lines.extend(f"- [{r['id']}] {r['kind']}/{r['tier']}: {_short(r['content'])}" for r in data["stored"])
    if data["merged"]:
        lines.append(f"Merged into existing: {', '.join(data['merged'])}")
    if data["superseded"]:
        lines.append(f"Superseded (older values): {', '.join(data['superseded'])}")
    if data["skipped"]:
        lines.append(f"Not stored ({len(data['skipped'])}):")
        lines.extend(f"- item {s['index']}: {_short(s['content'])} — {s['reason']}" for s in data["skipped"])
    return "\n".join(lines)


def recall_out(result: RecallResult) -> dict[str, Any]:
    memories = []
    for hit in result.hits:
        item = record_out(hit.record)
        item.update(hit.model_dump(mode="json", exclude={"record"}))  # score and its parts, whatever the engine reports
        memories.append(item)
    return {"query": result.query, "memories": memories, "context": result.context, "tokens": result.tokens}


def recall_text(data: dict[str, Any]) -> str:
    if not data["memories"]:
        return f"No relevant memories for {data['query']!r}."
    ids = "\n".join(f"- [{m['id']}] score={m['score']:.3f} {m['kind']}/{m['tier']}" for m in data["memories"])
    return f"{data['context']}\n\nMemory ids (best first):\n{ids}"


def turn_out(result: TurnResult, request_id: str | None = None) -> dict[str, Any]:
    return {
        "turn_id": result.turn.id,
        "turn": record_out(result.turn),
        "stored": store_out(result.stored, request_id),
        "compression": compression_out(result.compression),
    }


def turn_text(data: dict[str, Any]) -> str:
    stored = data["stored"]
    lines = [f"Recorded turn {data['turn_id']}."]
    if stored["stored"]:
        lines.append("Remembered: " + "; ".join(_short(r["content"]) for r in stored["stored"]))
    if stored["skipped"]:
        lines.append("Not remembered long-term: " + "; ".join(s["reason"] for s in stored["skipped"]))
    if data["compression"]:
        c = data["compression"]
        lines.append(f"Compressed the working window: {c['tokens_before']} -> {c['tokens_after']} tokens.")
    return "\n".join(lines)


def compression_out(result: CompressionResult | None) -> dict[str, Any] | None:
    if result is None:
        return None
    return {
        "summaries": [record_out(r) for r in result.summaries],
        "archived_ids": result.archived_ids,
        "tokens_before": result.tokens_before,
        "tokens_after": result.tokens_after,
    }


def compress_text(data: dict[str, Any]) -> str:
    if not data["compressed"]:
        return "Nothing to compress: the working window is under the threshold."
    c = data["compression"]
    summaries = "\n".join(f"- [{s['id']}] {_short(s['content'], 200)}" for s in c["summaries"])
    return f"Compressed {len(c['archived_ids'])} turns into {len(c['summaries'])} summaries ({c['tokens_before']} -> {c['tokens_after']} tokens):\n{summaries}"


def records_text(title: str, records: list[dict[str, Any]]) -> str:
    if not records:
        return f"{title}: none."
    return f"{title} ({len(records)}):\n" + "\n".join(
        f"{memory_line(MemoryRecord.model_validate(r))}  [{r['id']}] {r['kind']}/{r['tier']}/{r['status']}"
        for r in records
    )


def stats_text(stats: NamespaceStats) -> str:
    return (
        f"namespace {stats.namespace}: {stats.total} memories, {stats.tokens} active tokens, {stats.sessions} sessions\n"
        f"by tier: {stats.by_tier}\nby kind: {stats.by_kind}\nby status: {stats.by_status}\n"
        f"embedding model: {stats.embedding_model}"
    )


def _short(text: str, limit: int = 120) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"
