"""Configuration is checked at start-up, whichever way a value comes in, and a refusal names what to change."""

from __future__ import annotations

from pathlib import Path
from typing import get_args

import pytest

from hindsight_integrations import ConfigurationError, MemoryEngine, Settings
from hindsight_integrations.core.config import engine_settings, load_settings


def test_arguments_given_beside_settings_are_checked_as_arguments_alone_are(tmp_path: Path, embedder) -> None:
    settings = Settings(store=tmp_path / "store")
    for arguments, expected in (
        ({"default_top_k": 0}, "default_top_k (argument): Input should be greater than or equal to 1"),
        ({"max_content_bytes": -1}, "max_content_bytes (argument): Input should be greater than or equal to 64"),
        ({"chroma_url": "localhost:8000"}, "chroma_url (argument): 'localhost:8000' is not a Chroma server URL"),
        ({"namespace": "../../etc"}, "namespace (argument): '../../etc' is not a valid namespace"),
    ):
        with pytest.raises(ConfigurationError, match=r"^invalid configuration: ") as err:
            MemoryEngine(settings=settings, embedder=embedder, llm=False, **arguments)
        assert expected in str(err.value), err.value
    assert not (tmp_path / "store").exists()  # refused before anything was opened
    merged = engine_settings(settings, namespace="alice", default_top_k=9, store=str(tmp_path / "other"))
    assert (merged.namespace, merged.default_top_k, merged.store) == ("alice", 9, tmp_path / "other")
    assert (settings.namespace, settings.default_top_k) == ("default", 5)  # the caller's settings are not changed
    assert engine_settings(settings) is settings


FLOAT_SETTINGS = sorted(
    name for name, field in Settings.model_fields.items() if float in (field.annotation, *get_args(field.annotation))
)


def test_every_float_setting_refuses_inf_and_nan_naming_its_variable(monkeypatch) -> None:
    # inf would switch a check off unnoticed: an infinite replica expiry is stored as JSON null, and
    # the writer registry then lets two writers in at once.
    assert {"replica_expiry_seconds", "lexical_sync_seconds", "upkeep_lease_seconds"} <= set(FLOAT_SETTINGS)
    for name in FLOAT_SETTINGS:
        variable = f"HINDSIGHT_{name.upper()}"
        for value in ("inf", "-inf", "nan", "Infinity"):
            monkeypatch.setenv(variable, value)
            with pytest.raises(
                ConfigurationError, match=rf"{name} \(env {variable}\): Input should be a finite number"
            ):
                load_settings()
        monkeypatch.delenv(variable)
        with pytest.raises(ConfigurationError, match=rf"{name} \(argument\): Input should be a finite number"):
            load_settings(**{name: float("inf")})
    assert load_settings(replica_expiry_seconds=45.5).replica_expiry_seconds == 45.5
