"""The memory record and its mapping to Chroma metadata (docs/architecture.md, "The record").

A record is the unit every layer passes around: the engine returns it from recall, the MCP
server serialises it, the integrations turn it into Documents or nodes. Chroma metadata
only holds scalars, so times are stored as epoch seconds and free-form JSON as strings.

Two views of a stored record exist. The *flat* view (``flat_fields``/``unpack``) has every
field under its own key plus ``content``; indexing, facts and filters read it. The
*stored* layout (``pack``) is what Chroma holds. Layout 2 (this version) keeps as separate
keys only what ``where`` clauses filter on, the access counters once non-zero (the access
recorder writes them on their own) and scalar user metadata (``m.<key>``, filterable); everything else,
content included, travels in one JSON value and Chroma's document is left empty (recall
ranks text with its own BM25 index, never Chroma's full-text search). Chroma writes a
SQLite row per key and stores and full-text-indexes each document: with layout 1 (every
field its own key, content as the document) its ``add`` took 0.88 ms a memory at 10k
against 0.61 ms now. Layout-1 records are still read (``unpack`` tells them apart per
record) and are rewritten in layout 2 whenever they are updated.
"""

from __future__ import annotations

import json
import math
import uuid
from collections.abc import Iterable, Iterator
from datetime import UTC, datetime
from enum import Enum
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

FAR_FUTURE = 32503680000.0  # 3000-01-01: "no expiry"/"still valid", so range filters need no nulls

PINNED_KEY = "pinned"
"""Metadata flag a writer sets (``"pinned": true``) on memories it keeps as data, such as a key-value store's items.

Upkeep leaves a pinned memory exactly as written: it is never decayed, archived, evicted, merged
or consolidated, and does not count toward a tier's cap. Only its writer's update, forget or TTL changes it.
"""

STORE_ITEM_KEY = "lg_item"
"""Metadata flag of a LangGraph store item (``HindsightStore``), which counts as a pin (``MemoryRecord.pinned``).

The store pins each item it puts; items it put before pinning existed carry this flag and not
``PINNED_KEY``, and are its data all the same.
"""

LAYOUT = 2
PACKED_KEY = "record_json"
# Stored as their own Chroma keys in layout 2: filtered on, or updated alone.
_SEPARATE_KEYS = frozenset(
    {
        "tier",
        "kind",
        "status",
        "importance",
        "occurred_at",
        "updated_at",
        "valid_until",
        "expires_at",
        "session_id",
        "agent_id",
        "slot",
        "request_id",
        "access_count",
        "last_accessed_at",
    }
)
_ACCESS_KEYS = frozenset({"access_count", "last_accessed_at"})
# Every key either layout writes (besides m.<key>, which an update reads from Chroma): an update sets
# the ones a record no longer has to None, which deletes them, because Chroma merges metadata on update.
_ALL_KEYS = _SEPARATE_KEYS | {
    PACKED_KEY,
    "namespace",
    "role",
    "token_count",
    "created_at",
    "valid_from",
    "source_json",
    "metadata_json",
    "entities_json",
    "summary",
    "context",
    "superseded_by",
    "conflicts_with",
    "consolidated_into",
    "sources_json",
    "embedding_model",
    "embedding_dim",
}


def pack(flat: dict[str, Any]) -> dict[str, Any]:
    """The flat view in Chroma's stored layout (2): separate keys, ``m.<key>``, one JSON value."""
    meta: dict[str, Any] = {}
    rest: dict[str, Any] = {}
    for key, value in flat.items():
        # Most memories are never recalled: their zero access counters stay packed, two keys
        # fewer per write. The access recorder adds the separate keys, which win in ``unpack``.
        if (key in _SEPARATE_KEYS and (value or key not in _ACCESS_KEYS)) or key.startswith("m."):
            meta[key] = value
        else:
            rest[key] = value
    meta[PACKED_KEY] = json.dumps(rest, ensure_ascii=False, separators=(",", ":"))
    return meta


def unpack(document: str | None, meta: dict[str, Any]) -> dict[str, Any]:
    """The flat view of what Chroma returned for one record, in either layout."""
    packed = meta.get(PACKED_KEY)
    if packed is None:  # layout 1: every field its own key, content as the document
        return {**meta, "content": document or ""}
    flat = json.loads(packed)
    flat.update((k, v) for k, v in meta.items() if k != PACKED_KEY)
    return flat


def pack_for_update(flat: dict[str, Any], stored: Iterable[str] = ()) -> dict[str, Any]:
    """``pack`` plus None for every other known key and every ``m.<key>`` of ``stored`` (the keys Chroma holds now).

    An update leaves no stale key behind: a user-metadata key the record no longer has (removed,
    set to null, or now a list or object) would otherwise keep matching a metadata filter.
    """
    meta = pack(flat)
    gone = _ALL_KEYS.union(key for key in stored if key.startswith("m.")) - meta.keys()
    return {**dict.fromkeys(gone), **meta}


class Tier(str, Enum):
    """Working (a session's live turns), episodic (events, summaries), semantic (stable facts, preferences)."""

    WORKING = "working"
    EPISODIC = "episodic"
    SEMANTIC = "semantic"


class Kind(str, Enum):
    """What a memory is; decides its default tier and how the write filter and supersede treat it."""

    PREFERENCE = "preference"
    CONTEXT = "context"
    FACT = "fact"
    CORRECTION = "correction"
    EVENT = "event"
    SUMMARY = "summary"
    TURN = "turn"


class Role(str, Enum):
    """Who said it: user statements are trusted more than tool output when deciding what to keep."""

    USER = "user"
    ASSISTANT = "assistant"
    TOOL = "tool"
    SYSTEM = "system"


class Status(str, Enum):
    """Lifecycle state; nothing is deleted outright, so every status but active is history."""

    ACTIVE = "active"
    SUPERSEDED = "superseded"
    ARCHIVED = "archived"
    DELETED = "deleted"
    QUARANTINED = "quarantined"  # a low-trust contradiction of an important memory, awaiting review


def utcnow() -> datetime:
    """The current time, timezone-aware (every stored time is UTC)."""
    return datetime.now(UTC)


def new_id() -> str:
    """A new memory id (UUID4 string)."""
    return str(uuid.uuid4())


def to_epoch(value: datetime | None) -> float | None:
    """Epoch seconds, as Chroma metadata stores times (naive datetimes are taken as UTC)."""
    if value is None:
        return None
    if value.tzinfo is None:
        value = value.replace(tzinfo=UTC)
    return value.timestamp()


def from_epoch(value: float | int | None) -> datetime | None:
    """The datetime of stored epoch seconds; None for "not set" (None, NaN, or the far-future sentinel)."""
    if value is None or (isinstance(value, float) and math.isnan(value)) or value >= FAR_FUTURE:
        return None
    return datetime.fromtimestamp(float(value), tz=UTC)


def merged_inputs(sources: list[Any]) -> Iterator[dict[str, Any]]:
    """Every input merged into a memory (its ``sources``) and, nested in them by upkeep, those merged into them."""
    for entry in sources:
        if isinstance(entry, dict):
            yield entry
            yield from merged_inputs(entry.get("sources") or [])


def merged_turn_ids(entry: dict[str, Any]) -> list[str]:
    """The turns one merged input was made from (its ``source.message_ids``).

    None from an entry whose ``source`` is not as the write path makes it: ``sources`` come
    back from an import as they were written in the file, and upkeep reads them on every round.
    """
    source = entry.get("source")
    turns = source.get("message_ids") if isinstance(source, dict) else None
    return [str(turn) for turn in turns] if isinstance(turns, list) else []


class Source(BaseModel):
    """Provenance: where a memory came from, so a summary can be traced to its turns."""

    model_config = ConfigDict(extra="allow")

    session_id: str | None = None
    message_ids: list[str] = Field(default_factory=list)
    memory_ids: list[str] = Field(default_factory=list)
    origin: str | None = None  # "turn", "compression", "import", "mcp", "cli", "consolidation", ...
    # A consolidated memory's sources, each with its id, content, session, time, kind, importance,
    # metadata and turn ids: what it was distilled from, even once a source is archived.
    members: list[dict[str, Any]] = Field(default_factory=list)


class MemoryRecord(BaseModel):
    """One memory; the fields are described in docs/architecture.md ("The record")."""

    model_config = ConfigDict(use_enum_values=False)

    id: str = Field(default_factory=new_id)
    namespace: str
    agent_id: str | None = None
    session_id: str | None = None
    tier: Tier = Tier.EPISODIC
    kind: Kind = Kind.FACT
    role: Role = Role.USER
    content: str
    summary: str | None = None
    context: str | None = None  # indexed with the content (e.g. the neighbouring turn), never returned as content
    entities: list[str] = Field(default_factory=list)
    slot: str | None = None  # "subject:attribute" key used for conflict detection
    importance: float = Field(0.5, ge=0.0, le=1.0)
    token_count: int = 0
    occurred_at: datetime = Field(default_factory=utcnow)
    created_at: datetime = Field(default_factory=utcnow)
    updated_at: datetime = Field(default_factory=utcnow)
    valid_from: datetime = Field(default_factory=utcnow)
    valid_until: datetime | None = None
    expires_at: datetime | None = None
    last_accessed_at: datetime | None = None
    access_count: int = 0
    source: Source = Field(default_factory=Source)
    status: Status = Status.ACTIVE
    superseded_by: str | None = None
    conflicts_with: str | None = None  # the memory a quarantined one contradicts
    consolidated_into: str | None = None  # the semantic memory distilled from this one and others
    sources: list[dict[str, Any]] = Field(default_factory=list)  # repeats merged into this memory, oldest first
    request_id: str | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)
    embedding_model: str | None = None
    embedding_dim: int | None = None

    @property
    def pinned(self) -> bool:
        """Whether its writer pinned it (``PINNED_KEY``, or a store item's ``STORE_ITEM_KEY``): upkeep leaves it be."""
        return self.metadata.get(PINNED_KEY) is True or self.metadata.get(STORE_ITEM_KEY) is True

    def is_expired(self, now: datetime | None = None) -> bool:
        """Whether its TTL has passed (expired memories are hidden from recall, not destroyed)."""
        return self.expires_at is not None and self.expires_at <= (now or utcnow())

    def is_valid(self, now: datetime | None = None) -> bool:
        """Active, not expired, not past its validity window."""
        now = now or utcnow()
        if self.status is not Status.ACTIVE or self.is_expired(now):
            return False
        return self.valid_until is None or self.valid_until > now

    def to_metadata(self) -> dict[str, Any]:
        """Chroma metadata in the stored layout (no None values: Chroma's add refuses them)."""
        return pack(self.flat_fields())

    def flat_fields(self) -> dict[str, Any]:
        """Every field under its own key as Chroma scalars (absent when None), plus ``content``."""
        meta: dict[str, Any] = {
            "content": self.content,
            "namespace": self.namespace,
            "tier": self.tier.value,
            "kind": self.kind.value,
            "role": self.role.value,
            "status": self.status.value,
            "importance": float(self.importance),
            "token_count": int(self.token_count),
            "occurred_at": to_epoch(self.occurred_at),
            "created_at": to_epoch(self.created_at),
            "updated_at": to_epoch(self.updated_at),
            "valid_from": to_epoch(self.valid_from),
            # ``is None``, not ``or``: 1970-01-01 (epoch 0) is a time, not "never".
            "valid_until": FAR_FUTURE if self.valid_until is None else to_epoch(self.valid_until),
            "expires_at": FAR_FUTURE if self.expires_at is None else to_epoch(self.expires_at),
            "last_accessed_at": to_epoch(self.last_accessed_at) or 0.0,
            "access_count": int(self.access_count),
            "source_json": self.source.model_dump_json(exclude_defaults=True),
            "metadata_json": json.dumps(self.metadata, ensure_ascii=False, default=str),
            "entities_json": json.dumps(self.entities, ensure_ascii=False),
        }
        if self.sources:
            meta["sources_json"] = json.dumps(self.sources, ensure_ascii=False, default=str)
        optional = {
            "agent_id": self.agent_id,
            "session_id": self.session_id,
            "summary": self.summary,
            "context": self.context,
            "slot": self.slot,
            "superseded_by": self.superseded_by,
            "conflicts_with": self.conflicts_with,
            "consolidated_into": self.consolidated_into,
            "request_id": self.request_id,
            "embedding_model": self.embedding_model,
            "embedding_dim": self.embedding_dim,
        }
        meta.update({k: v for k, v in optional.items() if v is not None})
        # Scalar user metadata is mirrored as m.<key> so it can be filtered on in Chroma.
        for key, value in self.metadata.items():
            if isinstance(value, (str, int, float, bool)):
                meta[f"m.{key}"] = value
        return meta

    @classmethod
    def from_chroma(cls, memory_id: str, document: str | None, meta: dict[str, Any]) -> MemoryRecord:
        """The record Chroma returned (document and metadata, either layout)."""
        return cls.from_flat(memory_id, unpack(document, meta))

    @classmethod
    def from_flat(cls, memory_id: str, fields: dict[str, Any]) -> MemoryRecord:
        """The record of a flat view (``unpack``/``flat_fields``)."""
        return cls(
            id=memory_id,
            namespace=fields["namespace"],
            agent_id=fields.get("agent_id"),
            session_id=fields.get("session_id"),
            tier=Tier(fields["tier"]),
            kind=Kind(fields["kind"]),
            role=Role(fields["role"]),
            content=fields.get("content") or "",
            summary=fields.get("summary"),
            context=fields.get("context"),
            entities=json.loads(fields.get("entities_json") or "[]"),
            slot=fields.get("slot"),
            importance=fields.get("importance", 0.5),
            token_count=fields.get("token_count", 0),
            occurred_at=from_epoch(fields.get("occurred_at")) or utcnow(),
            created_at=from_epoch(fields.get("created_at")) or utcnow(),
            updated_at=from_epoch(fields.get("updated_at")) or utcnow(),
            valid_from=from_epoch(fields.get("valid_from")) or utcnow(),
            valid_until=from_epoch(fields.get("valid_until")),
            expires_at=from_epoch(fields.get("expires_at")),
            last_accessed_at=from_epoch(fields.get("last_accessed_at") or None),
            access_count=fields.get("access_count", 0),
            source=Source.model_validate_json(fields.get("source_json") or "{}"),
            status=Status(fields["status"]),
            superseded_by=fields.get("superseded_by"),
            conflicts_with=fields.get("conflicts_with"),
            consolidated_into=fields.get("consolidated_into"),
            sources=json.loads(fields.get("sources_json") or "[]"),
            request_id=fields.get("request_id"),
            metadata=json.loads(fields.get("metadata_json") or "{}"),
            embedding_model=fields.get("embedding_model"),
            embedding_dim=fields.get("embedding_dim"),
        )

    def public_dict(self) -> dict[str, Any]:
        """JSON-ready view for tools and exports (enums as values, datetimes as ISO 8601)."""
        return self.model_dump(mode="json")
