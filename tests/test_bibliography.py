"""The bibliography is the only source of paper names: the README's papers table is what it
generates, and every venue, year or arXiv id that the notebooks, the README, the book's pages and
the package (the chapters' claims tables, the docstrings) mention next to a work agrees with that work's entry."""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from mlpl_lab.core import bibliography as B
from mlpl_lab.course import readme_times
from mlpl_lab.catalogue import citation_aliases
from mlpl_lab.catalogue import paper_claims

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = ROOT / "notebooks"

VENUES = ("AAAI", "IJCAI", "NeurIPS", "NIPS", "ICME", "TMM", "CVPR", "ECCV", "ICCV", "TPAMI", "ICML", "ICLR")
#: "IJCAI 2024", "NeurIPS, 2022"
VENUE_YEAR = re.compile(r"(?<![\w-])(" + "|".join(VENUES) + r")[\s,]*((?:19|20)\d\d)(?!\d)")
#: "arXiv 2302.14695", "arXiv:2112.07368"
ARXIV = re.compile(r"(?<![\w-])arXiv[\s:]*(\d{4}\.\d{4,5})")
#: "CLS (2023)": a bare year in brackets right after a name
BARE_YEAR = re.compile(r"\(((?:19|20)\d\d)[a-z]?[),;]")
WINDOW = 250


def _alias_pattern(name: str) -> re.Pattern:
    flags = re.IGNORECASE if len(name) > 30 else 0  # titles: any case
    return re.compile(r"(?<![\w-])" + re.escape(name) + r"(?![\w])", flags)


ALIASES = {name: (_alias_pattern(name), keys) for name, keys in citation_aliases().items()}


def _nearest_work(text: str, end: int, window: int = WINDOW):
    """The name of a work that ends last before ``end`` (within ``window`` characters), with the
    entries it may mean; the longest name wins a tie. None when no work is named there."""
    start = max(0, end - window)
    best = None
    for name, (pat, keys) in ALIASES.items():
        for m in pat.finditer(text, start, end):
            rank = (m.end(), len(name))
            if best is None or rank > best[0]:
                best = (rank, name, keys)
    return None if best is None else (best[1], best[2])


def citation_errors(text: str, where: str):
    """Every venue/year/arXiv mention of ``text`` that names no work of the bibliography, or
    disagrees with the work it follows."""
    text = re.sub(r"\s+", " ", text)
    errors = []

    def check(m, ok, what):
        found = _nearest_work(text, m.start())
        snippet = text[max(0, m.start() - 60):m.end() + 5]
        if found is None:
            errors.append(f"{where}: {what!r} names no work of the bibliography: …{snippet}…")
            return
        name, keys = found
        if not any(ok(B.WORKS[k]) for k in keys):
            want = " or ".join(B.WORKS[k].venue_year for k in keys)
            errors.append(f"{where}: {name!r} cited as {what!r}, the bibliography says {want}: …{snippet}…")

    for m in VENUE_YEAR.finditer(text):
        venue, year = m.group(1), int(m.group(2))
        check(m, lambda w: w.venue == venue and w.year == year, m.group(0))
    for m in ARXIV.finditer(text):
        check(m, lambda w: w.arxiv == m.group(1), m.group(0))
    for m in BARE_YEAR.finditer(text):
        found = _nearest_work(text, m.start(), window=4)  # "CLS (2023)": right after the name only
        if found is not None:
            name, keys = found
            if not any(B.WORKS[k].year == int(m.group(1)) for k in keys):
                errors.append(f"{where}: {name!r} cited as {m.group(0)!r}, the bibliography says "
                              + " or ".join(str(B.WORKS[k].year) for k in keys))
    return errors


def _texts():
    for path in sorted(NOTEBOOKS.glob("*.ipynb")):
        for i, cell in enumerate(json.loads(path.read_text())["cells"]):
            yield f"{path.name} cell {i}", "".join(cell["source"])
    for path in [ROOT / "README.md", NOTEBOOKS / "course.yml", *sorted(NOTEBOOKS.glob("*.md")),
                 *sorted((NOTEBOOKS / "quizzes").glob("*")), *sorted((ROOT / "mlpl_lab").rglob("*.py"))]:
        if path.name == "bibliography.py" and path.parent.name == "core":
            continue  # the source itself
        if path.is_file():
            yield str(path.relative_to(ROOT)), path.read_text(encoding="utf-8")


def test_every_mention_of_a_venue_or_year_agrees_with_the_bibliography():
    errors = [e for where, text in _texts() for e in citation_errors(text, where)]
    assert not errors, "\n".join(errors)


def test_the_check_finds_a_wrong_venue_a_wrong_year_and_an_unknown_work():
    assert citation_errors("GR Loss (IJCAI 2024) and OPML (arXiv 2302.14695)", "ok") == []
    assert citation_errors("the Paper: Chen et al., *Boosting Single Positive Multi-label Classification "
                           "with Generalized Robust Loss*, IJCAI 2024", "ok") == []
    assert len(citation_errors("GR Loss (IJCAI 2023)", "x")) == 1
    assert len(citation_errors("OPML (TMM 2024)", "x")) == 1
    assert len(citation_errors("CLS (2023), Table 2", "x")) == 1
    assert len(citation_errors("as Smith et al. (ICML 2019) showed", "x")) == 1


def test_the_readme_papers_table_is_what_the_bibliography_generates():
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    block = text.split(readme_times.PAPERS_BEGIN, 1)[1].split(readme_times.PAPERS_END, 1)[0]
    rows = [line for line in block.strip().splitlines() if line.startswith("| ") and "---" not in line][1:]
    assert len(rows) == len(B.PAPERS) == 5
    for row, key in zip(rows, B.PAPERS):
        w = B.WORKS[key]
        assert row == f"| {w.short} | {w.authors} — *{w.title}* ({w.venue_year}) |"
    assert readme_times.PAPERS_BEGIN + "\n" + B.papers_markdown() + "\n" + readme_times.PAPERS_END in text


def test_the_papers_of_the_course_and_of_the_benchmark_come_from_the_bibliography():
    from mlpl_lab.chapters import benchmark
    from mlpl_lab.course import syllabus

    course = syllabus.load_course()
    for ch in course["chapters"]:
        line = syllabus.paper_line(ch)
        keys = B.PAPERS if ch["paper"] == syllabus.ALL_PAPERS else [ch["paper"]]
        for key in keys:
            assert B.WORKS[key].venue_year in line
    assert paper_claims()["GR"].startswith("GR Loss (IJCAI 2024)")
    assert paper_claims()["OPML-SP"].startswith("OPML (arXiv 2302.14695)")
    assert paper_claims()["CLS"].startswith("CLS (AAAI 2025)")


def test_an_unknown_work_is_an_error_that_names_the_known_ones():
    with pytest.raises(KeyError, match="known: .*gr"):
        B.cite("grr")
