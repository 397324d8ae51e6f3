"""The browser as the attacker's tool: headless Chromium against the viewer (security issue #24, findings 5, 6, 8).

A victim browser signs in to the viewer through its form, then visits an attacker's page that
auto-submits a form to the viewer: forget a memory, sign in with the attacker's token, sign out.
The attacker's page is served from another port of the same host (``127.0.0.1:OTHER`` against a
viewer on ``127.0.0.1:PORT``, and ``localhost:OTHER`` against one reached as ``localhost:PORT``):
the same *site*, so ``SameSite=Strict`` lets the cookie through, and only the viewer's Origin
check and CSRF token stand in the way. Afterwards the memory is still there, the browser is still
signed in to its own namespace, and its session still works.

DNS rebinding is played with ``--host-resolver-rules``: ``attacker.example`` resolves to
127.0.0.1, so a page of that name is same-origin with ``hindsight ui`` on that port, and reads
nothing from it.

Memory status is always read through the bearer API (``/debug/memories``), never the viewer.
"""

from __future__ import annotations

import html
import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from .viewer_support import (
    ALICE,
    BOB,
    NEEDS_CHROMIUM,
    chromium,
    local_viewer,
    remember,
    seeded_server,
    status_of,
)

pytestmark = [pytest.mark.server, NEEDS_CHROMIUM]
webdriver = pytest.importorskip("selenium.webdriver", reason="needs selenium (pip install -e '.[dev]')")

from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.remote.webdriver import WebDriver  # noqa: E402
from selenium.webdriver.support import expected_conditions as ec  # noqa: E402
from selenium.webdriver.support.ui import WebDriverWait  # noqa: E402

REBOUND = "attacker.example"


class AttackerSite:
    """A web server of the attacker's on a loopback port: each page auto-submits one form."""

    def __init__(self) -> None:
        self.pages: dict[str, str] = {}
        pages = self.pages

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                body = pages.get(self.path.partition("?")[0], "<p>nothing here</p>").encode()
                self.send_response(200)
                self.send_header("Content-Type", "text/html; charset=utf-8")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: Any) -> None:  # quiet
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self._server.server_address[1]
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    def auto_submit(self, name: str, action: str, fields: dict[str, str]) -> str:
        """Publish a page that posts ``fields`` to ``action`` as soon as it loads; its path."""
        inputs = "".join(
            f'<input type="hidden" name="{html.escape(k)}" value="{html.escape(v)}">' for k, v in fields.items()
        )
        self.pages[f"/{name}"] = (
            "<!doctype html><html><body><p>Cute cat pictures loading…</p>"
            f'<form id="f" method="post" action="{html.escape(action)}">{inputs}</form>'
            "<script>document.getElementById('f').submit();</script></body></html>"
        )
        return f"/{name}"

    def __enter__(self) -> AttackerSite:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()


@pytest.fixture(scope="module")
def viewer(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The seeded server with alice's and bob's tokens (``viewer_support``); its base URL."""
    with seeded_server(tmp_path_factory.mktemp("security-browser")) as seeded:
        yield seeded.base


@pytest.fixture(scope="module")
def attacker() -> Iterator[AttackerSite]:
    with AttackerSite() as site:
        yield site


@pytest.fixture(scope="module")
def browser() -> Iterator[WebDriver]:
    driver = chromium(f"--host-resolver-rules=MAP {REBOUND} 127.0.0.1")
    try:
        yield driver
    finally:
        driver.quit()


def wait_for(driver: WebDriver, css: str) -> None:
    WebDriverWait(driver, 20).until(ec.presence_of_element_located((By.CSS_SELECTOR, css)))


def sign_in(driver: WebDriver, base: str, token: str) -> None:
    """Sign in at ``base`` through the form, as a person would, starting from no session."""
    driver.get(f"{base}/ui/signin")
    driver.delete_all_cookies()
    driver.get(f"{base}/ui")
    wait_for(driver, "#sign-in")
    driver.find_element(By.ID, "token").send_keys(token)
    driver.find_element(By.CSS_SELECTOR, "#sign-in button").click()
    wait_for(driver, "#totals")


def visit_attack(driver: WebDriver, page_url: str, target_base: str) -> None:
    """Open the attacker's page and wait until its form has been submitted and answered."""
    driver.get(page_url)
    WebDriverWait(driver, 20).until(
        lambda d: d.current_url.startswith(target_base) and d.execute_script("return document.readyState") == "complete"
    )


def shown_namespace(driver: WebDriver, base: str) -> str | None:
    """The namespace the viewer shows this browser now (None: it is sent to the sign-in form)."""
    driver.get(f"{base}/ui")
    WebDriverWait(driver, 20).until(lambda d: d.find_elements(By.ID, "namespace") or d.find_elements(By.ID, "sign-in"))
    found = driver.find_elements(By.ID, "namespace")
    return found[0].text if found else None


HOSTS = ["127.0.0.1", "localhost"]  # the victim's viewer and the attacker's page share this host name


@pytest.mark.parametrize("host", HOSTS)
def test_a_page_on_another_port_cannot_forget_a_memory(
    browser: WebDriver, viewer: str, attacker: AttackerSite, host: str
) -> None:
    base = viewer.replace("127.0.0.1", host)
    memory = remember(viewer, ALICE, f"My safe's combination is 31-7-{len(host)}.")
    sign_in(browser, base, ALICE)
    page = attacker.auto_submit(f"forget-{host}", f"{base}/ui/memory/{memory}/forget", {"csrf": "guessed"})
    visit_attack(browser, f"http://{host}:{attacker.port}{page}", base)
    assert status_of(viewer, ALICE, memory) == "active"
    assert "another origin of this site" in browser.find_element(By.ID, "refused-reason").text
    assert shown_namespace(browser, base) == "alice"
    assert "safe's combination" in browser.page_source  # the session still works, and the memory is listed


@pytest.mark.parametrize("host", HOSTS)
def test_a_page_on_another_port_cannot_sign_the_browser_in_to_the_attackers_namespace(
    browser: WebDriver, viewer: str, attacker: AttackerSite, host: str
) -> None:
    base = viewer.replace("127.0.0.1", host)
    sign_in(browser, base, ALICE)
    page = attacker.auto_submit(f"signin-{host}", f"{base}/ui/signin", {"token": BOB})
    visit_attack(browser, f"http://{host}:{attacker.port}{page}", base)
    refused = bool(browser.find_elements(By.ID, "refused"))
    assert shown_namespace(browser, base) == "alice"
    assert "locker code" not in browser.page_source  # bob's memory: the browser is not in bob's namespace
    assert refused
    browser.delete_all_cookies()  # and a browser not signed in at all is not signed in to bob's either
    visit_attack(browser, f"http://{host}:{attacker.port}{page}", base)
    refused = bool(browser.find_elements(By.ID, "refused"))
    assert shown_namespace(browser, base) is None and refused


@pytest.mark.parametrize("host", HOSTS)
def test_a_page_on_another_port_cannot_sign_the_browser_out(
    browser: WebDriver, viewer: str, attacker: AttackerSite, host: str
) -> None:
    base = viewer.replace("127.0.0.1", host)
    sign_in(browser, base, ALICE)
    page = attacker.auto_submit(f"signout-{host}", f"{base}/ui/signout", {})
    visit_attack(browser, f"http://{host}:{attacker.port}{page}", base)
    refused = bool(browser.find_elements(By.ID, "refused"))
    assert shown_namespace(browser, base) == "alice"
    assert refused
    browser.find_element(By.ID, "sign-out").click()  # the viewer's own button still signs out
    wait_for(browser, "#sign-in")
    assert shown_namespace(browser, base) is None


@pytest.fixture(scope="module")
def local(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """``hindsight ui`` (no tokens, nobody signs in); its base URL."""
    with local_viewer(tmp_path_factory.mktemp("security-local") / "store") as base:
        yield base


def test_without_tokens_a_page_on_another_port_cannot_forget_a_memory(
    browser: WebDriver, local: str, attacker: AttackerSite
) -> None:
    base = local
    memory = remember(base, None, "My bank's security answer is Whiskers.")
    browser.get(f"{base}/ui")  # the victim has the viewer open
    wait_for(browser, "#totals")
    page = attacker.auto_submit("forget-local", f"{base}/ui/memory/{memory}/forget", {})
    visit_attack(browser, f"http://127.0.0.1:{attacker.port}{page}", base)
    assert status_of(base, None, memory) == "active"
    assert browser.find_elements(By.ID, "refused")


def test_a_rebound_name_reads_nothing_from_hindsight_ui(browser: WebDriver, local: str) -> None:
    base = local
    memory = remember(base, None, "My passport number is X1234567.")
    port = base.rsplit(":", 1)[1]
    browser.get(f"{base}/ui")  # the real name works in this browser
    wait_for(browser, "#totals")
    assert "X1234567" in browser.page_source

    rebound = f"http://{REBOUND}:{port}"
    browser.get(f"{rebound}/ui")  # the attacker's page, now same-origin with the server
    assert browser.execute_script("return location.origin") == rebound
    assert "X1234567" not in browser.page_source and "HINDSIGHT_ALLOWED_HOSTS" in browser.page_source
    status, text = browser.execute_async_script(
        "const done = arguments[arguments.length - 1];"
        "fetch('/ui/export.json').then(r => r.text().then(t => done([r.status, t])), e => done([0, String(e)]));"
    )
    assert status == 421 and "X1234567" not in text
    status, text = browser.execute_async_script(
        "const done = arguments[arguments.length - 1];"
        "fetch('/debug/memories').then(r => r.text().then(t => done([r.status, t])), e => done([0, String(e)]));"
    )
    assert status == 421 and "X1234567" not in text
    status, _ = browser.execute_async_script(
        "const done = arguments[arguments.length - 1];"
        f"fetch('/ui/memory/{memory}/forget', {{method: 'POST', body: new URLSearchParams({{decision: 'x'}})}})"
        ".then(r => done([r.status, '']), e => done([0, String(e)]));"
    )
    assert status == 421
    assert status_of(base, None, memory) == "active"
    browser.get(f"{base}/ui")  # under its real name the same browser still reads the export
    wait_for(browser, "#totals")
    exported = browser.execute_async_script(
        "const done = arguments[arguments.length - 1];"
        "fetch('/ui/export.json').then(r => r.text()).then(done, e => done(String(e)));"
    )
    assert any(r["content"] == "My passport number is X1234567." for r in json.loads(exported)["records"])
