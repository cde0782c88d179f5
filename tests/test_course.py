"""Course material: one source and two versions, course.yml vs the notebooks, the
quiz banks, and — under the smoke profile — instructor notebooks that pass every check, student
notebooks that run end to end, and a book that builds with warnings as errors."""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import yaml

from mlpl_lab.course import book, notebooks, quiz, syllabus

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
STEMS = [p.stem for p in NOTEBOOKS]
HEADING = re.compile(r"^### Exercise (\d+) — \S", re.M)


def cells(path):
    return json.loads(Path(path).read_text())["cells"]


def src(cell):
    return "".join(cell["source"])


# ---------------------------------------------------------------- one source, two versions
SOURCE = '''x = 1
def f(a):
    # BEGIN SOLUTION
    b = a * 2
    return b
    # END SOLUTION
# BEGIN SOLUTION
answer, other = 3, 4
# END SOLUTION
check(answer)
'''


def test_strip_solutions_by_hand():
    assert notebooks.strip_solutions(SOURCE, keep=True) == SOURCE.replace("    # BEGIN SOLUTION\n", "").replace(
        "    # END SOLUTION\n", "").replace("# BEGIN SOLUTION\n", "").replace("# END SOLUTION\n", "")
    student = notebooks.strip_solutions(SOURCE, keep=False)
    assert student == ("x = 1\ndef f(a):\n    b = None  # your code here\n"
                       "answer = None  # your code here\nother = None  # your code here\ncheck(answer)\n")
    ns = {"check": lambda a: a}
    exec(compile(student, "student", "exec"), ns)  # the stub runs
    assert ns["f"](2) is None and ns["answer"] is None
    for bad in ("# BEGIN SOLUTION\nx\n", "x\n# END SOLUTION\n", "# BEGIN SOLUTION\n# BEGIN SOLUTION\n"):
        with pytest.raises(notebooks.CourseError):
            notebooks.strip_solutions(bad, keep=False)


def test_export_writes_both_versions_without_solution_text_for_students(tmp_path):
    written = notebooks.export(tmp_path)
    assert [p.name for p in written["student"]] == [p.name for p in NOTEBOOKS]
    for source, student, instructor in zip(NOTEBOOKS, written["student"], written["instructor"]):
        solutions = [line.strip() for c in cells(source) for line in book._solution_blocks(src(c))]
        solutions = [s for s in solutions if len(s) > 8]
        assert solutions, f"{source.name} has no solution"
        text = student.read_text()
        assert "SOLUTION" not in text and "SOLUTION" not in instructor.read_text()
        leaked = [s for s in solutions if json.dumps(s)[1:-1] in text]
        assert not leaked, f"{student.name} shows solution text {leaked[:2]}"
        inst = [c for c in cells(instructor) if c["cell_type"] == "code"]
        assert all(c["outputs"] == [] and c["execution_count"] is None for c in inst)
        for s in solutions:  # the instructor copy keeps every solution line
            assert json.dumps(s)[1:-1] in instructor.read_text()
    assert (tmp_path / "student" / "quizzes" / "00_partial_labels.json").exists()


@pytest.mark.parametrize("path", NOTEBOOKS, ids=STEMS)
def test_every_chapter_has_exercises_with_checks_and_solutions(path):
    cs = cells(path)
    numbers = [int(m.group(1)) for c in cs if c["cell_type"] == "markdown" for m in HEADING.finditer(src(c))]
    assert 3 <= len(numbers) <= 5 and numbers == list(range(1, len(numbers) + 1)), numbers
    code = [src(c) for c in cs if c["cell_type"] == "code"]
    checked = [s for s in code if re.search(r"\bex\.check_\w+\(", s)]
    assert len(checked) == len(numbers)
    assert all(notebooks.BEGIN in s and notebooks.END in s for s in checked)
    first_exercise = next(i for i, c in enumerate(cs) if HEADING.search(src(c)))
    assert all(notebooks.BEGIN not in src(c) for c in cs[:first_exercise]), "solutions only in exercise cells"


# ---------------------------------------------------------------- course.yml
def test_course_file_is_well_formed_and_covers_every_notebook():
    data = yaml.safe_load((ROOT / "notebooks" / "course.yml").read_text())
    assert [ch["notebook"] for ch in data["chapters"]] == STEMS
    syllabus.load_course()
    for ch in data["chapters"]:
        assert 3 <= len(ch["objectives"]) <= 5


@pytest.mark.parametrize("path", NOTEBOOKS, ids=STEMS)
def test_objectives_cell_agrees_with_course_yml(path):
    data = yaml.safe_load((ROOT / "notebooks" / "course.yml").read_text())
    ch = next(c for c in data["chapters"] if c["notebook"] == path.stem)
    cell = cells(path)[1]
    assert cell["cell_type"] == "markdown" and cell["id"] == notebooks.OBJECTIVES_ID
    text = src(cell)
    for i, objective in enumerate(ch["objectives"], 1):
        assert f"{i}. {objective}\n" in text
    assert syllabus.paper_line(ch) in text and ch["difficulty"] in text
    assert syllabus.sync_notebook(path, ch, write=False) == []
    last = cells(path)[-1]
    assert last["id"] == notebooks.QUIZ_ID and f'show_quiz("{path.stem}")' in src(last)


def test_a_disagreement_is_reported(tmp_path):
    nb = json.loads(NOTEBOOKS[0].read_text())
    nb["cells"][1]["source"] = ["**Learning objectives**\n", "1. something else\n"]
    target = tmp_path / NOTEBOOKS[0].name
    target.write_text(json.dumps(nb))
    ch = syllabus.load_course()["chapters"][0]
    assert syllabus.sync_notebook(target, ch, write=False) == ["objectives cell differs from course.yml"]
    assert syllabus.sync_notebook(target, ch, write=True) and syllabus.sync_notebook(target, ch, write=False) == []


# ---------------------------------------------------------------- quizzes
@pytest.mark.parametrize("stem", STEMS)
def test_quiz_bank_schema(stem):
    bank = json.loads((ROOT / "notebooks" / "quizzes" / f"{stem}.json").read_text())
    assert 5 <= len(bank) <= 8
    for q in bank:
        assert q["type"] in ("multiple_choice", "numeric")
        assert all(a.get("feedback") for a in q["answers"])
        if q["type"] == "multiple_choice":
            assert sum(a["correct"] for a in q["answers"]) == 1
        else:
            assert any(a.get("correct") for a in q["answers"] if a["type"] in ("value", "range"))
        assert "$" not in json.dumps(q) and "\\\\" not in json.dumps(q)
    quiz.load_quiz(stem)


def test_quiz_validator_rejects_broken_banks():
    good = json.loads((ROOT / "notebooks" / "quizzes" / "00_partial_labels.json").read_text())
    broken = {
        "latex": lambda b: b[0].update(question="What is $\\sigma(0)$?"),
        "two correct": lambda b: [a.update(correct=True) for a in b[0]["answers"]],
        "no feedback": lambda b: b[1]["answers"][0].pop("feedback"),
        "too few": lambda b: b.__delitem__(slice(0, 2)),
        "bad type": lambda b: b[0].update(type="essay"),
    }
    for name, breaker in broken.items():
        bank = json.loads(json.dumps(good))
        breaker(bank)
        with pytest.raises(notebooks.CourseError):
            quiz.validate_quiz(bank, name)


def test_quiz_html_embeds_the_bank_and_needs_no_network():
    import base64

    html = quiz.quiz_html("03_opml")
    bank = json.loads((ROOT / "notebooks" / "quizzes" / "03_opml.json").read_text())
    embedded = re.search(r'window\.atob\("([A-Za-z0-9+/=]+)"\)', html).group(1)
    assert json.loads(base64.b64decode(embedded)) == bank and 'id="quiz03opml"' in html
    assert "http://" not in html and "https://" not in html
    assert quiz.quiz_html("03_opml") == html  # the same output on every run


# ---------------------------------------------------------------- under the smoke profile
def _marks(path):
    """Per exercise code cell: the ✓/✗ lines it printed, and any error output."""
    out = []
    for c in cells(path):
        if c["cell_type"] == "code" and re.search(r"\bex\.check_\w+\(", src(c)):
            text = "".join("".join(o.get("text", "")) for o in c.get("outputs", []))
            errors = [o for o in c.get("outputs", []) if o.get("output_type") == "error"]
            out.append(([line[0] for line in text.splitlines() if line[:1] in "✓✗"], errors))
    return out


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    return notebooks.export(tmp_path_factory.mktemp("dist"))


def _run_copy(exported, which, stem, tmp_path):
    """Execute the exported ``which`` copy of ``stem`` under smoke; (executed path, its marks)."""
    from mlpl_lab.reporting.execute import execute_notebook

    path = next(p for p in exported[which] if p.stem == stem)
    executed = execute_notebook(path, tmp_path, profile="smoke", html=False, timeout=600)
    marks = _marks(executed)
    assert len(marks) >= 3
    assert not [e for _, errors in marks for e in errors], "an exercise cell raised"
    return executed, [ticks for ticks, _ in marks]


@pytest.mark.notebook
@pytest.mark.parametrize("stem", STEMS)
def test_instructor_notebook_passes_every_check_under_smoke(stem, exported, tmp_path):
    _, marks = _run_copy(exported, "instructor", stem, tmp_path)
    assert all(ticks and set(ticks) == {"✓"} for ticks in marks), marks


@pytest.mark.notebook
@pytest.mark.parametrize("stem", STEMS)
def test_student_notebook_runs_end_to_end_under_smoke(stem, exported, tmp_path):
    from mlpl_lab.reporting.report import read_records

    executed, marks = _run_copy(exported, "student", stem, tmp_path)
    assert all("✗" in ticks for ticks in marks), marks   # every stub reports ✗ and the notebook went on
    assert read_records(executed), "the chapter's own cells ran"
    quiz = cells(executed)[-1]
    assert any("text/html" in o.get("data", {}) for o in quiz["outputs"])


@pytest.mark.notebook
def test_book_builds_strictly_from_executed_notebooks(executed_notebooks, tmp_path_factory):
    """Both variants, warnings as errors, from the notebooks the smoke session executed."""
    for stem in STEMS:
        executed_notebooks(f"{stem}.ipynb")
    folder = next(p for p in tmp_path_factory.getbasetemp().glob("executed*")
                  if (p / f"{STEMS[-1]}.ipynb").exists())
    out = tmp_path_factory.mktemp("book")
    for variant in ("student", "instructor"):
        index = book.build_book(folder, out / variant, variant, strict=True)
        site = index.parent
        assert all((site / f"{stem}.html").exists() for stem in STEMS)
        assert (site / "_static" / "mathjax" / "MathJax.js").exists() and (site / "syllabus.html").exists()
        pages = " ".join((site / f"{stem}.html").read_text() for stem in STEMS)
        assert "BEGIN SOLUTION" not in pages and "cdn.jsdelivr" not in pages and "unpkg.com" not in pages
        assert ((site / "guide.html").exists()) == (variant == "instructor")
        assert ('class="solution' in pages) == (variant == "instructor")
    guide = (out / "instructor" / "guide.html").read_text()
    assert "smoke" in guide and "{expected_ranges}" not in guide


def test_the_first_cell_states_the_measured_times_from_the_timings_file():
    """Bug caught: a time typed into a notebook by hand, or one the timings file does not hold
    (issue 33: every notebook's opening states its measured cold time and its time from the
    pack, generated from notebooks/timings.json)."""
    fake = {"cpu": {"02_gr_loss": 1164.75}, "cpu-pack": {"02_gr_loss": 21.4}}
    line = syllabus.time_line("02_gr_loss", fake)
    assert "19.4 min training every run from scratch; 21 s from the course pack" in line
    assert "not yet measured from the course pack" in syllabus.time_line("02_gr_loss", {"cpu": fake["cpu"]})
    assert syllabus.time_line("02_gr_loss", {}) is None
    timings = syllabus.load_timings()
    for path in NOTEBOOKS:
        first = "".join(json.loads(path.read_text())["cells"][0]["source"])
        want = syllabus.time_line(path.stem, timings)
        assert want is None or first.endswith(want), f"{path.name}: run `mlpl-lab course sync`"


def test_a_series_store_rebuilt_from_its_pack_counts_as_the_series(tmp_path):
    """Executed notebooks whose header says "results from pack" count under cpu-pack; with
    --series-from-pack (``as_series``) under cpu, and a notebook executed on local runs keeps its
    own time. Bugs caught: the pack time dropped, the series' own time overwritten, the suffix
    left on, a profile without the suffix renamed."""
    executed = tmp_path / "reports"
    executed.mkdir()
    for stem, header, seconds in (("01_assume_negative", "results from pack cpu-x (commit abc): 9 runs", 7.5),
                                  ("02_gr_loss", "results from runs trained in this store (3 runs)", 4.0)):
        nb = {"cells": [{"cell_type": "code", "execution_count": 1, "id": "h", "metadata": {}, "source": "",
                         "outputs": [{"output_type": "stream", "name": "stdout", "text": header + "\n"}]}],
              "nbformat": 4, "nbformat_minor": 5,
              "metadata": {"papermill": {"duration": seconds, "parameters": {"profile": "cpu"}}}}
        (executed / f"{stem}.ipynb").write_text(json.dumps(nb))
    found = syllabus.timings_from_executed(executed)
    assert found == {"cpu-pack": {"01_assume_negative": 7.5}, "cpu": {"02_gr_loss": 4.0}}
    assert syllabus.as_series(found) == {"cpu": {"01_assume_negative": 7.5, "02_gr_loss": 4.0}}
    both = {"cpu": {"02_gr_loss": 4.0}, "cpu-pack": {"02_gr_loss": 1.0, "03_opml": 2.0}, "smoke": {"x": 1.0}}
    assert syllabus.as_series(both) == {"cpu": {"02_gr_loss": 4.0, "03_opml": 2.0}, "smoke": {"x": 1.0}}


def test_cold_seconds_add_each_notebooks_first_asked_runs_shared_by_the_workers(tmp_path, monkeypatch):
    """Hand-derived: run A (100 s) and C (40 s) are first asked by nb1, B (60 s) by nb2 (which also
    reads C); two workers. nb1 = 10 + (100 + 40) / 2 = 80 s; nb2 = 5 + 60 / 2 = 35 s. Bugs caught:
    a shared run counted twice, run time not shared by the workers, a missing run silently 0."""
    import json as _json

    from mlpl_lab.protocol import plan as plan_module

    runs = tmp_path / "runs"
    for key, seconds in (("A", 100.0), ("B", 60.0), ("C", 40.0)):
        (runs / key).mkdir(parents=True)
        (runs / key / "summary.json").write_text(_json.dumps({"seconds": seconds}))

    class FakePlan:
        def first_notebook(self):
            return {"A": "nb1", "C": "nb1", "B": "nb2"}

    monkeypatch.setattr(plan_module, "plan_series", lambda *a, **k: FakePlan())
    got = syllabus.cold_seconds({"nb1": 10.0, "nb2": 5.0}, "cpu", runs, 2, [])
    assert got == {"nb1": 80.0, "nb2": 35.0}
    (runs / "B" / "summary.json").unlink()
    with pytest.raises(ValueError, match="not complete"):
        syllabus.cold_seconds({"nb1": 10.0, "nb2": 5.0}, "cpu", runs, 2, [])


def _executed_with_records(path, records, profile="cpu", end="2026-11-26T10:00:00"):
    from mlpl_lab.reporting.report import RECORD_MIME

    cells = [{"cell_type": "code", "execution_count": 1, "id": f"c{i}", "metadata": {}, "source": "",
              "outputs": [{"output_type": "display_data", "metadata": {},
                           "data": {RECORD_MIME: {"name": name, "value": value}}}]}
             for i, (name, value) in enumerate(records.items())]
    nb = {"cells": cells, "nbformat": 4, "nbformat_minor": 5,
          "metadata": {"papermill": {"parameters": {"profile": profile}, "end_time": end}}}
    path.write_text(json.dumps(nb))


def test_results_block_is_written_from_the_records_between_the_markers(tmp_path):
    """Hand-written expectation of one claim's bullet and the convergence count; the page outside
    the markers is kept; a page without markers and a folder without claims are clear errors.
    Bugs caught: a typed or stale figure, the interval's bounds swapped, the prose around the
    block overwritten."""
    from mlpl_lab.course import results

    executed = tmp_path / "reports"
    executed.mkdir()
    claim = {"margin": 6.871, "ci95": [6.38, 7.364], "ci_family": [6.1, 7.6], "n": 5, "seeds": [1, 2, 3, 4, 5],
             "family": "GR beats AN", "family_size": 1, "verdict": "holds", "converged": True, "kind": "finding",
             "a": {"1": 80.0}, "b": {"1": 73.1}}
    _executed_with_records(executed / "02_gr_loss.ipynb", {
        "claims": {"GR beats AN (single positive)": claim,
                   "GR beats the best other zoo method (EM)": dict(claim, margin=-0.5, ci95=[-1.0, 0.0],
                                                                    ci_family=[-1.2, 0.2], family="best", family_size=2,
                                                                    verdict="inconclusive", converged=False,
                                                                    a={"1": 80.0}, b={"1": 80.5}),
                   "GR beats the ablation row 'k̂'": dict(claim, family="ablation", converged=False, b={"1": 78.0},
                                                         schedule_bound="schedule-bound; the length check agrees"),
                   "an observation": dict(claim, n=2, seeds=[1, 2], verdict="inconclusive (2 seeds)",
                                          family="best", family_size=2, kind="observation")},
        "convergence": {"AN": True, "GR": {"seed 1": True, "seed 2": False, "seed 3": "schedule-bound"}}})
    page = tmp_path / "handbook.md"
    page.write_text(f"before\n{results.BEGIN}\nold\n{results.END}\nafter\n")
    assert results.write_results(executed, page, check=True) and "old" in page.read_text()
    assert results.write_results(executed, page)
    text = page.read_text()
    assert text.startswith("before\n") and text.endswith("\nafter\n") and "\nold\n" not in text
    assert "* **02_gr_loss**: 2 converged, 1 schedule-bound, 1 unconverged of 4 recorded runs" in text
    # grouped by family with m; the family-wise interval first (it decides), the unadjusted one labelled
    assert "  * *GR beats AN (m = 1)*\n    * GR beats AN (single positive): +6.87 [+6.10, +7.60]" in text
    assert ("(95 % unadjusted [+6.38, +7.36]) over 5 paired seed(s) (1, 2, 3, 4, 5) — **holds**") in text
    assert "Holm" not in text
    assert "  * *best (m = 2)*\n    * GR beats the best other zoo method (EM): -0.50 [-1.20, +0.20]" in text
    assert "    * an observation: +6.87 [+6.10, +7.60] (95 % unadjusted [+6.38, +7.36]) over 2 paired seed(s) (1, 2)" in text
    assert "(a run of it did not converge)" in text
    # a schedule-bound claim carries § and what its length check found, as the take-aways do, not †'s words
    line = next(x for x in text.splitlines() if "ablation row" in x)
    assert line.endswith("— **holds** (§ schedule-bound; the length check agrees)")
    assert "Distinct findings of the course: 3 (0 stated again" in text  # the observation is no finding
    assert "of a cpu series (executed 2026-11-26)" in text
    assert str(executed) not in text  # a path only the machine that ran the series holds
    assert not results.write_results(executed, page)  # current: nothing to change
    page.write_text("no markers")
    with pytest.raises(ValueError, match="no results markers"):
        results.write_results(executed, page)
    with pytest.raises(ValueError, match="no executed notebook with claims"):
        results.results_markdown(tmp_path / "empty")


def test_the_readme_times_are_generated_from_their_records(tmp_path):
    """Hand-made records: 2 h 30 min of cold series, 100 s of pack report, 45 min of gpu_shape;
    the figures the README gets are written out by hand here."""
    from mlpl_lab.course.readme_times import BEGIN, END, papers_block
    from mlpl_lab.course.readme_times import sync_readme as sync

    readme = tmp_path / "README.md"
    readme.write_text(f"intro\n{BEGIN}\nold text\n{END}\nrest\n{papers_block()}\n")
    timings = tmp_path / "timings.json"
    timings.write_text(json.dumps({"cpu": {"a": 5400.0, "b": 3600.0}, "cpu-pack": {"a": 70.0, "b": 30.0}}))
    record = tmp_path / "gpu_shape.json"
    report = tmp_path / "make_report.json"  # not measured yet: the notebooks' own times stand in

    def sync_readme(write, readme, timings, record):
        return sync(write, readme, timings, record, report_record=report)

    assert sync_readme(False, readme, timings, record) == ["measured times out of date"]
    assert "old text" in readme.read_text()  # a check writes nothing
    sync_readme(True, readme, timings, record)
    text = readme.read_text()
    assert text.startswith("intro\n") and text.endswith(f"{END}\nrest\n{papers_block()}\n") and "old text" not in text
    assert "course pack: **1.7 min** for 2 notebooks" in text
    assert "two cores): **2.5 h** for 2 notebooks" in text
    assert "on the CPU): **not yet measured**" in text
    record.write_text(json.dumps({"seconds": 2700.0, "date": "2026-11-25", "notebooks": 8, "threads": 2}))
    sync_readme(True, readme, timings, record)
    assert "on the CPU): **45.0 min**, measured 2026-11-25 for 8 notebooks with 2 thread(s)" in readme.read_text()
    assert sync_readme(True, readme, timings, record) == []  # current: nothing to change
    # make report timed end to end (two at a time, then one by one): the wall clock, not the cells
    report.write_text(json.dumps({"date": "2026-12-02 06:00 UTC", "cores": 2, "runs": [
        {"lanes": 2, "seconds": 158.4, "imported_runs": 706, "runs_trained": 0, "notebooks": {"a": 60, "b": 90}},
        {"lanes": 1, "seconds": 233.0, "imported_runs": 706, "runs_trained": 0, "notebooks": {"a": 99, "b": 120}}]}))
    sync_readme(True, readme, timings, record)
    assert ("* `make report` from the course pack, into an empty store: **2.6 min** for 2 notebooks, 2 at a "
            "time, 706 runs imported, 0 trained, measured 2026-12-02 on 2 cores (one by one: 3.9 min) "
            "(`benchmarks/records/make_report_cpu.json`).") in readme.read_text()
    assert "1.7 min" not in readme.read_text()
    readme.write_text("no markers\n")
    with pytest.raises(ValueError, match="no measured times markers"):
        sync_readme(True, readme, timings, record)
