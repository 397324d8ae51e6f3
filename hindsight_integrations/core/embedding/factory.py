"""Which embedder an engine gets (``build_embedder``), and whether getting it will take a while (``slow_model_start``).

An explicit embedder or Chroma embedding function wins; otherwise ``embedding_provider``
chooses between a local model (``local.py`` for sentence-transformers models, the default,
``multilingual.py`` for multilingual-e5-small; both offline) and an OpenAI-compatible
endpoint (``openai.py``).
"""

from __future__ import annotations

from typing import Any

from ..config import AUTO_MODEL, DEFAULT_LOCAL_MODEL, Settings
from ..errors import ConfigurationError
from .bundled import MODEL_NAME, bundled_minilm_written
from .chroma_function import ChromaFunctionEmbedder
from .local import BUNDLED_MINILM, LocalEmbedder, is_loaded, resolve_local_model
from .multilingual import MODEL_ALIASES, MultilingualEmbedder
from .onnx.cache import cached_export
from .openai import DEFAULT_OPENAI_MODEL, OpenAIEmbedder
from .protocol import Embedder


def build_embedder(settings: Settings, embedding_function: Any = None) -> Embedder:
    """Pick the embedder: an explicit Chroma function wins, then the configured provider."""
    if embedding_function is not None:
        if isinstance(embedding_function, Embedder):
            return embedding_function
        return ChromaFunctionEmbedder(embedding_function)
    if settings.embedding_provider == "openai":
        return OpenAIEmbedder(
            settings.embedding_model
            if settings.embedding_model not in (DEFAULT_LOCAL_MODEL, AUTO_MODEL)
            else DEFAULT_OPENAI_MODEL,
            api_key=settings.openai_api_key,
            base_url=settings.openai_base_url,
            timeout=settings.llm_timeout,
            max_retries=settings.llm_max_retries,
        )
    if settings.embedding_model in MODEL_ALIASES:
        return MultilingualEmbedder(batch_size=min(settings.embedding_batch_size, 64))
    return LocalEmbedder(
        local_model(settings),
        batch_size=settings.embedding_batch_size,
        device=settings.embedding_device,
        backend=settings.embedding_backend,
        cache_dir=settings.cache_dir,
        index_precision=settings.index_precision,
    )


def local_model(settings: Settings) -> str:
    """The sentence-transformers model ``settings`` name: under ``auto``, MiniLM (Latin-script namespaces')."""
    return DEFAULT_LOCAL_MODEL if settings.embedding_model == AUTO_MODEL else settings.embedding_model


def routes_by_script(settings: Settings) -> bool:
    """Whether an engine of ``settings`` picks each new namespace's model by its text (``routing.py``)."""
    return settings.embedding_provider == "local" and settings.embedding_model == AUTO_MODEL


def runs_locally(model: str) -> bool:
    """Whether ``model`` names a model this package runs on this machine (so re-reading a store needs no API)."""
    return model in MODEL_ALIASES or model in BUNDLED_MINILM


def slow_model_start(settings: Settings) -> str | None:
    """What building an engine with ``settings`` will spend many seconds on first, or None.

    The first use of a local model on a machine builds its ONNX graph (a few seconds; a model
    ``onnx/build.py`` does not cover is loaded with torch and exported, 10-30 s), and the torch
    backend loads it on every start (~6 s); with a cached export an
    engine starts in well under a second, and so does one whose model this process loaded
    already (exporting it then takes a second or two). The CLI shows this text beside a
    spinner meanwhile, so a first command does not look hung. Reads only settings, the cache
    and this process's loaded models: loads nothing.
    """
    if settings.embedding_provider != "local" or settings.embedding_model in MODEL_ALIASES:
        return None  # the multilingual engine maps its weights in a few milliseconds
    backend, device = settings.embedding_backend, settings.embedding_device
    builds = backend == "onnx" or (backend == "auto" and device == "cpu")
    if local_model(settings) in BUNDLED_MINILM and bundled_minilm_written(settings.cache_dir) is None:
        name = MODEL_NAME  # its folder is written first (``bundled.py``): nothing is cached for it yet
    else:
        try:
            path, name = resolve_local_model(local_model(settings), settings.cache_dir)
        except ConfigurationError:
            return None  # building the engine will say what is missing
        if is_loaded(path, device) or (builds and cached_export(path, settings.cache_dir) is not None):
            return None
    if builds:
        return f"preparing the embedding model {name}: building its ONNX graph (once per machine)"
    return f"loading the embedding model {name}"


__all__ = ["build_embedder", "local_model", "routes_by_script", "runs_locally", "slow_model_start"]
