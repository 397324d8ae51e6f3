"""``HindsightStore``: a LangGraph ``BaseStore`` on Hindsight memory, for LangGraph agents and LangMem.

Mapping. One ``HindsightStore`` serves one Hindsight namespace (the user). Each LangGraph
item — namespace tuple + key + JSON value — is one memory whose metadata holds the tuple,
the key and the value; its content is the text to embed (the ``index`` fields of the
value, or all of it). Indexed items live in the semantic tier, so the other surfaces
(middleware, retriever, classic memory) recall what a LangMem agent stored; items put with
``index=False`` live in the working tier, out of recall, reachable by ``get``/``search``.

Key-value semantics come first, because that is what made other memory projects drop
their store: ``get`` after ``put`` returns exactly the value, ``put`` of an existing key
updates that item in place, ``delete`` deletes (soft, like every Hindsight forget),
``ttl`` (minutes) expires the item, and reads refresh it unless told not to (moving its
expiry only: ``updated_at`` stays the time of the last put, kept in the item's metadata).

Writes go through the MCP client's tools. ``store_memory`` is built for conversation
memories: by default it runs the write filter (which drops short text such as
``"food: pizza"``), merges near-duplicates (which would fold two keys with similar values
into one) and lets a changed value supersede an older one about the same thing (which
would hide ``"I live in Berlin"`` under one key once ``"I moved to Paris"`` is put under
another). A store must do none of that, so items are created with ``apply_filter=False``,
``dedup=False`` and ``supersede=False``: what was put is what is stored, as its own
current memory, in one call. Items are pinned (metadata ``"pinned": true``), so the engine's
upkeep never decays, archives, evicts, merges or consolidates them: only ``delete`` and the
TTL remove an item (one put before pinning existed is pinned too: the engine counts the
store's item mark, ``lg_item``, as a pin).

An item also keeps its value's top-level text fields as metadata keys of their own (``lg_f.<field>``,
``store_fields.py``), so a filtered search lists only the items its filter can keep.

Reads count no access: a query search's recalls pass ``touch=False``, as ``get`` and a search
without a query (listings) never counted one. Access counts are recall's sign that a conversation
used a memory, and a search scores many items it does not return; a store's read is LangGraph's
(``refresh_ttl`` moves the item's expiry), not a use that should rank the item higher elsewhere.
"""

from __future__ import annotations

import json
import threading
import uuid
from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import Any, cast

from langchain_core.runnables import run_in_executor
from langgraph.store.base import (
    BaseStore,
    GetOp,
    Item,
    ListNamespacesOp,
    MatchCondition,
    Op,
    PutOp,
    Result,
    SearchItem,
    SearchOp,
    TTLConfig,
    validate_op_namespace,
)
from langgraph.store.base.embed import get_text_at_path, tokenize_path

from .._copying import deepcopy_sharing
from ..core.errors import InvalidInputError
from ..core.model.limits import MAX_METADATA_KEYS
from ..core.model.records import PINNED_KEY, STORE_ITEM_KEY, MemoryRecord
from ..mcp.errors import MemoryToolInputError
from ..mcp.resolve import ClientPool, resolve_namespace
from .store_fields import FIELDS_KEY, field_keys, narrowed_listings
from .store_search import SimilarItems
from .store_values import ParsedValues, flatten, item_value, stored_value

MARK = STORE_ITEM_KEY  # every item carries it: what the store lists and recalls, and a pin for upkeep
_ACTIVE = ["active", "superseded"]  # a superseded store item is still the current value of its key
_PAGE = 1000  # list_memories' largest page
_STORE_PREFIX = "lg_"  # the metadata keys the store writes (the item's own, its value's and its fields')
_CREATED_AT = "lg_created_at"
_SIZE_LIMIT = "HINDSIGHT_MAX_METADATA_BYTES"  # the server setting its refusal of too much metadata names


def _updated_at(record: MemoryRecord) -> datetime:
    """When the item was last put: a read refreshing its TTL updates the memory, not the item.

    An item put before the time was kept (no ``lg_updated_at``) has its memory's, the best known.
    """
    stamp = record.metadata.get("lg_updated_at")
    return datetime.fromisoformat(stamp) if stamp else record.updated_at


def _dropped_keys(record: MemoryRecord, metadata: Mapping[str, Any]) -> dict[str, None]:
    """The store's keys ``record`` holds that ``metadata`` no longer sets, each as None: an update removes them.

    ``lg_created_at`` stays (an update keeps the item's first put); keys the store does not own are left alone.
    """
    return {
        key: None
        for key in record.metadata
        if key.startswith(_STORE_PREFIX) and key not in metadata and key != _CREATED_AT
    }


def _namespace_matches(condition: MatchCondition, namespace: tuple[str, ...]) -> bool:
    """``list_namespaces``' prefix/suffix condition, with ``"*"`` matching any one label."""
    path = tuple(condition.path)
    if len(namespace) < len(path):
        return False
    part = namespace[: len(path)] if condition.match_type == "prefix" else namespace[len(namespace) - len(path) :]
    return all(p == "*" or p == n for p, n in zip(path, part))


class HindsightStore(BaseStore):
    """LangGraph store on one user's Hindsight memory.

    ``HindsightStore(namespace="u1")`` uses the environment's store; ``client=`` /
    ``engine=`` choose it explicitly. ``index_fields`` says which value fields are
    embedded by default (``["$"]``, the whole value); ``put(..., index=[...])`` overrides
    it per item. ``ttl`` is LangGraph's ``TTLConfig`` (``default_ttl`` in minutes,
    ``refresh_on_read``).
    """

    supports_ttl = True

    def __init__(
        self,
        namespace: str | None = None,
        *,
        client: Any = None,
        engine: Any = None,
        index_fields: list[str] | None = None,
        ttl: TTLConfig | None = None,
        importance: float = 0.8,
    ) -> None:
        self.namespace = resolve_namespace(namespace, "HindsightStore")
        self.index_fields = list(index_fields) if index_fields else ["$"]
        self.ttl_config = ttl
        self.importance = importance
        self._pool = ClientPool(client, engine, owner="HindsightStore")
        self._write_lock = threading.Lock()

    def __copy__(self) -> HindsightStore:
        return self.__deepcopy__({id(value): value for value in self.__dict__.values()})

    def __deepcopy__(self, memo: dict[int, Any]) -> HindsightStore:
        """A copy on the same connection (the pool copies as itself) and, as it writes the same items, the same lock."""
        return deepcopy_sharing(self, memo, self._write_lock)

    def __getstate__(self) -> dict[str, Any]:
        """The settings and the pool (which pickles as where the memories live); a lock is not state."""
        return {name: value for name, value in self.__dict__.items() if name != "_write_lock"}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._write_lock = threading.Lock()

    @property
    def memory_client(self) -> Any:
        """The MemoryClient every operation goes through (resolved on first use)."""
        return self._pool.get(self.namespace)

    # -- batch entry points -------------------------------------------------------------------
    def batch(self, ops: Iterable[Op]) -> list[Result]:
        """``BaseStore.batch``: run the ops in order through MCP, so a get after a put in the batch sees the put.

        Puts return None in their slot, as LangGraph expects; an op type this store does not
        know raises ``ValueError`` rather than being skipped.
        """
        results: list[Result] = []
        for op in ops:
            validate_op_namespace(op)
            if isinstance(op, GetOp):
                results.append(self._get(op))
            elif isinstance(op, SearchOp):
                results.append(self._search(op))
            elif isinstance(op, ListNamespacesOp):
                results.append(self._list_namespaces(op))
            elif isinstance(op, PutOp):
                self._put(op)
                results.append(None)
            else:
                raise ValueError(f"unknown store operation: {type(op).__name__}")
        return results

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        """``BaseStore.abatch``: ``batch`` run in a worker thread, not a separate async implementation."""
        # The client's sync calls are thread-safe; running the batch in a worker keeps one
        # code path for both APIs and keeps the event loop free while Chroma works.
        return await run_in_executor(None, self.batch, list(ops))

    # -- mapping ------------------------------------------------------------------------------
    @staticmethod
    def _ns_key(namespace: tuple[str, ...]) -> str:
        """The namespace tuple as one JSON string, so an exact namespace is a single metadata equality."""
        return json.dumps(list(namespace), ensure_ascii=False)

    def _filters(
        self,
        namespace_prefix: tuple[str, ...] = (),
        *,
        exact: tuple[str, ...] | None = None,
        key: str | None = None,
        indexed_only: bool = False,
    ) -> dict[str, Any]:
        """Recall/list filters for store items: an exact namespace or a prefix (one label per key)."""
        metadata: dict[str, Any] = {MARK: True}
        if exact is not None:
            metadata["lg_ns"] = self._ns_key(exact)
        else:
            metadata.update({f"lg_ns_{i}": label for i, label in enumerate(namespace_prefix)})
        if key is not None:
            metadata["lg_key"] = key
        if indexed_only:
            metadata["lg_indexed"] = True
        tiers = ["semantic"] if indexed_only else ["working", "episodic", "semantic"]
        return {"metadata": metadata, "statuses": _ACTIVE, "tiers": tiers}

    def _text(self, value: Mapping[str, Any], index: list[str] | None) -> str:
        """The memory content to embed: the indexed fields as lines, else the whole value as JSON."""
        fields = index if index is not None else self.index_fields
        parts: list[str] = []
        for field in fields:
            if field == "$":
                parts.extend(flatten(value))
            else:
                parts.extend(get_text_at_path(value, tokenize_path(field)))
        return "\n".join(p for p in parts if p.strip()) or json.dumps(value, ensure_ascii=False, sort_keys=True)

    @staticmethod
    def _item(
        record: MemoryRecord, score: float | None = None, *, scored: bool = False, value: dict[str, Any] | None = None
    ) -> Item:
        """The LangGraph item a memory holds (a ``SearchItem`` when ``scored``), with the times of its puts.

        ``value`` is the item's value when already parsed from the record (``ParsedValues``).
        """
        meta = record.metadata
        created = datetime.fromisoformat(meta["lg_created_at"]) if meta.get("lg_created_at") else record.created_at
        fields = {
            "namespace": tuple(json.loads(meta["lg_ns"])),
            "key": meta["lg_key"],
            "value": item_value(record) if value is None else value,
            "created_at": created,
            "updated_at": _updated_at(record),
        }
        return SearchItem(**fields, score=score) if scored else Item(**fields)

    def _find(self, namespace: tuple[str, ...], key: str) -> list[MemoryRecord]:
        """The memories holding (namespace, key), newest first (more than one only after a race)."""
        found = self.memory_client.list(filters=self._filters(exact=namespace, key=key), limit=_PAGE)
        return sorted(found, key=_updated_at, reverse=True)

    def _all(self, filters: dict[str, Any]) -> list[MemoryRecord]:
        """Every memory matching ``filters``, paging through ``list`` (which returns at most ``_PAGE``)."""
        out: list[MemoryRecord] = []
        while True:
            page = self.memory_client.list(filters=filters, limit=_PAGE, offset=len(out))
            out.extend(page)
            if len(page) < _PAGE:
                return out

    def _candidates(self, filters: dict[str, Any], search_filter: dict[str, Any] | None) -> list[MemoryRecord]:
        """The memories matching ``filters`` that ``search_filter`` can keep: every one, or fewer (``store_fields.py``).

        A server that refuses the narrowed listings (one that predates ``$ne``) lists every memory.
        """
        listings = narrowed_listings(filters["metadata"], search_filter)
        if not listings:
            return self._all(filters)
        try:
            found = [record for metadata in listings for record in self._all({**filters, "metadata": metadata})]
        except MemoryToolInputError as exc:
            if not exc.field.startswith("filters"):
                raise
            return self._all(filters)
        return list({record.id: record for record in found}.values())

    def _refresh(self, records: Iterable[MemoryRecord]) -> None:
        """Restart the TTL of items that have one (LangGraph's ``refresh_ttl`` on reads)."""
        for record in records:
            minutes = record.metadata.get("lg_ttl")
            if minutes:
                self.memory_client.update(record.id, ttl_seconds=max(1, round(float(minutes) * 60)))

    # -- operations ---------------------------------------------------------------------------
    def _get(self, op: GetOp) -> Item | None:
        found = self._find(op.namespace, op.key)
        if not found:
            return None
        if op.refresh_ttl:
            self._refresh(found[:1])
        return self._item(found[0])

    def _search(self, op: SearchOp) -> list[SearchItem]:
        """The items the filter keeps, most similar to a query first (else newest first); one result per key.

        The filter applies before ranking and paging, as in LangGraph's own stores: a match far
        down the similarity ranking is still found (``store_search.py``). A query's results are
        ranked and scored by cosine similarity.
        """
        values = ParsedValues(op.filter)
        query = (op.query or "").strip()
        wanted = op.offset + op.limit
        scored: list[tuple[MemoryRecord, float | None]]
        if query:
            filters = self._filters(op.namespace_prefix, indexed_only=True)
            similar = SimilarItems(
                self.memory_client, query, filters, values.kept, lambda every: self._candidates(every, op.filter)
            )
            scored = list(similar.best(wanted, filtered=bool(op.filter)))
        else:
            listed = self._candidates(self._filters(op.namespace_prefix), op.filter)
            records = sorted(listed, key=_updated_at, reverse=True)
            scored = [(r, None) for r in records if values.kept(r)]
        seen: set[tuple[str, str]] = set()
        picked: list[tuple[MemoryRecord, float | None]] = []
        for record, score in scored:
            ident = (record.metadata["lg_ns"], record.metadata["lg_key"])
            if ident in seen:
                continue
            seen.add(ident)
            picked.append((record, score))
        picked = picked[op.offset : wanted]
        if op.refresh_ttl:
            self._refresh(r for r, _ in picked)
        return [cast(SearchItem, self._item(r, s, scored=True, value=values.of(r))) for r, s in picked]

    def _list_namespaces(self, op: ListNamespacesOp) -> list[tuple[str, ...]]:
        namespaces = {tuple(json.loads(r.metadata["lg_ns"])) for r in self._all(self._filters())}
        if op.match_conditions:
            namespaces = {ns for ns in namespaces if all(_namespace_matches(c, ns) for c in op.match_conditions)}
        if op.max_depth is not None:
            namespaces = {ns[: op.max_depth] for ns in namespaces}
        return sorted(namespaces)[op.offset : op.offset + op.limit]

    def _put(self, op: PutOp) -> None:
        """Create, update in place, replace or (``value=None``) delete the item under (namespace, key)."""
        client = self.memory_client
        # Serialised per store: find-then-create must not race with itself in this process.
        with self._write_lock:
            existing = self._find(op.namespace, op.key)
            if op.value is None:
                for record in existing:
                    client.forget(record.id)
                return
            value = dict(op.value)
            try:
                value_json = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
            except (TypeError, ValueError) as exc:
                raise ValueError(f"the value of {op.key!r} must be JSON: {exc}") from None
            indexed = op.index is not False
            text = self._text(value, op.index or None) if indexed else f"{'/'.join(op.namespace)}/{op.key}"
            ttl_seconds = max(1, round(op.ttl * 60)) if op.ttl else None
            metadata: dict[str, Any] = {
                MARK: True,
                PINNED_KEY: True,  # upkeep never decays, archives, evicts or merges what a program put
                "lg_ns": self._ns_key(op.namespace),
                "lg_key": op.key,
                "lg_value": stored_value(value_json),
                "lg_indexed": indexed,
                "lg_ttl": op.ttl or 0,
                "lg_updated_at": datetime.now().astimezone().isoformat(),
                **{f"lg_ns_{i}": label for i, label in enumerate(op.namespace)},
            }
            fields = field_keys(value, room=MAX_METADATA_KEYS - len(metadata))
            tier = "semantic" if indexed else "working"
            try:
                try:
                    self._write(existing, text, tier, {**metadata, **fields}, ttl_seconds)
                except MemoryToolInputError as exc:
                    if len(fields) == 1 or not exc.field.endswith("metadata") or _SIZE_LIMIT not in exc.message:
                        raise
                    # The fields are for faster searches; an item that fits without them is stored without them.
                    self._write(existing, text, tier, {**metadata, FIELDS_KEY: False}, ttl_seconds)
            except MemoryToolInputError as exc:
                if not exc.field.endswith("metadata") or _SIZE_LIMIT not in exc.message:
                    raise
                raise InvalidInputError(
                    f"value of {op.key!r}",
                    f"{len(value_json.encode())} bytes as JSON, too large to store: the item's metadata, which holds "
                    f"it beside the item's namespace, key and times, {exc.message.removeprefix('metadata: ')}. Raise "
                    f"{_SIZE_LIMIT} where the memory server runs, or split the value across several keys",
                ) from None

    def _write(
        self, existing: list[MemoryRecord], text: str, tier: str, metadata: dict[str, Any], ttl_seconds: int | None
    ) -> None:
        """Update the item's memory in place, or replace it (and any duplicate from a race).

        An update merges metadata, so it names each store key the new value no longer sets as None
        (which removes it): else a text field the value dropped kept its ``lg_f.<field>`` key, every
        filtered listing on that field read the item again, and the metadata grew with each put.
        """
        client = self.memory_client
        current = existing[0] if existing else None
        dropped = _dropped_keys(current, metadata) if current is not None else {}
        # An in-place update cannot drop an expiry or move a memory between tiers, so
        # those changes replace the memory instead (created_at is carried over); nor can
        # it name more keys than metadata may hold, so such a change replaces it too.
        if (
            current is not None
            and current.tier.value == tier
            and (ttl_seconds or not current.expires_at)
            and len(metadata) + len(dropped) <= MAX_METADATA_KEYS
        ):
            client.update(current.id, content=text, metadata={**metadata, **dropped}, ttl_seconds=ttl_seconds)
            stale = existing[1:]
        else:
            created = current.metadata.get("lg_created_at") if current else None
            metadata["lg_created_at"] = created or metadata["lg_updated_at"]
            self._create(text, tier, metadata, ttl_seconds)
            stale = existing
        for record in stale:
            client.forget(record.id)

    def _create(self, text: str, tier: str, metadata: dict[str, Any], ttl_seconds: int | None) -> None:
        """Create an item without the write filter or near-duplicate merge (see the module doc).

        Kind ``fact``: a store item is a value the agent chose to keep, not a conversation
        turn, and facts are what the other surfaces recall.
        """
        item: dict[str, Any] = {
            "content": text,
            "kind": "fact",
            "tier": tier,
            "importance": self.importance,
            "metadata": metadata,
        }
        if ttl_seconds:
            item["ttl_seconds"] = ttl_seconds
        self.memory_client.store(
            [item], request_id=f"lgstore-{uuid.uuid4()}", apply_filter=False, dedup=False, supersede=False
        )


__all__ = ["HindsightStore"]
