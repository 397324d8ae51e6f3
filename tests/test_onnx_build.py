"""The torch-free ONNX graph (``onnx/build.py``): torch's vectors from the model's files, or a clear refusal."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from hindsight_integrations.core.embedding.local import LocalEmbedder
from hindsight_integrations.core.embedding.onnx import build as onnx_build
from hindsight_integrations.core.embedding.onnx import cache as onnx_cache
from hindsight_integrations.core.embedding.onnx import encoder as onnx_encoder
from hindsight_integrations.core.embedding.onnx import export as onnx_export
from hindsight_integrations.core.embedding.onnx.tokenizer import encode_tokens, load_tokenizer

from .conftest import cache_with_the_installed_model

TEXTS = [
    "",
    "hi",
    "Alice prefers green tea in the morning and coffee after lunch.",
    "我喜欢在早上喝绿茶，下午喝咖啡。",
    "Ça va? naïve café – “quoted” … end.",
    "The quarterly report is due on Friday. " * 60,  # truncated at 256 word pieces
    "emoji 🙂👍🏽 and symbols ©®™ §±",
]


@pytest.fixture
def fresh(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setattr(onnx_encoder, "_ENCODERS", {})
    monkeypatch.setattr(onnx_encoder, "_FAILED", {})
    monkeypatch.setattr(onnx_cache, "_private", None)
    cache = cache_with_the_installed_model(tmp_path / "cache")
    monkeypatch.setenv("HINDSIGHT_CACHE_DIR", str(cache))
    return cache


@pytest.fixture(scope="module")
def torch_vectors() -> np.ndarray:
    return np.array(LocalEmbedder(backend="torch").embed(TEXTS))


def _copy_of_the_bundled_model(embedder: LocalEmbedder, target: Path) -> Path:
    """The bundled model's directory, its weights linked rather than copied, to change one file of."""
    shutil.copytree(embedder._path, target, ignore=shutil.ignore_patterns("model.safetensors"))
    (target / "model.safetensors").symlink_to(Path(embedder._path) / "model.safetensors")
    return target


def test_the_built_graph_gives_torchs_vectors(fresh: Path, torch_vectors: np.ndarray) -> None:
    model = LocalEmbedder(backend="onnx")
    got = model.embed_array(TEXTS)
    assert model.backend_in_use == "onnx"
    assert np.abs(got - torch_vectors).max() <= 1e-5
    for text, expected in zip(TEXTS, torch_vectors, strict=True):  # one text at a time: no padding in the run
        assert np.abs(model.embed_array([text])[0] - expected).max() <= 1e-5
    files = sorted(p.name for p in (fresh / "onnx").iterdir())
    stem = onnx_cache.export_stem(model._path, onnx_build.BUILDER)
    assert files == [f"{stem}.json", f"{stem}.onnx"]
    stored = model.embed_index_array(TEXTS)  # the int8 copy is derived from the built graph as from an export
    assert (stored * got).sum(axis=1).min() > 0.95


def test_the_built_graph_and_the_torch_export_are_the_same_computation(fresh: Path, embedder: LocalEmbedder) -> None:
    built = onnx_encoder.OnnxEncoder.from_export(onnx_cache.ExportInfo.read(onnx_build.built_model(embedder._path)))  # type: ignore[arg-type]
    exported = onnx_encoder.OnnxEncoder.from_model(embedder._load(), embedder._path)
    assert built.file != exported.file
    assert np.abs(built.encode_array(TEXTS, 4) - exported.encode_array(TEXTS, 4)).max() <= 1e-6
    # Both sidecars describe the same tokenisation, and it is the model's own.
    a, b = onnx_cache.ExportInfo.read(built.file), onnx_cache.ExportInfo.read(exported.file)
    assert a is not None and b is not None
    assert (a.dimension, a.max_length, a.lower_case, a.inputs, a.pad_id, a.pad_token) == (
        b.dimension,
        b.max_length,
        b.lower_case,
        b.inputs,
        b.pad_id,
        b.pad_token,
    )
    fast = load_tokenizer(a.tokenizer, a.max_length, pad_id=a.pad_id, pad_token=a.pad_token)
    expected = embedder._load().tokenizer(TEXTS, padding=True, truncation=True, max_length=256, return_tensors="np")
    assert np.array_equal(encode_tokens(fast, TEXTS)["input_ids"], expected["input_ids"])


def test_a_built_graph_is_found_before_a_torch_export_and_kept_across_torch_versions(
    fresh: Path, embedder: LocalEmbedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    exported = onnx_export.exported_model(embedder._load(), embedder._path)
    built = onnx_build.built_model(embedder._path)
    found = onnx_cache.cached_export(embedder._path)
    assert found is not None and found.file == built != exported
    monkeypatch.setattr(onnx_cache, "_exporter_versions", lambda: ("9.9.9", "9.9.9"))  # torch upgraded
    assert onnx_cache.export_stem(embedder._path, onnx_build.BUILDER) == built.stem
    assert onnx_cache.export_stem(embedder._path) != exported.stem


@pytest.mark.parametrize(
    ("change", "reason"),
    [
        (lambda d: (d / "1_Pooling" / "config.json").write_text(json.dumps({"pooling_mode_cls_token": True})), "mean"),
        (lambda d: _edit_json(d / "config.json", hidden_act="relu"), "hidden_act"),
        (lambda d: _edit_json(d / "config.json", model_type="xlm-roberta"), "model_type"),
        (lambda d: (d / "model.safetensors").unlink(), "model.safetensors"),
        (
            lambda d: (d / "modules.json").write_text('[{"type": "sentence_transformers.models.Transformer"}]'),
            "modules",
        ),
        (
            lambda d: (d / "config_sentence_transformers.json").write_text(
                json.dumps({"prompts": {"query": "query: "}, "default_prompt_name": "query"})
            ),
            "prompt",
        ),
    ],
    ids=["cls-pooling", "relu", "another-architecture", "no-safetensors", "no-pooling", "default-prompt"],
)
def test_a_model_the_builder_does_not_cover_is_refused_with_the_reason(
    fresh: Path, embedder: LocalEmbedder, tmp_path: Path, change: Any, reason: str
) -> None:
    model_dir = _copy_of_the_bundled_model(embedder, tmp_path / "model")
    change(model_dir)
    with pytest.raises(onnx_cache.OnnxUnavailable, match=reason):
        onnx_build.built_model(str(model_dir))
    assert not (fresh / "onnx").exists() or not any((fresh / "onnx").glob("*.onnx"))


def _edit_json(file: Path, **changes: Any) -> None:
    file.write_text(json.dumps({**json.loads(file.read_text()), **changes}))


BLOCKED = """
import json, sys
for name in ("torch", "sentence_transformers", "transformers"):
    sys.modules[name] = None  # as if not installed: importing any of them raises ImportError
from hindsight_integrations.core.embedding.local import LocalEmbedder
from hindsight_integrations.core.errors import ConfigurationError
out = {}
model = LocalEmbedder(sys.argv[1]) if len(sys.argv) > 1 else LocalEmbedder()
try:
    out["vectors"] = model.embed(["Alice prefers green tea in the morning.", "我喜欢绿茶"])
    out["stored"] = model.embed_index_array(["Alice prefers green tea in the morning."]).tolist()
    out["backend"] = model.backend_in_use
except ConfigurationError as exc:
    out["error"] = str(exc)
print(json.dumps(out))
"""


def _without_torch(cache: Path, *args: str) -> dict[str, Any]:
    env = {"HINDSIGHT_CACHE_DIR": str(cache), "HF_HUB_OFFLINE": "1", "PATH": "/usr/bin:/bin"}
    done = subprocess.run([sys.executable, "-c", BLOCKED, *args], capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0, done.stderr
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


def test_an_install_without_torch_embeds_with_the_default_model(tmp_path: Path, torch_vectors: np.ndarray) -> None:
    out = _without_torch(tmp_path / "cache")
    assert out["backend"] == "onnx", out
    expected = np.array(LocalEmbedder(backend="torch").embed(["Alice prefers green tea in the morning.", "我喜欢绿茶"]))
    assert np.abs(np.array(out["vectors"]) - expected).max() <= 1e-5
    assert float(np.dot(out["stored"][0], expected[0])) > 0.95


def test_an_install_without_torch_names_the_extra_for_a_model_that_needs_it(
    embedder: LocalEmbedder, tmp_path: Path
) -> None:
    model_dir = _copy_of_the_bundled_model(embedder, tmp_path / "cls-model")
    (model_dir / "1_Pooling" / "config.json").write_text(json.dumps({"pooling_mode_cls_token": True}))
    out = _without_torch(tmp_path / "cache", str(model_dir))
    assert "hindsight-integrations[torch]" in out["error"] and "not mean tokens" in out["error"], out
