"""The ONNX backend of the local embedder: same vectors as torch, cached export, clean fallbacks."""

from __future__ import annotations

import json
import logging
import sys
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from hindsight_integrations.core.config import load_settings
from hindsight_integrations.core.embedding import local as local_embedder
from hindsight_integrations.core.embedding import protocol
from hindsight_integrations.core.embedding.factory import build_embedder
from hindsight_integrations.core.embedding.local import LocalEmbedder
from hindsight_integrations.core.embedding.onnx import cache as onnx_cache
from hindsight_integrations.core.embedding.onnx import encoder as onnx_encoder
from hindsight_integrations.core.embedding.onnx import export as onnx_export
from hindsight_integrations.core.embedding.onnx import tokenizer as onnx_tokenizer
from hindsight_integrations.core.errors import ConfigurationError

from .conftest import cache_with_the_installed_model

TEXTS = [
    "hi",
    "Where did I park the car on Tuesday evening after the concert downtown?",
    "",
    "The quarterly report is due on Friday. " * 60,  # past max_seq_length: truncated
    "x",
    "Alice prefers green tea in the morning and coffee after lunch.",
    "The build cache lives in /var/cache/build and is wiped every night at 02:00.",
]


@pytest.fixture(scope="module")
def torch_embedder() -> LocalEmbedder:
    return LocalEmbedder(backend="torch")


@pytest.fixture(scope="module")
def onnx_embedder(tmp_path_factory: pytest.TempPathFactory) -> LocalEmbedder:
    """An ONNX embedder exported once for this module into its own cache directory."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(onnx_encoder, "_ENCODERS", {})
        mp.setattr(onnx_encoder, "_FAILED", {})
        model = LocalEmbedder(backend="onnx", batch_size=3, cache_dir=tmp_path_factory.mktemp("onnx-cache"))
        assert model.backend_in_use == "onnx"
    return model


@pytest.fixture
def fresh(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """No encoder loaded in this process yet and an empty cache directory: the next use exports."""
    monkeypatch.setattr(onnx_encoder, "_ENCODERS", {})
    monkeypatch.setattr(onnx_encoder, "_FAILED", {})
    monkeypatch.setattr(onnx_cache, "_private", None)
    cache = cache_with_the_installed_model(tmp_path / "cache")
    monkeypatch.setenv("HINDSIGHT_CACHE_DIR", str(cache))
    return cache


@pytest.fixture
def torch_export_only(monkeypatch: pytest.MonkeyPatch) -> None:
    """The bundled model standing for one ``build.py`` does not cover, so the torch export serves it."""

    def not_buildable(path: str, cache_dir: Any = None) -> Path:
        raise onnx_cache.OnnxUnavailable("not a model build.py covers (in this test)")

    monkeypatch.setattr(onnx_encoder, "built_model", not_buildable)


def _count_exports(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Record every export (the file it writes) while still exporting for real."""
    exports: list[str] = []
    real_export = onnx_export._export

    def counted(model: Any, file: str) -> None:
        exports.append(file)
        real_export(model, file)

    monkeypatch.setattr(onnx_export, "_export", counted)
    return exports


def _max_diff(a: list[list[float]], b: list[list[float]]) -> float:
    return float(np.abs(np.array(a) - np.array(b)).max())


def test_single_texts_match_torch(onnx_embedder: LocalEmbedder, torch_embedder: LocalEmbedder) -> None:
    for text in TEXTS:
        assert _max_diff(onnx_embedder.embed([text]), torch_embedder.embed([text])) < 1e-5


def test_batch_matches_torch_in_order(onnx_embedder: LocalEmbedder, torch_embedder: LocalEmbedder) -> None:
    # batch_size=3 with very different lengths: several sorted batches, results back in input order
    got = onnx_embedder.embed(TEXTS)
    assert len(got) == len(TEXTS)
    assert _max_diff(got, torch_embedder.embed(TEXTS)) < 1e-5
    assert _max_diff(got, [onnx_embedder.embed([t])[0] for t in TEXTS]) < 1e-5
    assert onnx_embedder.embed([]) == []


def test_array_output_is_the_list_output(onnx_embedder: LocalEmbedder, torch_embedder: LocalEmbedder) -> None:
    # Batch writes take the model's float32 array (embed_matrix); queries and users take lists.
    for model in (onnx_embedder, torch_embedder):
        array = model.embed_array(TEXTS)
        assert array.dtype == np.float32 and array.shape == (len(TEXTS), 384)
        assert _max_diff(array.tolist(), model.embed(TEXTS)) == 0
        assert protocol.embed_matrix(model, TEXTS[:1]).shape == (1, 384)


def test_embed_matrix_takes_list_only_embedders() -> None:
    class ListEmbedder:
        name = "lists"
        dimension = 3

        def embed(self, texts: Sequence[str]) -> list[list[float]]:
            return [[float(len(t)), 0.5, 1.0] for t in texts]

    got = protocol.embed_matrix(ListEmbedder(), ["ab", "abcd"])
    assert got.dtype == np.float32 and got.tolist() == [[2.0, 0.5, 1.0], [4.0, 0.5, 1.0]]
    assert protocol.embed_matrix(ListEmbedder(), []).shape[0] == 0


def test_concurrent_queries_and_batches(onnx_embedder: LocalEmbedder, torch_embedder: LocalEmbedder) -> None:
    """Both backends share one fast tokenizer; concurrent calls must not reconfigure it mid-call."""
    texts = [t for t in TEXTS if len(t) < 200]
    expected = np.array(torch_embedder.embed(texts))
    errors: list[BaseException] = []

    def work(model: LocalEmbedder, batch: bool) -> None:
        try:
            for i in range(4):
                if batch:
                    assert np.abs(np.array(model.embed(texts)) - expected).max() < 1e-5
                else:
                    k = i % len(texts)
                    assert np.abs(np.array(model.embed([texts[k]])[0]) - expected[k]).max() < 1e-5
        except BaseException as exc:
            errors.append(exc)

    threads = [
        threading.Thread(target=work, args=(m, b)) for m in (onnx_embedder, torch_embedder) for b in (False, True)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors


def test_export_is_cached_on_disk(fresh: Path, embedder: LocalEmbedder, monkeypatch: pytest.MonkeyPatch) -> None:
    exports = _count_exports(monkeypatch)
    model, path = embedder._load(), embedder._path

    first = onnx_encoder.OnnxEncoder.from_model(model, path)
    mtime = first.file.stat().st_mtime_ns
    second = onnx_encoder.OnnxEncoder.from_model(model, path)  # a new encoder, as in another process

    assert len(exports) == 1
    assert second.file == first.file and first.file.parent == fresh / "onnx"
    assert second.file.stat().st_mtime_ns == mtime
    # the export and its sidecar, no temporary left behind, and no tokenizer copy (the model's own file matches)
    assert sorted(p.name for p in (fresh / "onnx").iterdir()) == sorted([first.file.name, f"{first.file.stem}.json"])
    info = onnx_cache.ExportInfo.read(first.file)
    assert info is not None and info.dimension == 384 and info.max_length == 256 and not info.lower_case
    assert info.inputs == ("input_ids", "attention_mask", "token_type_ids")
    assert info.tokenizer == (Path(path) / "tokenizer.json").resolve()
    assert _max_diff(first.encode(TEXTS[:2]), second.encode(TEXTS[:2])) == 0


def test_cache_key_follows_the_model_files(tmp_path: Path) -> None:
    (tmp_path / "model.safetensors").write_bytes(b"weights")
    before = onnx_cache.model_fingerprint(str(tmp_path))
    assert onnx_cache.model_fingerprint(str(tmp_path)) == before
    (tmp_path / "model.safetensors").write_bytes(b"other weights")
    assert onnx_cache.model_fingerprint(str(tmp_path)) != before


def test_unwritable_cache_dir_exports_to_a_private_dir(
    fresh: Path, tmp_path: Path, torch_embedder: LocalEmbedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("")
    monkeypatch.setenv("HINDSIGHT_CACHE_DIR", str(blocker / "cache"))  # cannot be created, even by root
    model = LocalEmbedder(backend="onnx")
    assert _max_diff(model.embed(TEXTS[:3]), torch_embedder.embed(TEXTS[:3])) < 1e-5
    assert onnx_cache._private is not None
    assert onnx_encoder._ENCODERS[model._path].file.parent == onnx_cache._private


def test_onnx_without_onnx_package_is_a_configuration_error(fresh: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "onnx", None)
    with pytest.raises(ConfigurationError, match=r"onnx.*pip install 'hindsight-integrations\[local\]'"):
        LocalEmbedder(backend="onnx").embed(["query"])


def test_auto_without_onnx_package_falls_back_to_torch(
    fresh: Path, torch_embedder: LocalEmbedder, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setitem(sys.modules, "onnx", None)
    model = LocalEmbedder(backend="auto")
    with caplog.at_level(logging.WARNING, logger=local_embedder.__name__):
        assert model.embed(["query"]) == torch_embedder.embed(["query"])
        model.embed(["another query"])
    assert model.backend_in_use == "torch"
    assert model.name == "all-MiniLM-L6-v2"
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1 and "using torch" in warnings[0].getMessage()


@pytest.fixture
def cls_pooled(embedder: LocalEmbedder, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """A model the ONNX export does not cover (CLS pooling), registered as already loaded."""
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.sentence_transformer.modules import Pooling

    base = embedder._load()
    model = SentenceTransformer(modules=[base[0], Pooling(embedder.dimension, pooling_mode="cls")], device="cpu")
    path = str(tmp_path / "cls-model")
    monkeypatch.setitem(local_embedder._LOADED, (path, "cpu"), model)
    return path


def test_unsupported_model(fresh: Path, cls_pooled: str, caplog: pytest.LogCaptureFixture) -> None:
    with pytest.raises(ConfigurationError, match="not mean tokens"):
        LocalEmbedder(cls_pooled, backend="onnx").embed(["query"])
    model = LocalEmbedder(cls_pooled, backend="auto")
    with caplog.at_level(logging.WARNING, logger=local_embedder.__name__):
        assert len(model.embed(["query"])[0]) == model.dimension
    assert model.backend_in_use == "torch"
    assert any("not mean tokens" in r.getMessage() for r in caplog.records)


def test_backend_setting(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HINDSIGHT_EMBEDDING_BACKEND", "torch")
    model: Any = build_embedder(load_settings())
    assert model.backend_in_use == "torch"
    monkeypatch.setenv("HINDSIGHT_EMBEDDING_BACKEND", "tensorrt")
    with pytest.raises(ConfigurationError, match="HINDSIGHT_EMBEDDING_BACKEND"):
        load_settings()


def _varied_texts(count: int = 300) -> list[str]:
    """Seeded texts of every kind a tokenizer may treat differently: CJK, accents, emoji, control characters,
    punctuation runs, whitespace-only, and some far past max_seq_length (256 tokens)."""
    import random

    rng = random.Random(1234)
    pools = [
        ["the", "release", "branch", "is", "cut", "every", "Monday", "at", "9am", "and", "QA", "signs", "off"],
        list("我们下周三在上海开会讨论预算和招聘计划中文分词测试"),
        ["café", "naïve", "Ångström", "façade", "über", "São", "Œuvre", "ß", "İstanbul", "ǅ"],
        ["🙂", "👍🏽", "🇫🇷", "©", "™", "…", "–", "—", "“", "”", "«", "»", "§", "±", "€"],
        ["!!!", "?!", "...", "(", ")", "[", "]", "{", "}", "#", "@", "$", "%", "^", "&", "*", "--", "'", '"'],
        ["\t", "\n", "\r\n", "  ", "\u200b", "\u00a0", "\x00", "\x07", "\u2028"],
        ["1", "42", "3.14159", "1,000,000", "2024-05-08", "09:30", "v1.2.3", "0x1F", "ORD-7731-KX"],
        ["日本語", "テキスト", "한국어", "Русский", "Ελληνικά", "עברית", "العربية", "हिन्दी", "ไทย"],
        ["[CLS]", "[SEP]", "[PAD]", "[MASK]", "[UNK]", "##ing", "<s>", "</s>"],
        ["https://example.com/a?b=c&d=e#f", "someone@example.org", "C:\\Users\\me", "/var/cache/build"],
    ]
    texts = ["", " ", "\n", "a", "?", "中", "🙂"]
    while len(texts) < count:
        n = rng.choice([1, 2, 3, 5, 8, 13, 30, 60, 120, 400])
        words = [rng.choice(rng.choice(pools)) for _ in range(n)]
        sep = rng.choice([" ", "", " ", ", "])
        text = sep.join(words)
        texts.append(text.upper() if rng.random() < 0.1 else text)
    return texts


VARIED = _varied_texts()


def test_tokenizers_library_gives_the_model_tokenizers_ids(embedder: LocalEmbedder) -> None:
    """The run-time tokenizer (tokenizers, from tokenizer.json) must give sentence-transformers' exact ids."""
    model = embedder._load()
    info = onnx_cache.cached_export(embedder._path)
    assert info is not None  # the session embedder warmed the default cache
    fast = onnx_tokenizer.load_tokenizer(
        info.tokenizer,
        info.max_length,
        pad_id=info.pad_id,
        pad_token=info.pad_token,
        pad_type_id=info.pad_type_id,
        padding_side=info.padding_side,
        truncation_side=info.truncation_side,
    )
    assert any(len(model.tokenizer(t)["input_ids"]) > 256 for t in VARIED)  # truncation is exercised
    batches = [VARIED[i : i + 37] for i in range(0, len(VARIED), 37)] + [[t] for t in VARIED[:60]]
    for batch in batches:
        expected = model.tokenizer(batch, padding=True, truncation=True, max_length=256, return_tensors="np")
        got = onnx_tokenizer.encode_tokens(fast, batch)
        for name in ("input_ids", "attention_mask", "token_type_ids"):
            assert np.array_equal(expected[name], got[name]), (name, batch)


def test_varied_texts_match_torch(onnx_embedder: LocalEmbedder, torch_embedder: LocalEmbedder) -> None:
    assert not onnx_embedder._onnx._hf_tokenizer  # the encoder runs on the tokenizers library, not transformers
    assert _max_diff(onnx_embedder.embed(VARIED), torch_embedder.embed(VARIED)) <= 1e-5
    for text in VARIED[:40]:
        assert _max_diff(onnx_embedder.embed([text]), torch_embedder.embed([text])) <= 1e-5


def test_cached_export_builds_without_the_model(
    fresh: Path, embedder: LocalEmbedder, torch_embedder: LocalEmbedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With export + sidecar on disk, dimension and vectors come without loading sentence-transformers."""
    onnx_export.exported_model(embedder._load(), embedder._path)
    expected = torch_embedder.embed(TEXTS)

    def no_model(self: LocalEmbedder) -> Any:
        raise AssertionError("the model was loaded")

    monkeypatch.setattr(LocalEmbedder, "_load", no_model)
    model = LocalEmbedder(backend="onnx")
    assert model.dimension == 384
    assert model._resolved is None  # the dimension came from the sidecar: no session opened yet
    assert _max_diff(model.embed(TEXTS), expected) < 1e-5
    assert model.backend_in_use == "onnx"
    assert onnx_encoder._ENCODERS[model._path].file.parent == fresh / "onnx"


@pytest.mark.usefixtures("torch_export_only")
def test_missing_or_broken_sidecar_exports_again(
    fresh: Path, embedder: LocalEmbedder, torch_embedder: LocalEmbedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    exports = _count_exports(monkeypatch)
    path = embedder._path
    file = onnx_export.exported_model(embedder._load(), path)
    sidecar = onnx_cache.sidecar_for(file)
    assert onnx_cache.cached_export(path) is not None

    sidecar.unlink()  # as a cache file written before sidecars existed
    assert onnx_cache.cached_export(path) is None
    assert onnx_encoder.cached_encoder(path) is None
    model = LocalEmbedder(backend="onnx")
    assert _max_diff(model.embed(TEXTS[:3]), torch_embedder.embed(TEXTS[:3])) < 1e-5
    assert len(exports) == 2 and sidecar.is_file()
    assert onnx_cache.cached_export(path) is not None

    valid = json.loads(sidecar.read_text(encoding="utf-8"))
    for broken in (
        "{not json",
        json.dumps({**valid, "tokenizer": str(fresh / "gone.json")}),  # its tokenizer file has gone
        json.dumps({**valid, "format": 1}),
        json.dumps({**valid, "onnx": "another.onnx"}),
        json.dumps({k: v for k, v in valid.items() if k != "dimension"}),
    ):
        sidecar.write_text(broken, encoding="utf-8")
        assert onnx_cache.cached_export(path) is None, broken
    onnx_export.exported_model(embedder._load(), path)
    assert len(exports) == 3 and onnx_cache.cached_export(path) is not None


def test_a_tokenizer_file_that_differs_is_replaced_by_a_checked_copy(
    fresh: Path, embedder: LocalEmbedder, torch_embedder: LocalEmbedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    """If the model's tokenizer.json does not reproduce its tokenizer, the tokenizer's own state is saved and used."""
    real_same = onnx_export._same_tokens
    own = (Path(embedder._path) / "tokenizer.json").resolve()
    monkeypatch.setattr(
        onnx_export,
        "_same_tokens",
        lambda model, file, settings: file.resolve() != own and real_same(model, file, settings),
    )
    file = onnx_export.exported_model(embedder._load(), embedder._path)
    info = onnx_cache.ExportInfo.read(file)
    assert info is not None and info.tokenizer == fresh / "onnx" / f"{file.stem}.tokenizer.json"
    encoder = onnx_encoder.OnnxEncoder.from_export(info)
    assert _max_diff(encoder.encode(TEXTS), torch_embedder.embed(TEXTS)) < 1e-5


def test_fingerprint_imports_neither_torch_nor_transformers(embedder: LocalEmbedder) -> None:
    import subprocess

    code = (
        "import sys; from hindsight_integrations.core.embedding.onnx import cache, encoder, export; "
        f"cache.model_fingerprint({embedder._path!r}); "
        "print('torch' in sys.modules, 'transformers' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    assert out.stdout.split() == ["False", "False"]
