"""Helpers of the browser tests that read pages from disk with the network blocked (the HTML
reports and the book): which series to read, and :class:`OfflinePage`."""
from __future__ import annotations

import os
import re
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
STEMS = [p.stem for p in sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))]


def given_reports():
    """``$MLPL_LAB_REPORTS``: folders that ``mlpl-lab report`` wrote (executed notebooks and their
    HTML), separated by ``os.pathsep`` (``.ci/run`` gives ``reports/smoke``, which ``make book``
    made); ``[]`` without it."""
    given = os.environ.get("MLPL_LAB_REPORTS", "")
    return [Path(p).resolve() for p in given.split(os.pathsep) if p]


# TeX that MathJax left as text (typeset math leaves none: its source sits in
# <script type="math/tex">, which the scan skips)
RAW_TEX = re.compile(r"\$\$|\\(?:frac|tfrac|dfrac|mathcal|mathbf|mathbb|mathrm|operatorname|hat|widehat|"
                     r"tilde|bar|sum|prod|log|exp|left|right|big|Big|begin|end|cdot|alpha|beta|gamma|"
                     r"delta|lambda|mu|sigma|tau|theta|infty|leq?|geq?|mid|langle|rangle|text|quad)\b"
                     r"|\$[^$\n]{0,200}[\\^_{}][^$\n]{0,200}\$")


class OfflinePage:
    """A Chromium page that loads only ``file://`` and ``data:`` URLs. ``off_machine``: every
    other request (blocked, and counted); ``missing``: local files that failed to load."""

    def __init__(self, browser, width: int = 1300):
        self.off_machine: list = []
        self.missing: list = []
        self.page = browser.new_page(viewport={"width": width, "height": 900})
        self.page.route("**/*", self._route)
        # a file that is not there (a request cut short by leaving the page is no missing file)
        self.page.on("requestfailed", lambda req: self.missing.append(req.url)
                     if req.url.startswith("file://") and "NOT_FOUND" in (req.failure or "") else None)

    def _route(self, r):
        if r.request.url.startswith(("file://", "data:")):
            r.continue_()
        else:
            self.off_machine.append(r.request.url)
            r.abort()

    def goto(self, path: Path):
        self.page.goto(path.as_uri(), wait_until="load")

    def wait_for_math(self, timeout: float = 90) -> bool:
        """Wait until MathJax 2 has typeset the page (its queue idle, after its start-up); True at
        once on a page that loads no MathJax."""
        if not self.page.evaluate("!!document.querySelector('script[src*=\"MathJax.js\"]')"):
            return True
        deadline = time.time() + timeout
        while time.time() < deadline:
            if self.page.evaluate("""() => !!(window.MathJax && MathJax.Hub && MathJax.Hub.queue &&
                    MathJax.isReady && MathJax.Hub.queue.pending === 0 && MathJax.Hub.queue.running === 0 &&
                    document.querySelectorAll('.MathJax_Preview:not(:empty)').length === 0)"""):
                return True
            time.sleep(0.3)
        return False

    def math_problems(self, selector: str = "body") -> dict:
        """``errors``: "[Math Processing Error]" and TeX error boxes; ``raw``: TeX left as text
        (outside code: ``$MLPL_LAB_DATA`` in a code span is no math)."""
        text = self.page.eval_on_selector(selector, """e => { const c = e.cloneNode(true);
            c.querySelectorAll('code, pre, script, style, .MJX_Assistive_MathML').forEach(x => x.remove());
            return c.textContent; }""")
        n_err = text.count("Math Processing Error") + self.page.evaluate(
            "document.querySelectorAll('.MathJax_Error, .merror, .noError').length")
        return {"errors": n_err, "raw": [text[max(0, m.start() - 30):m.end() + 30]
                                         for m in RAW_TEX.finditer(text)]}

    def raised_inline_math(self) -> list:
        """Inline formulas with a parenthesis or brace whose box does not reach below the text's
        baseline (a parenthesis descends about 0.2 em): they sit above the line, as when the
        book's theme made MathJax's box clip (an inline-block that clips sits on its bottom edge)."""
        return self.page.evaluate("""() => {
            const out = [];
            for (const script of document.querySelectorAll('script[type="math/tex"]')) {
                const tex = script.textContent, box = script.previousElementSibling;
                if (!box || !box.classList.contains('MathJax') || !/[(]|\\\\[{]/.test(tex)) continue;
                const probe = document.createElement('span');  // an empty inline-block sits on the baseline
                probe.style.cssText = 'display:inline-block;width:0;height:0;';
                box.parentNode.insertBefore(probe, box);
                const baseline = probe.getBoundingClientRect().bottom;
                probe.remove();
                const inner = box.querySelector('span.math') || box;
                const fs = parseFloat(getComputedStyle(box).fontSize);
                if (inner.getBoundingClientRect().bottom < baseline + 0.1 * fs) out.push(tex.slice(0, 40));
            }
            return out; }""")

    def close(self):
        self.page.close()
