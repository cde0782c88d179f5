"""The course book in Chromium, offline: every non-file request is blocked (no CDN).

The book comes from ``$MLPL_LAB_BOOK`` (``.ci/run`` builds ``reports/smoke/book`` with
``make book PROFILE=smoke``); without it, this module builds both variants itself from the smoke
series the report tests read. Checks per variant: on every page, the equations are typeset by
the shipped MathJax with no "[Math Processing Error]", no TeX error, no raw TeX left and no
inline formula above the line, no widget area is under 40 px, and no request leaves the machine
(counted: 0); every chapter page exists and its figures load, the navigation reaches every
chapter, the quiz answers (a correct choice turns green with its feedback), the edition is on
the site; the student variant shows no solution, the instructor variant shows solutions and the
guide.
"""
from __future__ import annotations

import os
from pathlib import Path

import pytest

from offline_pages import STEMS, OfflinePage

pytestmark = pytest.mark.browser

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def book(browser_home, request):
    given = os.environ.get("MLPL_LAB_BOOK")
    if given:
        path = Path(given).resolve()
        assert (path / "student" / "index.html").exists(), f"MLPL_LAB_BOOK={given} holds no built book"
        return path
    from mlpl_lab.course import book

    executed = request.getfixturevalue("smoke_series")  # the series the report tests read too
    for variant in ("student", "instructor"):
        book.build_book(executed, browser_home / "book" / variant, variant, strict=True)
    return browser_home / "book"


@pytest.mark.parametrize("variant", ["student", "instructor"])
def test_book_reads_offline(book, browser, variant):
    site = book / variant
    view = OfflinePage(browser)
    page = view.page
    try:
        view.goto(site / "index.html")
        assert "edition" in page.inner_text("body").lower()
        links = page.eval_on_selector_all("nav a.reference.internal", "els => els.map(e => e.getAttribute('href'))")
        for stem in STEMS:  # navigation reaches every chapter
            assert any(h and h.startswith(f"{stem}.html") for h in links), (stem, links)
        assert any(h and h.startswith("syllabus.html") for h in links)
        assert any(h and h.startswith("guide.html") for h in links) == (variant == "instructor")
        pages = sorted({h.split("#")[0] for h in links if h and not h.startswith(("http", "#"))} | {"index.html"})
        typeset = {}
        for name in pages:  # every page: math typeset offline, no error, no raw TeX, nothing off the machine
            view.goto(site / name)
            assert view.wait_for_math(), f"{variant}/{name}: MathJax did not finish offline"
            problems = view.math_problems("article")
            assert problems["errors"] == 0, f"{variant}/{name}: {problems['errors']} math errors"
            assert problems["raw"] == [], f"{variant}/{name}: raw TeX left: {problems['raw'][:3]}"
            raised = view.raised_inline_math()
            assert raised == [], f"{variant}/{name}: {len(raised)} inline formulas sit above the line: {raised[:3]}"
            typeset[name] = page.evaluate("document.querySelectorAll('.MathJax_Display, .MathJax').length")
            thin = page.evaluate("""() => [...document.querySelectorAll('.jupyter-widgets, .widget-area')]
                                        .map(e => e.getBoundingClientRect().height).filter(h => h < 40)""")
            assert thin == [], f"{variant}/{name}: {len(thin)} widget areas under 40 px high"
        assert typeset["02_gr_loss.html"] > 0, "no equation typeset in chapter 02"
        for stem in STEMS:
            view.goto(site / f"{stem}.html")
            broken = page.evaluate("""() => [...document.images].filter(i => !(i.complete && i.naturalWidth > 0))
                                               .map(i => i.src)""")
            assert not broken, f"{variant}/{stem}: images that do not load: {broken[:3]}"
            n_img = page.evaluate("document.querySelectorAll('img').length")
            assert n_img > 0 or stem == "07_benchmark" and n_img >= 0
            exercises = page.evaluate("document.querySelectorAll('.exercise').length")
            assert exercises >= 3, f"{variant}/{stem}: {exercises} exercise boxes"
            solutions = page.evaluate("document.querySelectorAll('.solution').length")
            assert (solutions >= 3) == (variant == "instructor"), f"{variant}/{stem}: {solutions} solutions"
        view.goto(site / "02_gr_loss.html")
        assert view.wait_for_math()
        # the quiz: its first multiple-choice question answers with its feedback, offline
        page.wait_for_selector("#quiz02grloss .MCButton", timeout=20000)
        n_choices = page.evaluate("document.querySelectorAll('#quiz02grloss .MCButton').length")
        assert n_choices >= 10, f"the quiz rendered {n_choices} choices"
        page.locator("#quiz02grloss .MCButton", has_text="the learning rate schedule").first.click()
        page.wait_for_selector("#quiz02grloss .Feedback.incorrect", timeout=5000)
        assert "enters the loss" in page.inner_text("#quiz02grloss .Feedback.incorrect")
        right = page.locator("#quiz02grloss .MCButton", has_text="an estimate of the probability").first
        right.click()
        page.wait_for_selector("#quiz02grloss .Feedback.correct", timeout=5000)
        assert "sigma(w p + b)" in page.inner_text("#quiz02grloss .Feedback.correct")
        assert "correctButton" in (right.get_attribute("class") or "")
        assert view.off_machine == [], f"{len(view.off_machine)} requests left the machine: {view.off_machine[:5]}"
        assert view.missing == [], f"local files missing: {view.missing[:5]}"
        page.locator(".MathJax_Display").first.screenshot(path=str(book / f"{variant}-02-eq.png"))
        page.screenshot(path=str(book / f"{variant}-02.png"))
        print(f"{variant}: {len(pages)} pages, {sum(typeset.values())} typeset equations, 0 math errors, "
              f"0 requests off the machine; screenshots in {book}")
    finally:
        view.close()
