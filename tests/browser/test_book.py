"""The course book in Chromium, offline: every non-file request is blocked (no CDN).

The book comes from ``$MLPL_LAB_BOOK`` (``.ci/run`` builds ``reports/smoke/book`` with
``make book PROFILE=smoke``); without it, this module executes the series under smoke and builds
both variants itself. Checks per variant: every chapter page exists and its figures load, the
equations are typeset by the shipped MathJax, the navigation reaches every chapter, the quiz
answers (a correct choice turns green with its feedback), the edition is on the site; the
student variant shows no solution, the instructor variant shows solutions and the guide.
"""
from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.browser

ROOT = Path(__file__).resolve().parents[2]
STEMS = [p.stem for p in sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))]


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


def offline_page(browser, blocked):
    page = browser.new_page(viewport={"width": 1300, "height": 900})

    def route(r):
        if r.request.url.startswith(("file://", "data:")):
            r.continue_()
        else:
            blocked.append(r.request.url)
            r.abort()

    page.route("**/*", route)
    return page


def wait_for_math(page, timeout=60):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if page.evaluate("""() => !!(window.MathJax && MathJax.Hub && MathJax.Hub.queue &&
                            MathJax.Hub.queue.pending === 0 && MathJax.Hub.queue.running === 0 &&
                            document.querySelectorAll('.MathJax, .MathJax_Display, .MathJax_CHTML').length > 0)"""):
            return True
        time.sleep(0.3)
    return False


@pytest.mark.parametrize("variant", ["student", "instructor"])
def test_book_reads_offline(book, browser, variant):
    site = book / variant
    blocked: list = []
    page = offline_page(browser, blocked)
    try:
        page.goto((site / "index.html").as_uri(), wait_until="load")
        assert "edition" in page.inner_text("body").lower()
        links = page.eval_on_selector_all("nav a.reference.internal", "els => els.map(e => e.getAttribute('href'))")
        for stem in STEMS:  # navigation reaches every chapter
            assert any(h and h.startswith(f"{stem}.html") for h in links), (stem, links)
        assert any(h and h.startswith("syllabus.html") for h in links)
        assert any(h and h.startswith("guide.html") for h in links) == (variant == "instructor")
        for stem in STEMS:
            page.goto((site / f"{stem}.html").as_uri(), wait_until="load")
            broken = page.evaluate("""() => [...document.images].filter(i => !(i.complete && i.naturalWidth > 0))
                                               .map(i => i.src)""")
            assert not broken, f"{variant}/{stem}: images that do not load: {broken[:3]}"
            n_img = page.evaluate("document.querySelectorAll('img').length")
            assert n_img > 0 or stem == "07_benchmark" and n_img >= 0
            exercises = page.evaluate("document.querySelectorAll('.exercise').length")
            assert exercises >= 3, f"{variant}/{stem}: {exercises} exercise boxes"
            solutions = page.evaluate("document.querySelectorAll('.solution').length")
            assert (solutions >= 3) == (variant == "instructor"), f"{variant}/{stem}: {solutions} solutions"
        page.goto((site / "02_gr_loss.html").as_uri(), wait_until="load")
        assert wait_for_math(page), f"no equation typeset offline; blocked: {blocked[:5]}"
        assert "$$" not in page.inner_text("article")
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
        assert not blocked, f"requests left the disk: {blocked[:5]}"
        page.screenshot(path=str(book / f"{variant}-02.png"))
    finally:
        page.close()
