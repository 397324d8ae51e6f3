"""Configuration is checked at start-up, whichever way a value comes in, and a refusal names what to change."""

from __future__ import annotations

import json
import logging
import subprocess
import sys
from pathlib import Path
from typing import get_args

import httpx
import pytest

from hindsight_integrations import ConfigurationError, MemoryEngine, Settings
from hindsight_integrations.core.config import engine_settings, load_settings
from hindsight_integrations.core.embedding.local import LocalEmbedder
from hindsight_integrations.core.errors import InvalidInputError
from hindsight_integrations.mcp import MemoryClient
from hindsight_integrations.mcp.app import build_server
from hindsight_integrations.mcp.errors import MemoryToolError
from hindsight_integrations.processes import running

from .conftest import cache_with_the_installed_model
from .mcp_support import REPO, SERVER_CMD, free_port, http_server_process, server_env


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


def test_a_store_given_explicitly_wins_over_a_chroma_url_in_the_environment(tmp_path: Path, monkeypatch) -> None:
    unreachable = "http://127.0.0.1:9"
    monkeypatch.setenv("HINDSIGHT_CHROMA_URL", unreachable)
    assert load_settings().chroma_url == unreachable  # from the environment alone, the URL wins over the store
    chosen = load_settings(store=tmp_path / "here")
    assert (chosen.store, chosen.chroma_url) == (tmp_path / "here", None)
    both = load_settings(store=tmp_path / "here", chroma_url="http://127.0.0.1:8000")
    assert both.chroma_url == "http://127.0.0.1:8000"  # both given: the URL, as documented
    from_settings = engine_settings(Settings(chroma_url=unreachable), store=tmp_path / "there")
    assert (from_settings.store, from_settings.chroma_url) == (tmp_path / "there", None)

    from typer.testing import CliRunner

    from hindsight_integrations.cli import app

    stats = CliRunner().invoke(app, ["--store", str(tmp_path / "cli"), "-n", "u1", "stats"])
    assert "127.0.0.1:9" not in stats.output, stats.output  # not an attempt to reach the URL
    assert "namespace 'u1'" in stats.output and stats.exit_code == 2  # the store given was opened: nothing in it


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


# -- the server's own settings: refused at start-up, before the model loads -------------------------------


@pytest.mark.parametrize(
    ("variable", "value", "expected"),
    [
        ("HINDSIGHT_RATE_LIMIT", "-5", "above 0"),
        ("HINDSIGHT_RATE_LIMIT", "nan", "finite number"),
        ("HINDSIGHT_RATE_LIMIT", "inf", "finite number"),
        ("HINDSIGHT_RATE_LIMIT", "0", "for no limit set none (leave HINDSIGHT_RATE_LIMIT unset or empty"),
        ("HINDSIGHT_RATE_LIMIT", "lots", "valid number"),
        ("HINDSIGHT_LOG_LEVEL", "verbose", "'DEBUG', 'INFO', 'WARNING', 'ERROR' or 'CRITICAL'"),
        ("HINDSIGHT_MCP_SDK_LOG_LEVEL", "loud", "'DEBUG', 'INFO', 'WARNING', 'ERROR' or 'CRITICAL'"),
        ("HINDSIGHT_UVICORN_LOG_LEVEL", "verbose", "'critical', 'error', 'warning', 'info', 'debug' or 'trace'"),
        ("HINDSIGHT_MCP_PORT", "http", "HINDSIGHT_MCP_PORT='http' is not a port number: use 1 to 65535"),
        ("HINDSIGHT_MCP_PORT", "70000", "is not a port number"),
        ("HINDSIGHT_MCP_TRANSPORT", "sse", "HINDSIGHT_MCP_TRANSPORT='sse' is not a transport: use stdio or http"),
        ("HINDSIGHT_MCP_HOST", "http://0.0.0.0", "HINDSIGHT_MCP_HOST='http://0.0.0.0' is not an address to listen on"),
        ("HINDSIGHT_MCP_HOST", "0.0.0.0:8765", "without a scheme, a port (that is the port setting)"),
    ],
)
def test_a_bad_server_variable_is_one_line_and_exit_status_2(
    tmp_path: Path, variable: str, value: str, expected: str
) -> None:
    arguments = ["--transport", "http"] if variable != "HINDSIGHT_MCP_TRANSPORT" else []
    if variable != "HINDSIGHT_MCP_PORT":
        arguments += ["--port", str(free_port())]
    done = subprocess.run(
        [*SERVER_CMD, *arguments],
        env=server_env(tmp_path / "store", **{variable: value}),
        capture_output=True,
        text=True,
        timeout=120,
        cwd=REPO,
    )
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 2 and len(lines) == 1, done.stderr
    assert lines[0].startswith("hindsight mcp: ") and variable in lines[0] and expected in lines[0], lines[0]
    assert not (tmp_path / "store").exists()  # refused before the store was opened


def test_the_addresses_a_server_may_listen_on(monkeypatch) -> None:
    from typer.testing import CliRunner

    from hindsight_integrations.cli import app
    from hindsight_integrations.mcp.hosts import bind_address_problem
    from hindsight_integrations.mcp.listening import listening

    for fine in ("127.0.0.1", "0.0.0.0", "::", "::1", "localhost", "memory-1.internal.example"):
        assert bind_address_problem(fine) is None, fine
    for refused in ("", "http://0.0.0.0", "0.0.0.0:8765", "[::1]", "256.1.1.1", "memory host", "memory.example/"):
        assert bind_address_problem(refused), refused
    monkeypatch.setenv("HINDSIGHT_MCP_HOST", "")  # as a compose file leaves it: unset, not every interface
    assert listening().host == "127.0.0.1"
    with pytest.raises(InvalidInputError, match="--host: 'a b' is not an address to listen on"):
        listening(host="a b")
    served = CliRunner().invoke(app, ["serve", "--transport", "http", "--host", "http://localhost"])
    assert served.exit_code == 2 and "--host: 'http://localhost' is not an address to listen on" in served.output


def test_hindsight_serve_listens_where_the_mcp_variables_say_and_its_options_win(tmp_path: Path) -> None:
    # It used to serve stdio on 8765 whatever HINDSIGHT_MCP_* said: only `python -m ...mcp` read them.
    port = free_port()
    env = server_env(
        tmp_path / "store",
        HINDSIGHT_MCP_TRANSPORT="http",
        HINDSIGHT_MCP_PORT=str(port),
        HINDSIGHT_MCP_HOST="http://0.0.0.0",  # refused if read; the --host given wins over it
    )
    command = [sys.executable, "-m", "hindsight_integrations.cli", "serve", "--host", "127.0.0.1"]
    with running(command, health_url=f"http://127.0.0.1:{port}/health", env=env, cwd=REPO):
        pass  # it answered over HTTP, on the port of the variable

    from typer.testing import CliRunner

    from hindsight_integrations.cli import app

    for variable, value, expected in (
        ("HINDSIGHT_MCP_TRANSPORT", "sse", "HINDSIGHT_MCP_TRANSPORT='sse' is not a transport: use stdio or http"),
        ("HINDSIGHT_MCP_PORT", "http", "HINDSIGHT_MCP_PORT='http' is not a port number: use 1 to 65535"),
        ("HINDSIGHT_MCP_HOST", "0.0.0.0:8765", "HINDSIGHT_MCP_HOST='0.0.0.0:8765' is not an address to listen on"),
    ):
        served = CliRunner().invoke(app, ["--store", str(tmp_path / "refused"), "serve"], env={variable: value})
        assert served.exit_code == 2 and expected in served.output, served.output
    assert not (tmp_path / "refused").exists()  # refused before the store was opened


def test_hindsight_serve_takes_stateful_and_rate_limit_and_its_options_win(tmp_path: Path) -> None:
    # `hindsight serve` had neither option (only `python -m hindsight_integrations.mcp` did): "No such option".
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    env = server_env(tmp_path / "store", HINDSIGHT_RATE_LIMIT="0")  # refused if read; --rate-limit wins over it
    command = [sys.executable, "-m", "hindsight_integrations.cli", "serve", "--transport", "http", "--port", str(port)]
    with running([*command, "--stateful", "--rate-limit", "2"], health_url=f"{base}/health", env=env, cwd=REPO):
        assert httpx.get(f"{base}/health").json()["stateless"] is False
        with MemoryClient.http(f"{base}/mcp", retries=0) as client:  # opening the session is one request
            client.stats()
            with pytest.raises(MemoryToolError, match="rate"):
                client.stats()  # two requests a minute

    from typer.testing import CliRunner

    from hindsight_integrations.cli import app

    for value, expected in (("0", "above 0"), ("nan", "finite number")):
        served = CliRunner().invoke(app, ["--store", str(tmp_path / "refused"), "serve", "--rate-limit", value])
        assert served.exit_code == 2 and "--rate-limit: " in served.output and expected in served.output, served.output
    served = CliRunner().invoke(app, ["--store", str(tmp_path / "refused"), "serve", "--rate-limit", "often"])
    assert served.exit_code == 2 and "--rate-limit" in served.output, served.output
    assert not (tmp_path / "refused").exists()  # refused before the store was opened


def test_hindsight_serve_takes_every_option_the_server_module_takes() -> None:
    import typer.main

    from hindsight_integrations.cli import app
    from hindsight_integrations.mcp.__main__ import parser

    module = {option for action in parser()._actions for option in action.option_strings} - {"-h", "--help"}
    command = typer.main.get_command(app)
    assert isinstance(command, typer.main.TyperGroup)
    hindsight = {o for p in [*command.params, *command.commands["serve"].params] for o in p.opts}  # global + own
    assert module <= hindsight, f"`hindsight serve` lacks {sorted(module - hindsight)}"


def test_the_servers_own_settings_stop_only_the_commands_that_serve(tmp_path: Path, monkeypatch) -> None:
    from typer.testing import CliRunner

    from hindsight_integrations.cli import app

    monkeypatch.setenv("HINDSIGHT_LOG_LEVEL", "verbose")
    monkeypatch.setenv("HINDSIGHT_RATE_LIMIT", "0")
    cli = CliRunner()
    added = cli.invoke(app, ["--store", str(tmp_path / "store"), "-n", "u1", "add", "I prefer dark mode", "--force"])
    assert added.exit_code == 0 and "stored" in added.output, added.output
    assert cli.invoke(app, ["--store", str(tmp_path / "store"), "-n", "u1", "stats"]).exit_code == 0
    for serving in (["serve", "--transport", "http"], ["ui", "--no-browser"]):
        served = cli.invoke(app, ["--store", str(tmp_path / "store"), *serving])
        assert served.exit_code == 2 and "HINDSIGHT_LOG_LEVEL" in served.output, served.output

    with pytest.raises(ConfigurationError, match=r"log_level \(env HINDSIGHT_LOG_LEVEL\)"):
        load_settings()  # a server, or anything that may serve
    lenient = load_settings(serving=False)
    assert (lenient.log_level, lenient.rate_limit) == ("INFO", None)  # never read by what does not serve
    with pytest.raises(ConfigurationError, match="rate_limit"):
        load_settings(serving=False, rate_limit=0)  # given explicitly, it is checked all the same
    monkeypatch.setenv("HINDSIGHT_DEDUP_THRESHOLD", "high")
    with pytest.raises(ConfigurationError, match="HINDSIGHT_DEDUP_THRESHOLD") as refused:
        load_settings(serving=False)  # what the engine reads is checked everywhere
    assert "HINDSIGHT_LOG_LEVEL" not in str(refused.value)
    from hindsight_integrations.core.config import SERVER_SETTINGS

    assert set(Settings.model_fields) >= SERVER_SETTINGS


def test_a_bad_rate_limit_option_names_the_option(tmp_path: Path) -> None:
    for value in ("0", "-1", "nan"):
        done = subprocess.run(
            [*SERVER_CMD, "--transport", "http", "--port", str(free_port()), "--rate-limit", value],
            env=server_env(tmp_path / "store"),
            capture_output=True,
            text=True,
            timeout=120,
            cwd=REPO,
        )
        assert done.returncode == 2 and "--rate-limit: " in done.stderr and "Traceback" not in done.stderr


def test_no_rate_limit_is_the_variable_unset_or_empty(engine: MemoryEngine, monkeypatch) -> None:
    monkeypatch.delenv("HINDSIGHT_RATE_LIMIT", raising=False)
    assert load_settings().rate_limit is None
    monkeypatch.setenv("HINDSIGHT_RATE_LIMIT", "")
    assert load_settings().rate_limit is None
    monkeypatch.setenv("HINDSIGHT_RATE_LIMIT", "90")
    assert load_settings().rate_limit == 90
    assert build_server(engine, rate_limit_per_minute=None).limiter is None
    for refused in (0, -1, float("nan"), float("inf")):
        with pytest.raises(ValueError, match="finite number above 0"):
            build_server(engine, rate_limit_per_minute=refused)  # 0 used to mean no limit, silently


@pytest.mark.server
def test_a_server_limited_by_the_variable_refuses_the_extra_call_and_keeps_serving(tmp_path: Path) -> None:
    log_path = tmp_path / "server.log"
    with (
        http_server_process(tmp_path / "store", env={"HINDSIGHT_RATE_LIMIT": "2"}, log_path=log_path) as server,
        MemoryClient.http(f"{server.url}/mcp") as client,
    ):
        assert client.stats().total == 0 and client.stats().total == 0
        for _ in range(5):  # a flood of refusals
            with pytest.raises(MemoryToolError, match="rate limit for namespace 'default' exceeded"):
                client.stats()
        assert server.process.poll() is None
    lines = [json.loads(line) for line in log_path.read_text().splitlines() if line.startswith("{")]
    warnings = [line for line in lines if line["event"] == "rate_limited"]
    assert len(warnings) == 1, warnings  # the operator sees who is throttled, once, not once a refusal
    assert warnings[0]["level"] == "warning"
    assert (warnings[0]["namespace"], warnings[0]["limit_per_minute"], warnings[0]["refused"]) == ("default", 2, 1)


def test_a_throttled_namespace_is_logged_once_a_minute_with_the_refusals_between(caplog) -> None:
    from hindsight_integrations.mcp.throttle import RateLimitLog

    now = [0.0]
    refusals = RateLimitLog(30, clock=lambda: now[0])
    with caplog.at_level(logging.WARNING, logger="hindsight.mcp"):
        for second in range(0, 125, 5):  # one refusal every 5 s for two minutes, of one namespace, then another
            now[0] = float(second)
            refusals.refused("alice", 2.0)
        refusals.refused("bob", 2.0)
        refusals.refused("bob", 2.0, viewer=True)
    logged = [(r.fields["namespace"], r.fields["allowance"], r.fields["refused"]) for r in caplog.records]  # type: ignore[attr-defined]
    assert logged == [
        ("alice", "calls", 1),
        ("alice", "calls", 12),
        ("alice", "calls", 12),
        ("bob", "calls", 1),
        ("bob", "viewer", 1),
    ]


# -- HINDSIGHT_TOKENIZER: "estimate", or a tiktoken encoding this machine has; never a download -------------


@pytest.fixture
def no_network(monkeypatch) -> None:
    """tiktoken downloads with requests.get: any attempt fails the test."""
    import requests

    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError(f"a network call: {args}")

    monkeypatch.setattr(requests, "get", refuse)


def test_a_mistyped_tokenizer_is_refused_at_start_up_naming_the_variable(
    tmp_path: Path, monkeypatch, no_network
) -> None:
    monkeypatch.setenv("HINDSIGHT_TOKENIZER", "cl100k_bas")
    with pytest.raises(ConfigurationError) as err:
        load_settings()
    message = str(err.value)
    assert "tokenizer (env HINDSIGHT_TOKENIZER): 'cl100k_bas' is not a token counter" in message
    assert "(did you mean 'cl100k_base'?)" in message and "works offline here: 'estimate'" in message
    done = subprocess.run(
        [sys.executable, "-m", "hindsight_integrations.cli", "stats"],
        env=server_env(tmp_path / "store", HINDSIGHT_TOKENIZER="cl100k_bas"),
        capture_output=True,
        text=True,
        timeout=120,
        cwd=REPO,
    )
    assert done.returncode == 2 and "HINDSIGHT_TOKENIZER" in done.stderr, done.stderr
    assert "This is a bug" not in done.stdout + done.stderr


def test_an_encoding_that_would_need_a_download_is_refused_not_fetched(tmp_path: Path, monkeypatch, no_network) -> None:
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path / "tiktoken"))
    with pytest.raises(ConfigurationError) as err:
        load_settings(tokenizer="o200k_base")
    message = str(err.value)
    assert message.startswith("invalid configuration: tokenizer (argument): the tiktoken encoding 'o200k_base'")
    assert f"not in tiktoken's cache ({tmp_path / 'tiktoken'}) and nothing is downloaded" in message
    assert "TIKTOKEN_CACHE_DIR" in message and "works offline here: 'estimate'" in message


def test_an_encoding_in_tiktokens_cache_counts_tokens(monkeypatch, no_network) -> None:
    import tiktoken.registry

    from hindsight_integrations.core.language.tiktoken_files import offline_counters
    from hindsight_integrations.core.language.tokens import TiktokenCounter

    # As tiktoken holds an encoding it has read from its cache: a byte-level one, a token per byte.
    ranks = {bytes([b]): b for b in range(256)}
    loaded = tiktoken.Encoding("cl100k_base", pat_str=r"\S+|\s+", mergeable_ranks=ranks, special_tokens={})
    monkeypatch.setitem(tiktoken.registry.ENCODINGS, "cl100k_base", loaded)
    monkeypatch.setenv("HINDSIGHT_TOKENIZER", "cl100k_base")
    assert load_settings().tokenizer == "cl100k_base" and "cl100k_base" in offline_counters()
    assert TiktokenCounter("cl100k_base").count("dark mode") == 9


# -- HINDSIGHT_EMBEDDING_DEVICE: its own mistakes are not blamed on the model --------------------------------


def test_a_bad_embedding_device_is_named_not_the_model(monkeypatch) -> None:
    for value in ("gpu", "cuda0", "cuda:x", "tpu"):
        monkeypatch.setenv("HINDSIGHT_EMBEDDING_DEVICE", value)
        with pytest.raises(ConfigurationError) as err:
            load_settings()
        assert f"embedding_device (env HINDSIGHT_EMBEDDING_DEVICE): {value!r} is not a device" in str(err.value)
        assert "cpu, cuda, cuda:N" in str(err.value) and "HINDSIGHT_EMBEDDING_MODEL" not in str(err.value)
    for value, device in (("cpu", "cpu"), ("CUDA", "cuda"), ("cuda:1", "cuda:1"), (" mps ", "mps")):
        monkeypatch.setenv("HINDSIGHT_EMBEDDING_DEVICE", value)
        assert load_settings().embedding_device == device


def test_a_device_this_machine_lacks_is_named_when_the_model_loads(tmp_path: Path) -> None:
    model = LocalEmbedder(device="cuda:999", backend="torch", cache_dir=cache_with_the_installed_model(tmp_path))
    with pytest.raises(ConfigurationError) as err:
        model.embed(["I prefer dark mode in every editor."])
    assert "no 'cuda:999' device" in str(err.value) and "HINDSIGHT_EMBEDDING_DEVICE=cpu" in str(err.value)
    assert "HINDSIGHT_EMBEDDING_MODEL" not in str(err.value)
