"""The report page in a real browser (headless Chromium through Playwright).

Fails on any console message of type error or warning, on a page error, on a section that is missing
or renders with no height, and on any request that leaves the file (the page must be self-contained).
Skips, with the reason, only where no Chromium can be found (`.ci/run` installs Debian's `chromium`).
"""

import shutil

import pytest

from linrnn.reports import report_cli
from linrnn.reports.render import render
from linrnn.reports.results import read_results
from linrnn.reports.sections import SECTIONS

sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed (pip install -e '.[test]')")
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")
pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="no Chromium on PATH: `apt-get install chromium`")
FLAGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
         "--disable-sync", "--no-first-run", "--disable-quic"]


@pytest.fixture(scope="module")
def page_path(tmp_path_factory):
    out = tmp_path_factory.mktemp("browser")
    assert report_cli.compute_all(str(out), quick=True) == []
    return render(read_results([out], [s.NAME for s in SECTIONS]), SECTIONS, out)


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
        for section in SECTIONS:
            box = page.locator(f"section#{section.NAME}").bounding_box()
            assert box is not None and box["height"] > 50, f"section {section.NAME} did not render"
        assert page.locator("section#environment table tr").count() >= 2
        assert page.locator("#quick-note").is_visible()
    finally:
        browser.close()
        pw.stop()
