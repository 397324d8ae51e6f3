"""The memory viewer driven end to end in headless Chromium (Debian's chromium + chromium-driver).

A real HTTP server, seeded through its tools (``viewer_support``), is used the way a person
would: sign in with a token, list, filter, search, open a corrected fact's history, review a
quarantined memory, forget, export; another user's token sees none of it; without a token
there is only the sign-in form. Every page is also checked at 1280×800 and 390 px wide for
horizontal overflow. Screenshots go to ``test-artifacts/viewer/`` (gitignored); with
``HINDSIGHT_DOCS_SCREENSHOT=1`` the list page's is also written to ``docs/viewer.png``.

Selenium is pointed at the system chromedriver and chromium, so Selenium Manager never runs
and nothing is downloaded; without them the module is skipped, saying what to install.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from .mcp_support import REPO
from .viewer_support import ALICE, BOB, NEEDS_CHROMIUM, SCRIPT_TEXT, SESSION, Seeded, chromium, seeded_server

ARTIFACTS = REPO / "test-artifacts" / "viewer"
DOCS_SCREENSHOT = REPO / "docs" / "viewer.png"

pytestmark = [pytest.mark.server, NEEDS_CHROMIUM]
webdriver = pytest.importorskip("selenium.webdriver", reason="needs selenium (pip install -e '.[dev]')")

from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.remote.webdriver import WebDriver  # noqa: E402
from selenium.webdriver.support import expected_conditions as ec  # noqa: E402
from selenium.webdriver.support.select import Select  # noqa: E402
from selenium.webdriver.support.ui import WebDriverWait  # noqa: E402

WIDE, NARROW = (1280, 800), (390, 844)


@pytest.fixture(scope="module")
def seeded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Seeded]:
    with seeded_server(tmp_path_factory.mktemp("viewer-browser")) as server:
        yield server


@pytest.fixture(scope="module")
def browser() -> Iterator[WebDriver]:
    """Headless Chromium through the system chromedriver (``viewer_support.chromium``)."""
    driver = chromium()
    try:
        yield driver
    finally:
        driver.quit()


def viewport(driver: WebDriver, size: tuple[int, int]) -> None:
    """Make the page's viewport exactly ``size`` CSS pixels (a phone is emulated as a mobile device)."""
    width, height = size
    driver.execute_cdp_cmd(
        "Emulation.setDeviceMetricsOverride",
        {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": width < 700},
    )


def shot(driver: WebDriver, name: str) -> Path:
    """Save a screenshot of the current page under ``test-artifacts/viewer/``."""
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    path = ARTIFACTS / f"{name}.png"
    assert driver.save_screenshot(str(path)), path
    return path


def wait_for(driver: WebDriver, css: str) -> None:
    WebDriverWait(driver, 20).until(ec.presence_of_element_located((By.CSS_SELECTOR, css)))


def sign_in(driver: WebDriver, seeded: Seeded, token: str) -> None:
    """Sign in through the form, as a person would, starting from no session."""
    viewport(driver, WIDE)
    driver.get(f"{seeded.base}/ui/signin")
    driver.delete_all_cookies()
    driver.get(f"{seeded.base}/ui")
    wait_for(driver, "#sign-in")
    driver.find_element(By.ID, "token").send_keys(token)
    driver.find_element(By.CSS_SELECTOR, "#sign-in button").click()
    wait_for(driver, "#totals")


def rows(driver: WebDriver, css: str = "tr.memory") -> list[str]:
    return [r.text for r in driver.find_elements(By.CSS_SELECTOR, css)]


def test_no_token_shows_only_the_sign_in_form(browser: WebDriver, seeded: Seeded) -> None:
    viewport(browser, WIDE)
    browser.get(f"{seeded.base}/ui/signin")
    browser.delete_all_cookies()
    browser.get(f"{seeded.base}/ui/memory/{seeded.new_city}")
    wait_for(browser, "#sign-in")
    shot(browser, "sign-in")
    assert browser.current_url.endswith("/ui/signin")
    assert "Munich" not in browser.page_source and "peanuts" not in browser.page_source


def test_sign_in_lists_memories_with_their_fields_and_script_as_text(browser: WebDriver, seeded: Seeded) -> None:
    sign_in(browser, seeded, ALICE)
    assert browser.find_element(By.ID, "namespace").text == "alice"
    assert ALICE not in browser.current_url
    listed = rows(browser)
    assert any("I moved to Munich last month." in r for r in listed)
    scripted = browser.find_element(By.CSS_SELECTOR, f'tr[data-id="{seeded.scripted}"] td.content')
    assert scripted.text == SCRIPT_TEXT  # shown as text, not run, not rendered as markup
    assert browser.title != "pwned"
    header = [th.text for th in browser.find_elements(By.CSS_SELECTOR, "#memories th")]
    assert header[:8] == ["Memory", "Tier", "Kind", "Status", "Importance", "Occurred", "Last access", "Accesses"]
    path = shot(browser, "list-1280")
    if os.environ.get("HINDSIGHT_DOCS_SCREENSHOT") == "1":
        shutil.copyfile(path, DOCS_SCREENSHOT)


def test_filter_by_kind_submits_on_change(browser: WebDriver, seeded: Seeded) -> None:
    sign_in(browser, seeded, ALICE)
    Select(browser.find_element(By.ID, "filter-kind")).select_by_value("event")  # the page's script submits
    WebDriverWait(browser, 20).until(lambda d: "kind=event" in d.current_url)
    wait_for(browser, "#totals")
    listed = rows(browser)
    assert len(listed) == 1 and "Dentist appointment" in listed[0]
    shot(browser, "filter-kind-event")


def test_search_shows_score_parts(browser: WebDriver, seeded: Seeded) -> None:
    sign_in(browser, seeded, ALICE)
    search = browser.find_element(By.ID, "q")
    search.send_keys("Where does the user live?")
    browser.find_element(By.ID, "apply").click()
    wait_for(browser, "#hits")
    (munich,) = [h for h in browser.find_elements(By.CSS_SELECTOR, "tr.hit") if "Munich" in h.text]
    parts = [td.get_attribute("data-label") for td in munich.find_elements(By.CSS_SELECTOR, "td")]
    assert parts[2:7] == ["Score", "Relevance", "Similarity", "Lexical", "Recency"]
    assert float(munich.find_element(By.CSS_SELECTOR, "td.score").text) > 0
    shot(browser, "search")


def test_history_of_a_corrected_fact(browser: WebDriver, seeded: Seeded) -> None:
    sign_in(browser, seeded, ALICE)
    browser.find_element(By.CSS_SELECTOR, f'tr[data-id="{seeded.new_city}"] a').click()
    wait_for(browser, "#history")
    older = browser.find_element(By.CSS_SELECTOR, "#history li.supersedes")
    assert "I live in Berlin." in older.text
    shot(browser, "history-new")
    older.find_element(By.TAG_NAME, "a").click()
    wait_for(browser, "#superseded-by")
    assert "I moved to Munich" in browser.find_element(By.ID, "superseded-by").text
    assert browser.find_element(By.CSS_SELECTOR, ".badge").text == "superseded"
    shot(browser, "history-old")


def test_quarantine_review_accepts_the_held_memory(browser: WebDriver, seeded: Seeded) -> None:
    sign_in(browser, seeded, ALICE)
    browser.find_element(By.LINK_TEXT, "Review").click()
    wait_for(browser, ".quarantined")
    held = browser.find_element(By.CSS_SELECTOR, f'.quarantined[data-id="{seeded.held_allergy}"]')
    assert "I am no longer allergic to peanuts." in held.text and "I am allergic to peanuts." in held.text
    shot(browser, "review")
    held.find_element(By.ID, "accept").click()
    wait_for(browser, "#message")
    assert "Accepted" in browser.find_element(By.ID, "message").text
    assert browser.find_element(By.CSS_SELECTOR, ".badge").text == "active"
    assert "I am allergic to peanuts." in browser.find_element(By.ID, "history").text
    browser.get(f"{seeded.base}/ui/review")
    wait_for(browser, "#empty")


def test_forget_then_restore(browser: WebDriver, seeded: Seeded) -> None:
    sign_in(browser, seeded, ALICE)
    browser.get(f"{seeded.base}/ui/memory/{seeded.dentist}")
    wait_for(browser, "#forget")
    browser.find_element(By.ID, "forget").click()
    wait_for(browser, "#message")
    assert "Forgotten" in browser.find_element(By.ID, "message").text
    shot(browser, "forgotten")
    browser.get(f"{seeded.base}/ui")
    wait_for(browser, "#totals")
    assert not any("Dentist" in r for r in rows(browser))
    browser.get(f"{seeded.base}/ui/memory/{seeded.dentist}")
    browser.find_element(By.ID, "restore").click()
    wait_for(browser, "#message")
    assert "Restored" in browser.find_element(By.ID, "message").text


def test_export_downloads_the_namespace_as_json(browser: WebDriver, seeded: Seeded) -> None:
    sign_in(browser, seeded, ALICE)
    href = browser.find_element(By.ID, "export").get_attribute("href")
    assert href == f"{seeded.base}/ui/export.json"
    text = browser.execute_async_script(
        "const done = arguments[arguments.length - 1];"
        "fetch(arguments[0], {credentials: 'same-origin'}).then(r => r.text()).then(done);",
        href,
    )
    data = json.loads(text)
    assert data["namespace"] == "alice" and any(r["content"] == "I live in Berlin." for r in data["records"])


def test_another_namespaces_token_sees_none_of_it(browser: WebDriver, seeded: Seeded) -> None:
    sign_in(browser, seeded, BOB)
    assert browser.find_element(By.ID, "namespace").text == "bob"
    listed = rows(browser)
    assert len(listed) == 1 and "locker code" in listed[0]
    browser.get(f"{seeded.base}/ui/memory/{seeded.new_city}")
    wait_for(browser, "#error")
    assert "Munich" not in browser.page_source
    browser.get(f"{seeded.base}/ui/sessions")
    wait_for(browser, "#empty")
    shot(browser, "other-namespace")


@pytest.mark.parametrize("size", [WIDE, NARROW], ids=["1280x800", "390px"])
def test_pages_fit_the_screen_without_horizontal_scrolling(browser: WebDriver, seeded: Seeded, size) -> None:
    sign_in(browser, seeded, ALICE)
    viewport(browser, size)
    pages = {
        "list": "/ui",
        "search": "/ui?q=peanuts",
        "memory": f"/ui/memory/{seeded.new_city}",
        "review": "/ui/review",
        "sessions": f"/ui/sessions/{SESSION}",
    }
    for name, path in pages.items():
        browser.get(f"{seeded.base}{path}")
        wait_for(browser, "main h1")
        overflow = browser.execute_script(
            "return document.documentElement.scrollWidth - document.documentElement.clientWidth;"
        )
        assert browser.execute_script("return window.innerWidth;") == size[0]
        shot(browser, f"{name}-{size[0]}")
        assert overflow == 0, f"{path} overflows {size[0]} px by {overflow} px"
    viewport(browser, WIDE)
