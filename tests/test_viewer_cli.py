"""``hindsight ui``: the viewer served on 127.0.0.1 over the embedded store, opened in a browser.

The command runs as a real process. The "browser" is ``$BROWSER`` (which ``webbrowser``
honours) set to a tiny program that writes the URL it was given into a named pipe, so the
test learns the page was opened by reading the pipe, with no waiting for time to pass.
"""

from __future__ import annotations

import os
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx
import pytest

from hindsight_integrations import MemoryEngine
from hindsight_integrations.mcp import MemoryClient
from hindsight_integrations.processes import free_port, running

from .mcp_support import REPO, server_env
from .viewer_support import csrf_of

pytestmark = pytest.mark.server
CLI = [sys.executable, "-m", "hindsight_integrations.cli"]


def test_ui_serves_the_stores_memories_without_sign_in_on_loopback(tmp_path: Path) -> None:
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    command = [*CLI, "--store", str(tmp_path / "store"), "--namespace", "me", "ui", "--no-browser", "--port", str(port)]
    with running(command, health_url=f"{base}/health", env=server_env(tmp_path / "store"), cwd=REPO):
        with MemoryClient.http(f"{base}/mcp") as client:
            client.store("I keep my bike in the courtyard.")
        page = httpx.get(f"{base}/ui")
    assert page.status_code == 200 and 'id="namespace">me<' in page.text
    assert "I keep my bike in the courtyard." in page.text and "Sign out" not in page.text


def test_a_memory_archived_into_cold_storage_is_shown_and_restored_from_the_viewer(tmp_path: Path, embedder) -> None:
    store = tmp_path / "store"
    with MemoryEngine(store=store, namespace="me", embedder=embedder, llm=False) as engine:
        stale = engine.store("The old staging host was called zeus-1.", importance=0.2).stored[0]
        assert engine.maintain(now=datetime.now(UTC) + timedelta(days=100)).archived == [stale.id]
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    command = [*CLI, "--store", str(store), "--namespace", "me", "ui", "--no-browser", "--port", str(port)]
    with (
        running(command, health_url=f"{base}/health", env=server_env(store), cwd=REPO),
        httpx.Client(base_url=base, follow_redirects=True) as client,
    ):
        page = client.get(f"/ui/memory/{stale.id}")
        assert page.status_code == 200 and 'class="badge status-archived"' in page.text
        assert 'id="restore"' in page.text and "zeus-1" in page.text
        restored = client.post(f"/ui/memory/{stale.id}/restore", data={"csrf": csrf_of(page.text)})
    assert "Restored" in restored.text and 'id="forget"' in restored.text


@pytest.mark.timeout(180)
def test_ui_opens_the_page_in_the_browser_once_the_server_answers(tmp_path: Path) -> None:
    pipe = tmp_path / "opened"
    os.mkfifo(pipe)
    fake_browser = tmp_path / "browser.py"
    fake_browser.write_text(f"import sys\nopen({str(pipe)!r}, 'w').write(sys.argv[1])\n")
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    env = server_env(tmp_path / "store", BROWSER=f"{sys.executable} {fake_browser} %s")
    command = [*CLI, "--store", str(tmp_path / "store"), "ui", "--port", str(port)]
    with running(command, health_url=f"{base}/health", env=env, cwd=REPO):
        with open(pipe) as opened:  # blocks until the command opened the "browser"
            url = opened.read()
        assert url == f"{base}/ui"
        assert httpx.get(url).status_code == 200


def test_ui_refuses_a_bad_port_before_starting() -> None:
    from typer.testing import CliRunner

    from hindsight_integrations.cli import app

    result = CliRunner().invoke(app, ["ui", "--port", "0", "--no-browser"])
    assert result.exit_code == 2 and "port" in result.output
