"""The page of `kgdb serve` in a real headless Chromium over the real service and the default data: a
question typed and sent shows its answers, their evidence lines and the evidence drawn as a graph; the
page's Neo4j Browser link opens Browser on the test server with the run's query in the editor, and after
signing in through Browser's own form, running that query draws the same evidence there. Errors of the
API are shown as they come, and text from the server is never read as HTML.
"""

from __future__ import annotations

import re
from urllib.parse import urlsplit

import pytest
from selenium.common.exceptions import TimeoutException
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.support import expected_conditions as ec
from selenium.webdriver.support.ui import WebDriverWait

QUESTION = "What is the capital of France?"
ASK_S = 600  # the first question loads the models on a shared CPU
BROWSER_S = 120


def ask(driver, base: str, question: str, **options: str) -> None:
    """Open the page, fill in the question (and any option by its field id), send it with Enter, and wait
    until the answer or an error is shown."""
    driver.get(base + "/")
    if options:
        driver.find_element(By.CSS_SELECTOR, ".options summary").click()
    for name, value in options.items():
        field = driver.find_element(By.ID, name)
        field.clear()
        field.send_keys(value)
    box = driver.find_element(By.ID, "question")
    box.send_keys(question)
    box.send_keys(Keys.ENTER)
    WebDriverWait(driver, ASK_S).until(
        lambda d: d.find_element(By.ID, "result").is_displayed() or d.find_element(By.ID, "error").is_displayed()
    )


def page_errors(driver, base: str) -> list[str]:
    """What the page's own origin logged as an error: a script failure or a Content-Security-Policy refusal."""
    return [e["message"] for e in driver.get_log("browser") if e["level"] == "SEVERE" and base in e["message"]]


def test_the_page_answers_with_evidence_and_opens_it_in_neo4j_browser(service, chrome, default_data, artefacts):
    ask(chrome, service, QUESTION)
    error = chrome.find_element(By.ID, "error")
    assert not error.is_displayed(), error.text

    answers = chrome.find_elements(By.CSS_SELECTOR, "#answers > li")
    names = [a.find_element(By.CLASS_NAME, "answer-name").text for a in answers]
    assert "Paris" in names, names
    paris = answers[names.index("Paris")]
    lines = [li.text for li in paris.find_elements(By.CSS_SELECTOR, ".evidence li")]
    assert any("Paris" in line and "France" in line for line in lines), lines
    # the answer model's confidence, per answer and for the question
    assert re.fullmatch(r"confidence 0\.\d\d", paris.find_element(By.CLASS_NAME, "confidence").text)
    assert re.search(r"(not sure: )?confidence 0\.\d\d", chrome.find_element(By.ID, "result-meta").text)

    # Cytoscape draws on canvases; what it drew is read back through the page's hook.
    assert chrome.find_elements(By.CSS_SELECTOR, "#graph canvas")
    drawn = chrome.execute_script("return window.kgdbPage.graph()")
    roles = {n["name"]: n["role"] for n in drawn["nodes"]}
    assert roles.get("Paris") == "answer" and roles.get("France") == "topic", roles
    assert drawn["edges"] and all(e["relation"] for e in drawn["edges"]), drawn
    assert not page_errors(chrome, service)
    chrome.save_screenshot(str(artefacts / "page-ask.png"))

    link = chrome.find_element(By.ID, "browser-link")
    assert link.is_displayed() and link.text == "Open in Neo4j Browser"
    url = link.get_attribute("href")
    password = default_data.neo4j_password.get_secret_value()
    assert password not in url
    where = urlsplit(url)
    assert where.port == default_data.neo4j_http_port and where.path.startswith("/browser"), url

    open_in_neo4j_browser(chrome, url, password)
    chrome.save_screenshot(str(artefacts / "browser-evidence.png"))


def open_in_neo4j_browser(driver, url: str, password: str) -> None:
    """Follow the link, sign in through Browser's connect form, run what the link put in the editor, and
    wait until the result frame draws France and Paris."""
    driver.get(url)
    password_box = browser_until(
        driver, "the connect form", ec.element_to_be_clickable((By.CSS_SELECTOR, "[data-testid='password']"))
    )
    user = driver.find_element(By.CSS_SELECTOR, "[data-testid='username']")
    if user.get_attribute("value") != "neo4j":
        user.clear()
        user.send_keys("neo4j")
    password_box.send_keys(password)
    driver.find_element(By.CSS_SELECTOR, "[data-testid='connect']").click()
    browser_until(
        driver,
        "signing in",
        lambda d: "You are connected" in d.find_element(By.CSS_SELECTOR, "[data-testid='stream']").text,
    )
    editor = driver.find_element(By.CSS_SELECTOR, "[data-testid='activeEditor']")
    assert "MATCH" in editor.text, editor.text  # the link's query is in the editor, not yet run
    driver.find_element(By.CSS_SELECTOR, "[data-testid='editor-Run']").click()

    def drawn(d) -> bool:
        captions = {t.text for t in d.find_elements(By.CSS_SELECTOR, "[data-testid='frame'] svg text")}
        return {"Paris", "France"} <= captions

    browser_until(driver, "France and Paris drawn by the query of the editor", drawn)


def browser_until(driver, what: str, condition):
    """Wait for `condition` in Neo4j Browser; if it does not come, fail saying what Browser shows."""
    try:
        return WebDriverWait(driver, BROWSER_S).until(condition)
    except TimeoutException:
        frames = [
            f.text.replace("\n", " | ")[:400] for f in driver.find_elements(By.CSS_SELECTOR, "[data-testid='frame']")
        ]
        pytest.fail(f"Neo4j Browser at {driver.current_url}: no {what} within {BROWSER_S} s; its frames: {frames}")


def test_an_error_of_the_api_is_shown_as_its_message(service, chrome):
    ask(chrome, service, QUESTION, k="0")  # the page leaves checking it to the API
    error = chrome.find_element(By.ID, "error")
    assert error.is_displayed() and not chrome.find_element(By.ID, "result").is_displayed()
    assert error.text.startswith("k: ") and "1" in error.text, error.text  # the API's message, as it is


def test_text_from_the_server_is_shown_as_text_never_as_html(service, chrome):
    hostile = '<img src=x onerror="window.injected=1">What is the capital of France?'
    ask(chrome, service, hostile)
    assert chrome.find_element(By.ID, "result-question").text == hostile
    assert not chrome.find_elements(By.CSS_SELECTOR, "#result img")
    assert chrome.execute_script("return window.injected") is None
