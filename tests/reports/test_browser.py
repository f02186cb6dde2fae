"""The report page in a real browser (headless Chromium through Playwright).

Fails on any console message of type error or warning, on a page error, on a section that is missing
or renders with no height, and on any request that leaves the file (the page must be self-contained).
Skips, with the reason, only where no Chromium can be found (`.ci/run` installs Debian's `chromium`).
"""

import shutil

import pytest

from linrnn.reports.sections import SECTIONS

sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed (pip install -e '.[test]')")
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")
pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="no Chromium on PATH: `apt-get install chromium`")
FLAGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
         "--disable-sync", "--no-first-run", "--disable-quic"]


@pytest.fixture(scope="module")
def page_path(quick_report):
    return quick_report / "report.html"


def open_page(path):
    """(messages, failed requests, Playwright handles) for the page at `path`."""
    messages, requests = [], []
    pw = sync_api.sync_playwright().start()
    browser = pw.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
    page = browser.new_page()
    page.on("console", lambda m: messages.append((m.type, m.text)))
    page.on("pageerror", lambda e: messages.append(("pageerror", str(e))))
    page.on("request", lambda r: requests.append(r.url) if not r.url.startswith(("file:", "data:")) else None)
    page.goto(path.as_uri(), wait_until="load")
    return messages, requests, (pw, browser, page)


def test_page_has_no_console_errors_and_every_section_renders(page_path):
    messages, requests, (pw, browser, page) = open_page(page_path)
    try:
        assert [m for m in messages if m[0] in ("error", "warning", "pageerror")] == []
        assert requests == [], f"the page fetched {requests}"
        for name in ["glance", "ledger", *(s.NAME for s in SECTIONS), "environment"]:
            box = page.locator(f"section#{name}").bounding_box()
            assert box is not None and box["height"] > 50, f"section {name} did not render"
        assert page.locator("section#ledger table tr").count() == 1 + 18       # header + R1-R9, D1-D9
        assert page.locator("section#environment table tr").count() >= 2
        assert page.locator("#quick-note").is_visible()
        plots = page.locator("svg")
        assert plots.count() >= 2
        for i in range(plots.count()):
            box = plots.nth(i).bounding_box()
            assert box is not None and box["width"] > 200 and box["height"] > 100, f"plot {i} renders at {box}"
        formulas = page.locator("math")
        assert formulas.count() >= 10
        for i in range(min(formulas.count(), 40)):
            box = formulas.nth(i).bounding_box()
            assert box is not None and box["width"] > 5 and box["height"] > 5, f"formula {i} renders at {box}"
    finally:
        browser.close()
        pw.stop()
