"""Students get questions, instructors get answers: `make lab` serves student copies generated from
the one source (no solution in them, a student's changed copy kept), `make report` executes the
student copies and states no exercise's reference answer, the instructor's report and lab do."""
from __future__ import annotations

import json
import math
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from mlpl_lab.course import notebooks

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))


def _solution_lines():
    """Every line of a solution in the source (the oracle: read here between the markers, not with
    the library), per notebook."""
    out = {}
    for path in NOTEBOOKS:
        inside, lines = False, set()
        for cell in json.loads(path.read_text())["cells"]:
            for line in "".join(cell["source"]).splitlines():
                if line.strip() == "# BEGIN SOLUTION":
                    inside = True
                elif line.strip() == "# END SOLUTION":
                    inside = False
                elif inside and line.strip() and not line.strip().startswith("#"):
                    lines.add(line.strip())
        out[path.name] = lines
    return out


def test_the_lab_copies_hold_no_solution_and_a_students_changes_are_kept(tmp_path):
    """The student copies JupyterLab opens: no marker and no solution line of the source in them,
    the encoded quiz banks beside them; regenerated, a copy still as generated is left current, a
    copy the student changed is kept (never overwritten) and a deleted one comes back."""
    target = tmp_path / "lab" / "student"
    done = notebooks.lab_copies(target, "student")
    assert sorted(done["written"]) == [p.name for p in NOTEBOOKS] and not done["kept"]
    solutions = _solution_lines()
    for path in NOTEBOOKS:
        text = (target / path.name).read_text()
        assert "BEGIN SOLUTION" not in text and "END SOLUTION" not in text, path.name
        code = {line.strip() for c in json.loads(text)["cells"] if c["cell_type"] == "code"
                for line in "".join(c["source"]).splitlines()}
        assert solutions[path.name] and not (solutions[path.name] & code), path.name
        bank = json.loads((target / "quizzes" / f"{path.stem}.json").read_text())
        assert list(bank) == [notebooks.ENCODED]
    first, second = NOTEBOOKS[1].name, NOTEBOOKS[2].name
    changed = (target / first).read_text().replace("None  # your code here", "0.5  # mine", 1)
    (target / first).write_text(changed)
    (target / second).unlink()
    again = notebooks.lab_copies(target, "student")
    assert again["kept"] == [first] and again["written"] == [second]
    assert len(again["current"]) == len(NOTEBOOKS) - 2
    assert (target / first).read_text() == changed
    instructor = notebooks.lab_copies(tmp_path / "lab" / "instructor", "instructor")
    assert len(instructor["written"]) == len(NOTEBOOKS)
    text = (tmp_path / "lab" / "instructor" / NOTEBOOKS[1].name).read_text()
    assert "BEGIN SOLUTION" not in text and any(s in text for s in solutions[NOTEBOOKS[1].name])


def test_the_course_lab_command_says_what_it_wrote_and_what_it_kept(tmp_path, capsys):
    from mlpl_lab.cli import main

    n = len(NOTEBOOKS)
    assert main(["course", "lab", "--out", str(tmp_path)]) == 0
    assert f"student copies in {tmp_path / 'student'}: {n} written from notebooks/, 0 already current" \
        in capsys.readouterr().out
    (tmp_path / "student" / NOTEBOOKS[0].name).write_text("{}")
    assert main(["course", "lab", "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert f"0 written from notebooks/, {n - 1} already current; kept as you changed them: {NOTEBOOKS[0].name}" in out


def _make_n(*args):
    """The commands `make -n` would run for ``args`` (the venv's own setup lines left out)."""
    env = {k: v for k, v in os.environ.items() if k not in ("MAKEFLAGS", "MFLAGS", "MAKELEVEL")}
    done = subprocess.run(["make", "-n", "--no-print-directory", "-o", ".venv/.installed", *args], cwd=ROOT,
                          env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return [line for line in done.stdout.splitlines() if "mlpl-lab " in line or "jupyter lab" in line]


@pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")
def test_make_lab_generates_the_student_copies_then_serves_them():
    """`make lab` is the students' door: the copies are generated first, then JupyterLab opens them
    with the lab's kernel and no check stating answers; the options of the former target stay
    (--allow-root as root, LAB_ARGS). `make lab-instructor` is the instructors'."""
    gen, serve = _make_n("lab", "LAB_UID=0", "LAB_ARGS=--no-browser --port 8890")
    assert gen.endswith("mlpl-lab course lab --variant student --out lab")
    assert serve.startswith("MLPL_LAB_ANSWERS=student ") and serve.endswith("--notebook-dir=lab/student")
    for option in ("--MappingKernelManager.default_kernel_name=python3", "--allow-root", "--no-browser --port 8890"):
        assert option in serve
    assert "--allow-root" not in _make_n("lab", "LAB_UID=1000")[1]
    gen, serve = _make_n("lab-instructor")
    assert gen.endswith("--variant instructor --out lab")
    assert serve.startswith("MLPL_LAB_ANSWERS=instructor ") and serve.endswith("--notebook-dir=lab/instructor")


@pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")
def test_make_report_is_the_students_and_the_book_reads_each_report():
    (report,) = _make_n("report")
    assert "--instructor" not in report and report.rstrip().endswith("--out reports")
    (instructor,) = _make_n("report-instructor")
    assert "report --instructor" in instructor and instructor.endswith("--out reports/instructor")
    lines = _make_n("book", "PROFILE=smoke", "REPORT_DIR=reports/smoke", "BOOK_ARGS=--strict")
    assert "--out reports/smoke" in lines[0] and "--instructor" not in lines[0]
    assert "report --instructor" in lines[1] and "--out reports/smoke/instructor" in lines[1]
    assert lines[2].endswith("course book --executed reports/smoke --instructor-executed reports/smoke/instructor "
                             "--out reports/smoke/book --strict")


def _exercise_lines(html: str):
    """The ✓ / ✗ lines the exercises' checks printed, as the HTML shows them."""
    import html as html_lib

    text = html_lib.unescape(re.sub(r"<[^>]+>", "", html))
    return [line.strip() for line in text.splitlines() if re.match(r"\s*[✓✗] Exercise", line)]


@pytest.mark.notebook
@pytest.mark.slow
def test_the_students_report_states_no_reference_answer_and_the_instructors_does(tmp_path):
    """Notebook 01 under smoke, reported for a student and for an instructor (`mlpl-lab report` and
    `mlpl-lab report --instructor`). The student's HTML: every exercise a ✗ with its hint, no
    solution, no reference answer; the instructor's: every exercise a ✓ that states its reference,
    e.g. Exercise 2's AN loss on a hidden positive scored 0.9, -ln(1 - 0.9) = 2.303 (the oracle,
    by hand). Both report the same records: only the exercises' lines differ."""
    from mlpl_lab.cli import main
    from mlpl_lab.reporting.report import read_records

    student, instructor = tmp_path / "reports", tmp_path / "reports" / "instructor"
    assert main(["report", "--profile", "smoke", "--notebooks", "01", "--out", str(student)]) == 0
    assert main(["report", "--instructor", "--profile", "smoke", "--notebooks", "01", "--out", str(instructor)]) == 0
    penalty = f"{-math.log(1 - 0.9):.4g}"
    html = (student / "01_assume_negative.html").read_text()
    lines = _exercise_lines(html)
    assert len(lines) == 4 and all(line.startswith("✗") and "no answer yet" in line for line in lines), lines
    assert html.count("hint:") >= 4 and "BEGIN SOLUTION" not in html
    assert penalty not in html and "the reference gives" not in html and "claims hold in this run" not in html
    html = (instructor / "01_assume_negative.html").read_text()
    lines = _exercise_lines(html)
    assert len(lines) == 4 and all(line.startswith("✓") for line in lines), lines
    assert f"the reference gives {penalty}, you said {penalty}" in html and "claims hold in this run" in html
    records = [read_records(folder / "01_assume_negative.ipynb") for folder in (student, instructor)]
    assert records[0].keys() == records[1].keys()
    for name in ("gap", "mAP", "claims", "convergence"):
        assert records[0][name] == records[1][name], name


def test_the_instructor_book_refuses_a_report_of_the_student_copies(tmp_path):
    """The instructor book shows the solutions: built from the student's report (stubs, no marker)
    it would show none, so it stops and names the instructor report."""
    from mlpl_lab.course import book

    executed = tmp_path / "reports"
    executed.mkdir()
    notebooks.write_nb(notebooks.version_of(notebooks.read_nb(NOTEBOOKS[1]), keep=False), executed / NOTEBOOKS[1].name)
    with pytest.raises(notebooks.CourseError, match="mlpl-lab report --instructor"):
        book.stage_book(executed, tmp_path / "src", "instructor")
    assert notebooks.instructor_report(executed) == executed / "instructor"
