"""The HTML reports in Chromium, offline, as a reader sees them.

Every report of the series: the smoke series the session executes once with ``mlpl-lab
report``'s own export (``execute_notebook``), or the folders ``$MLPL_LAB_REPORTS`` names
(``.ci/run``: ``reports/smoke``; a cpu series too, e.g. ``MLPL_LAB_REPORTS=reports/smoke:reports``).
Each page is opened from disk with every request that is not ``file://`` or ``data:`` blocked
and counted. Checks:

* no request leaves the machine (counted: 0) and no local file it asks for is missing;
* the equations are typeset by the MathJax shipped next to the report: every display equation
  of the notebook's markdown is a typeset display, no "[Math Processing Error]", no TeX error
  box, no raw TeX (``$$``, ``\\frac``, ...) left in the text, no inline formula above the line;
* every widget cell shows its panel's default state as an image at least 40 px high (a static
  page cannot run the panel), and no widget area is left under 40 px;
* every figure loads; the header shows versions, profile and seeds; records read as tables or
  short lines (no raw dict dumps).

Screenshots of the first display equations and of each panel's image go to the test's folder
(printed with ``-s``).
"""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from offline_pages import STEMS, OfflinePage, given_reports

pytestmark = pytest.mark.browser

WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
SETS = given_reports() or [None]  # None: the smoke series this session executes


@pytest.fixture(scope="module", params=range(len(SETS)), ids=[p.name if p else "smoke" for p in SETS])
def reports(request):
    folder = SETS[request.param]
    return folder if folder is not None else request.getfixturevalue("smoke_series")


def display_equations(nb) -> int:
    """Display equations in the notebook's markdown (cells and markdown outputs): ``$$…$$`` and
    ``\\begin{env}`` blocks outside them."""
    n = 0
    texts = ["".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "markdown"]
    for c in nb["cells"]:
        for out in c.get("outputs", []):
            md = out.get("data", {}).get("text/markdown")
            if md:
                texts.append("".join(md))
    for text in texts:
        text = re.sub(r"```.*?```|`[^`\n]*`", "", text, flags=re.S)  # code is not math
        n += len(re.findall(r"\$\$.+?\$\$", text, flags=re.S))
        n += len(re.findall(r"^\s*\\begin\{(?:equation|align|gather|multline)\*?\}", re.sub(r"\$\$.+?\$\$", "", text, flags=re.S), flags=re.M))
    return n


@pytest.mark.parametrize("stem", STEMS)
def test_report_reads_offline(reports, browser, stem, out_dir):
    html = reports / f"{stem}.html"
    assert html.exists(), f"{reports} holds no {html.name}: run `mlpl-lab report` into it"
    assert (reports / "mathjax" / "MathJax.js").exists()
    nb = json.loads((reports / f"{stem}.ipynb").read_text(encoding="utf-8"))
    view = OfflinePage(browser)
    page = view.page
    try:
        view.goto(html)
        assert view.wait_for_math(), f"{stem}: MathJax did not finish typesetting offline"
        # no request leaves the machine; every local file the page asks for exists
        assert view.off_machine == [], f"{stem}: {len(view.off_machine)} requests off the machine: {view.off_machine[:5]}"
        assert view.missing == [], f"{stem}: local files missing: {view.missing[:5]}"
        # math: every display equation typeset, no error, no raw TeX
        problems = view.math_problems()
        assert problems["errors"] == 0, f"{stem}: {problems['errors']} math errors"
        assert problems["raw"] == [], f"{stem}: raw TeX left in the text: {problems['raw'][:3]}"
        raised = view.raised_inline_math()
        assert raised == [], f"{stem}: {len(raised)} inline formulas sit above the line: {raised[:3]}"
        expected = display_equations(nb)
        shown = page.evaluate("document.querySelectorAll('.MathJax_Display').length")
        assert shown == expected, f"{stem}: {shown} typeset display equations, the notebook has {expected}"
        if expected:
            page.locator(".MathJax_Display").first.screenshot(path=str(out_dir / f"{stem}-eq.png"))
        # widget cells: the panel's default state as an image; no blank widget area
        cells = page.locator(".jp-Cell")
        assert cells.count() == len(nb["cells"]), f"{stem}: {cells.count()} cells shown of {len(nb['cells'])}"
        for i, cell in enumerate(nb["cells"]):
            if not any(WIDGET_VIEW in o.get("data", {}) for o in cell.get("outputs", [])):
                continue
            heights = cells.nth(i).evaluate("""c => [...c.querySelectorAll('.jp-OutputArea-output img')]
                                               .filter(i => i.complete && i.naturalWidth > 0)
                                               .map(i => i.getBoundingClientRect().height)""")
            assert heights and max(heights) >= 40, f"{stem}: widget cell {i} shows no image of its panel ({heights})"
            cells.nth(i).screenshot(path=str(out_dir / f"{stem}-panel-{i}.png"))
            print(f"{stem}: widget cell {i} as an image {max(heights):.0f} px high: {out_dir / f'{stem}-panel-{i}.png'}")
        thin = page.evaluate("""() => [...document.querySelectorAll('.jupyter-widgets, .widget-area, [data-mime-type*="widget"]')]
                                    .map(e => e.getBoundingClientRect().height).filter(h => h < 40)""")
        assert thin == [], f"{stem}: {len(thin)} widget areas under 40 px high"
        # figures load; header; records as tables or short lines
        text = page.inner_text("body")
        broken = page.evaluate("""() => [...document.images].filter(i => !(i.complete && i.naturalWidth > 0))
                                                   .map(i => (i.src || '').slice(0, 60))""")
        assert not broken, f"{stem}: broken images {broken}"
        for word in ("torch", "profile", "seeds"):
            assert word in text, f"{stem}: the header does not show {word!r}"
        dumps = re.findall(r"\{'[^']+': \{", text)
        assert not dumps, f"{stem}: a record prints as a raw dict: {dumps[:2]}"
        print(f"{stem} ({reports.name}): {shown} display equations, 0 math errors, 0 requests off the machine")
    finally:
        view.close()
