"""The HTML report of ``dalembert reproduce`` and the documentation site in a real browser
(headless Chromium driven by Playwright): every figure loads, the report's summary table links to
each experiment's section, and neither page logs a console error. Screenshots are kept in
``$DALEMBERT_ARTIFACTS`` (default ``<repo>/artifacts``) as CI artefacts.

Needs Chromium (Debian's ``chromium`` package, which ``.ci/run`` installs when missing) and the
``playwright`` Python package (the test extra); skipped without them.
"""
import functools
import http.server
import os
import shutil
import threading
from pathlib import Path

import pytest

playwright_sync = pytest.importorskip("playwright.sync_api")

ROOT = Path(__file__).resolve().parents[2]
CHROMIUM = os.environ.get("DALEMBERT_CHROMIUM") or shutil.which("chromium") or shutil.which("chromium-browser")
#: Flags for a sandboxed, offline machine: no GPU, no network chatter (closed network).
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync"]
#: Two quick experiments (about 15 s): the report's structure does not depend on which.
EXPERIMENTS = ("ferraro2015-adjointness", "ferraro2008-particle-energy")

pytestmark = [pytest.mark.xdist_group("docs"),
              pytest.mark.skipif(CHROMIUM is None, reason="Chromium is not installed (apt-get install chromium)")]


def artifacts() -> Path:
    d = Path(os.environ.get("DALEMBERT_ARTIFACTS", ROOT / "artifacts"))
    d.mkdir(parents=True, exist_ok=True)
    return d


@pytest.fixture(scope="module")
def browser():
    with playwright_sync.sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
        yield b
        b.close()


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    from dalembert.experiments import base
    from dalembert.report import write_report
    out = tmp_path_factory.mktemp("report")
    results = [base.run(base.get(e), quick=True, out=out) for e in EXPERIMENTS]
    return write_report(results, out, quick=True), results


def serve(directory: Path):
    """An HTTP server on localhost for ``directory`` (a thread); returns (url, server)."""
    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args):
            pass

    handler = functools.partial(Quiet, directory=str(directory))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return f"http://127.0.0.1:{server.server_address[1]}", server


def open_page(browser, url):
    """Load ``url``; return (page, console errors, failed requests)."""
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    errors, failed = [], []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.on("requestfailed", lambda r: failed.append(r.url))
    page.goto(url, wait_until="load")
    page.wait_for_load_state("networkidle")
    return page, errors, failed


def broken_images(page) -> list:
    return page.evaluate("""() => Array.from(document.images)
        .filter(i => !(i.complete && i.naturalWidth > 0)).map(i => i.alt || i.src.slice(0, 80))""")


def test_report_figures_load_links_resolve_no_console_errors(browser, report):
    index, results = report
    url, server = serve(index.parent)
    try:
        page, errors, failed = open_page(browser, f"{url}/{index.name}")
        n_images = page.evaluate("document.images.length")
        assert n_images == sum(len(r.figures) for r in results) > 0
        assert broken_images(page) == []
        links = page.evaluate("""() => Array.from(document.querySelectorAll('#summary a'))
            .map(a => a.getAttribute('href'))""")
        assert sorted(links) == sorted(f"#{r.id}" for r in results)
        for href in links:          # each link lands on its experiment's section
            assert page.evaluate(f"document.getElementById('{href[1:]}') !== null")
            page.click(f"#summary a[href='{href}']")
            top = page.evaluate(f"document.getElementById('{href[1:]}').getBoundingClientRect().top")
            assert abs(top) < 5
        assert errors == [] and failed == []
        page.evaluate("window.scrollTo(0, 0)")
        page.screenshot(path=str(artifacts() / "report.png"), full_page=False)
    finally:
        server.shutdown()


def test_docs_site_pages_load_without_errors(browser, docs_site):
    url, server = serve(docs_site)
    try:
        for name, path in (("docs-index", "index.html"), ("docs-models", "reference/models.html"),
                           ("docs-methods", "reference/methods.html")):
            page, errors, failed = open_page(browser, f"{url}/{path}")
            assert page.title()
            assert broken_images(page) == [], path
            assert errors == [], (path, errors)
            assert failed == [], (path, failed)
            page.screenshot(path=str(artifacts() / f"{name}.png"), full_page=False)
            page.close()
    finally:
        server.shutdown()


#: The words (runs of non-space characters) of an element's text that the layout splits over two
#: lines, each as [word, "hyphen" (the break follows a hyphen, dash or slash) or "mid-word"].
SPLIT_WORDS_JS = """(root) => {
  const out = [];
  const walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
  for (let node = walker.nextNode(); node; node = walker.nextNode()) {
    const re = /\\S+/g;
    let m;
    while ((m = re.exec(node.data)) !== null) {
      let prev = null;
      for (let i = 0; i < m[0].length; i++) {
        const r = document.createRange();
        r.setStart(node, m.index + i);
        r.setEnd(node, m.index + i + 1);
        const rects = Array.from(r.getClientRects()).filter(x => x.width > 0);
        if (!rects.length) continue;
        const top = Math.round(rects[0].top);
        if (prev !== null && Math.abs(top - prev) > 2) {
          out.push([m[0], /[-–—\\/]/.test(m[0][i - 1]) ? "hyphen" : "mid-word"]);
          break;
        }
        prev = top;
      }
    }
  }
  return out;
}"""


def test_method_chooser_is_readable_at_1280_px(browser, docs_site):
    """At 1280 px the chooser table fits the page and splits no word over two lines (no break
    inside a word, nor after a hyphen of one: method names, 1e-13); the details table breaks no
    plain word inside it. The check itself sees a word split (negative control)."""
    url, server = serve(docs_site)
    try:
        page, errors, failed = open_page(browser, f"{url}/reference/methods.html")
        chooser = page.query_selector("article table")
        head = page.evaluate("(t) => Array.from(t.querySelectorAll('th')).map(x => x.textContent.trim())", chooser)
        assert head == ["method", "order", "use when", "cost", "preserves"]
        assert chooser.evaluate(SPLIT_WORDS_JS) == []
        assert chooser.evaluate("(t) => t.scrollWidth <= t.clientWidth + 1")      # no horizontal scroll
        details = page.query_selector_all("article table")[1]
        assert [w for w, kind in details.evaluate(SPLIT_WORDS_JS) if kind == "mid-word" and w.isalpha()] == []
        probe = page.evaluate_handle("""() => { const d = document.createElement('div');
            d.style.cssText = 'width: 40px; overflow-wrap: anywhere; font-size: 16px';
            d.textContent = 'nonholonomic gni-euler-a'; document.body.appendChild(d); return d; }""")
        assert {kind for _, kind in probe.evaluate(SPLIT_WORDS_JS)} == {"mid-word", "hyphen"}
        assert errors == [] and failed == []
        page.screenshot(path=str(artifacts() / "docs-method-chooser.png"), full_page=False)
    finally:
        server.shutdown()
