"""The HTML reports in Chromium, offline, as a reader sees them.

Two notebooks are executed under the smoke profile with ``mlpl-lab report``'s own export
(``execute_notebook``); the page is opened from disk with every non-file request blocked (no
CDN). Checks: every figure loads (no broken image), the header shows versions, profile and
seeds, the equations are typeset by the MathJax shipped next to the report (no raw ``$$``
left in the text), and records read as tables or short lines (no raw dict dumps).
"""
from __future__ import annotations

import re
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.browser

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOKS = ("01_assume_negative.ipynb", "02_gr_loss.ipynb")  # both have equations


@pytest.fixture(scope="module")
def reports(browser_home):
    from mlpl_lab.cli import execute_notebook

    out = browser_home / "reports"
    for name in NOTEBOOKS:
        execute_notebook(ROOT / "notebooks" / name, out, profile="smoke", html=True, timeout=600)
    return out


@pytest.mark.parametrize("name", NOTEBOOKS)
def test_report_reads_offline(reports, browser, name):
    html = reports / name.replace(".ipynb", ".html")
    assert (reports / "mathjax" / "MathJax.js").exists()
    page = browser.new_page(viewport={"width": 1300, "height": 900})
    blocked = []

    def route(r):
        if r.request.url.startswith("file://") or r.request.url.startswith("data:"):
            r.continue_()
        else:
            blocked.append(r.request.url)
            r.abort()

    page.route("**/*", route)
    try:
        page.goto(html.as_uri(), wait_until="load")
        # MathJax typesets asynchronously: wait until its queue is idle
        deadline = time.time() + 60
        while time.time() < deadline:
            done = page.evaluate("""() => !!(window.MathJax && MathJax.Hub && MathJax.Hub.queue &&
                                        MathJax.Hub.queue.pending === 0 && MathJax.Hub.queue.running === 0 &&
                                        document.querySelectorAll('.MathJax, .MathJax_Display, .MathJax_CHTML, .MathJax_SVG').length > 0)""")
            if done:
                break
            time.sleep(0.3)
        n_math = page.evaluate("document.querySelectorAll('.MathJax, .MathJax_Display, .MathJax_CHTML, .MathJax_SVG').length")
        assert n_math > 0, f"{name}: no typeset equation (MathJax did not run offline); blocked: {blocked[:5]}"
        text = page.inner_text("body")
        assert "$$" not in text, f"{name}: raw LaTeX left in the page"
        broken = page.evaluate("""() => [...document.images].filter(i => !(i.complete && i.naturalWidth > 0))
                                                   .map(i => (i.src || '').slice(0, 60))""")
        assert page.evaluate("document.images.length") > 0 and not broken, f"{name}: broken images {broken}"
        for word in ("torch", "profile", "seeds"):
            assert word in text, f"{name}: the header does not show {word!r}"
        # records read as tables or short lines: no Python dict dumps
        dumps = re.findall(r"\{'[^']+': \{", text)
        assert not dumps, f"{name}: a record prints as a raw dict: {dumps[:2]}"
    finally:
        page.close()
