"""Run a local sentence-transformers model with onnxruntime instead of torch.

A short query through torch's eager CPU path costs ~12 ms for all-MiniLM-L6-v2, mostly
framework overhead; the same graph exported once to ONNX runs in ~4.6 ms under
onnxruntime and gives the same vectors (within 1e-6). The export bakes mean pooling and
L2 normalisation into the graph, so only Transformer + mean Pooling [+ Normalize] models
are accepted; anything else raises ``OnnxUnavailable`` and the caller keeps torch.

The exported file is cached on disk (keyed by the model's files and the exporter
versions), so a process pays the 1-2 s export only the first time a model is used on a
machine.
"""

from __future__ import annotations

import atexit
import hashlib
import json
import logging
import os
import shutil
import tempfile
import threading
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

logger = logging.getLogger(__name__)

OPSET = 17
# Bump when the exported graph changes (wrapper, inputs, outputs): old cache files are then ignored.
_EXPORT_FORMAT = 1
_KEY_SUFFIXES = (".safetensors", ".bin", ".pt", ".pth", ".json")
_TOKEN_INPUTS = ("input_ids", "attention_mask", "token_type_ids")
_INSTALL = "pip install 'hindsight-integrations[local]'"


class OnnxUnavailable(Exception):
    """The ONNX path cannot serve this model here; the message says why."""


def cache_root(explicit: str | os.PathLike[str] | None = None) -> Path:
    """Where exported models live: ``explicit``, else ``HINDSIGHT_CACHE_DIR``, else the user cache.

    The environment is read here as well as in ``Settings`` because ``LocalEmbedder`` is
    often built directly (benchmarks, tests, adapters) without a ``Settings`` object.
    """
    if explicit:
        return Path(explicit).expanduser()
    if env := os.environ.get("HINDSIGHT_CACHE_DIR"):
        return Path(env).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg) if xdg else Path.home() / ".cache") / "hindsight"


def check_supported(model: Any) -> None:
    """Raise ``OnnxUnavailable`` unless ``model`` is exactly what the exported graph computes."""
    modules = list(model)
    kinds = [type(m).__name__ for m in modules]
    if kinds not in (["Transformer", "Pooling"], ["Transformer", "Pooling", "Normalize"]):
        raise OnnxUnavailable(f"modules are {kinds}, not Transformer + Pooling [+ Normalize]")
    transformer, pooling = modules[0], modules[1]
    if not _is_mean_pooling(pooling):
        raise OnnxUnavailable(f"pooling is {pooling.get_config_dict()}, not mean tokens")
    if getattr(transformer, "backend", "torch") != "torch":
        raise OnnxUnavailable(f"the model already runs on the {transformer.backend!r} backend")
    if list(getattr(transformer, "modalities", ["text"])) != ["text"]:
        raise OnnxUnavailable(f"the model is multimodal ({transformer.modalities})")
    if getattr(transformer, "query_expansion", None) is not None:
        raise OnnxUnavailable("the model uses query expansion")
    if getattr(model, "truncate_dim", None) is not None:
        raise OnnxUnavailable("the model truncates its embeddings")
    prompt_name = getattr(model, "default_prompt_name", None)
    if prompt_name and (getattr(model, "prompts", None) or {}).get(prompt_name):
        raise OnnxUnavailable(f"the model prepends a default prompt ({prompt_name!r})")
    if getattr(model, "tokenizer", None) is None:
        raise OnnxUnavailable("the model has no tokenizer")


def _is_mean_pooling(pooling: Any) -> bool:
    config = pooling.get_config_dict()
    if "pooling_mode" in config:  # sentence-transformers >= 6
        return config["pooling_mode"] == "mean"
    modes = {k: v for k, v in config.items() if k.startswith("pooling_mode_")}
    return modes.pop("pooling_mode_mean_tokens", False) is True and not any(modes.values())


def model_fingerprint(path: str) -> str:
    """A short hash of what the exported graph depends on: the model's files and the exporter."""
    import torch
    import transformers

    root = Path(path)
    if not root.is_dir():
        raise OnnxUnavailable(f"{path!r} is not a local model directory")
    files = []
    for file in sorted(root.rglob("*")):
        relative = file.relative_to(root)
        if file.suffix in _KEY_SUFFIXES and file.is_file() and not any(p.startswith(".") for p in relative.parts):
            stat = file.stat()
            files.append([str(relative), stat.st_size, stat.st_mtime_ns])
    key = [str(root.resolve()), files, torch.__version__, transformers.__version__, OPSET, _EXPORT_FORMAT]
    return hashlib.sha256(json.dumps(key).encode()).hexdigest()[:20]


def exported_model(model: Any, path: str, cache_dir: str | os.PathLike[str] | None = None) -> Path:
    """The ONNX file for ``model`` (loaded from ``path``), exported now if not cached yet.

    The file is written to a temporary name in the cache directory and renamed, so a
    process never opens another's half-written export. If the cache directory cannot be
    written, the export goes to a private temporary directory for this process.
    """
    name = f"{os.path.basename(path.rstrip('/')) or 'model'}-{model_fingerprint(path)}.onnx"
    directory = cache_root(cache_dir) / "onnx"
    target = directory / name
    if target.is_file():
        return target
    try:
        directory.mkdir(parents=True, exist_ok=True)
        handle, temp = tempfile.mkstemp(prefix=f".{name}.", suffix=".tmp", dir=directory)
    except OSError as exc:
        logger.warning("ONNX cache %s is not writable (%s); exporting to a temporary directory", directory, exc)
        directory = _private_dir()
        target = directory / name
        if target.is_file():
            return target
        handle, temp = tempfile.mkstemp(prefix=f".{name}.", suffix=".tmp", dir=directory)
    os.close(handle)
    try:
        logger.info("exporting %s to ONNX (once per machine): %s", path, target)
        _export(model, temp)
        os.chmod(temp, 0o644)  # mkstemp makes it private; a shared cache directory should stay readable
        os.replace(temp, target)
    finally:
        if os.path.exists(temp):
            os.unlink(temp)
    return target


_private: Path | None = None


def _private_dir() -> Path:
    global _private
    if _private is None:
        _private = Path(tempfile.mkdtemp(prefix="hindsight-onnx-"))
        atexit.register(shutil.rmtree, _private, ignore_errors=True)
    return _private


def _export(model: Any, file: str) -> None:
    """Trace tokens -> mean-pooled, L2-normalised embedding into ``file`` and check it against torch."""
    try:
        import onnx  # noqa: F401  (torch.onnx.export needs it)
        import onnxruntime
    except ImportError as exc:
        raise OnnxUnavailable(f"exporting needs the onnx and onnxruntime packages ({exc}): {_INSTALL}") from exc
    import torch

    auto_model = model[0].auto_model
    probe = model.tokenizer(
        ["a short probe", "a somewhat longer probe sentence for tracing the export"],
        padding=True,
        truncation=True,
        max_length=model.max_seq_length,
        return_tensors="pt",
    )
    names = [n for n in _TOKEN_INPUTS if n in probe and n in _forward_parameters(auto_model)]
    if names[:2] != ["input_ids", "attention_mask"]:
        raise OnnxUnavailable(f"the model takes {names}, not input_ids + attention_mask")
    wrapper = _mean_pooled(auto_model)
    args = tuple(probe[n] for n in names)
    axes = {n: {0: "batch", 1: "tokens"} for n in names} | {"embedding": {0: "batch"}}
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(
            wrapper,
            args,
            file,
            input_names=names,
            output_names=["embedding"],
            dynamic_axes=axes,
            opset_version=OPSET,
            dynamo=False,
        )
        expected = wrapper(*args).numpy()
    session = onnxruntime.InferenceSession(file, providers=["CPUExecutionProvider"])
    got = session.run(None, {n: probe[n].numpy() for n in names})[0]
    if got.shape != expected.shape or abs(got - expected).max() > 1e-4:
        raise OnnxUnavailable("the exported graph does not reproduce the torch vectors")


def _forward_parameters(module: Any) -> set[str]:
    import inspect

    return set(inspect.signature(module.forward).parameters)


def _mean_pooled(encoder: Any) -> Any:
    """The HF encoder + attention-masked mean + L2 norm, with positional inputs for tracing."""
    import torch

    class MeanPooled(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.encoder = encoder

        def forward(self, input_ids: Any, attention_mask: Any, token_type_ids: Any = None) -> Any:
            extra = {} if token_type_ids is None else {"token_type_ids": token_type_ids}
            tokens = self.encoder(input_ids=input_ids, attention_mask=attention_mask, **extra).last_hidden_state
            mask = attention_mask.unsqueeze(-1).to(tokens.dtype)
            mean = (tokens * mask).sum(1) / mask.sum(1).clamp(min=1e-9)
            return torch.nn.functional.normalize(mean, dim=1)

    return MeanPooled().eval()


class OnnxEncoder:
    """Two onnxruntime sessions over one exported model: two sleeping threads for queries, all cores for batches.

    A one-text query is bound by reading the weights, so a second thread takes it from
    ~4.4 to ~2.7 ms on an idle 2-core machine. Its threads sleep instead of spinning
    between operators: spinning ones took a core from the Chroma server and from the BM25
    search running beside the query, and recall got slower (measured in recall at 100k:
    p50 13.1 → 11.7 ms through a server, 10.4 → 9.5 ms embedded; no change when another
    process holds a core). Batches use every core. Sessions allow concurrent ``run`` calls, and the
    tokenizer is always called with the same padding/truncation settings (those of
    sentence-transformers), so concurrent calls never reconfigure the shared fast tokenizer.
    """

    def __init__(self, file: Path, tokenizer: Any, max_length: int, *, lower_case: bool = False) -> None:
        try:
            import onnxruntime
        except ImportError as exc:
            raise OnnxUnavailable(f"onnxruntime is not installed ({exc}): {_INSTALL}") from exc
        self.file = file
        self._tokenizer = tokenizer
        self._max_length = max_length
        self._lower_case = lower_case
        self._query = self._session(onnxruntime, file, min(2, _cpu_count()), spin=False)
        self._batch = self._session(onnxruntime, file, _cpu_count())
        self._inputs = [i.name for i in self._query.get_inputs()]

    @classmethod
    def from_model(cls, model: Any, path: str, cache_dir: str | os.PathLike[str] | None = None) -> OnnxEncoder:
        """Export (or reuse the cached export of) a loaded SentenceTransformer. Not cached per process."""
        try:
            check_supported(model)
            file = exported_model(model, path, cache_dir)
            lower_case = bool(getattr(model[0], "do_lower_case", False))
            return cls(file, model.tokenizer, model.max_seq_length, lower_case=lower_case)
        except OnnxUnavailable:
            raise
        except Exception as exc:
            raise OnnxUnavailable(f"export or load failed: {type(exc).__name__}: {exc}") from exc

    @staticmethod
    def _session(onnxruntime: Any, file: Path, threads: int, *, spin: bool = True) -> Any:
        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        if not spin:
            options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        options.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_ENABLE_ALL
        return onnxruntime.InferenceSession(str(file), options, providers=["CPUExecutionProvider"])

    def encode(self, texts: Sequence[str], batch_size: int = 64) -> list[list[float]]:
        return self.encode_array(texts, batch_size).tolist()

    def encode_array(self, texts: Sequence[str], batch_size: int = 64) -> Any:
        """The vectors as one float32 array of shape (len(texts), dimension)."""
        import numpy as np

        if not texts:
            return np.empty((0, 0), dtype=np.float32)
        if self._lower_case:  # older sentence-transformers lowercase before tokenizing
            texts = [t.lower() for t in texts]
        if len(texts) == 1:
            return self._run(self._query, list(texts))
        # Longest first, as sentence-transformers does, so each batch pads to similar lengths.
        order = sorted(range(len(texts)), key=lambda i: -len(texts[i]))
        out: Any = None
        for start in range(0, len(order), batch_size):
            chunk = order[start : start + batch_size]
            vectors = self._run(self._batch, [texts[i] for i in chunk])
            if out is None:
                out = np.empty((len(texts), vectors.shape[1]), dtype=vectors.dtype)
            out[chunk] = vectors
        return out

    def _run(self, session: Any, texts: list[str]) -> Any:
        tokens = self._tokenizer(texts, padding=True, truncation=True, max_length=self._max_length, return_tensors="np")
        return session.run(None, {name: tokens[name].astype("int64", copy=False) for name in self._inputs})[0]


def _cpu_count() -> int:
    try:
        return len(os.sched_getaffinity(0))  # the cores this process may use, not the machine's
    except AttributeError:  # pragma: no cover - not on Linux
        return os.cpu_count() or 1


_ENCODERS: dict[str, OnnxEncoder] = {}  # one export and two sessions per model per process
_FAILED: dict[str, str] = {}  # and one failed attempt, not one per embedder
_LOCK = threading.Lock()


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
