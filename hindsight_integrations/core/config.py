"""All configuration in one place.

Values come from explicit arguments first, then ``HINDSIGHT_*`` environment variables
(``OPENAI_API_KEY`` / ``OPENAI_BASE_URL`` are honoured for the LLM and OpenAI embeddings),
then defaults. ``Settings`` validates everything when it is built, so a bad value fails at
start-up with a message saying which variable to change, not deep inside a request.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from difflib import get_close_matches
from pathlib import Path
from typing import Any, Literal

from pydantic import AliasChoices, Field, ValidationError, field_validator, model_validator
from pydantic_settings import SettingsConfigDict

from .errors import ConfigurationError, InvalidInputError
from .language.tiktoken_files import check_tokenizer
from .server_settings import ServerSettings

# Chroma's collection-name rules, which a namespace (prefixed) must meet: no ".." either.
# Checked with fullmatch: "$" would accept a trailing newline.
NAMESPACE_PATTERN = re.compile(r"(?!.*\.\.)[A-Za-z0-9](?:[A-Za-z0-9_.-]{0,46}[A-Za-z0-9])?")
DEFAULT_LOCAL_MODEL = "all-MiniLM-L6-v2"
# The default model setting: each new namespace gets MiniLM or multilingual-e5-small by its first text
# (``embedding/routing.py``); any other value is one model for every namespace.
AUTO_MODEL = "auto"
# The torch devices a local embedding model may be put on (``embedding/local.py``).
DEVICE_PATTERN = re.compile(r"cpu|mps|cuda(?::[0-9]{1,3})?")


def validate_namespace(value: object, field: str = "namespace") -> str:
    """Namespaces become Chroma collection names, so they are kept to a safe alphabet."""
    if not isinstance(value, str):
        raise InvalidInputError(field, f"must be a string, got {type(value).__name__}")
    if not NAMESPACE_PATTERN.fullmatch(value):
        raise InvalidInputError(
            field,
            f"{value!r} is not a valid namespace: use 1-48 letters, digits, '_', '-' or '.', "
            "starting and ending with a letter or digit, with no '..'",
        )
    return value


class Settings(ServerSettings):
    """Engine settings, and the HTTP server's (``ServerSettings``). Every field can be set as ``HINDSIGHT_<FIELD>``."""

    # No float setting means anything at inf or nan: an infinite expiry or interval would switch its check off
    # unnoticed (the writer registry stores inf as JSON null, and then sees no other writer).
    model_config = SettingsConfigDict(
        env_prefix="HINDSIGHT_", extra="ignore", validate_default=True, allow_inf_nan=False
    )

    # Where memories live: an embedded Chroma directory, or a Chroma server URL (wins if set, unless a store
    # is given as an argument and the URL only in the environment: ``_store_given``).
    store: Path = Path(".hindsight")
    chroma_url: str | None = None
    chroma_connect_attempts: int = Field(5, ge=1, le=50)
    chroma_connect_timeout: float = Field(10.0, gt=0)
    # postgresql:// URL of a database whose advisory locks serialise writes across processes
    # sharing one Chroma server (HTTP replicas); unset: writers serialise within a process only.
    lock_url: str | None = None
    # Every process writing through a Chroma server keeps an entry in the store's writer registry
    # (core/storage/replicas.py), renewed in the background; one whose entry has not been renewed for this
    # long is taken for dead, and replicas it blocked may write again. Far above a heartbeat (a
    # third of it, at most 5 s) and any clock skew between the replicas' machines.
    replica_expiry_seconds: float = Field(30.0, ge=1)
    namespace: str = "default"

    # Logs carry the size and a short hash of memory text (content, queries, metadata values,
    # entities, context, error messages quoting them), never the text (core/redaction.py). True
    # quotes it, for debugging on a machine of your own: UNSAFE on a server shared by tenants.
    log_content: bool = False

    # Embeddings: "local" = sentence-transformers, offline; "openai" = any OpenAI-compatible API.
    embedding_provider: Literal["local", "openai"] = "local"
    embedding_model: str = AUTO_MODEL
    embedding_batch_size: int = Field(64, ge=1, le=4096)
    # Where a local model runs on the torch backend (the ONNX one runs on the CPU): cpu, cuda, cuda:N or mps.
    embedding_device: str = "cpu"
    # What runs a local model: "onnx" (onnxruntime, ~2.5x faster queries), "torch", or "auto" = onnx, else torch.
    embedding_backend: Literal["auto", "onnx", "torch"] = "auto"
    # What embeds the vectors memories are stored under (own and context) on the ONNX backend: an
    # int8 copy of the model (~2x less CPU, cosine 0.993 with float32) or the model itself.
    # Queries always run the float32 model.
    index_precision: Literal["int8", "float32"] = "int8"
    # ONNX exports of local models; default $XDG_CACHE_HOME/hindsight or ~/.cache/hindsight.
    cache_dir: Path | None = None

    # LLM (optional): extraction, summaries, answers. Without a key everything runs on rules.
    llm_model: str = "gpt-4o-mini"
    openai_api_key: str | None = Field(
        None, validation_alias=AliasChoices("HINDSIGHT_OPENAI_API_KEY", "OPENAI_API_KEY")
    )
    openai_base_url: str | None = Field(
        None, validation_alias=AliasChoices("HINDSIGHT_OPENAI_BASE_URL", "OPENAI_BASE_URL")
    )
    llm_timeout: float = Field(30.0, gt=0)
    llm_max_retries: int = Field(3, ge=0, le=10)
    use_llm: bool = True

    # Writing.
    max_content_bytes: int = Field(32 * 1024, ge=64)
    # Bounds on the rest of a memory and on filters (core/model/limits.py).
    max_metadata_bytes: int = Field(8192, ge=64)
    max_id_chars: int = Field(200, ge=1)
    max_entities: int = Field(50, ge=1)
    max_filter_bytes: int = Field(8192, ge=64)
    # The cosine thresholds below default to the embedding model's own (core/embedding/calibration.py:
    # MiniLM's are 0.92, 0.85, 0.2, 0.95 and 0.75); a number set here wins for any model.
    dedup_threshold: float | None = Field(None, gt=0, le=1)  # and the same values: see core/write/repeats.py
    update_threshold: float | None = Field(None, gt=0, le=1)  # similarity at which a change cue supersedes
    time_aware_text: bool = True  # index "On 8 May 2023, <content>" (see core/storage/indexing.py)
    # What counts tokens: "estimate" (no files), or a tiktoken encoding already in tiktoken's cache, such as
    # "cl100k_base" (core/language/tiktoken_files.py: nothing is downloaded).
    tokenizer: str = "estimate"

    # Working memory.
    context_window_tokens: int = Field(8192, ge=256)
    compress_ratio: float = Field(0.4, gt=0, lt=1)
    compress_group_turns: int = Field(6, ge=2, le=50)
    # A compression folds the oldest turns until the window is this share of the threshold.
    compress_target: float = Field(0.5, gt=0, le=1)

    # Recall.
    default_top_k: int = Field(5, ge=1, le=200)
    # The recalled context's size when a call gives none: LoCoMo's evidence recall is the same
    # at 450 tokens as unbounded (~560), so the default path spends no more (README "Results").
    default_token_budget: int | None = Field(450, ge=1)
    # A question none of whose candidates reaches this cosine similarity gets nothing: "what is
    # the capital of Peru?" should not inject a coding project's memories. 0 turns it off. On
    # LoCoMo's questions it gates none (evidence recall unchanged) and 55 of 60 off-topic ones
    # (README "Results"); 0.25 gated 59 but also a fair question ("how should you format your
    # answers for me?" against a stated preference: 0.22). Calls narrowed by filters are not
    # gated: they asked for those memories.
    relevance_floor: float | None = Field(None, ge=0, le=1)
    max_top_k: int = Field(200, ge=1, le=10_000)
    # A second stage after ranking (core/recall/rerank.py): "cross-encoder" reads an English question
    # with each of its best `rerank_depth` candidates (the [rerank] extra ships the weights). LoCoMo
    # dev: evidence recall@10 0.781 -> 0.790, multi-hop 0.515 -> 0.590, at ~0.55 s a recall on two cores.
    rerank: Literal["none", "cross-encoder"] = "none"
    rerank_depth: int = Field(40, ge=2, le=200)
    # How stale this process's lexical index and recall facts may be about other processes' writes.
    lexical_sync_seconds: float = Field(1.0, ge=0)
    # How often recall's access counts are written to Chroma (a write slows concurrent recalls).
    access_flush_seconds: float = Field(10.0, gt=0)
    # Keep a copy of every vector in memory (float32 up to 8,192 memories, float16 beyond) so
    # recall scores lexical hits without a Chroma request, and of a small namespace's records so
    # it searches and fetches there while nothing changed elsewhere; off trades latency for memory.
    copy_vectors: bool = True

    # Upkeep.
    cold_store: Path | None = None
    # What a semantic memory's importance is multiplied by for each 30 days it goes unrecalled
    # (an episodic one's: 0.9). 0.98 keeps a 0.9 preference at 0.71 after a year; 1 = never decays.
    semantic_decay: float = Field(0.98, gt=0, le=1)
    # The HTTP server's scheduled upkeep (core/upkeep/schedule.py): seconds between rounds over the
    # namespaces it serves, 0 = off. Hourly: decay and archive count idle days, so an hour keeps
    # nothing waiting long, while a round reads every record of each namespace once.
    upkeep_interval_seconds: float = Field(3600.0, ge=0)
    # How long a replica's hold on a round lasts without renewal (it renews before each namespace):
    # after a replica dies mid-round, another takes the round over this long after its last renewal.
    upkeep_lease_seconds: float = Field(600.0, gt=0)
    # Periodic merge (core/upkeep/merging.py): active memories this close and with the same values are one.
    merge_threshold: float | None = Field(None, gt=0, le=1)
    # Consolidation (core/upkeep/consolidation.py): memories this close (and stating one fact, see
    # core/language/sameness.py) are a cluster; a cluster needs this many statements, from at least two
    # sessions or days, each within this many days of the one before, to become a semantic memory.
    consolidation_threshold: float | None = Field(None, gt=0, le=1)
    consolidation_min_members: int = Field(3, ge=2, le=1000)
    consolidation_window_days: float = Field(30.0, gt=0)

    @field_validator("namespace")
    @classmethod
    def _namespace(cls, value: str) -> str:
        try:
            return validate_namespace(value)
        except InvalidInputError as exc:
            raise ValueError(exc.message) from None  # load_settings names the field, and where it was set

    @field_validator("embedding_device")
    @classmethod
    def _embedding_device(cls, value: str) -> str:
        device = value.strip().lower()
        if not DEVICE_PATTERN.fullmatch(device):
            raise ValueError(
                f"{value!r} is not a device a local embedding model runs on: use cpu, cuda, cuda:N (the Nth GPU, "
                "from 0) or mps (Apple silicon)"
            )
        return device

    @field_validator("tokenizer")
    @classmethod
    def _tokenizer(cls, value: str) -> str:
        try:
            return check_tokenizer(value)
        except ConfigurationError as exc:
            raise ValueError(str(exc)) from None  # load_settings names the field, and where it was set

    @field_validator("upkeep_interval_seconds")
    @classmethod
    def _upkeep_interval(cls, value: float) -> float:
        if 0 < value < 1:
            raise ValueError(f"must be 0 (no scheduled upkeep) or at least 1 second, got {value}")
        return value

    @field_validator("cache_dir", mode="before")
    @classmethod
    def _cache_dir(cls, value: object) -> object:
        return None if value == "" else value  # an empty variable means "the default", not "."

    @field_validator("chroma_url")
    @classmethod
    def _chroma_url(cls, value: str | None) -> str | None:
        if value in (None, ""):
            return None
        if not re.match(r"^https?://[^/\s:]+(:\d+)?/?$", value):
            raise ValueError(f"{value!r} is not a Chroma server URL like http://127.0.0.1:8000")
        return value.rstrip("/")

    @model_validator(mode="after")
    def _openai_embeddings_need_key(self) -> Settings:
        if self.embedding_provider == "openai" and not (self.openai_api_key or self.openai_base_url):
            raise ValueError("embedding_provider is 'openai' but neither OPENAI_API_KEY nor OPENAI_BASE_URL is set")
        return self

    @property
    def compress_threshold_tokens(self) -> int:
        """Working-memory size (tokens) past which a session's window is compressed."""
        return int(self.context_window_tokens * self.compress_ratio)

    @property
    def llm_configured(self) -> bool:
        """Whether an LLM is to be used: allowed (``use_llm``) and reachable (a key or a base URL)."""
        return self.use_llm and bool(self.openai_api_key or self.openai_base_url)

    @property
    def resolved_cold_store(self) -> Path:
        """Where archived memories go: ``cold_store``, else ``<store>/cold``."""
        return self.cold_store or (self.store / "cold")


SERVER_SETTINGS = frozenset(ServerSettings.model_fields) | {"upkeep_interval_seconds", "upkeep_lease_seconds"}
"""The settings only a server reads (``mcp/``, the upkeep schedule): ``load_settings(serving=False)`` lets them be."""


def check_setting_names(names: Iterable[str]) -> None:
    """Refuse keyword arguments that are not settings.

    ``Settings`` ignores unknown *environment* variables (other tools share the prefix), but
    an unknown argument is a typo: ``MemoryEngine(data_dir=...)`` must not quietly write to
    the default store instead.
    """
    unknown = sorted(set(names) - set(Settings.model_fields))
    if unknown:
        hints = [
            f"{name!r} (did you mean {close[0]!r}?)"
            if (close := get_close_matches(name, Settings.model_fields, n=1))
            else repr(name)
            for name in unknown
        ]
        raise ConfigurationError(
            f"unknown setting {', '.join(hints)}; the settings are the fields of hindsight_integrations.Settings "
            "(for example store, chroma_url, namespace, embedding_model)"
        )


def load_settings(*, sources: Mapping[str, str] | None = None, serving: bool = True, **overrides: object) -> Settings:
    """Build settings from overrides + environment; turn validation errors into one clear message.

    The message names where each bad value came from, so the user fixes the right thing: an
    override by ``sources[name]`` when given (the CLI passes its option names, e.g.
    ``{"namespace": "--namespace"}``), else as the keyword argument it was; any other value by
    its ``HINDSIGHT_*`` environment variable. ``serving=False`` (``hindsight add``, ``stats``...):
    a bad environment value of a ``SERVER_SETTINGS`` field, which such a command never reads,
    does not stop it; the field keeps its default.
    """
    check_setting_names(overrides)
    clean: dict[str, Any] = {k: v for k, v in overrides.items() if v is not None}
    unchecked = frozenset() if serving else SERVER_SETTINGS - set(clean)
    return _validated(
        _store_given(clean), clean, sources, lambda name: f"{name} (env HINDSIGHT_{name.upper()})", unchecked
    )


def engine_settings(
    settings: Settings | None,
    *,
    store: str | Path | None = None,
    chroma_url: str | None = None,
    namespace: str | None = None,
    **overrides: Any,
) -> Settings:
    """The settings a ``MemoryEngine`` runs with: ``settings`` or the environment's, the given arguments winning.

    Without ``settings`` everything goes through ``load_settings`` (validated, errors naming
    where each value came from); with them, the arguments given replace their fields and the
    result is validated again, so ``MemoryEngine(settings=s, default_top_k=0)`` is refused as
    ``MemoryEngine(default_top_k=0)`` is, not run with a value no check has seen.
    """
    if settings is None:
        return load_settings(store=store, chroma_url=chroma_url, namespace=namespace, **overrides)
    if not (store or chroma_url or namespace or overrides):
        return settings
    check_setting_names(overrides)
    changes = {"store": store or None, "chroma_url": chroma_url, "namespace": namespace, **overrides}
    given = {k: v for k, v in changes.items() if v is not None}
    return _validated(
        {**settings.model_dump(), **_store_given(given)}, given, None, lambda name: f"{name} (in settings=)"
    )


def _store_given(values: dict[str, Any]) -> dict[str, Any]:
    """``values``, where a ``store`` given without a ``chroma_url`` also says "no Chroma server".

    A Chroma URL wins over a store from the same source, but an explicit ``--store`` / ``store=``
    must not be overruled by a ``HINDSIGHT_CHROMA_URL`` (or a ``settings=``'s URL) the caller did not give.
    """
    if values.get("store") is not None and values.get("chroma_url") is None:
        return {**values, "chroma_url": None}
    return values


def _validated(
    values: dict[str, Any],
    given: Mapping[str, object],
    sources: Mapping[str, str] | None,
    elsewhere: Callable[[str], str],
    unchecked: frozenset[str] = frozenset(),
) -> Settings:
    """``Settings(**values)``, or one ConfigurationError naming where each bad value came from.

    A value in ``given`` is blamed on ``sources[name]`` (an option name) or on the argument it
    was; any other on ``elsewhere(name)``: its environment variable, or the ``settings=`` it came in.
    A bad value of an ``unchecked`` field is replaced by the field's default instead.
    """
    try:
        return Settings(**values)
    except ValidationError as exc:
        if skipped := {str(err["loc"][0]) for err in exc.errors() if err["loc"]} & unchecked:
            defaults = {name: Settings.model_fields[name].get_default(call_default_factory=True) for name in skipped}
            return _validated({**values, **defaults}, given, sources, elsewhere)
        problems = []
        for err in exc.errors():
            name = ".".join(str(p) for p in err["loc"])
            message = err["msg"].removeprefix("Value error, ")
            if not name:  # a check across fields
                problems.append(message)
            elif name in given:
                problems.append(f"{(sources or {}).get(name, f'{name} (argument)')}: {message}")
            else:
                problems.append(f"{elsewhere(name)}: {message}")
        raise ConfigurationError("invalid configuration: " + "; ".join(problems)) from None
