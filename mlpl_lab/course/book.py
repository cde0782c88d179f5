"""The book (:func:`build_book`): Sphinx + myst-nb + sphinx-book-theme (+ sphinx-exercise) from
the notebooks a report executed, with execution off, the MathJax the reports ship, a student and
an instructor variant: the student book from the student report (``mlpl-lab report``: the student
copies executed, no check states its reference answer), the instructor book from the instructor
report (``mlpl-lab report --instructor``: the notebooks with their solutions, the answers stated)."""
from __future__ import annotations

import json
import re
import shutil
import textwrap
from pathlib import Path
from typing import Any, Dict, List

from ..reporting.html_export import static_widgets  # widgets as their default images, as in the reports
from ..reporting.report import NOTEBOOK_DIR
from .notebooks import (BEGIN, CourseError, END, PROFILES, as_lines, has_solution, instructor_report,  # noqa: F401
                        new_cell, read_nb, source_of, strip_solutions, write_nb)
from .ranges import expected_ranges, load_ranges, merge_ranges, ranges_markdown
from .syllabus import load_course, load_timings, syllabus_markdown, timings_from_executed

# ---------------------------------------------------------------------------------------
# the book: Sphinx + myst-nb + sphinx-book-theme (+ sphinx-exercise), from executed notebooks
# ---------------------------------------------------------------------------------------
BOOK_PAGES = ("index.md", "guide.md", "syllabus.md", "fidelity.md", "handbook.md", "conf.py")
EXERCISE_HEADING = re.compile(r"^###\s+Exercise\s+(\d+)\s+—\s+(.+)$", re.M)


def _exercise_directives(nb: Dict[str, Any], stem: str, variant: str) -> None:
    """Exercises as sphinx-exercise directives; the instructor book adds each solution as a
    dropdown ``solution`` directive after its code cell."""
    cells: List[Dict[str, Any]] = []
    label = None
    for cell in nb["cells"]:
        src = source_of(cell)
        m = EXERCISE_HEADING.search(src) if cell["cell_type"] == "markdown" else None
        if m:
            label = f"ex-{stem[:2]}-{m.group(1)}"
            body = src[m.end():].strip()
            cell = dict(cell, source=as_lines(f":::{{exercise}} {m.group(2).strip()}\n:label: {label}\n\n"
                                              f"{body}\n:::\n"))
        cells.append(cell)
        if cell["cell_type"] == "code" and has_solution(src) and label and variant == "instructor":
            solution = "".join(_solution_blocks(src))
            cells.append(new_cell("markdown", f":::{{solution}} {label}\n:class: dropdown\n\n```python\n"
                                              f"{textwrap.dedent(solution).rstrip()}\n```\n:::\n", f"{label}-solution"))
    nb["cells"] = cells


def _solution_blocks(source: str) -> List[str]:
    out, inside = [], False
    for line in source.splitlines(keepends=True):
        if line.strip() == BEGIN:
            inside = True
        elif line.strip() == END:
            inside = False
        elif inside:
            out.append(line)
    return out


def book_notebook(nb: Dict[str, Any], stem: str, variant: str) -> Dict[str, Any]:
    """An executed notebook as the book shows it: records' custom MIME dropped (their text
    stays), widgets as static images, exercises as directives; the student variant shows each
    solution cell as its stub without outputs, the instructor variant with its outputs."""
    from ..reporting.report import RECORD_MIME

    nb = json.loads(json.dumps(nb))
    static_widgets(nb)
    _exercise_directives(nb, stem, variant)   # reads the solutions before they are stripped
    for cell in nb["cells"]:
        if cell["cell_type"] != "code":
            continue
        src = source_of(cell)
        if has_solution(src):
            cell["source"] = as_lines(strip_solutions(src, keep=variant == "instructor"))
            if variant == "student":
                cell["outputs"] = []
        for out in cell.get("outputs", []):
            out.get("data", {}).pop(RECORD_MIME, None)
        cell["outputs"] = [o for o in cell.get("outputs", []) if o.get("output_type") != "display_data"
                           or o.get("data")]
    return nb


def _page(name: str) -> str:
    return (NOTEBOOK_DIR / name).read_text(encoding="utf-8")


def stage_book(executed: Path, src: Path, variant: str) -> List[str]:
    """Write the book's Sphinx sources for ``variant`` into ``src``; return the chapters staged."""
    from .. import __version__

    shutil.rmtree(src, ignore_errors=True)
    src.mkdir(parents=True)
    course = load_course()
    stems = [ch["notebook"] for ch in course["chapters"] if (Path(executed) / f"{ch['notebook']}.ipynb").exists()]
    flag = " --instructor" if variant == "instructor" else ""
    if not stems:
        raise CourseError(f"no executed notebooks in {executed} for the {variant} book: run `make report"
                          f"{'-instructor' if flag else ''}` (or `mlpl-lab report{flag} --profile smoke --out "
                          f"{executed}`) first; the book never executes them again")
    executed_nbs = {stem: read_nb(Path(executed) / f"{stem}.ipynb") for stem in stems}
    if variant == "instructor" and not any(has_solution(source_of(c)) for nb in executed_nbs.values()
                                           for c in nb["cells"] if c["cell_type"] == "code"):
        raise CourseError(f"the notebooks in {executed} were executed from the student copies (no solution in "
                          f"them): the instructor book needs the instructor report, `mlpl-lab report --instructor "
                          f"--out {executed}`")
    for stem in stems:
        write_nb(book_notebook(executed_nbs[stem], stem, variant), src / f"{stem}.ipynb")
    profile_runs = timings_from_executed(Path(executed))
    profiles = sorted(profile_runs) or ["?"]
    shutil.copy(NOTEBOOK_DIR / "conf.py", src / "conf.py")
    # the fidelity page (the losses against the official code) and the handbook (the protocol, the
    # run store and packs, scaling out) follow the chapters in both books
    pages = ["syllabus"] + stems + ["fidelity", "handbook"] + (["guide"] if variant == "instructor" else [])
    for page in ("fidelity.md", "handbook.md"):
        shutil.copy(NOTEBOOK_DIR / page, src / page)
    index = _page("index.md").replace("{edition}", __version__).replace("{variant}", variant)
    index += "\n```{toctree}\n:maxdepth: 1\n\n" + "\n".join(pages) + "\n```\n"
    (src / "index.md").write_text(index, encoding="utf-8")
    # the syllabus says the times every page says (notebooks/timings.json: the README, the notebooks'
    # headers, the guide), not how long the executions this book shows took on this machine
    timings = load_timings()
    (src / "syllabus.md").write_text(_page("syllabus.md").replace("{syllabus}", syllabus_markdown(course, timings, stems)
                                                                   .split("\n", 2)[2]), encoding="utf-8")
    if variant == "instructor":
        ranges = merge_ranges(load_ranges(), expected_ranges({p: Path(executed) for p in profiles}))
        shown = [p for p in PROFILES if any(p in v for rows in ranges.values() for v in rows.values())]
        ranges = ranges_markdown(ranges, shown or profiles, plots=src / "expected",
                                 titles={ch["notebook"]: ch["title"] for ch in course["chapters"]})
        (src / "guide.md").write_text(_page("guide.md").replace("{expected_ranges}", ranges), encoding="utf-8")
    (src / "_variant.txt").write_text(variant)
    return stems


def build_book(executed: Path, out: Path, variant: str = "student", strict: bool = False) -> Path:
    """Stage the sources and run ``sphinx-build`` (html; ``-W --keep-going`` when ``strict``)
    into ``out``, then copy MathJax into its ``_static`` folder. Returns ``out/index.html``."""
    import subprocess
    import sys

    from ..reporting.report import install_mathjax

    out = Path(out)
    src = out.parent / f"_src_{variant}"
    stage_book(Path(executed), src, variant)
    cmd = [sys.executable, "-m", "sphinx", "-b", "html", "-q", "-E"] + \
        (["-W", "--keep-going"] if strict else []) + [str(src), str(out)]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        raise CourseError(f"sphinx-build failed for the {variant} book:\n{proc.stderr[-4000:]}")
    install_mathjax(out / "_static")  # Sphinx puts a relative mathjax_path under _static/
    return out / "index.html"
