"""Stored vectors from the int8 copy of the model: made once, close to float32, a clean fallback; queries float32."""

from __future__ import annotations

import logging
import shutil
from pathlib import Path

import numpy as np
import pytest

from hindsight_integrations.core.config import load_settings
from hindsight_integrations.core.embedding.factory import build_embedder
from hindsight_integrations.core.embedding.local import LocalEmbedder
from hindsight_integrations.core.embedding.onnx import quantize as onnx_quantize
from hindsight_integrations.core.embedding.onnx.cache import OnnxUnavailable
from hindsight_integrations.core.embedding.onnx.encoder import OnnxEncoder
from hindsight_integrations.core.embedding.protocol import embed_index_matrix
from hindsight_integrations.core.errors import ConfigurationError

FRAMED = [
    "Maya: My dog Biscuit loves the beach. Tom: Mine swims in the lake.\nOn 8 May 2023, Maya: He runs along the water.",
    "Correction: the project uses PostgreSQL, not MySQL.",
    "我上个月搬到上海了，公司也换了。\nOn 1 June 2024, 现在住在浦东。",
    "ok",
]


def _unit(vectors: np.ndarray) -> np.ndarray:
    return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


def test_stored_vectors_come_from_the_int8_copy_and_agree_with_float32(embedder: LocalEmbedder) -> None:
    assert embedder.backend_in_use == "onnx"
    exact = embedder.embed_array(FRAMED)
    approximate = embedder.embed_index_array(FRAMED)
    assert approximate.shape == exact.shape and approximate.dtype == np.float32
    cosines = np.sum(_unit(exact) * _unit(approximate), axis=1)
    # close, and really int8: 0.99 for the sentences; a one-word text ("ok") moves most (0.97 with onnxruntime 1.32)
    assert cosines[:-1].min() > 0.98 and cosines.min() > 0.96 and not np.allclose(exact, approximate, atol=1e-4)
    assert np.allclose(embed_index_matrix(embedder, FRAMED), approximate)
    # a text's vector does not depend on its batch: alone, in a batch, in the background
    alone = np.vstack([embedder.embed_index_array([text]) for text in FRAMED])
    behind = embedder.embed_index_array(FRAMED, background=True)
    assert np.allclose(behind, alone, atol=1e-6) and np.allclose(approximate, alone, atol=1e-5)


def test_the_copy_is_made_once_and_reused(embedder: LocalEmbedder, tmp_path: Path) -> None:
    source = embedder._onnx.file
    fp32 = tmp_path / source.name
    shutil.copy(source, fp32)
    made = onnx_quantize.int8_copy(fp32)
    assert made == onnx_quantize.int8_path(fp32) and made.is_file()
    assert made.stat().st_size < fp32.stat().st_size  # int8 weights
    stamp = made.stat().st_mtime_ns
    assert onnx_quantize.int8_copy(fp32) == made and made.stat().st_mtime_ns == stamp  # not made again
    assert [p.name for p in tmp_path.iterdir() if p.name.endswith(".tmp")] == []


def test_a_copy_that_cannot_be_made_is_a_clear_error_and_leaves_nothing(tmp_path: Path) -> None:
    broken = tmp_path / "model-broken.onnx"
    broken.write_bytes(b"not an onnx graph")
    with pytest.raises(OnnxUnavailable, match=r"int8 quantisation of model-broken\.onnx failed"):
        onnx_quantize.int8_copy(broken)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["model-broken.onnx"]


def test_without_the_copy_context_vectors_use_float32_and_say_so_once(
    embedder: LocalEmbedder, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    source = embedder._onnx
    fp32 = tmp_path / source.file.name
    shutil.copy(source.file, fp32)
    onnx_quantize.int8_path(fp32).mkdir()  # a directory where the copy should go: it cannot be written
    encoder = OnnxEncoder(fp32, source._tokenizer, source._max_length, dimension=source.dimension)
    local = LocalEmbedder(backend="onnx")
    local._resolve()
    local._onnx = encoder
    with caplog.at_level(logging.WARNING, logger="hindsight_integrations.core.embedding.local"):
        first = local.embed_index_array(FRAMED)
        second = local.embed_index_array(FRAMED[:1])
    assert np.allclose(first, encoder.encode_array(FRAMED), atol=1e-6)  # the float32 model itself
    assert np.allclose(second, first[:1], atol=1e-6)
    warnings = [r for r in caplog.records if "stored vectors use the float32 model" in r.getMessage()]
    assert len(warnings) == 1


def test_float32_precision_is_the_model_itself(embedder: LocalEmbedder) -> None:
    exact = LocalEmbedder(backend="onnx", index_precision="float32")
    assert np.allclose(exact.embed_index_array(FRAMED), embedder.embed_array(FRAMED), atol=1e-6)


def test_the_setting_is_validated_with_its_name(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HINDSIGHT_INDEX_PRECISION", "int4")
    with pytest.raises(ConfigurationError, match="index_precision"):
        load_settings()
    monkeypatch.setenv("HINDSIGHT_INDEX_PRECISION", "float32")
    built = build_embedder(load_settings())
    assert isinstance(built, LocalEmbedder) and built._index_precision == "float32"
    with pytest.raises(ConfigurationError, match="'int8' or 'float32'"):
        LocalEmbedder(index_precision="half")  # type: ignore[arg-type]


def test_memories_are_stored_under_int8_vectors_and_queries_run_float32(engine, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    calls: list[str] = []
    for method in ("embed", "embed_array", "embed_index_array"):
        real = getattr(engine.embedder, method)

        def counting(*args, _real=real, _method=method, **kwargs):  # type: ignore[no-untyped-def]
            calls.append(_method)
            return _real(*args, **kwargs)

        monkeypatch.setattr(engine.embedder, method, counting)
    engine.store("The staging database runs Postgres 16.", namespace="u1")
    assert engine.chroma.namespace("u1").wait_for_context(timeout=30)
    assert calls == ["embed_index_array", "embed_index_array"]  # its own vector, then its frame in the background
    calls.clear()
    hits = engine.recall("Which Postgres version does staging run?", namespace="u1")
    assert hits.records and "embed_index_array" not in calls and calls  # the query: the float32 model
