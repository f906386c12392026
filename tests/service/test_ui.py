"""The web page (``service/routers/ui.py``, ``service/static/``).

Over plain HTTP: ``GET /ui`` and ``GET /`` for a browser give the page, other clients keep TEI's
405 on ``GET /`` and ``POST /`` still embeds; the page loads nothing from elsewhere.

In a real browser (headless Chromium driven by Selenium, against real servers): with the shipped
models and an API key, the page asks for the key, translates a sentence typed into it (the same
translation, alternatives and detected language as the model called directly), swaps the
languages, copies to the clipboard and ranks sentences by cosine similarity as the encoder called
directly does; on a slow server with small limits it shows readable 429 (with the retry time from
``Retry-After``) and 413 (with the limit) errors.  Without Chromium and chromedriver these tests
skip, except in CI (``CI=true``), where that is a failure: ``scripts/test.sh`` installs them.
``RENDITION_UI_SCREENSHOT=docs/ui.png`` saves the screenshot the README shows.
"""

from __future__ import annotations

import os
import re
import shutil
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest
from bs4 import BeautifulSoup

from rendition.model.embedding.encoder import DEFAULT_ENCODER, SentenceEncoder
from rendition.model.translation.translator import DEFAULT_TRANSLATOR, Translator

BROWSER_ACCEPT = "text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,image/webp,*/*;q=0.8"
EN = "This package contains the development files of the library."
KEY = "ui-test-key"


@pytest.fixture(scope="module")
def plain(start_server):
    """Random models, no keys: the HTTP checks."""
    return start_server()


# -- over HTTP --------------------------------------------------------------------------------------


def test_the_page_at_ui_and_at_root_for_a_browser(plain):
    page = plain.http.get("/ui")
    assert page.status_code == 200 and page.headers["content-type"] == "text/html; charset=utf-8"
    assert "<title>Rendition</title>" in page.text
    assert "script-src 'self'" in page.headers["content-security-policy"]
    root = plain.http.get("/", headers={"Accept": BROWSER_ACCEPT})
    assert root.status_code == 200 and root.text == page.text and root.headers["vary"] == "Accept"
    for name, kind in (("app.js", "text/javascript"), ("style.css", "text/css")):
        r = plain.http.get(f"/ui/{name}")
        assert r.status_code == 200 and r.headers["content-type"].startswith(kind) and len(r.content) > 1000
    for bad in ("/ui/index.htm", "/ui/..%2Fsettings.py", "/ui/%2e%2e%2f__init__.py"):
        assert plain.http.get(bad).status_code == 404, bad


def test_root_keeps_its_api_answers(plain):
    # a JSON client (or curl's */*) gets the 405 GET / has always answered, in TEI's error shape
    for accept in ("*/*", "application/json", "application/json, text/html;q=0.5", ""):
        r = plain.http.get("/", headers={"Accept": accept})
        assert r.status_code == 405, accept
        assert r.json() == {"error": "Method Not Allowed", "error_type": "Validation"}
        assert r.headers["allow"] == "POST"
    # TEI's POST / embeds, whatever the client accepts
    r = plain.http.post("/", json={"inputs": "Hello"}, headers={"Accept": BROWSER_ACCEPT})
    assert r.status_code == 200 and len(r.json()[0]) == 48
    assert "/ui" not in plain.http.get("/openapi.json").json()["paths"]


def test_the_page_needs_no_key_and_the_api_still_does(start_server):
    srv = start_server(api_keys=KEY)
    assert srv.http.get("/ui").status_code == 200
    assert srv.http.get("/", headers={"Accept": BROWSER_ACCEPT}).status_code == 200
    assert srv.http.get("/frontend/settings").json()["keyRequired"] is True
    assert srv.http.get("/", headers={"Accept": "*/*"}).status_code == 401  # as before the page existed
    assert srv.http.post("/", json={"inputs": "Hello"}, headers={"Accept": BROWSER_ACCEPT}).status_code == 401
    r = srv.http.post("/", json={"inputs": "Hello"}, headers={"Authorization": f"Bearer {KEY}"})
    assert r.status_code == 200


def test_the_page_loads_nothing_from_elsewhere(plain):
    soup = BeautifulSoup(plain.http.get("/ui").text, "html.parser")
    urls = [t.get("src") or t.get("href") for t in soup.find_all(["script", "link", "a", "img"])]
    assert urls and all(u and not re.match(r"^([a-z]+:)?//", u) for u in urls), urls
    assert {u for u in urls if ":" in u} <= {"data:,"}
    js = plain.http.get("/ui/app.js").text + plain.http.get("/ui/style.css").text
    assert not re.search(r"https?://|@import|url\(", js)


# -- in a browser -----------------------------------------------------------------------------------


def _find_browser() -> tuple[str, str] | None:
    binary = next((p for n in ("chromium", "chromium-browser", "google-chrome") if (p := shutil.which(n))), None)
    driver = shutil.which("chromedriver")
    return (binary, driver) if binary and driver else None


@pytest.fixture(scope="module")
def browser():
    """Headless Chromium; missing is a skip, but a failure in CI."""
    found = _find_browser()
    try:
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service
    except ImportError:
        found = None
    if found is None:
        msg = "the browser tests need selenium (test extra), chromium and chromium-driver (apt; scripts/test.sh installs them)"
        if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
            pytest.fail(msg)
        pytest.skip(msg)
    options = webdriver.ChromeOptions()
    options.binary_location = found[0]
    for arg in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu", "--window-size=1100,900",
                "--lang=en-US", "--no-first-run", "--disable-extensions"):
        options.add_argument(arg)
    driver = webdriver.Chrome(service=Service(executable_path=found[1]), options=options)  # no Selenium Manager download
    driver.set_page_load_timeout(60)
    yield driver
    driver.quit()


def _wait(cond, timeout: float = 60.0, what: str = "condition"):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = cond()
        if value:
            return value
        time.sleep(0.05)
    raise TimeoutError(f"timed out waiting for {what}")


class Page:
    """The page open in the browser, by element id."""

    def __init__(self, driver, url: str):
        from selenium.webdriver.common.by import By

        self.driver, self.by = driver, By
        driver.get(url)
        _wait(lambda: driver.execute_script("return document.body.dataset.ready === 'true'"), what="the page to be ready")

    def el(self, id_: str):
        return self.driver.find_element(self.by.ID, id_)

    def value(self, id_: str) -> str:
        return self.el(id_).get_attribute("value")

    def text(self, id_: str) -> str:
        return self.el(id_).text

    def shown(self, id_: str) -> bool:
        return self.el(id_).is_displayed()

    def set_text(self, id_: str, value: str) -> None:
        """A long value at once, as a paste would (send_keys types it a key at a time)."""
        self.driver.execute_script(
            "const el = document.getElementById(arguments[0]); el.value = arguments[1];"
            "el.dispatchEvent(new Event('input', {bubbles: true}));",
            id_,
            value,
        )

    def wait_text(self, id_: str, what: str) -> str:
        return _wait(lambda: self.shown(id_) and self.text(id_), what=what)


@pytest.fixture(scope="module")
def shipped_server(start_server):
    return start_server(translator_path=DEFAULT_TRANSLATOR, encoder_path=DEFAULT_ENCODER, api_keys=KEY,
                        default_beam_size=2, default_max_length=256, truncate_translations=0)


@pytest.mark.slow
def test_translate_swap_copy_and_compare_in_a_browser(browser, shipped_server, tmp_path):
    from selenium.webdriver.common.keys import Keys

    page = Page(browser, shipped_server.url + "/")  # the browser's Accept header gets the page at /
    assert browser.title == "Rendition"
    assert page.text("status") == "Ready: translation and embeddings."
    assert page.shown("key-section") and page.shown("file-section")  # keys configured; file translation offered
    assert [o.get_attribute("value") for o in page.el("source").find_elements(page.by.TAG_NAME, "option")] == ["auto", "en", "fr"]
    assert page.value("source") == "auto" and page.value("target") == "fr"

    page.el("text").send_keys(EN)
    assert page.text("counter") == f"{len(EN)} / 4,000 characters"
    page.el("translate-button").click()  # no key yet: a readable 403
    assert "needs an API key" in page.wait_text("translate-error", "the missing-key error")
    assert browser.switch_to.active_element == page.el("api-key")  # the key field has the focus

    page.el("api-key").send_keys(KEY)
    page.el("text").send_keys(Keys.CONTROL, Keys.ENTER)  # the keyboard shortcut
    got = _wait(lambda: page.value("translation"), what="the translation")
    assert not page.shown("translate-error")
    shipped = Translator.from_pretrained(device="cpu")
    # the page asks for 2 alternatives: LibreTranslate's route searches with a beam of 3 for 3 hypotheses
    nbest = [h for h, _ in shipped.translate([EN], "en", "fr", beam_size=3, num_hypotheses=3)[0].hypotheses]
    assert got == nbest[0]
    alternatives = [li.text for li in page.el("alternatives").find_elements(page.by.TAG_NAME, "li")]
    assert alternatives == list(dict.fromkeys(h for h in nbest[1:] if h != nbest[0]))
    assert page.text("detected").startswith("Detected: English (")

    page.el("copy").click()  # the clipboard holds the translation: paste it into the query field
    assert page.wait_text("copied", "the copy") == "Copied."
    page.el("query").clear()
    page.el("query").send_keys(Keys.CONTROL, "v")
    assert page.value("query") == got

    page.el("swap").click()
    assert (page.value("source"), page.value("target"), page.value("text")) == ("fr", "en", got)
    assert page.value("translation") == "" and page.text("counter") == f"{len(got)} / 4,000 characters"

    query = "How do I change my password?"
    page.el("query").clear()
    page.el("query").send_keys(query)
    page.el("embed-button").click()
    rows = _wait(lambda: page.el("similarities").find_elements(page.by.TAG_NAME, "li"), what="the similarities")
    sentences = [s for s in page.value("sentences").split("\n") if s.strip()]
    vecs = SentenceEncoder.from_pretrained(device="cpu").encode([query, *sentences])
    cos = vecs[1:] @ vecs[0] / np.linalg.norm(vecs[1:], axis=1) / np.linalg.norm(vecs[0])
    order = np.argsort(-cos, kind="stable")
    shown = [(float(r.find_element(page.by.CLASS_NAME, "score").text), r.find_element(page.by.CLASS_NAME, "sentence").text) for r in rows]
    assert [s for _, s in shown] == [sentences[i] for i in order]
    np.testing.assert_allclose([c for c, _ in shown], cos[order], atol=1e-3)
    assert not page.shown("embed-error")

    # the screenshot the README shows: the first sentence again, its language detected
    from selenium.webdriver.support.ui import Select

    Select(page.el("source")).select_by_value("auto")
    Select(page.el("target")).select_by_value("fr")
    page.set_text("text", EN)
    page.el("translate-button").click()
    assert _wait(lambda: page.value("translation"), what="the translation") == got
    height = browser.execute_script("return document.documentElement.scrollHeight")
    browser.set_window_size(1100, height + 200)
    browser.execute_script("window.scrollTo(0, 0)")
    shot = tmp_path / "ui.png"
    assert browser.save_screenshot(str(shot)) and shot.stat().st_size > 10_000
    if target := os.environ.get("RENDITION_UI_SCREENSHOT"):
        shutil.copyfile(shot, Path(target))

    # a file through the page: uploaded from the file input, translated, and its link downloads it
    upload = tmp_path / "notes.txt"
    upload.write_text(f"{EN}\n", encoding="utf-8")
    page.el("file").send_keys(str(upload))
    page.el("file-button").click()
    link = _wait(lambda: page.el("file-result").find_elements(page.by.TAG_NAME, "a"), what="the download link")[0]
    assert not page.shown("file-error")
    href = link.get_attribute("href")
    assert href.startswith(shipped_server.url + "/download_file/")
    expected = shipped.translate([EN], "en", "fr", beam_size=2, max_length=256)[0].text  # the file route's defaults
    assert shipped_server.http.get(href).content.decode("utf-8") == f"{expected}\n"


@pytest.mark.slow
def test_readable_errors_in_a_browser(browser, start_server):
    # random models; a sentence runs for >= 3 s, one at a time; one running and one queued fill the queue
    srv = start_server(max_queue=1, max_items=1, max_batch_size=1, batch_delay_ms=3000, translation_workers=1, max_body_bytes=2048)
    page = Page(browser, srv.url + "/ui")
    assert not page.shown("key-section")  # no keys configured

    page.set_text("text", "a" * 3000)  # over the body limit, under the character limit
    assert page.text("counter") == "3,000 / 4,000 characters"
    page.el("translate-button").click()
    assert page.wait_text("translate-error", "the 413") == (
        "Error 400: request body larger than the limit of 2048 bytes (RENDITION_MAX_BODY_BYTES)"
    )  # LibreTranslate's routes answer 400 for it
    page.set_text("query", "b" * 3000)
    page.el("embed-button").click()
    assert page.wait_text("embed-error", "the 413") == (
        "Too large: request body larger than the limit of 2048 bytes (RENDITION_MAX_BODY_BYTES)."
    )
    page.set_text("text", "a" * 4001)
    assert page.text("counter") == "4,001 / 4,000 characters (over the limit)"

    body = {"q": "Hello.", "source": "en", "target": "fr"}
    n0 = srv.sample("rendition_queue_wait_seconds", "_count", model="translator")
    with ThreadPoolExecutor(2) as pool:
        running = pool.submit(srv.http.post, "/translate", json=body)  # leaves the queue, then runs for >= 3 s
        _wait(lambda: srv.sample("rendition_queue_wait_seconds", "_count", model="translator") > n0, what="a sentence to run")
        queued = pool.submit(srv.http.post, "/translate", json=body)
        _wait(lambda: srv.sample("rendition_queue_depth", model="translator") >= 1, what="the queue to fill")
        page.set_text("text", "Hello.")
        page.el("translate-button").click()
        message = page.wait_text("translate-error", "the 429")
        assert re.fullmatch(r"The server is busy \(.+\)\. Try again in \d+ s\.", message), message
        assert running.result().status_code == 200 and queued.result().status_code == 200
    page.el("translate-button").click()  # the queue is free again: the error goes
    _wait(lambda: page.value("translation") and not page.shown("translate-error"), what="the translation")
