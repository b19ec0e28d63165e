"""The coders' page in a real browser: Debian's chromium, headless, driven by selenium through chromedriver.

Nothing is downloaded: the system chromium and chromedriver are named explicitly and Selenium Manager runs
offline. `make test` runs these where /usr/bin/chromium exists (`.ci/run` installs it); `make test-browser` runs
them alone.
"""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path

import pytest
from api_server import running_app  # tests/ is on sys.path: rootdir conftest, no __init__.py

from medrag.serve.app import create_app

CHROMIUM = Path(os.environ.get("MEDRAG_CHROMIUM", "/usr/bin/chromium"))
IMAGES = Path(__file__).resolve().parents[1] / "docs" / "images"
CHROMEDRIVER = Path(os.environ.get("MEDRAG_CHROMEDRIVER", "/usr/bin/chromedriver"))
WAIT_S = 120
# Sums the layout shifts not caused by the user's own input (Chromium's Layout Instability API).
WATCH_LAYOUT_SHIFT = """
window.__shift = 0;
new PerformanceObserver((list) => {
  for (const entry of list.getEntries()) if (!entry.hadRecentInput) window.__shift += entry.value;
}).observe({type: "layout-shift", buffered: true});
"""

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def page_url(indexed_engine, indexed_settings):
    # indexed_engine fills the database: `make test-browser` runs these tests alone, with no other test before them
    settings = dataclasses.replace(indexed_settings, vllm_base_url=None, api_token=None, api_rate=0)
    with running_app(create_app(settings)) as base_url:
        yield base_url


@pytest.fixture(scope="module")
def browser(tmp_path_factory):
    if not CHROMIUM.exists() or not CHROMEDRIVER.exists():
        pytest.fail(f"browser tests need Debian's chromium and chromium-driver ({CHROMIUM}, {CHROMEDRIVER}): "
                    "apt-get install chromium chromium-driver")
    os.environ["SE_OFFLINE"] = "true"  # Selenium Manager must never fetch a browser or driver
    from selenium import webdriver
    from selenium.webdriver.chrome.options import Options
    from selenium.webdriver.chrome.service import Service

    options = Options()
    options.binary_location = str(CHROMIUM)
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync",
                 "--disable-dev-shm-usage", f"--user-data-dir={tmp_path_factory.mktemp('chromium-profile')}"):
        options.add_argument(flag)
    driver = webdriver.Chrome(service=Service(str(CHROMEDRIVER)), options=options)
    yield driver
    driver.quit()


def _wait(driver, condition):
    from selenium.webdriver.support.ui import WebDriverWait

    return WebDriverWait(driver, WAIT_S).until(condition)


def screenshot(driver, folder: Path, name: str) -> Path:
    """Save the window as folder/name, and as docs/images/name too when MEDRAG_SCREENSHOTS=1 (the guides' pictures:
    `MEDRAG_SCREENSHOTS=1 make test-browser`); a real picture is tens of kilobytes."""
    path = folder / name
    driver.save_screenshot(str(path))
    assert path.stat().st_size > 10_000, name
    if os.environ.get("MEDRAG_SCREENSHOTS") == "1":
        (IMAGES / name).write_bytes(path.read_bytes())
    return path


def _no_horizontal_scroll(driver) -> bool:
    return driver.execute_script("return document.documentElement.scrollWidth <= window.innerWidth")


def test_a_coder_asks_follows_a_citation_and_looks_up_codes(browser, page_url, tmp_path):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys

    browser.set_window_size(1280, 900)
    browser.get(page_url)
    browser.execute_script(WATCH_LAYOUT_SHIFT)
    question = browser.find_element(By.ID, "question")
    question.send_keys("Who qualifies for home oxygen therapy?", Keys.ENTER)
    _wait(browser, lambda d: d.find_elements(By.CSS_SELECTOR, "#sources li"))
    sentences = browser.find_elements(By.CSS_SELECTOR, "#answer p")
    assert sentences and all(p.find_elements(By.CSS_SELECTOR, "a.cite") for p in sentences)
    # Every inline number links to its entry in the source list; one of them is NCD 240.2.
    targets = {a.get_attribute("href").rsplit("#", 1)[1] for a in browser.find_elements(By.CSS_SELECTOR, "a.cite")}
    cited = {target: browser.find_element(By.ID, target).text for target in targets}
    ncd = [target for target, text in cited.items() if text.startswith("NCD 240.2")]
    assert ncd, cited
    entry = browser.find_element(By.ID, ncd[0])
    assert "national" in entry.text and "Release" in entry.text
    assert entry.find_element(By.LINK_TEXT, "Read it at CMS").get_attribute("href").startswith("https://www.cms.gov")
    browser.find_element(By.CSS_SELECTOR, f'a.cite[href="#{ncd[0]}"]').click()
    assert browser.execute_script("return location.hash") == f"#{ncd[0]}"
    assert browser.execute_script("return window.__shift") < 0.1  # the answer arrived without moving the page
    assert _no_horizontal_scroll(browser)
    screenshot(browser, tmp_path, "ask-1280.png")

    # Keyboard only: from the Ask tab, the right arrow opens Codes and puts the cursor in its box.
    browser.find_element(By.ID, "tab-ask").send_keys(Keys.ARROW_RIGHT)
    assert browser.find_element(By.ID, "tab-codes").get_attribute("aria-selected") == "true"
    browser.switch_to.active_element.send_keys("cpap machine", Keys.ENTER)
    card = _wait(browser, lambda d: d.find_elements(By.CSS_SELECTOR, '.code[data-code="E0601"]'))[0]
    assert card.find_elements(By.CSS_SELECTOR, 'li[data-lcd="L33718"]')
    assert "high" in card.find_element(By.CSS_SELECTOR, ".tier").text
    screenshot(browser, tmp_path, "codes-1280.png")

    browser.set_window_size(400, 860)
    assert _no_horizontal_scroll(browser)
    screenshot(browser, tmp_path, "codes-400.png")
    browser.find_element(By.ID, "tab-ask").click()
    assert _no_horizontal_scroll(browser)
    screenshot(browser, tmp_path, "ask-400.png")


def test_search_tab_and_a_refusal_read_as_such(browser, page_url):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys

    browser.set_window_size(1280, 900)
    browser.get(page_url)
    browser.find_element(By.ID, "tab-search").click()
    browser.find_element(By.ID, "query").send_keys("NCD 240.2", Keys.ENTER)
    first = _wait(browser, lambda d: d.find_elements(By.CSS_SELECTOR, "#hits li"))[0]
    assert first.text.startswith("NCD 240.2")
    browser.find_element(By.ID, "tab-ask").click()
    browser.find_element(By.ID, "question").send_keys("asdf qwerty zxcv uiop", Keys.ENTER)
    refusal = _wait(browser, lambda d: d.find_elements(By.CSS_SELECTOR, "#answer .refusal"))[0]
    assert refusal.text.startswith("No answer:") and "insufficient_evidence" in refusal.text
    assert not browser.find_elements(By.CSS_SELECTOR, "#sources li")


def test_a_coder_checks_a_claim_line(browser, page_url, tmp_path):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys

    browser.set_window_size(1280, 900)
    browser.get(page_url)
    browser.find_element(By.ID, "tab-search").send_keys(Keys.ARROW_RIGHT)
    assert browser.find_element(By.ID, "tab-check").get_attribute("aria-selected") == "true"
    # a date field takes the date as the browser's locale writes it; set it as the form would submit it
    browser.execute_script("document.getElementById('check-dos').value = '2025-02-10'")
    form = browser.find_element(By.ID, "check-form")
    form.find_element(By.NAME, "hcpcs").send_keys("J2920")
    form.find_element(By.NAME, "dx").send_keys("M54.5")
    form.find_element(By.NAME, "state").send_keys("CA", Keys.ENTER)
    rows = _wait(browser, lambda d: d.find_elements(By.CSS_SELECTOR, "#findings tr.verdict-error"))
    texts = [row.text for row in rows]
    assert any("J2920 ended 2024-03-31" in text and "candidate: J2919" in text for text in texts)
    assert any("M54.50, M54.51, M54.59" in text for text in texts)
    assert browser.find_element(By.ID, "check-status").text == "2 error(s) on this line"
    browser.set_window_size(400, 860)
    assert _no_horizontal_scroll(browser)
    screenshot(browser, tmp_path, "check-400.png")


def test_a_coder_reads_what_changed_for_their_codes(browser, page_url, tmp_path):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys

    browser.set_window_size(1280, 900)
    browser.get(page_url)
    browser.find_element(By.ID, "tab-check").send_keys(Keys.ARROW_RIGHT)
    assert browser.find_element(By.ID, "tab-changes").get_attribute("aria-selected") == "true"
    form = browser.find_element(By.ID, "changes-form")
    form.find_element(By.NAME, "codes").send_keys("J2920, B8809, E11.9", Keys.ENTER)
    sets = _wait(browser, lambda d: d.find_elements(By.CSS_SELECTOR, "#change-sets section.change-set"))
    screenshot(browser, tmp_path, "changes-1280.png")
    text = browser.find_element(By.ID, "change-sets").text
    assert "hcpcs: 2019 → 2025Q1" in text and "J2920" in text and "your codes: J2920 (code)" in text
    assert "B8809 (parent)" in text and "E11.9" not in text
    assert any(gap.text.startswith("iom: one loaded release") for gap in
               browser.find_elements(By.CSS_SELECTOR, "#change-sets p.gap"))
    assert len(sets) >= 2
    browser.set_window_size(400, 860)
    assert _no_horizontal_scroll(browser)
    screenshot(browser, tmp_path, "changes-400.png")


def test_the_page_works_under_a_proxy_sub_path(browser, indexed_engine, indexed_settings, tmp_path):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys

    settings = dataclasses.replace(indexed_settings, vllm_base_url=None, api_token=None, api_rate=0,
                                   root_path="/medrag")
    with running_app(create_app(settings)) as base_url:
        browser.set_window_size(1280, 900)
        browser.get(f"{base_url}/medrag/")
        browser.find_element(By.ID, "tab-codes").click()
        browser.switch_to.active_element.send_keys("cpap machine", Keys.ENTER)
        _wait(browser, lambda d: d.find_elements(By.CSS_SELECTOR, '.code[data-code="E0601"]'))
        loaded = browser.execute_script("return performance.getEntriesByType('resource').map(e => e.name)")
        assert loaded and all(name.startswith(f"{base_url}/medrag/") for name in loaded), loaded
