"""Build the ONNX graph of a BERT sentence-transformers model from its files, without torch.

``export.py`` traces a model through torch, which makes torch (754 MB, or a multi-GB CUDA build
when pip picks it) a dependency of every local install. A BERT encoder with mean pooling is
small enough to write down instead: this module reads ``config.json``, ``model.safetensors``
and the sentence-transformers configs with numpy and writes the same computation with ONNX
operators (embeddings, post-norm self-attention layers with exact GELU, the attention-masked
mean, L2 normalisation), so the bundled all-MiniLM-L6-v2 and models like it need only
onnxruntime, tokenizers and onnx. The tests check it against sentence-transformers on torch
(same vectors to 1e-5, same token ids).

Anything this module does not recognise exactly (another architecture, pooling, activation,
a prompt, a dense layer) raises ``OnnxUnavailable``, and the caller falls back to the torch
export, which serves any Transformer + mean Pooling model.
"""

from __future__ import annotations

import json
import logging
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from .cache import (
    INSTALL_HINT,
    OPSET,
    ExportInfo,
    OnnxUnavailable,
    export_stem,
    new_cache_file,
    sidecar_for,
    write_file,
)
from .tokenizer import load_tokenizer

logger = logging.getLogger(__name__)

BUILDER = "build"
"""The exporter name in this module's cache keys (``export_stem``): its graphs never depend on torch."""

_NORMALIZE = "sentence_transformers.models.Normalize"
_MODULES = ["sentence_transformers.models.Transformer", "sentence_transformers.models.Pooling"]


def _read_json(file: Path) -> Any:
    try:
        return json.loads(file.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise OnnxUnavailable(f"{file.name} cannot be read ({exc})") from exc


def bert_config(path: str) -> dict[str, Any]:
    """The model's ``config.json`` if this module can build its graph; raises ``OnnxUnavailable`` otherwise."""
    root = Path(path)
    if not (root / "model.safetensors").is_file() or not (root / "tokenizer.json").is_file():
        raise OnnxUnavailable(f"{path!r} has no model.safetensors and tokenizer.json to build a graph from")
    modules = _read_json(root / "modules.json")
    kinds = [m.get("type") for m in modules]
    if kinds not in (_MODULES, [*_MODULES, _NORMALIZE]) or modules[0].get("path", "") != "":
        raise OnnxUnavailable(f"modules are {kinds}, not Transformer + Pooling [+ Normalize]")
    pooling = _read_json(root / modules[1]["path"] / "config.json")
    modes = {k: v for k, v in pooling.items() if k.startswith("pooling_mode")}
    if modes.pop("pooling_mode_mean_tokens", False) is not True or any(modes.values()):
        raise OnnxUnavailable(f"pooling is {pooling}, not mean tokens")
    st_config = root / "config_sentence_transformers.json"
    if st_config.is_file():
        extra = _read_json(st_config)
        if any(extra.get("prompts", {}).values()) and extra.get("default_prompt_name"):
            raise OnnxUnavailable("the model prepends a default prompt")
    config = _read_json(root / "config.json")
    wanted = {
        "model_type": "bert",
        "hidden_act": "gelu",
        "position_embedding_type": "absolute",
    }
    for key, value in wanted.items():
        if config.get(key, value) != value:
            raise OnnxUnavailable(f"config.json has {key}={config.get(key)!r}, not {value!r}")
    if config["hidden_size"] % config["num_attention_heads"]:
        raise OnnxUnavailable("hidden_size is not a multiple of num_attention_heads")
    return dict(config)


def _weights(path: str) -> dict[str, np.ndarray]:
    try:
        from safetensors.numpy import load_file
    except ImportError as exc:
        raise OnnxUnavailable(f"building the graph needs the safetensors package ({exc}): {INSTALL_HINT}") from exc
    weights = load_file(str(Path(path) / "model.safetensors"))
    prefix = "bert." if any(k.startswith("bert.") for k in weights) else ""
    return {k[len(prefix) :]: v for k, v in weights.items() if k.startswith(prefix)}


class _Graph:
    """A small helper over ``onnx.helper``: nodes get unique output names, weights become initializers."""

    def __init__(self, weights: dict[str, np.ndarray]) -> None:
        from onnx import helper, numpy_helper

        self._helper, self._numpy_helper = helper, numpy_helper
        self._weights = weights
        self.nodes: list[Any] = []
        self.initializers: list[Any] = []
        self._count = 0

    def op(self, kind: str, *inputs: str, **attributes: Any) -> str:
        self._count += 1
        output = f"{kind.lower()}_{self._count}"
        self.nodes.append(self._helper.make_node(kind, list(inputs), [output], **attributes))
        return output

    def constant(self, name: str, value: np.ndarray) -> str:
        self.initializers.append(self._numpy_helper.from_array(value, name))
        return name

    def weight(self, name: str, *, transpose: bool = False) -> str:
        try:
            value = self._weights[name]
        except KeyError as exc:
            raise OnnxUnavailable(f"model.safetensors has no {name!r}") from exc
        value = np.ascontiguousarray(value.T if transpose else value, dtype=np.float32)
        return self.constant(name, value)

    def linear(self, x: str, name: str) -> str:
        return self.op(
            "Add", self.op("MatMul", x, self.weight(f"{name}.weight", transpose=True)), self.weight(f"{name}.bias")
        )

    def layer_norm(self, x: str, name: str, epsilon: float) -> str:
        return self.op(
            "LayerNormalization",
            x,
            self.weight(f"{name}.weight"),
            self.weight(f"{name}.bias"),
            axis=-1,
            epsilon=epsilon,
        )


@dataclass(frozen=True)
class _Shapes:
    """The constants every layer shares (names of initializers), and the attention bias of the padding."""

    split: str
    merge: str
    scale: str
    root_two: str
    half: str
    bias: str
    epsilon: float


def _layer(g: _Graph, x: str, name: str, c: _Shapes) -> str:
    """One post-norm BERT layer: self-attention, add & norm, exact-GELU feed-forward, add & norm."""

    def heads_of(part: str, perm: list[int]) -> str:
        projected = g.linear(x, f"{name}.attention.self.{part}")
        return g.op("Transpose", g.op("Reshape", projected, c.split), perm=perm)

    query, key, value = heads_of("query", [0, 2, 1, 3]), heads_of("key", [0, 2, 3, 1]), heads_of("value", [0, 2, 1, 3])
    scores = g.op("Add", g.op("MatMul", g.op("Mul", query, c.scale), g.op("Mul", key, c.scale)), c.bias)
    context = g.op("MatMul", g.op("Softmax", scores, axis=-1), value)
    context = g.op("Reshape", g.op("Transpose", context, perm=[0, 2, 1, 3]), c.merge)
    attended = g.linear(context, f"{name}.attention.output.dense")
    x = g.layer_norm(g.op("Add", attended, x), f"{name}.attention.output.LayerNorm", c.epsilon)
    inner = g.linear(x, f"{name}.intermediate.dense")
    erf = g.op("Erf", g.op("Div", inner, c.root_two))
    activated = g.op("Mul", g.op("Mul", inner, g.op("Add", erf, "one")), c.half)
    output = g.linear(activated, f"{name}.output.dense")
    return g.layer_norm(g.op("Add", output, x), f"{name}.output.LayerNorm", c.epsilon)


def _encoder_graph(config: dict[str, Any], weights: dict[str, np.ndarray]) -> Any:
    """The graph tokens → mean-pooled, L2-normalised embedding, as ``export._mean_pooled`` computes it."""
    from onnx import TensorProto, helper

    g = _Graph(weights)
    hidden, heads = int(config["hidden_size"]), int(config["num_attention_heads"])
    head_size = hidden // heads
    epsilon = float(config.get("layer_norm_eps", 1e-12))
    i64 = lambda *v: np.array(v, dtype=np.int64)  # noqa: E731
    f32 = lambda v: np.array(v, dtype=np.float32)  # noqa: E731

    tokens = g.op("Gather", g.op("Shape", "input_ids"), g.constant("one_index", i64(1)), axis=0)
    first, step = g.constant("zero", np.array(0, dtype=np.int64)), g.constant("step", np.array(1, dtype=np.int64))
    positions = g.op("Range", first, g.op("Squeeze", tokens), step)
    summed = g.op(
        "Add",
        g.op(
            "Add",
            g.op("Gather", g.weight("embeddings.word_embeddings.weight"), "input_ids"),
            g.op("Gather", g.weight("embeddings.token_type_embeddings.weight"), "token_type_ids"),
        ),
        g.op("Gather", g.weight("embeddings.position_embeddings.weight"), positions),
    )
    x = g.layer_norm(summed, "embeddings.LayerNorm", epsilon)

    mask = g.op("Cast", "attention_mask", to=TensorProto.FLOAT)
    # Padding gets the lowest float as its attention bias, as transformers adds it.
    bias = g.op(
        "Mul",
        g.op("Sub", g.constant("one", f32(1.0)), g.op("Unsqueeze", mask, g.constant("mask_axes", i64(1, 2)))),
        g.constant("lowest", f32(np.finfo(np.float32).min)),
    )
    shapes = _Shapes(
        split=g.constant("split_heads", i64(0, 0, heads, head_size)),
        merge=g.constant("merge_heads", i64(0, 0, hidden)),
        # Queries and keys are each scaled by head_size ** -0.25 before their product, as torch's
        # attention exports it: the int8 copy then quantises the same tensors either way.
        scale=g.constant("scale", f32(head_size**-0.25)),
        root_two=g.constant("root_two", f32(np.sqrt(2.0))),
        half=g.constant("half", f32(0.5)),
        bias=bias,
        epsilon=epsilon,
    )
    for layer in range(int(config["num_hidden_layers"])):
        x = _layer(g, x, f"encoder.layer.{layer}", shapes)

    weights_mask = g.op("Unsqueeze", mask, g.constant("last_axis", i64(-1)))
    total = g.op("ReduceSum", g.op("Mul", x, weights_mask), "one_index", keepdims=0)
    count = g.op("Max", g.op("ReduceSum", weights_mask, "one_index", keepdims=0), g.constant("tiny_count", f32(1e-9)))
    mean = g.op("Div", total, count)
    norm = g.op("Max", g.op("ReduceL2", mean, axes=[1], keepdims=1), g.constant("tiny_norm", f32(1e-12)))
    g.nodes.append(helper.make_node("Div", [mean, norm], ["embedding"]))

    batch_tokens = ["batch", "tokens"]
    inputs = [helper.make_tensor_value_info(n, TensorProto.INT64, batch_tokens) for n in _INPUTS]
    output = helper.make_tensor_value_info("embedding", TensorProto.FLOAT, ["batch", hidden])
    graph = helper.make_graph(g.nodes, "mean_pooled_bert", inputs, [output], g.initializers)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)], producer_name="hindsight")


_INPUTS = ("input_ids", "attention_mask", "token_type_ids")


def _tokenizer_settings(path: str) -> dict[str, Any]:
    """Padding as the model's ``tokenizer_config.json`` / ``special_tokens_map.json`` say; BERT's by default."""
    root = Path(path)
    config: dict[str, Any] = {}
    for name in ("special_tokens_map.json", "tokenizer_config.json"):
        if (root / name).is_file():
            config |= _read_json(root / name)
    pad = config.get("pad_token", "[PAD]")
    pad = pad.get("content", "[PAD]") if isinstance(pad, dict) else str(pad)
    return {
        "pad_token": pad,
        "pad_type_id": 0,
        "padding_side": str(config.get("padding_side", "right")),
        "truncation_side": str(config.get("truncation_side", "right")),
    }


def built_model(path: str, cache_dir: str | os.PathLike[str] | None = None) -> Path:
    """Build the ONNX file of the BERT model at ``path`` into the export cache, with its sidecar.

    Raises ``OnnxUnavailable`` for a model this module cannot build (see ``bert_config``) or
    when onnx / onnxruntime / tokenizers / safetensors are missing. Written as ``export.py``
    writes (temporary names, the sidecar last), under a cache key that leaves torch out.
    """
    config = bert_config(path)
    try:
        import onnx
        import onnxruntime
    except ImportError as exc:
        missing = f"building the graph needs the onnx and onnxruntime packages ({exc}): {INSTALL_HINT}"
        raise OnnxUnavailable(missing) from exc
    root = Path(path)
    settings = _tokenizer_settings(path)
    st_config = _read_json(root / "sentence_bert_config.json") if (root / "sentence_bert_config.json").is_file() else {}
    max_length = int(st_config.get("max_seq_length") or config.get("max_position_embeddings", 512))
    tokenizer_file = (root / "tokenizer.json").resolve()
    tokenizer = load_tokenizer(tokenizer_file, max_length, pad_id=0, **settings)
    pad_id = tokenizer.token_to_id(settings["pad_token"])
    if pad_id is None:
        raise OnnxUnavailable(f"the tokenizer has no padding token {settings['pad_token']!r}")

    stem = export_stem(path, exporter=BUILDER)
    directory, temp = new_cache_file(cache_dir, f"{stem}.onnx")
    target = directory / f"{stem}.onnx"
    try:
        logger.info("building the ONNX graph of %s (once per machine): %s", path, target)
        model = _encoder_graph(config, _weights(path))
        onnx.checker.check_model(model, full_check=True)
        onnx.save_model(model, temp)
        onnxruntime.InferenceSession(temp, providers=["CPUExecutionProvider"])  # it loads, or we fall back
        os.chmod(temp, 0o644)
        os.replace(temp, target)
    except OnnxUnavailable:
        raise
    except Exception as exc:
        raise OnnxUnavailable(f"building the graph failed: {type(exc).__name__}: {exc}") from exc
    finally:
        if os.path.exists(temp):
            os.unlink(temp)
    info = ExportInfo(
        file=target,
        dimension=int(config["hidden_size"]),
        max_length=max_length,
        lower_case=bool(st_config.get("do_lower_case", False)),
        inputs=_INPUTS,
        tokenizer=tokenizer_file,
        pad_id=int(pad_id),
        **settings,
    )
    write_file(sidecar_for(target), json.dumps(info.to_json(), indent=2) + "\n")
    return target


__all__ = ["BUILDER", "bert_config", "built_model"]
