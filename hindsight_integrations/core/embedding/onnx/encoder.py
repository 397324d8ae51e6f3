"""Run a local sentence-transformers model with onnxruntime instead of torch.

A short query through torch's eager CPU path costs ~12 ms for all-MiniLM-L6-v2, mostly
framework overhead; the same graph exported once to ONNX (see ``export.py``) runs in
~4.6 ms under onnxruntime and gives the same vectors (within 1e-6).

With an export and its sidecar on disk, ``cached_encoder`` builds the encoder from them
with the ``tokenizers`` library alone: importing torch and sentence-transformers costs
~6 s, far more than every command of the CLI, so a process that reuses an export imports
neither. Only the first use on a machine loads the model to export it (``encoder_for``).
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from .build import built_model
from .cache import INSTALL_HINT, ExportInfo, OnnxUnavailable, cached_export
from .export import check_supported, exported_model
from .quantize import int8_copy
from .tokenizer import encode_tokens, load_tokenizer

logger = logging.getLogger(__name__)


class OnnxEncoder:
    """onnxruntime sessions over one exported model: two sleeping threads for one text, all cores for batches.

    A one-text query is bound by reading the weights, so a second thread takes it from
    ~4.4 to ~2.7 ms on an idle 2-core machine. Its threads sleep instead of spinning
    between operators: spinning ones took a core from the Chroma server and from the BM25
    search running beside the query, and recall got slower (measured in recall at 100k:
    p50 13.1 → 11.7 ms through a server, 10.4 → 9.5 ms embedded; no change when another
    process holds a core). Batches use every core, and background work one thread (both
    sessions are made on first use). Sessions allow concurrent ``run`` calls.
    ``query_threads`` sets the one-text session's threads; ``one_text_per_run`` encoders run a
    batch a text at a time (the int8 copy, ``int8``: see there).

    ``tokenizer`` is a ``tokenizers.Tokenizer`` set up by ``load_tokenizer`` (what
    ``from_export`` builds: no transformers needed), or a Hugging Face tokenizer, which is
    then always called with sentence-transformers' padding/truncation settings, so
    concurrent calls never reconfigure the shared fast tokenizer.
    """

    def __init__(
        self,
        file: Path,
        tokenizer: Any,
        max_length: int,
        *,
        lower_case: bool = False,
        dimension: int | None = None,
        query_threads: int = 2,
        one_text_per_run: bool = False,
    ) -> None:
        try:
            import onnxruntime
        except ImportError as exc:
            raise OnnxUnavailable(f"onnxruntime is not installed ({exc}): {INSTALL_HINT}") from exc
        self.file = file
        self._tokenizer = tokenizer
        self._hf_tokenizer = callable(tokenizer)  # a tokenizers.Tokenizer is not callable, an HF one is
        self._max_length = max_length
        self._lower_case = lower_case
        self._onnxruntime = onnxruntime
        self._query = cpu_session(onnxruntime, file, min(query_threads, cpu_count()), spin=False)
        self._one_text_per_run = one_text_per_run
        self._sessions: dict[str, Any] = {}  # "batch" and "background", made on first use
        self._sessions_lock = threading.Lock()
        self._inputs = [i.name for i in self._query.get_inputs()]
        self._dimension = dimension
        self._int8: OnnxEncoder | None = None
        self._int8_failed: str | None = None
        self._int8_lock = threading.Lock()

    @classmethod
    def from_export(cls, info: ExportInfo) -> OnnxEncoder:
        """The encoder of a cached export, from its sidecar alone: no torch, transformers or model load."""
        try:
            tokenizer = load_tokenizer(
                info.tokenizer,
                info.max_length,
                pad_id=info.pad_id,
                pad_token=info.pad_token,
                pad_type_id=info.pad_type_id,
                padding_side=info.padding_side,
                truncation_side=info.truncation_side,
            )
            encoder = cls(info.file, tokenizer, info.max_length, lower_case=info.lower_case, dimension=info.dimension)
        except OnnxUnavailable:
            raise
        except Exception as exc:
            raise OnnxUnavailable(f"loading {info.file} failed: {type(exc).__name__}: {exc}") from exc
        if tuple(encoder._inputs) != info.inputs:
            raise OnnxUnavailable(f"{info.file} takes {encoder._inputs}, its sidecar says {list(info.inputs)}")
        return encoder

    @classmethod
    def from_model(cls, model: Any, path: str, cache_dir: str | os.PathLike[str] | None = None) -> OnnxEncoder:
        """Export (or reuse the cached export of) a loaded SentenceTransformer. Not cached per process.

        The encoder is then built from the sidecar, as in a later process, so the first use
        tokenizes exactly as every later one.
        """
        try:
            check_supported(model)
            file = exported_model(model, path, cache_dir)
        except OnnxUnavailable:
            raise
        except Exception as exc:
            raise OnnxUnavailable(f"export or load failed: {type(exc).__name__}: {exc}") from exc
        info = ExportInfo.read(file)
        if info is None:
            raise OnnxUnavailable(f"the sidecar of {file} could not be read back")
        return cls.from_export(info)

    def int8(self) -> OnnxEncoder:
        """The int8 copy of this model (``quantize.py``), made once and cached; raises ``OnnxUnavailable``.

        It shares this encoder's tokenizer. Batches (imports) run a text at a time: dynamic
        quantisation scales each run's activations together, so a short text padded in a batch
        came out at cosine 0.969 with float32 instead of 0.99, and a text's vector must not
        depend on what it was imported with.
        """
        if self._int8 is not None:
            return self._int8
        with self._int8_lock:
            if self._int8 is None:
                if self._int8_failed is not None:
                    raise OnnxUnavailable(self._int8_failed)
                try:
                    self._int8 = OnnxEncoder(
                        int8_copy(self.file),
                        self._tokenizer,
                        self._max_length,
                        lower_case=self._lower_case,
                        dimension=self._dimension,
                        one_text_per_run=True,
                    )
                except OnnxUnavailable as exc:
                    self._int8_failed = str(exc)
                    raise
                except Exception as exc:  # onnxruntime cannot load it
                    self._int8_failed = f"loading the int8 copy of {self.file.name} failed: {type(exc).__name__}: {exc}"
                    raise OnnxUnavailable(self._int8_failed) from exc
        return self._int8

    def _lazy_session(self, name: str, threads: int, *, spin: bool) -> Any:
        """A session made on first use: a process that only asks questions never loads a batch session."""
        session = self._sessions.get(name)
        if session is None:
            with self._sessions_lock:
                session = self._sessions.get(name)
                if session is None:
                    session = self._sessions[name] = cpu_session(self._onnxruntime, self.file, threads, spin=spin)
        return session

    @property
    def dimension(self) -> int:
        """The embedding size: from the sidecar, else the graph's output shape, else one encode."""
        if self._dimension is None:
            size = self._query.get_outputs()[0].shape[-1]
            self._dimension = size if isinstance(size, int) else int(self.encode_array(["dimension probe"]).shape[1])
        return self._dimension

    def encode(self, texts: Sequence[str], batch_size: int = 64) -> list[list[float]]:
        """``encode_array`` as Python lists, the form the ``Embedder`` interface returns."""
        return self.encode_array(texts, batch_size).tolist()

    def encode_array(self, texts: Sequence[str], batch_size: int = 64, *, background: bool = False) -> Any:
        """The vectors as one float32 array of shape (len(texts), dimension).

        ``background`` work (context vectors embedded behind the writes) runs one text at a time
        on one thread of its own session, leaving the other cores to the foreground.
        """
        import numpy as np

        if not texts:
            return np.empty((0, 0), dtype=np.float32)
        if self._lower_case:  # older sentence-transformers lowercase before tokenizing
            texts = [t.lower() for t in texts]
        if background:
            session = self._lazy_session("background", 1, spin=False)
            return np.vstack([self._run(session, [text]) for text in texts])
        if len(texts) == 1:
            return self._run(self._query, list(texts))
        batch = self._lazy_session("batch", cpu_count(), spin=True)
        if self._one_text_per_run:
            return np.vstack([self._run(batch, [text]) for text in texts])
        # Longest first, as sentence-transformers does, so each batch pads to similar lengths.
        order = sorted(range(len(texts)), key=lambda i: -len(texts[i]))
        out: Any = None
        for start in range(0, len(order), batch_size):
            chunk = order[start : start + batch_size]
            vectors = self._run(batch, [texts[i] for i in chunk])
            if out is None:
                out = np.empty((len(texts), vectors.shape[1]), dtype=vectors.dtype)
            out[chunk] = vectors
        return out

    def _run(self, session: Any, texts: list[str]) -> Any:
        if self._hf_tokenizer:
            tokens = self._tokenizer(
                texts, padding=True, truncation=True, max_length=self._max_length, return_tensors="np"
            )
            feed = {name: tokens[name].astype("int64", copy=False) for name in self._inputs}
        else:
            tokens = encode_tokens(self._tokenizer, texts)
            feed = {name: tokens[name] for name in self._inputs}
        return session.run(None, feed)[0]


def cpu_session(onnxruntime: Any, file: Path, threads: int, *, spin: bool = True) -> Any:
    """An onnxruntime CPU session of ``file``; ``spin=False`` lets its threads sleep between operators."""
    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    if not spin:
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    options.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_ENABLE_ALL
    return onnxruntime.InferenceSession(str(file), options, providers=["CPUExecutionProvider"])


def cpu_count() -> int:
    """The cores this process may use (its affinity), not the machine's."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not on Linux
        return os.cpu_count() or 1


_ENCODERS: dict[str, OnnxEncoder] = {}  # one export and two sessions per model per process
_FAILED: dict[str, str] = {}  # and one failed attempt, not one per embedder
_LOCK = threading.Lock()


def cached_encoder(path: str, cache_dir: str | os.PathLike[str] | None = None) -> OnnxEncoder | None:
    """The process-wide encoder of the model at ``path`` if its export is cached, else None.

    Never loads the model, exports, or imports torch: None sends the caller to the slow
    path (``encoder_for``), which exports, or reports why ONNX cannot run.
    """
    with _LOCK:
        encoder = _ENCODERS.get(path)
        if encoder is not None or path in _FAILED:
            return encoder
        info = cached_export(path, cache_dir)
        if info is None:
            return None
        try:
            encoder = _ENCODERS[path] = OnnxEncoder.from_export(info)
        except OnnxUnavailable as exc:
            logger.info("the cached ONNX export %s cannot be used (%s)", info.file, exc)
            return None
        return encoder


def built_encoder(path: str, cache_dir: str | os.PathLike[str] | None = None) -> OnnxEncoder:
    """The process-wide encoder of the model at ``path``, its graph built without torch (``build.py``).

    Raises ``OnnxUnavailable`` when this model is not one ``build.py`` can write, or what it
    needs is missing: the caller then loads the model and exports it through torch
    (``encoder_for``), if torch is there.
    """
    with _LOCK:
        encoder = _ENCODERS.get(path)
        if encoder is not None:
            return encoder
        info = ExportInfo.read(built_model(path, cache_dir))
        if info is None:
            raise OnnxUnavailable("the sidecar of the built graph could not be read back")
        encoder = _ENCODERS[path] = OnnxEncoder.from_export(info)
        return encoder


def encoder_for(model: Any, path: str, cache_dir: str | os.PathLike[str] | None = None) -> OnnxEncoder:
    """The process-wide encoder of the model at ``path``; raises ``OnnxUnavailable`` if it cannot run."""
    with _LOCK:
        encoder = _ENCODERS.get(path)
        if encoder is None:
            if path in _FAILED:
                raise OnnxUnavailable(_FAILED[path])
            try:
                encoder = _ENCODERS[path] = OnnxEncoder.from_model(model, path, cache_dir)
            except OnnxUnavailable as exc:
                _FAILED[path] = str(exc)
                raise
        return encoder
