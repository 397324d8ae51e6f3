"""Produce the ONNX export of a local sentence-transformers model: the part that needs torch.

The export bakes mean pooling and L2 normalisation into the graph, so only Transformer +
mean Pooling [+ Normalize] models are accepted; anything else raises ``OnnxUnavailable``
and the caller keeps torch.

The export is made once per machine (1-2 s) and kept in the cache with its sidecar
(``cache.py``: where it lives, how it is found, ``ExportInfo``); only that first use loads
the model and imports torch, lazily, to export it. The ``tokenizers`` tokenizer the sidecar
names is checked here to give exactly the model's own token ids. Running an export is
``encoder.py``'s job.
"""

from __future__ import annotations

import json
import logging
import os
import warnings
from pathlib import Path
from typing import Any

from .cache import (
    INSTALL_HINT,
    OPSET,
    ExportInfo,
    OnnxUnavailable,
    cached_export,
    export_stem,
    new_cache_file,
    sidecar_for,
    write_file,
)
from .tokenizer import TOKEN_INPUTS, encode_tokens, load_tokenizer

logger = logging.getLogger(__name__)

# Texts the export checks the ``tokenizers`` tokenizer against the model's own on: the cases
# where tokenizers differ (accents, CJK, control and zero-width characters, truncation).
_TOKEN_PROBES = (
    "",
    " ",
    "hi",
    "Hello, World! Ça va? naïve café – “quoted” … end.",
    "我喜欢在早上喝绿茶，下午喝咖啡。",
    "日本語のテキストと English mixed 123",
    "tabs\tand\nnewlines\r\nand  double  spaces",
    "zero\u200bwidth\u00adsoft\x07bell\x00nul",
    "emoji 🙂👍🏽 and symbols ©®™ §±",
    "URL https://example.com/a?b=c&d=e#f and e-mail someone@example.org",
    "UPPER lower MiXeD 3.14159 1,000,000 $42 50% #tag @user",
    "[CLS] [SEP] [PAD] [MASK] [UNK] literal special tokens",
    "The quarterly report is due on Friday, and the backlog keeps growing. " * 40,
    "词" * 600,
)


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


def exported_model(model: Any, path: str, cache_dir: str | os.PathLike[str] | None = None) -> Path:
    """The ONNX file for ``model`` (loaded from ``path``), exported now if not cached with its sidecar yet.

    Files are written to temporary names in the cache directory and renamed, the sidecar
    last, so a process that finds a sidecar never opens another's half-written export. If
    the cache directory cannot be written, the export goes to a private temporary
    directory for this process.
    """
    stem = export_stem(path)
    if (info := cached_export(path, cache_dir, exporters=("torch",))) is not None:
        return info.file
    directory, temp = new_cache_file(cache_dir, f"{stem}.onnx")
    target = directory / f"{stem}.onnx"
    try:
        settings = _tokenizer_settings(model.tokenizer)
        tokenizer = _tokenizer_file(model, path, directory / f"{stem}.tokenizer.json", settings)
        names = _input_names(model, _probe(model))
        logger.info("exporting %s to ONNX (once per machine): %s", path, target)
        _export(model, temp)
        os.chmod(temp, 0o644)  # mkstemp makes it private; a shared cache directory should stay readable
        os.replace(temp, target)
    finally:
        if os.path.exists(temp):
            os.unlink(temp)
    info = ExportInfo(
        file=target,
        dimension=_dimension(model),
        max_length=int(model.max_seq_length),
        lower_case=bool(getattr(model[0], "do_lower_case", False)),
        inputs=tuple(names),
        tokenizer=tokenizer,
        **settings,
    )
    write_file(sidecar_for(target), json.dumps(info.to_json(), indent=2) + "\n")
    return target


def _dimension(model: Any) -> int:
    getter = getattr(model, "get_embedding_dimension", None) or model.get_sentence_embedding_dimension
    dimension = getter()
    if not dimension:
        raise OnnxUnavailable("the model does not say its embedding dimension")
    return int(dimension)


def _tokenizer_settings(tokenizer: Any) -> dict[str, Any]:
    """The padding and truncation the model's tokenizer applies, as ``ExportInfo`` fields."""
    if tokenizer.pad_token is None or tokenizer.pad_token_id is None:
        raise OnnxUnavailable("the model's tokenizer has no padding token")
    return {
        "pad_id": int(tokenizer.pad_token_id),
        "pad_token": str(tokenizer.pad_token),
        "pad_type_id": int(getattr(tokenizer, "pad_token_type_id", 0) or 0),
        "padding_side": str(getattr(tokenizer, "padding_side", "right")),
        "truncation_side": str(getattr(tokenizer, "truncation_side", "right")),
    }


def _tokenizer_file(model: Any, path: str, copy: Path, settings: dict[str, Any]) -> Path:
    """A ``tokenizer.json`` that gives exactly the model tokenizer's ids: the model's own, else a saved copy.

    The model's file is preferred (nothing to write), but its stored padding and truncation
    are not what sentence-transformers uses, and a tokenizer may be configured beyond its
    file, so each candidate is checked on ``_TOKEN_PROBES`` before it is trusted.
    """
    own = Path(path) / "tokenizer.json"
    if own.is_file() and _same_tokens(model, own, settings):
        return own.resolve()
    backend = getattr(model.tokenizer, "backend_tokenizer", None)
    if backend is not None:
        write_file(copy, backend.to_str())
        if _same_tokens(model, copy, settings):
            return copy
        copy.unlink(missing_ok=True)
    raise OnnxUnavailable("the tokenizers library does not reproduce the model's tokenizer")


def _same_tokens(model: Any, file: Path, settings: dict[str, Any]) -> bool:
    import numpy as np

    max_length = int(model.max_seq_length)
    try:
        fast = load_tokenizer(file, max_length, **settings)
    except OnnxUnavailable as exc:
        logger.info("tokenizer %s cannot be loaded by the tokenizers library: %s", file, exc)
        return False
    for texts in (list(_TOKEN_PROBES), [_TOKEN_PROBES[3]], [_TOKEN_PROBES[-2]]):
        expected = model.tokenizer(texts, padding=True, truncation=True, max_length=max_length, return_tensors="np")
        got = encode_tokens(fast, texts)
        for name in TOKEN_INPUTS:
            if name in expected and not np.array_equal(np.asarray(expected[name], dtype=np.int64), got[name]):
                return False
    return True


def _probe(model: Any) -> Any:
    return model.tokenizer(
        ["a short probe", "a somewhat longer probe sentence for tracing the export"],
        padding=True,
        truncation=True,
        max_length=model.max_seq_length,
        return_tensors="pt",
    )


def _input_names(model: Any, probe: Any) -> list[str]:
    names = [n for n in TOKEN_INPUTS if n in probe and n in _forward_parameters(model[0].auto_model)]
    if names[:2] != ["input_ids", "attention_mask"]:
        raise OnnxUnavailable(f"the model takes {names}, not input_ids + attention_mask")
    return names


def _export(model: Any, file: str) -> None:
    """Trace tokens -> mean-pooled, L2-normalised embedding into ``file`` and check it against torch."""
    try:
        import onnx  # noqa: F401  (torch.onnx.export needs it)
        import onnxruntime
    except ImportError as exc:
        raise OnnxUnavailable(f"exporting needs the onnx and onnxruntime packages ({exc}): {INSTALL_HINT}") from exc
    import torch

    probe = _probe(model)
    names = _input_names(model, probe)
    wrapper = _mean_pooled(model[0].auto_model)
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


__all__ = ["check_supported", "exported_model"]
