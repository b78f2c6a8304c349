"""The explorer page and LightRAG's own WebUI in Debian's headless Chromium (selenium + chromium-driver): type a
question, pick a mode, run it, and check the rendered passages (and the explorer's drawn subgraph).
``PRISM_SCREENSHOT=path.png`` keeps a screenshot of the explorer."""

from __future__ import annotations

import json
import os
import shutil

import httpx
import pytest

from tests.scripted_server import ScriptedServer
from tests.server.support import running_server, server_env, wait_processed
from tests.server.test_server_http import QUESTION, SOURCES, TEXTS

CHROMIUM, CHROMEDRIVER = shutil.which("chromium"), shutil.which("chromedriver")
INSTALL_HINT = ("the browser test needs Debian's chromium and chromium-driver: "
                "apt-get install -y chromium chromium-driver")


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    scripted = ScriptedServer().start()
    root = tmp_path_factory.mktemp("serve_browser")
    try:
        with running_server(root, server_env(scripted, llm=False)) as base:
            with httpx.Client(base_url=base, timeout=60) as client:
                reply = client.post("/documents/texts", json={"texts": TEXTS, "file_sources": SOURCES})
                assert reply.status_code == 200, reply.text
                wait_processed(client, len(TEXTS))
            yield base
    finally:
        scripted.stop()


@pytest.fixture(scope="module")
def browser():
    assert CHROMIUM and CHROMEDRIVER, INSTALL_HINT
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                 "--window-size=1280,1400"):
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"performance": "ALL"})  # the requests a page sent
    driver = webdriver.Chrome(service=Service(executable_path=CHROMEDRIVER), options=options)
    yield driver
    driver.quit()


def test_explorer_runs_a_query_and_draws_the_evidence(site, browser, tmp_path):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select, WebDriverWait

    browser.get(f"{site}/prism")
    wait = WebDriverWait(browser, 60)
    wait.until(lambda d: d.find_element(By.TAG_NAME, "body").get_attribute("data-state") == "ready")
    assert "no LLM" in browser.find_element(By.ID, "llm-status").text
    modes = [o.get_attribute("value") for o in Select(browser.find_element(By.ID, "mode")).options]
    assert {"prism", "hipporag", "fidelis", "ensemble", "tournament", "mix"} <= set(modes)

    browser.find_element(By.ID, "query").send_keys(QUESTION)
    Select(browser.find_element(By.ID, "mode")).select_by_value("hipporag")
    browser.find_element(By.ID, "chunk_top_k").send_keys("3")
    browser.find_element(By.ID, "run").click()
    wait.until(lambda d: d.find_element(By.TAG_NAME, "body").get_attribute("data-state") in ("done", "error"))
    assert browser.find_element(By.TAG_NAME, "body").get_attribute("data-state") == "done", \
        browser.find_element(By.ID, "status").text

    passages = browser.find_elements(By.CSS_SELECTOR, "#passages li.passage")
    assert len(passages) == 3  # chunk_top_k from the form reached the server
    text = " ".join(p.text for p in passages)
    assert "olvide_birth.txt" in text and "vexholm.txt" in text
    assert all(p.find_element(By.CSS_SELECTOR, ".score").text for p in passages)
    assert {p.find_element(By.CSS_SELECTOR, ".citation").text for p in passages} <= set(SOURCES)  # no pages there
    labelled = browser.execute_script(  # how a passage with pages and a section is labelled
        'return citationLabel({citation: {file: "m.pdf", pages: [2, 3], section: "A > B"}})')
    assert labelled == "m.pdf p. 2–3 § A > B"
    assert browser.find_elements(By.CSS_SELECTOR, "#passages .badge")  # found_by badges
    assert browser.find_elements(By.CSS_SELECTOR, "#seeds li")
    assert any("born in" in li.text for li in browser.find_elements(By.CSS_SELECTOR, "#paths li"))  # a fact
    for kind in ("seed", "entity", "passage"):
        assert browser.find_elements(By.CSS_SELECTOR, f"#graph svg circle.node.{kind}"), kind
    assert browser.find_elements(By.CSS_SELECTOR, "#graph svg path.edge")
    labels = [t.text for t in browser.find_elements(By.CSS_SELECTOR, "#graph svg text.label")]
    assert any("Marta Olvide" in label for label in labels)

    shot = os.environ.get("PRISM_SCREENSHOT") or str(tmp_path / "explorer.png")
    assert browser.save_screenshot(shot)


def test_explorer_shows_a_validation_error(site, browser):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    browser.get(f"{site}/prism?q=hi&mode=prism&run=1")  # too short for a RAG query
    WebDriverWait(browser, 60).until(
        lambda d: d.find_element(By.TAG_NAME, "body").get_attribute("data-state") in ("done", "error"))
    assert browser.find_element(By.ID, "status").text.startswith("Error 422")



def sent_queries(browser) -> list[dict]:
    """The JSON bodies of the page's POSTs to /query and /query/stream (Chromium's network log)."""
    bodies = []
    for entry in browser.get_log("performance"):
        message = json.loads(entry["message"])["message"]
        request = message.get("params", {}).get("request", {})
        if message["method"] == "Network.requestWillBeSent" and request.get("url", "").split("?")[0].endswith(
                ("/query", "/query/stream")):
            bodies.append(json.loads(request.get("postData") or "{}"))
    return bodies


def test_the_stock_webui_runs_a_plugin_mode_from_its_query_box(site, browser):
    """LightRAG's own WebUI, retrieval page: "/prism ..." typed in its query box runs prism and shows its passages
    (the WebUI parses the prefix itself against a compiled list, which ``server/webui.py`` extends), and its mode
    selector lists the plugin's modes."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys
    from selenium.webdriver.support.ui import WebDriverWait

    browser.get(f"{site}/webui/")
    wait = WebDriverWait(browser, 60)
    tab = wait.until(lambda d: d.find_element(By.XPATH, "//button[normalize-space(text())='Retrieval']"))
    tab.click()
    box = wait.until(lambda d: d.find_element(By.ID, "query-input"))
    browser.get_log("performance")  # drop what loading the page logged
    box.send_keys(f"/prism {QUESTION}", Keys.ENTER)
    body = lambda d: d.find_element(By.TAG_NAME, "body").text  # noqa: E731
    wait.until(lambda d: "Response time" in body(d) or "Only supports" in body(d))
    page = body(browser)
    assert "Only supports" not in page  # the WebUI did not refuse the prefix
    assert [(q.get("mode"), q.get("query")) for q in sent_queries(browser)] == [("prism", QUESTION)]
    for name in SOURCES:  # prism's context: the three passages, by file
        assert name in page, page

    browser.find_element(By.ID, "query_mode_select").click()
    options = [o.text for o in wait.until(lambda d: d.find_elements(By.CSS_SELECTOR, "[role=option]"))]
    assert {"prism", "hipporag", "fidelis", "ensemble", "tournament", "Mix"} <= set(options), options
