"""The explorer page in Debian's headless Chromium (selenium + chromium-driver): type a question, pick a mode, run
it, and check the rendered passages and the drawn subgraph. ``PRISM_SCREENSHOT=path.png`` keeps a screenshot."""

from __future__ import annotations

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
