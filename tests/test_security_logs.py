"""No memory text in a shared server's logs; no display controls in rendered context (#24, finding 9).

A hostile tester found "my bank PIN is 4321" on a shared HTTP server's stderr: each tool-call
line quoted its arguments, error messages quoted bad values, and tracebacks ended with the
exception's text. Logs now carry sizes, counts, short hashes, ids and numbers
(``core/redaction.py``, ``mcp/observability.summarize_arguments``) unless
``HINDSIGHT_LOG_CONTENT=true`` asks for the text. A recalled U+202E (right-to-left override)
reordered the displayed context block; ``core/context.quoted`` now escapes it.
"""

from __future__ import annotations

import json
import logging
import sys
import uuid
from pathlib import Path

import pytest

from hindsight_integrations import MemoryEngine
from hindsight_integrations.core.errors import ConfigurationError
from hindsight_integrations.core.llm import LLMClient
from hindsight_integrations.core.redaction import call_text, set_content_in_logs
from hindsight_integrations.mcp import MemoryClient, MemoryToolError
from hindsight_integrations.mcp.observability import JsonFormatter

from .mcp_support import http_server
from .openai_stub import OpenAIStub

SECRET = "my bank PIN is 4321"
TOKEN = "security-logs-token-" + uuid.uuid4().hex  # 52 characters
RLO = "\u202e"


def _leaks(text: str) -> bool:
    """Whether ``text`` holds the secret in any case (a validator may lower-case what it echoes)."""
    return "bank pin" in text.lower() or "pin is 4321" in text.lower()


def _exercise(base: str) -> str:
    """Every way a call can carry the secret: stored, queried, in metadata and entities, in bad input; the id."""
    with MemoryClient.http(base + "/mcp", token=TOKEN) as client:
        stored = client.store(SECRET, metadata={"note": SECRET}, entities=[SECRET], importance=0.9)
        assert stored.stored[0].content == SECRET  # the caller's own result still shows their text
        assert client.recall(f"what is {SECRET}?").records
        client.record_turn(f"Remember that {SECRET}.", session_id="s-secret")
        client.update(stored.ids[0], metadata={"note": SECRET + " (checked)"})
        refused = [
            ("store_memory", {"content": "A fact about the garden.", "kind": SECRET}),  # pydantic echoes the input
            ("retrieve_memory", {"query": SECRET, "top_k": SECRET}),
            ("store_memory", {"content": "A fact about the garden.", SECRET: 1}),  # an unknown argument's name
            ("store_memory", {"content": "A fact about the garden.", "occurred_at": SECRET}),
            (SECRET, {"query": SECRET}),  # an unknown tool's name
        ]
        for tool, arguments in refused:
            with pytest.raises(MemoryToolError) as caught:
                client.call_tool(tool, arguments)
            assert caught.value.error_type in ("invalid_input", "unknown_argument", "unknown_tool"), caught.value
    return stored.ids[0]


def _tool_lines(log: Path) -> list[dict]:
    lines = [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines() if line.startswith("{")]
    return [line for line in lines if line.get("event") == "tool_call"]


@pytest.mark.server
def test_memory_text_never_reaches_a_shared_servers_log(tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    with http_server(tmp_path / "store", tokens={TOKEN: "tenant"}, log_path=log) as base:
        memory_id = _exercise(base)
    text = log.read_text(encoding="utf-8")
    assert not _leaks(text), [line for line in text.splitlines() if _leaks(line)]
    calls = _tool_lines(log)
    assert len(calls) == 9  # every call logged, refused ones too
    store = next(line for line in calls if line["tool"] == "store_memory" and line["outcome"] == "ok")
    assert store["arguments"]["content"] == f"#{_hash(SECRET)} (19 chars)"  # size and hash, for correlating
    assert store["arguments"]["entities"] == "[1 items]" and store["arguments"]["metadata"] == "{1 keys}"
    update = next(line for line in calls if line["tool"] == "update_memory")
    assert update["arguments"]["id"] == memory_id and update["namespace"] == "tenant"  # ids are shown
    failed = [line for line in calls if line["outcome"] != "ok"]
    assert [line["error_type"] for line in failed] == [
        "invalid_input",
        "invalid_input",
        "unknown_argument",
        "invalid_input",
        "unknown_tool",
    ]
    assert failed[0]["error"].startswith("kind: ") and "chars)" in failed[0]["error"]  # which field, not its text
    assert failed[1]["error"].startswith("top_k: ")


@pytest.mark.server
def test_log_content_true_quotes_the_text_for_debugging(tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    with http_server(
        tmp_path / "store", tokens={TOKEN: "tenant"}, log_path=log, env={"HINDSIGHT_LOG_CONTENT": "true"}
    ) as base:
        _exercise(base)
    store = next(line for line in _tool_lines(log) if line["tool"] == "store_memory" and line["outcome"] == "ok")
    assert store["arguments"]["content"] == SECRET
    assert _leaks(next(line["error"] for line in _tool_lines(log) if line["outcome"] == "invalid_input"))


def test_the_log_content_setting_is_validated(monkeypatch: pytest.MonkeyPatch, store_path: Path, embedder) -> None:
    from hindsight_integrations.core.config import load_settings

    with pytest.raises(ConfigurationError, match=r"log_content \(argument\)"):
        load_settings(log_content="perhaps")
    monkeypatch.setenv("HINDSIGHT_LOG_CONTENT", "perhaps")
    with pytest.raises(ConfigurationError, match=r"HINDSIGHT_LOG_CONTENT"):
        load_settings()


def test_a_logged_traceback_keeps_its_frames_and_loses_the_text() -> None:
    """A quoted value goes from any traceback; while a call is served, its strings go unquoted too."""
    set_content_in_logs(False)
    try:
        try:
            raise ValueError(f"could not parse the extraction reply: {SECRET!r}")
        except ValueError as inner:
            raise RuntimeError(f"storing {SECRET} failed") from inner
    except RuntimeError:
        record = logging.LogRecord("hindsight.mcp", logging.ERROR, __file__, 1, "tool failed", None, sys.exc_info())
    with call_text([SECRET]):
        line = json.loads(JsonFormatter().format(record))
    trace = line["exception"]
    assert "test_security_logs.py" in trace and "ValueError: could not parse the extraction reply" in trace
    assert "RuntimeError: storing" in trace and not _leaks(trace), trace
    assert _leaks(
        json.loads(JsonFormatter().format(record))["exception"]
    )  # unquoted and outside a call: unknown to the log
    quoted_only = logging.LogRecord("hindsight.mcp", logging.ERROR, __file__, 1, "failed", None, None)
    quoted_only.exc_info = (ValueError, ValueError(f"bad {SECRET!r}"), None)
    assert not _leaks(json.loads(JsonFormatter().format(quoted_only))["exception"])


def test_an_llm_failure_quoting_the_conversation_is_logged_without_it(
    store_path: Path, embedder, caplog: pytest.LogCaptureFixture
) -> None:
    """The LLM's unparsable reply echoes the turn; the engine's warning says what failed, not what was said."""
    caplog.set_level(logging.WARNING)
    with OpenAIStub() as stub:
        stub.script(f"Sure! I will remember that {SECRET}.")  # not the JSON the extraction asks for
        llm = LLMClient(model="stub-model", base_url=stub.base_url, api_key="test", timeout=5, max_retries=0)
        engine = MemoryEngine(store=store_path, embedder=embedder, llm=llm)
        engine.record_turn(f"Please remember: {SECRET}.", session_id="s1", namespace="u1")
    warnings = [r.getMessage() for r in caplog.records if "extraction failed" in r.getMessage()]
    assert warnings and "could not parse the extraction reply" in warnings[0]
    assert not any(_leaks(r.getMessage()) for r in caplog.records), [r.getMessage() for r in caplog.records]


@pytest.mark.server
def test_a_right_to_left_override_comes_back_escaped_over_mcp(tmp_path: Path) -> None:
    tricky = f"The invoice attachment is named {RLO}fdp.exe and came from the accountant."
    with (
        http_server(tmp_path / "store", tokens={TOKEN: "tenant"}) as base,
        MemoryClient.http(base + "/mcp", token=TOKEN) as client,
    ):
        client.store(tricky)
        recalled = client.recall("what is the invoice attachment called?")
        dump = client.dump()
    assert recalled.records[0].content == tricky  # the memory itself is kept as it was written
    for rendered in (recalled.context, dump):
        assert RLO not in rendered and "\\u202efdp.exe" in rendered, rendered


def _hash(text: str) -> str:
    from hindsight_integrations.core.redaction import fingerprint

    return fingerprint(text)
