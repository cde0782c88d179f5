"""The instructor's pages: the syllabus' three times per chapter, the guide's expected results and
its GPU section (generated from records, current), the students' quiz banks encoded, ``make lab``
as root, and the README's clone sizes. Every expected figure is written out by hand here."""
from __future__ import annotations

import base64
import json
import re
import os
import shutil
import subprocess
from pathlib import Path
from types import SimpleNamespace

import pytest

from mlpl_lab.course import gpu_window, notebooks, quiz, ranges, readme_times, syllabus

ROOT = Path(__file__).resolve().parent.parent
STEMS = [p.stem for p in sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))]


# ---------------------------------------------------------------- the syllabus' times
def test_the_syllabus_gives_pack_live_and_cold_times_from_their_records():
    """Hand-made records: 01 served in 6 s, its live run 9.4 s, cold 1816 s (30.3 min); 07 cold
    22,796 s (6.3 h). Bugs caught: the cold time shown as the session's time (the 380-minute
    reading), a live time invented for a chapter that has none, a missing record guessed."""
    course = syllabus.load_course()
    timings = {"cpu": {"01_assume_negative": 1816.0, "07_benchmark": 22796.0},
               "cpu-pack": {"01_assume_negative": 6.0, "07_benchmark": 5.7}}
    serve = {"profile": "cpu", "date": "2026-11-27 05:38 UTC",
             "notebooks": [{"notebook": "02_gr_loss.ipynb", "seconds": 34.4, "runs_trained": 0}]}
    page = syllabus.syllabus_markdown(course, timings, live={"01_assume_negative": 9.4}, pack_serve=serve)
    rows = {r.split("](")[1][:2]: r for r in page.splitlines() if r.startswith("| [")}
    assert len(rows) == len(STEMS)
    assert "| 6 s | 9 s | 30.3 min |" in rows["01"]
    assert "| 6 s | no live exercise | 6.3 h |" in rows["07"]
    assert "no live exercise" in rows["00"]
    assert rows["02"].count(notebooks.NOT_MEASURED) == 3   # pack, live and cold: no record
    assert "from the pack (cpu)" in page and "live exercise (cpu)" in page and "cold (cpu" in page
    assert "12 s for the 2 chapters together" in page       # 6 + 5.7 s, rounded
    assert "02 in 34 s" in page and "0 runs trained" in page
    for ch in course["chapters"]:
        assert ch["objectives"][0] in page


def test_the_syllabus_reads_the_measured_live_runs():
    """The live column is what the live-exercise record says for the run the code builds now
    (read here straight from the record: a chapter whose spec changed since reads as unmeasured)."""
    record = json.loads((ROOT / "benchmarks" / "records" / "live_exercises_cpu.json").read_text())
    found = syllabus.live_seconds("cpu")
    assert found, "no live exercise is measured"
    for stem, seconds in found.items():
        assert seconds == record["chapters"][stem[:2]]["seconds"]
    assert not {"00_partial_labels", "07_benchmark"} & set(found)


# ---------------------------------------------------------------- expected results
RECORDS = {"mAP": {"GR": 80.9, "AN": 69.3},
           "share": {"single positive": 0.6441},
           "claims": {"GR beats AN": {"seeds": [1, 2, 3], "a": {"1": 80.5, "2": 81.9, "3": 80.3},
                                      "b": {"1": 69.0, "2": 70.2, "3": 68.7}, "diffs": [11.5, 11.7, 11.6]}}}


def test_a_figure_reads_its_value_and_its_seeds_range():
    """Hand-derived: GR's seeds 80.5, 81.9, 80.3 span 80.3–81.9; AN's (side b) 68.7–70.2; the
    differences 11.5–11.7; a share is shown in %. Bugs caught: the wrong side of the claim, the
    mean taken as the range, a fraction shown as a fraction."""
    gr = ranges.figure_values(ranges.Figure("GR", "mAP", ("GR",), claim="GR beats AN"), RECORDS)
    assert gr == {"value": 80.9, "unit": "mAP points", "low": 80.3, "high": 81.9, "seeds": [1, 2, 3]}
    an = ranges.figure_values(ranges.Figure("AN", "mAP", ("AN",), claim="GR beats AN", side="b"), RECORDS)
    assert (an["low"], an["high"]) == (68.7, 70.2)
    gap = ranges.figure_values(ranges.Figure("gap", "mAP", ("GR",), claim="GR beats AN", side="diffs"), RECORDS)
    assert (gap["low"], gap["high"]) == (11.5, 11.7)
    share = ranges.figure_values(ranges.Figure("hidden", "share", ("single positive",), "%"), RECORDS)
    assert share == {"value": 64.41, "unit": "%"}
    assert ranges.figure_values(ranges.Figure("x", "mAP", ("EM",)), RECORDS) is None
    assert ranges.in_words("GR's test mAP under single positive", gr) == \
        "GR's test mAP under single positive: **80.9** mAP points (seeds 1–3: 80.3 to 81.9)"
    assert ranges.in_words("hidden", share) == "hidden: **64.4**% (counted on the labels, no training)"


def test_the_stored_results_cover_every_figure_and_hold_their_value():
    """The committed cpu results (``mlpl-lab course ranges``): every figure of every chapter is
    found, and a mean over seeds lies inside its seeds' range. Bugs caught: a claim renamed in a
    notebook (its figure loses its range), a figure reading the other side of its claim (GR's
    range around AN's value)."""
    stored = ranges.load_ranges()
    for stem, figures in ranges.FIGURES.items():
        for fig in figures:
            v = stored.get(stem, {}).get(fig.label, {}).get("cpu")
            assert v is not None, f"{stem}: {fig.label} not in notebooks/expected_ranges.json"
            if fig.claim:
                assert "low" in v, f"{stem}: {fig.label} has no seeds (claim {fig.claim!r} missing?)"
                assert v["low"] <= v["value"] <= v["high"], (stem, fig.label, v)


def test_the_guide_shows_the_figures_in_words_and_a_plot_per_chapter(tmp_path):
    stored = {"02_gr_loss": {"GR's test mAP under single positive": {
        "cpu": {"value": 80.9, "unit": "mAP points", "low": 80.3, "high": 81.9, "seeds": [1, 2, 3, 4, 5]},
        "smoke": {"value": 40.0, "unit": "mAP points", "low": 38.0, "high": 42.0, "seeds": [0, 1]}}},
        "00_partial_labels": {"AN's false-negative rate under single positive": {"cpu": {"value": 9.5, "unit": "%"}}}}
    md = ranges.ranges_markdown(stored, ["smoke", "cpu"], plots=tmp_path / "expected")
    assert md.index("### 00_partial_labels") < md.index("### 02_gr_loss")   # chapter order
    assert "GR's test mAP under single positive: **80.9** mAP points (seeds 1–5: 80.3 to 81.9) — cpu" in md
    assert "**40.0** mAP points (seeds 0, 1: 38.0 to 42.0) — smoke" in md
    assert "](expected/expected_02_gr_loss.png)" in md
    assert (tmp_path / "expected" / "expected_02_gr_loss.png").stat().st_size > 1000
    assert not (tmp_path / "expected" / "expected_00_partial_labels.png").exists()  # no seeds: no bars
    assert "record /" not in md and "_minus_" not in md   # no raw record keys


def test_an_old_results_file_reads_as_empty(tmp_path):
    old = tmp_path / "old.json"
    old.write_text(json.dumps({"01_assume_negative": {"gap / single positive": {"cpu": "8.1"}}}))
    assert ranges.load_ranges(old) == {} and ranges.load_ranges(tmp_path / "missing.json") == {}
    built = {"01": {"x": {"smoke": {"value": 1.0}, "cpu": {"value": 2.0}}}}
    stored = {"01": {"x": {"cpu": {"value": 3.0}}}, "02": {"y": {"cpu": {"value": 4.0}}}}
    merged = ranges.merge_ranges(stored, built)
    assert merged == {"01": {"x": {"cpu": {"value": 2.0}, "smoke": {"value": 1.0}}}, "02": {"y": {"cpu": {"value": 4.0}}}}


# ---------------------------------------------------------------- the GPU section
SUMMARY = {"wall_seconds_before_summary": 364.0,
           "steps": [{"step": "install", "exit": "0", "seconds": "12.2", "limit_s": "30"},
                     {"step": "notebook", "exit": "124", "seconds": "130.1", "limit_s": "130"},
                     {"step": "summary", "exit": "skipped", "seconds": "0", "limit_s": "3"}],
           "train_run": {"wall_seconds": 124.5, "test_mAP": 88.28, "best_epoch": 10},
           "environment": {"device": "NVIDIA H100 80GB HBM3", "date": "2026-11-27 07:35:36 UTC",
                           "python": "3.12.3", "torch": "2.11.0+cu130"}}


def test_the_gpu_section_projects_the_plan_at_the_measured_rate(tmp_path):
    """Hand-derived: 867.2 PFLOP at 5.58 TFLOP/s is 867.2e15 / 5.58e12 / 3600 = 43.2 h. Bugs
    caught: a typed projection, the steady-step rate used instead of the end-to-end one, a
    timed-out step called passed, the rate's file references shown to a reader."""
    plan = {"notebooks": 8, "runs": 1646, "chosen_from_results": 813, "images_trained": 749_860_000,
            "flops": 867.2e15}
    rate = SimpleNamespace(tflops=5.58, source="measured end to end on one NVIDIA H100 80GB HBM3, 2026-11-27, "
                                               "by the GPU check (benchmarks/records/gpu/train_run.json; x)")
    md = gpu_window.gpu_markdown(plan, rate, SUMMARY)
    assert "**1,646 runs** training 750 million images, 867 PFLOP" in md
    assert "At 5.58 TFLOP/s, the rate measured end to end on one NVIDIA H100 80GB HBM3, 2026-11-27, by the " \
           "GPU check, that is **43 h on one card**" in md
    assert "benchmarks/" not in md
    assert "`install` " in md and "passed in 12 s (limit 30 s)" in md
    assert "`notebook` " in md and "stopped at its limit of 130 s" in md
    assert "skipped" in md and "took 364 s" in md and "test mAP of 88.3" in md
    unmeasured = gpu_window.gpu_markdown(None, None, None)
    assert unmeasured.count(notebooks.NOT_MEASURED) == 2 and "43" not in unmeasured


def test_the_gpu_section_says_a_rerun_and_the_levers_best():
    """A summary of a rerun over a former check's records says so (not "took N s" as if the whole
    check ran), and the levers' best setting is shown with its gain, formatted from the record.
    Bug caught: a rerun's wall time read as the check's, a gain typed or rounded away."""
    rerun = dict(SUMMARY, wall_seconds_before_summary=161.0, rerun_steps=["throughput"],
                 throughput={"best": {"workers_per_device": 8, "total_over_one_run": 2.6494}})
    md = gpu_window.gpu_markdown(None, None, rerun)
    assert "reran `throughput` over the former check's records" in md and "taking 161 s" in md
    assert "took 161 s" not in md
    assert "8 runs sharing the card, 2.65x the images/s of one run" in md
    assert "runs sharing the card" not in gpu_window.gpu_markdown(None, None, SUMMARY)


def test_the_gpu_section_names_the_notebooks_that_ran_and_those_stopped():
    """A notebooks step that failed says which notebooks ran to their end (with their seconds) and
    which the budget stopped, from the summary's record (by hand: 2 of 3). Bug caught: a reader
    told only "failed (exit status 1)", or a stopped notebook counted as run."""
    summary = dict(SUMMARY, notebooks={"completed": 2, "notebooks": [
        {"notebook": "00_partial_labels", "completed": True, "status": "completed", "seconds": 29.06},
        {"notebook": "01_assume_negative", "completed": True, "status": "completed", "seconds": 63.6},
        {"notebook": "02_gr_loss", "completed": False, "status": "stopped", "seconds": 102.3}]})
    md = gpu_window.gpu_markdown(None, None, summary)
    assert ("Of the notebooks, 2 of 3 ran to their end on the card: 00_partial_labels in 29 s, "
            "01_assume_negative in 64 s; stopped at the step's budget: 02_gr_loss.") in md
    assert "Of the notebooks" not in gpu_window.gpu_markdown(None, None, SUMMARY)


def test_the_guide_gpu_section_is_current():
    """The committed guide holds what its records say now (``mlpl-lab course sync`` writes it):
    the stored plan, the rate ``mlpl-lab plan`` reads, the GPU check's summary."""
    assert gpu_window.sync_guide(write=False) == [], "run `mlpl-lab course sync`"
    plan = json.loads(gpu_window.PLAN_FILE.read_text())
    text = gpu_window.GUIDE.read_text()
    assert f"**{plan['runs']:,} runs**" in text


def test_the_guide_without_markers_is_a_clear_error(tmp_path):
    guide = tmp_path / "guide.md"
    guide.write_text("no markers")
    with pytest.raises(ValueError, match="no gpu section markers"):
        gpu_window.sync_guide(True, guide, tmp_path / "plan.json", rate=None, summary={})
    guide.write_text(f"a\n{gpu_window.BEGIN}\nold\n{gpu_window.END}\nb\n")
    assert gpu_window.sync_guide(False, guide, tmp_path / "plan.json", summary={}) == ["gpu section out of date"]
    assert "old" in guide.read_text()
    gpu_window.sync_guide(True, guide, tmp_path / "plan.json", summary={})
    assert guide.read_text().startswith("a\n") and guide.read_text().endswith("\nb\n")
    assert gpu_window.sync_guide(False, guide, tmp_path / "plan.json", summary={}) == []


@pytest.mark.slow
def test_the_stored_gpu_plan_is_what_mlpl_lab_plan_prints():
    """The counts in ``notebooks/gpu_plan.json`` against the total line ``mlpl-lab plan --profile
    gpu`` prints (its own sum; minutes on two cores)."""
    import io
    from contextlib import redirect_stdout

    from mlpl_lab.cli import main

    out = io.StringIO()
    with redirect_stdout(out):
        main(["plan", "--profile", "gpu", "--tflops", "1"])
    total = re.search(r"total: (\d+) runs, ([\d,]+) images trained, ([\d.]+) PFLOP", out.getvalue())
    stored = json.loads(gpu_window.PLAN_FILE.read_text())
    assert int(total.group(1)) == stored["runs"]
    assert int(total.group(2).replace(",", "")) == stored["images_trained"]
    assert abs(float(total.group(3)) - stored["flops"] / 1e15) < 0.06


# ---------------------------------------------------------------- quiz answers encoded for students
def _answer_texts(bank):
    for q in bank:
        for a in q["answers"]:
            for key in ("answer", "feedback"):
                if len(a.get(key, "")) > 12:
                    yield a[key]


def test_student_banks_hold_no_readable_answer_and_instructor_banks_stay_plain(tmp_path):
    """Bugs caught: a student bank copied plain (``"correct": true`` readable), an instructor bank
    encoded, an encoded bank the quiz cell cannot read back."""
    notebooks.export(tmp_path)
    for source in sorted((ROOT / "notebooks" / "quizzes").glob("*.json")):
        bank = json.loads(source.read_text())
        student = (tmp_path / "student" / "quizzes" / source.name).read_text()
        assert '"correct"' not in student and "true" not in student
        leaked = [t for t in _answer_texts(bank) if t in student or json.dumps(t)[1:-1] in student]
        assert not leaked, f"{source.name}: {leaked[:1]}"
        assert (tmp_path / "instructor" / "quizzes" / source.name).read_text() == source.read_text()
        decoded = json.loads(base64.b64decode(json.loads(student)[quiz.ENCODED]))
        assert decoded == bank
        assert quiz.load_quiz(source.stem, tmp_path / "student" / "quizzes") == bank


def test_a_damaged_encoded_bank_is_a_clear_error(tmp_path):
    (tmp_path / "00_partial_labels.json").write_text(json.dumps({quiz.ENCODED: "not base64!"}))
    with pytest.raises(notebooks.CourseError, match="does not decode"):
        quiz.load_quiz("00_partial_labels", tmp_path)


def test_the_quiz_output_holds_the_bank_encoded_and_the_browser_decodes_it(tmp_path):
    """The HTML a quiz cell shows carries no answer as text; its script's first statement, run in
    node with the browser's ``atob``, gives back the bank (accents and symbols included)."""
    notebooks.export(tmp_path)
    html = quiz.quiz_html("02_gr_loss", tmp_path / "student" / "quizzes")
    bank = json.loads((ROOT / "notebooks" / "quizzes" / "02_gr_loss.json").read_text())
    assert not [t for t in _answer_texts(bank) if t in html]
    assert '"correct": true' not in html and "http://" not in html and "https://" not in html
    statement = re.search(r"var questionsquiz02grloss=JSON\.parse\(window\.atob\(\"[A-Za-z0-9+/=]+\"\)\)", html)
    assert statement, "the bank is not embedded as base64"
    node = shutil.which("node")
    if node is None:
        pytest.skip("node is not installed: the browser's decoding is not exercised")
    script = (f"const window = {{atob: (s) => Buffer.from(s, 'base64').toString('latin1')}};\n"
              f"{statement.group(0)};\nprocess.stdout.write(JSON.stringify(questionsquiz02grloss));")
    out = subprocess.run([node, "-e", script], capture_output=True, text=True, check=True).stdout
    assert json.loads(out) == bank


def test_a_student_notebook_renders_its_quiz_from_the_encoded_bank(tmp_path):
    """The quiz cell of a student copy, executed in a kernel next to its encoded banks, displays
    the quiz (the HTML with jupyterquiz's script and the encoded bank)."""
    import nbformat
    from nbclient import NotebookClient

    written = notebooks.export(tmp_path)
    student = next(p for p in written["student"] if p.stem == "03_opml")
    nb = nbformat.read(str(student), as_version=4)
    nb.cells = [nb.cells[-1]]
    NotebookClient(nb, timeout=120, kernel_name="python3",
                   resources={"metadata": {"path": str(student.parent)}}).execute()
    html = "".join(o.get("data", {}).get("text/html", "") for o in nb.cells[0].outputs)
    assert 'id="quiz03opml"' in html and "window.atob(" in html
    assert '"correct": true' not in html


# ---------------------------------------------------------------- make lab
@pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")
@pytest.mark.parametrize("uid, root", [("0", True), ("1000", False)])
def test_make_lab_starts_jupyterlab_on_the_student_copies_adding_allow_root_as_root(uid, root):
    """``make -n lab`` (nothing runs; the venv's stamp taken as current) as root and as a user:
    JupyterLab opens the student copies (tests/test_student_door.py: generated first)."""
    # a make that runs this test (make test) passes its flags down: the inner make would then print
    # "Entering directory" lines around the command
    env = {k: v for k, v in os.environ.items() if k not in ("MAKEFLAGS", "MFLAGS", "MAKELEVEL")}
    out = subprocess.run(["make", "-n", "--no-print-directory", "-o", ".venv/.installed", "lab",
                          f"LAB_UID={uid}"], cwd=ROOT, env=env,
                         capture_output=True, text=True, check=True).stdout.strip().splitlines()
    line = out[-1]
    assert line.startswith("MLPL_LAB_ANSWERS=student .venv/bin/jupyter lab ") and "--notebook-dir=lab/student" in line
    assert ("--allow-root" in line.split()) == root


# ---------------------------------------------------------------- the README's clone sizes
def test_the_readme_says_what_a_clone_downloads_from_its_record():
    """Hand-made record: 541,373,440 bytes of history is 516 MiB; 140,296,875 of tree 134 MiB."""
    line = readme_times.repo_line({"history_bytes": 541_373_440, "tree_bytes": 140_296_875, "tree_files": 432,
                                   "commit": "14d9dd5", "date": "2026-11-29"})
    assert "**516 MiB** packed" in line and "`git clone --depth 1`" in line
    assert "**134 MiB** in 432 files, measured 2026-11-29 at commit 14d9dd5" in line
    assert notebooks.NOT_MEASURED in readme_times.repo_line(None)


def test_measure_repo_size_counts_the_tracked_files(tmp_path):
    """A repository made here: two tracked files of 5 and 7 bytes and one untracked file."""
    git = shutil.which("git")
    if git is None:
        pytest.skip("git is not installed")
    run = lambda *a: subprocess.run([git, "-C", str(tmp_path), *a], check=True, capture_output=True)  # noqa: E731
    run("init", "-q")
    (tmp_path / "a.txt").write_text("12345")
    (tmp_path / "b.txt").write_text("1234567")
    run("add", "a.txt", "b.txt")
    run("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "x")
    (tmp_path / "untracked.txt").write_text("x" * 100)
    size = readme_times.measure_repo_size(tmp_path)
    assert size["tree_bytes"] == 12 and size["tree_files"] == 2 and size["history_bytes"] >= 0
