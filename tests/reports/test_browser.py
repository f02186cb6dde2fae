"""The report page in a real browser (headless Chromium through Playwright), at 1400 x 900.

Fails on any console message of type error or warning, on a page error, on a section that is missing
or renders with no height, and on any request that leaves the file (the page must be self-contained);
unless the first screen shows all 18 verdict badges, the cross-check heatmap and the speed and
conformance lines; unless the page with every <details> closed is at most 12 screens tall and every
<details> opens; unless a deep link (#claim-D6) opens its claim's block and printing shows what the
blocks hold. It saves the first screen as `first-screen.png` in the test's own folder (pytest's tmp_path:
`<basetemp>/test_the_first_screen_answers_0/first-screen.png`, printed with the test's output, `pytest -rP`).
Skips, with the reason, only where no Chromium can be found (`.ci/run` installs Debian's `chromium`).

The page is the session's quick report (tests/reports/conftest.py); its report.md is checked here too,
so that the quick report is computed once.
"""

import json
import shutil

import pytest

from linrnn.reports.sections import SECTIONS

sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed (pip install -e '.[test]')")
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")
pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="no Chromium on PATH: `apt-get install chromium`")
FLAGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
         "--disable-sync", "--no-first-run", "--disable-quic"]
VIEWPORT = {"width": 1400, "height": 900}
MAX_SCREENS = 12
# click every closed <details>' summary in document order (an outer block before the blocks inside it); for each,
# whether it is then open and shows something besides its summary
OPEN_EVERY_BLOCK = """() => [...document.querySelectorAll('details')].map(d => {
    if (!d.open) d.querySelector(':scope > summary').click();
    const shown = [...d.children].filter(c => c.tagName !== 'SUMMARY').some(c => c.getBoundingClientRect().height > 0);
    return [d.id || d.querySelector(':scope > summary').textContent.trim().slice(0, 60), d.open && shown];
})"""


@pytest.fixture(scope="module")
def page_path(quick_report):
    return quick_report / "report.html"


def open_page(path, fragment=""):
    """(messages, failed requests, Playwright handles) for the page at `path`, at 1400 x 900."""
    messages, requests = [], []
    pw = sync_api.sync_playwright().start()
    browser = pw.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
    page = browser.new_page(viewport=VIEWPORT)
    page.on("console", lambda m: messages.append((m.type, m.text)))
    page.on("pageerror", lambda e: messages.append(("pageerror", str(e))))
    page.on("request", lambda r: requests.append(r.url) if not r.url.startswith(("file:", "data:")) else None)
    page.goto(path.as_uri() + fragment, wait_until="load")
    return messages, requests, (pw, browser, page)


def on_first_screen(box) -> bool:
    return (box is not None and box["x"] >= 0 and box["y"] >= 0 and box["x"] + box["width"] <= VIEWPORT["width"]
            and box["y"] + box["height"] <= VIEWPORT["height"])


def test_the_first_screen_answers_and_every_block_opens(page_path, tmp_path):
    messages, requests, (pw, browser, page) = open_page(page_path)
    try:
        badges = page.locator("#glance table.claims .verdict")
        assert badges.count() == 18                                       # R1-R9, D1-D9
        for i in range(18):
            assert on_first_screen(badges.nth(i).bounding_box()), f"verdict badge {i} is below the first screen"
        heat = page.locator("#crosscheck-heatmap svg")
        assert heat.count() == 1 and on_first_screen(heat.bounding_box())
        assert heat.bounding_box()["width"] > 400 and page.locator("#crosscheck-heatmap svg g.cell title").count() > 100
        for line in ("#glance-speed", "#glance-conformance"):
            assert on_first_screen(page.locator(line).bounding_box()), f"{line} is below the first screen"
        shot = tmp_path / "first-screen.png"
        page.screenshot(path=str(shot))
        assert shot.stat().st_size > 20_000
        print(f"the first screen at 1400 x 900: {shot}")

        assert page.evaluate("document.querySelectorAll('details[open]').length") == 0     # every block closed
        closed = page.evaluate("document.documentElement.scrollHeight")
        print(f"page height with every block closed: {closed} px ({closed / VIEWPORT['height']:.1f} screens)")
        assert closed <= MAX_SCREENS * VIEWPORT["height"], f"{closed} px with every block closed"
        page.locator("section#ledger details.claim > summary").first.click()              # a real click
        assert page.locator("#claim-R1").is_visible()
        opened = page.evaluate(OPEN_EVERY_BLOCK)
        assert len(opened) >= 18 + len(SECTIONS) and [name for name, ok in opened if not ok] == [], opened
        assert page.evaluate("document.documentElement.scrollHeight") > 3 * closed

        assert [m for m in messages if m[0] in ("error", "warning", "pageerror")] == []
        assert requests == [], f"the page fetched {requests}"
        for name in ["glance", "ledger", *(s.NAME for s in SECTIONS), "environment"]:
            box = page.locator(f"section#{name}").bounding_box()
            assert box is not None and box["height"] > 50, f"section {name} did not render"
        assert page.locator("section#ledger details.claim").count() == 18
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


def test_a_deep_link_opens_its_block_and_printing_opens_every_block(page_path):
    messages, _, (pw, browser, page) = open_page(page_path, "#claim-D6")
    try:
        assert page.evaluate("document.getElementById('claim-D6').closest('details').open")
        assert page.locator("#claim-D6").is_visible() and page.evaluate("window.scrollY") > 900
        assert page.evaluate("document.querySelectorAll('details[open]').length") == 1
        page.locator("#glance a[href='#claim-R3']").first.click()                    # a link on the first screen
        assert page.locator("#claim-R3").is_visible()
        hidden = page.locator("section#experiments details.more table").first
        assert not hidden.is_visible()
        page.emulate_media(media="print")
        assert hidden.is_visible()
        assert [m for m in messages if m[0] in ("error", "warning", "pageerror")] == []
    finally:
        browser.close()
        pw.stop()


def test_report_md_beside_the_page(quick_report, md_table):
    """The quick report's report.md: the 18 verdicts of ledger.json, the cross-check's result, a line per peer."""
    md = (quick_report / "report.md").read_text()
    verdicts = {c["claim"]: c["verdict"] for c in json.loads((quick_report / "ledger.json").read_text())}
    rows = md_table(md)
    assert [(r[0], r[2]) for r in rows] == [(k, f"**{v}**") for k, v in verdicts.items()]
    assert len(md.splitlines()) <= 80 and "comparisons within tolerance; worst cell" in md
    assert "- s5-pytorch as s5: **" in md and "- lru-pytorch as lru: **" in md
