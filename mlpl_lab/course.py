"""Course material from one source (issue 22): student / instructor copies, objectives and the
syllabus from ``notebooks/course.yml``, the chapter quizzes, the book and the instructor guide.

* **One source, two versions.** Solutions sit between ``# BEGIN SOLUTION`` / ``# END SOLUTION``
  (single ``#``: the markers nbgrader and otter both read). :func:`export` writes
  ``dist/instructor/`` (markers removed, solutions kept) and ``dist/student/`` (each solution
  replaced by a stub that assigns ``None`` to the names it defined, or ``pass`` — the checks of
  :mod:`mlpl_lab.exercises` then print ✗ and the notebook runs on), outputs stripped.
* **course.yml** holds per chapter the objectives, prerequisites, paper, difficulty and the
  measured minutes; :func:`objectives_markdown` is the notebook's second cell (a test compares
  them) and :func:`syllabus_markdown` the syllabus page.
* **Quizzes**: ``notebooks/quizzes/<notebook>.json``, jupyterquiz banks (:func:`validate_quiz`);
  :func:`show_quiz` embeds the bank and jupyterquiz's script in one HTML output (no network).
* **The book** (:func:`build_book`): Sphinx + myst-nb + sphinx-book-theme from the notebooks a
  report executed, with execution off, the MathJax the reports ship, a student and an
  instructor variant.

Notebooks are edited as raw JSON (:func:`read_nb` / :func:`write_nb`) so every cell this module
does not touch keeps its bytes.
"""
from __future__ import annotations

import ast
import json
import math
import re
import shutil
import textwrap
from pathlib import Path
from typing import Any, Dict, List, Optional

from .report import NOTEBOOK_DIR

BEGIN, END = "# BEGIN SOLUTION", "# END SOLUTION"
COURSE_FILE = NOTEBOOK_DIR / "course.yml"
QUIZ_DIR = NOTEBOOK_DIR / "quizzes"
TIMINGS_FILE = NOTEBOOK_DIR / "timings.json"
#: the guide's expected result ranges of profiles measured elsewhere (``mlpl-lab course timings``
#: writes both files from executed notebooks; the book merges them with what it is built from)
RANGES_FILE = NOTEBOOK_DIR / "expected_ranges.json"
OBJECTIVES_ID = "course-objectives"
QUIZ_ID = "course-quiz"
DIFFICULTIES = ("introductory", "intermediate", "advanced")
PROFILES = ("smoke", "cpu", "gpu")
NOT_MEASURED = "not yet measured"


class CourseError(ValueError):
    """A malformed course file, quiz bank or notebook: the message names the problem and the fix."""


# ---------------------------------------------------------------------------------------
# notebooks as raw JSON
# ---------------------------------------------------------------------------------------
def read_nb(path) -> Dict[str, Any]:
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def write_nb(nb: Dict[str, Any], path) -> None:
    """Write with the layout Jupyter uses (indent 1, key order kept): untouched cells keep their bytes."""
    Path(path).write_text(json.dumps(nb, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")


def source_of(cell: Dict[str, Any]) -> str:
    src = cell.get("source", "")
    return "".join(src) if isinstance(src, list) else src


def as_lines(text: str) -> List[str]:
    parts = text.split("\n")
    return [p + "\n" for p in parts[:-1]] + ([parts[-1]] if parts[-1] else [])


def new_cell(kind: str, text: str, cell_id: str) -> Dict[str, Any]:
    if kind == "code":
        return {"cell_type": "code", "execution_count": None, "id": cell_id, "metadata": {},
                "outputs": [], "source": as_lines(text)}
    return {"cell_type": "markdown", "id": cell_id, "metadata": {}, "source": as_lines(text)}


def chapter_notebooks(directory: Path = NOTEBOOK_DIR) -> List[Path]:
    return sorted(Path(directory).glob("[0-9][0-9]_*.ipynb"))


# ---------------------------------------------------------------------------------------
# one source, two versions
# ---------------------------------------------------------------------------------------
def _assigned_names(block: str) -> List[str]:
    """Names a solution block assigns at its own top level (in order, once each)."""
    try:
        tree = ast.parse(textwrap.dedent(block))
    except SyntaxError:
        return []
    names: List[str] = []
    for node in tree.body:
        targets = node.targets if isinstance(node, ast.Assign) else \
            [node.target] if isinstance(node, (ast.AnnAssign, ast.AugAssign)) else []
        for t in targets:
            for n in ast.walk(t):
                if isinstance(n, ast.Name) and n.id not in names:
                    names.append(n.id)
    return names


def _stub(block_lines: List[str], indent: str) -> List[str]:
    names = _assigned_names("".join(block_lines))
    if names:
        return [f"{indent}{n} = None  # your code here\n" for n in names]
    return [f"{indent}pass  # your code here\n"]


def strip_solutions(source: str, keep: bool) -> str:
    """``keep=True`` (instructor): drop the marker lines, keep the solution. ``keep=False``
    (student): replace each marked block with a stub. Unbalanced markers raise :class:`CourseError`."""
    out: List[str] = []
    block: Optional[List[str]] = None
    indent = ""
    for line in source.splitlines(keepends=True):
        stripped = line.strip()
        if stripped == BEGIN:
            if block is not None:
                raise CourseError(f"nested {BEGIN!r}: close the first block with {END!r}")
            block, indent = [], line[: len(line) - len(line.lstrip())]
        elif stripped == END:
            if block is None:
                raise CourseError(f"{END!r} without a {BEGIN!r} before it")
            out.extend(block if keep else _stub(block, indent))
            block = None
        elif block is not None:
            block.append(line)
        else:
            out.append(line)
    if block is not None:
        raise CourseError(f"{BEGIN!r} without its {END!r}")
    return "".join(out)


def has_solution(source: str) -> bool:
    return BEGIN in source or END in source


def version_of(nb: Dict[str, Any], keep: bool) -> Dict[str, Any]:
    """The student (``keep=False``) or instructor copy of a notebook: solutions handled, outputs
    and execution counts cleared."""
    nb = json.loads(json.dumps(nb))
    for cell in nb["cells"]:
        if cell["cell_type"] == "code":
            cell["source"] = as_lines(strip_solutions(source_of(cell), keep))
            cell["outputs"], cell["execution_count"] = [], None
    return nb


def export(out: Path, notebooks: Optional[List[Path]] = None) -> Dict[str, List[Path]]:
    """Write ``out/student/*.ipynb`` and ``out/instructor/*.ipynb`` (and the quiz banks next to
    them, which the notebooks' quiz cells read); returns the written paths."""
    out = Path(out)
    written: Dict[str, List[Path]] = {"student": [], "instructor": []}
    for which, keep in (("student", False), ("instructor", True)):
        target = out / which
        shutil.rmtree(target, ignore_errors=True)
        target.mkdir(parents=True)
        for path in notebooks or chapter_notebooks():
            write_nb(version_of(read_nb(path), keep), target / path.name)
            written[which].append(target / path.name)
        if QUIZ_DIR.exists():
            shutil.copytree(QUIZ_DIR, target / "quizzes")
    return written


# ---------------------------------------------------------------------------------------
# course.yml: objectives and the syllabus
# ---------------------------------------------------------------------------------------
CHAPTER_KEYS = {"notebook": str, "title": str, "paper": str, "difficulty": str, "prerequisites": list,
                "objectives": list, "minutes": dict}


def load_course(path: Path = COURSE_FILE) -> Dict[str, Any]:
    """Read and check ``course.yml``: every chapter has the keys of :data:`CHAPTER_KEYS`, 3–5
    objectives, a known difficulty, minutes per known profile (a measured number), and names a
    notebook that exists."""
    import yaml

    data = yaml.safe_load(Path(path).read_text(encoding="utf-8"))
    if not isinstance(data, dict) or not isinstance(data.get("chapters"), list):
        raise CourseError(f"{path}: expected a mapping with a `chapters:` list")
    for i, ch in enumerate(data["chapters"]):
        where = f"{path}: chapter {i + 1} ({ch.get('notebook', '?')})"
        for key, kind in CHAPTER_KEYS.items():
            if not isinstance(ch.get(key), kind):
                raise CourseError(f"{where}: `{key}` must be a {kind.__name__}")
        if not 3 <= len(ch["objectives"]) <= 5:
            raise CourseError(f"{where}: give 3 to 5 objectives, not {len(ch['objectives'])}")
        if ch["difficulty"] not in DIFFICULTIES:
            raise CourseError(f"{where}: difficulty must be one of {DIFFICULTIES}")
        for profile, minutes in ch["minutes"].items():
            if profile not in PROFILES or not isinstance(minutes, (int, float)) or minutes <= 0:
                raise CourseError(f"{where}: minutes must map a profile {PROFILES} to a measured "
                                  "number of minutes (leave out a profile not yet measured)")
        if not (NOTEBOOK_DIR / f"{ch['notebook']}.ipynb").exists():
            raise CourseError(f"{where}: no notebook notebooks/{ch['notebook']}.ipynb")
    return data


def load_timings(path: Path = TIMINGS_FILE) -> Dict[str, Dict[str, float]]:
    """``{profile: {notebook: seconds}}`` measured by :func:`timings_from_executed` (empty if absent)."""
    return json.loads(Path(path).read_text()) if Path(path).exists() else {}


def minutes(chapter: Dict[str, Any], profile: str, timings: Optional[Dict] = None) -> str:
    """The measured minutes of a chapter under a profile: course.yml's value, else the timings
    file's, else "not yet measured" (never a guess)."""
    if profile in chapter["minutes"]:
        return f"{chapter['minutes'][profile]:g}"
    seconds = (timings or {}).get(profile, {}).get(chapter["notebook"])
    return f"{seconds / 60:.1f}" if seconds else NOT_MEASURED


def objectives_markdown(chapter: Dict[str, Any]) -> str:
    """The notebook's objectives cell (generated; ``mlpl-lab course sync`` writes it)."""
    lines = ["**Learning objectives** · difficulty: " + chapter["difficulty"],
             "", "After this chapter you can:", ""]
    lines += [f"{i}. {o}" for i, o in enumerate(chapter["objectives"], 1)]
    lines += ["", "**Prerequisites:** " + "; ".join(chapter["prerequisites"]),
              "", "**Paper:** " + chapter["paper"],
              "", "<!-- generated from notebooks/course.yml by `mlpl-lab course sync`; edit the YAML, not this cell -->"]
    return "\n".join(lines)


QUIZ_TITLE = "## Quiz\n\nCheck yourself: pick an answer and read the feedback (nothing is graded or sent)."


def quiz_cell_source(stem: str) -> str:
    return f'from mlpl_lab.course import show_quiz\n\nshow_quiz("{stem}")'


def sync_notebook(path: Path, chapter: Dict[str, Any], write: bool = True) -> List[str]:
    """Put the objectives cell second and the quiz cell last; return what was (or would be) changed."""
    nb = read_nb(path)
    cells = nb["cells"]
    changes: List[str] = []
    want = objectives_markdown(chapter)
    idx = [i for i, c in enumerate(cells) if c.get("id") == OBJECTIVES_ID]
    if not idx:
        cells.insert(1, new_cell("markdown", want, OBJECTIVES_ID))
        changes.append("objectives cell added")
    elif idx != [1] or source_of(cells[idx[0]]) != want:
        cells.pop(idx[0])
        cells.insert(1, new_cell("markdown", want, OBJECTIVES_ID))
        changes.append("objectives cell differs from course.yml")
    tail = [new_cell("markdown", QUIZ_TITLE, QUIZ_ID + "-title"),
            new_cell("code", quiz_cell_source(path.stem), QUIZ_ID)]
    if [(c.get("id"), source_of(c)) for c in cells[-2:]] != [(c["id"], source_of(c)) for c in tail]:
        cells[:] = [c for c in cells if c.get("id") not in (QUIZ_ID, QUIZ_ID + "-title")] + tail
        changes.append("quiz cells missing or not last")
    if changes and write:
        write_nb(nb, path)
    return changes


def sync(write: bool = True) -> Dict[str, List[str]]:
    """:func:`sync_notebook` for every chapter of course.yml."""
    course = load_course()
    return {ch["notebook"]: sync_notebook(NOTEBOOK_DIR / f"{ch['notebook']}.ipynb", ch, write)
            for ch in course["chapters"]}


def syllabus_markdown(course: Dict[str, Any], timings: Optional[Dict] = None, linked=None) -> str:
    """The syllabus page (MyST): one section per chapter with its objectives, and the measured
    minutes per profile (course.yml, then the timings file, else "not yet measured")."""
    timings = load_timings() if timings is None else timings
    from . import __version__

    out = ["# Syllabus", "", f"Edition {__version__} · generated from `notebooks/course.yml`.", "",
           "| chapter | difficulty | " + " | ".join(f"minutes ({p})" for p in PROFILES) + " |",
           "|---|---|" + "---|" * len(PROFILES)]
    for ch in course["chapters"]:
        title = ch["title"] if linked is not None and ch["notebook"] not in linked else \
            f"[{ch['title']}]({ch['notebook']}.ipynb)"
        out.append(f"| {title} | {ch['difficulty']} | "
                   + " | ".join(minutes(ch, p, timings) for p in PROFILES) + " |")
    out.append("")
    for ch in course["chapters"]:
        out += [f"## {ch['title']}", "", objectives_markdown(ch).split("<!--")[0].rstrip(), ""]
    return "\n".join(out)


def timings_from_executed(executed_dir: Path) -> Dict[str, Dict[str, float]]:
    """``{profile: {notebook: seconds}}`` from papermill's metadata in executed notebooks
    (``metadata.papermill.duration`` and the injected ``profile`` parameter)."""
    out: Dict[str, Dict[str, float]] = {}
    for path in chapter_notebooks(executed_dir):
        meta = read_nb(path).get("metadata", {}).get("papermill", {})
        if meta.get("duration"):
            profile = meta.get("parameters", {}).get("profile", "?")
            out.setdefault(profile, {})[path.stem] = float(meta["duration"])
    return out


# ---------------------------------------------------------------------------------------
# quizzes
# ---------------------------------------------------------------------------------------
MATHJAX_CDN_LOAD = "script.src = 'https://cdn.jsdelivr.net/npm/mathjax@3/es5/tex-svg.js';"
LATEX = re.compile(r"\$|\\\(|\\\[|\\[a-zA-Z]+\{")


def _texts(q: Dict[str, Any]):
    yield q.get("question", "")
    for a in q.get("answers", []):
        yield a.get("answer", "")
        yield a.get("feedback", "")


def validate_quiz(questions: Any, name: str = "quiz") -> List[Dict[str, Any]]:
    """A jupyterquiz bank: 5–8 questions, each ``multiple_choice`` (2+ answers, exactly one
    correct, feedback on every answer) or ``numeric`` (a correct ``value`` or ``range``, a
    ``default`` feedback, feedback on every answer); no LaTeX anywhere (it would need MathJax
    from a CDN in JupyterLab)."""
    if not isinstance(questions, list) or not 5 <= len(questions) <= 8:
        raise CourseError(f"{name}: a bank is a list of 5 to 8 questions")
    for i, q in enumerate(questions, 1):
        where = f"{name}, question {i}"
        if not isinstance(q.get("question"), str) or not q["question"].strip():
            raise CourseError(f"{where}: needs a non-empty `question`")
        answers = q.get("answers")
        if not isinstance(answers, list) or len(answers) < 2:
            raise CourseError(f"{where}: needs at least 2 `answers`")
        if any(not isinstance(a.get("feedback"), str) or not a["feedback"].strip() for a in answers):
            raise CourseError(f"{where}: every answer needs its own `feedback`")
        if q.get("type") == "multiple_choice":
            if any(not isinstance(a.get("answer"), str) for a in answers):
                raise CourseError(f"{where}: every choice needs an `answer` text")
            if sum(a.get("correct") is True for a in answers) != 1:
                raise CourseError(f"{where}: exactly one choice must have \"correct\": true")
        elif q.get("type") == "numeric":
            kinds = [a.get("type") for a in answers]
            if "default" not in kinds:
                raise CourseError(f"{where}: a numeric question needs a `default` answer (its feedback)")
            good = [a for a in answers if a.get("correct") is True and a.get("type") in ("value", "range")]
            if not good:
                raise CourseError(f"{where}: a numeric question needs a correct `value` or `range`")
            for a in answers:
                if a.get("type") == "value" and not isinstance(a.get("value"), (int, float)):
                    raise CourseError(f"{where}: a `value` answer needs a number")
                if a.get("type") == "range" and not (isinstance(a.get("range"), list) and len(a["range"]) == 2
                                                     and a["range"][0] < a["range"][1]):
                    raise CourseError(f"{where}: a `range` answer needs [low, high] with low < high")
        else:
            raise CourseError(f"{where}: type must be 'multiple_choice' or 'numeric'")
        for text in _texts(q):
            if LATEX.search(text or ""):
                raise CourseError(f"{where}: no LaTeX in quiz text (found in {text[:40]!r}); write "
                                  "the formula in plain words or Unicode")
    return questions


def load_quiz(stem: str, directory: Path = QUIZ_DIR) -> List[Dict[str, Any]]:
    path = Path(directory) / f"{stem}.json"
    if not path.exists():
        raise CourseError(f"no quiz bank {path}; add one (see notebooks/quizzes/)")
    return validate_quiz(json.loads(path.read_text(encoding="utf-8")), path.name)


def quiz_html(stem: str, directory: Path = QUIZ_DIR) -> str:
    """One self-contained HTML snippet: the container, jupyterquiz's styles and script with the
    bank embedded, and a fixed element id (outputs stay the same run after run)."""
    from jupyterquiz.dynamic.loader import load_questions_script
    from jupyterquiz.dynamic.renderer import build_script, build_styles, render_div

    questions = load_quiz(stem, directory)
    div_id = "quiz" + re.sub(r"[^A-Za-z0-9]", "", stem)
    prefix, static, url = load_questions_script(questions, div_id)
    div = render_div(div_id, False, True, False, 1_000_000, 600, 10, "left") + "</div>"
    colors = {"--jq-multiple-choice-bg": "#345995", "--jq-mc-button-bg": "#fafafa",
              "--jq-mc-button-border": "#e0e0e0e0", "--jq-mc-button-inset-shadow": "#555555",
              "--jq-many-choice-bg": "#e26d5a", "--jq-numeric-bg": "#345995",
              "--jq-numeric-input-bg": "#c0c0c0", "--jq-numeric-input-label": "#101010",
              "--jq-numeric-input-shadow": "#999999", "--jq-string-bg": "#861657",
              "--jq-incorrect-color": "#c80202", "--jq-correct-color": "#009113",
              "--jq-text-color": "#fafafa", "--jq-link-color": "#9abafa"}
    # jupyterquiz loads MathJax 3 from a CDN when it finds a MathJax without `typeset` (JupyterLab 4);
    # the banks hold no LaTeX (validate_quiz), so that load is cut: a quiz never touches the network
    script = build_script(prefix, static, url, div_id, True).replace(
        MATHJAX_CDN_LOAD, "return;  // mlpl_lab: no network (quiz text has no LaTeX)")
    return div + build_styles(div_id, colors) + f'<script type="text/javascript">\n{script}\n</script>'


def show_quiz(stem: str, directory: Optional[Path] = None) -> None:
    """Display a chapter's quiz (the last cell of every notebook). Looks for the bank next to
    the running notebook first (a student copy in ``dist/``), then in ``notebooks/quizzes``."""
    from IPython.display import HTML, display

    local = Path("quizzes")
    directory = Path(directory) if directory else (local if (local / f"{stem}.json").exists() else QUIZ_DIR)
    display(HTML(quiz_html(stem, directory)))


# ---------------------------------------------------------------------------------------
# the instructor guide's expected ranges, computed from records
# ---------------------------------------------------------------------------------------
def _numbers(value: Any, prefix: str = ""):
    if isinstance(value, bool) or value is None:
        return
    if isinstance(value, (int, float)):
        if math.isfinite(value):
            yield prefix, float(value)
    elif isinstance(value, dict):
        for k, v in value.items():
            yield from _numbers(v, f"{prefix} / {k}" if prefix else str(k))


GUIDE_RECORDS = {"00_partial_labels": ["hidden_positive_share", "an_false_negative_rate"],
                 "01_assume_negative": ["mAP", "gap"], "02_gr_loss": ["mAP", "GR_minus_AN"],
                 "03_opml": ["mAP"], "04_cls": ["mAP", "margin_over_AN"], "05_lac": ["mAP"],
                 "06_pu_mlc": ["mAP"], "07_benchmark": ["mAP", "mean_rank"]}
"""Which records the guide's result tables show per chapter."""


def expected_ranges(executed_dirs: Dict[str, Path]) -> Dict[str, Dict[str, Dict[str, str]]]:
    """``{notebook: {"record / key": {profile: value}}}`` read from executed notebooks' records,
    one folder per profile (a value over seeds is already the chapter's mean)."""
    from .report import read_records

    out: Dict[str, Dict[str, Dict[str, str]]] = {}
    for profile, folder in executed_dirs.items():
        for path in chapter_notebooks(folder):
            records = read_records(path)
            for name in GUIDE_RECORDS.get(path.stem, []):
                for key, value in _numbers(records.get(name), name):
                    out.setdefault(path.stem, {}).setdefault(key, {})[profile] = f"{value:.3g}"
    return out


def load_ranges(path: Path = RANGES_FILE) -> Dict[str, Dict[str, Dict[str, str]]]:
    """The stored expected ranges (``{notebook: {"record / key": {profile: value}}}``), or {}."""
    return json.loads(Path(path).read_text()) if Path(path).exists() else {}


def merge_ranges(*parts: Dict[str, Dict[str, Dict[str, str]]]) -> Dict[str, Dict[str, Dict[str, str]]]:
    """Later parts win per notebook, record and profile."""
    out: Dict[str, Dict[str, Dict[str, str]]] = {}
    for part in parts:
        for stem, rows in part.items():
            for key, values in rows.items():
                out.setdefault(stem, {}).setdefault(key, {}).update(values)
    return out


def ranges_markdown(ranges: Dict[str, Dict[str, Dict[str, str]]], profiles: List[str]) -> str:
    if not ranges:
        return "_No executed notebooks were found when this page was built: run `make report` first._"
    out = []
    for stem, rows in ranges.items():
        out += [f"### {stem}", "", "| record | " + " | ".join(profiles) + " |",
                "|---|" + "---|" * len(profiles)]
        out += [f"| {key} | " + " | ".join(v.get(p, "—") for p in profiles) + " |" for key, v in rows.items()]
        out.append("")
    return "\n".join(out)


# ---------------------------------------------------------------------------------------
# the `mlpl-lab course` command
# ---------------------------------------------------------------------------------------
def cmd_course(args) -> int:
    if args.action == "sync":
        changes = sync(write=not args.check)
        bad = {k: v for k, v in changes.items() if v}
        for stem, what in bad.items():
            print(f"{stem}: {', '.join(what)}")
        if args.check and bad:
            print("notebooks and notebooks/course.yml disagree: run `mlpl-lab course sync`")
            return 1
        print("notebooks agree with course.yml" if not bad else f"{len(bad)} notebooks updated")
        return 0
    if args.action == "export":
        written = export(Path(args.out))
        print(f"{len(written['student'])} student and {len(written['instructor'])} instructor notebooks "
              f"in {args.out}/student and {args.out}/instructor")
        return 0
    if args.action == "timings":
        found = timings_from_executed(Path(args.executed))
        if not found:
            print(f"no executed notebooks with papermill timings in {args.executed}")
            return 1
        data = load_timings() | {p: load_timings().get(p, {}) | t for p, t in found.items()}
        TIMINGS_FILE.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n")
        print(f"timings of {sum(len(t) for t in found.values())} notebooks written to {TIMINGS_FILE}")
        ranges = merge_ranges(load_ranges(), expected_ranges({p: Path(args.executed) for p in found}))
        RANGES_FILE.write_text(json.dumps(ranges, indent=1, sort_keys=True, ensure_ascii=False) + "\n")
        print(f"expected ranges of {', '.join(sorted(found))} written to {RANGES_FILE}")
        return 0
    for variant in (("student", "instructor") if args.variant == "both" else (args.variant,)):
        path = build_book(Path(args.executed), Path(args.out) / variant, variant, strict=args.strict)
        print(f"{variant} book: {path}")
    return 0


def add_course_parser(sub) -> None:
    """``mlpl-lab course sync|export|timings|book`` (registered by :mod:`mlpl_lab.cli`)."""
    course = sub.add_parser("course", help="course material: objectives sync, student/instructor "
                                           "copies, timings, the book")
    course.add_argument("action", choices=("sync", "export", "timings", "book"))
    course.add_argument("--check", action="store_true", help="sync: only report disagreements (exit 1)")
    course.add_argument("--out", default=None, help="export: dist (default); book: reports/book (default)")
    course.add_argument("--executed", default="reports", help="executed notebooks (timings, book)")
    course.add_argument("--variant", default="both", choices=("student", "instructor", "both"))
    course.add_argument("--strict", action="store_true", help="book: warnings are errors (CI)")
    course.set_defaults(func=_course_entry)


def _course_entry(args) -> int:
    if args.out is None:
        args.out = "dist" if args.action == "export" else "reports/book"
    return cmd_course(args)


# ---------------------------------------------------------------------------------------
# the book: Sphinx + myst-nb + sphinx-book-theme (+ sphinx-exercise), from executed notebooks
# ---------------------------------------------------------------------------------------
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
WIDGET_STATE = "application/vnd.jupyter.widget-state+json"
BOOK_PAGES = ("index.md", "guide.md", "syllabus.md", "fidelity.md", "conf.py")
EXERCISE_HEADING = re.compile(r"^###\s+Exercise\s+(\d+)\s+—\s+(.+)$", re.M)


def _widget_pngs(nb: Dict[str, Any], model_id: str) -> List[str]:
    """The PNGs an executed widget shows (its ``Output`` widgets' images, found through its
    children in the widget state nbclient saved in the notebook's metadata)."""
    state = nb.get("metadata", {}).get("widgets", {}).get(WIDGET_STATE, {}).get("state", {})
    found: List[str] = []

    def walk(mid: str, seen: set) -> None:
        if mid in seen or mid not in state:
            return
        seen.add(mid)
        model = state[mid].get("state", {})
        for out in model.get("outputs", []) or []:
            png = out.get("data", {}).get("image/png")
            if png:
                found.append(png if isinstance(png, str) else "".join(png))
        for child in model.get("children", []) or []:
            walk(str(child).replace("IPY_MODEL_", ""), seen)

    walk(model_id, set())
    return found


def static_widgets(nb: Dict[str, Any]) -> int:
    """Replace every widget output by the image(s) of its default state (a static page cannot
    run the live panel); returns how many widget outputs were replaced."""
    n = 0
    for cell in nb["cells"]:
        outputs = []
        for out in cell.get("outputs", []):
            view = out.get("data", {}).get(WIDGET_VIEW)
            if view is None:
                outputs.append(out)
                continue
            n += 1
            pngs = _widget_pngs(nb, view.get("model_id", ""))
            note = ("A static image of the panel's default state; run the notebook in JupyterLab "
                    "to move its sliders.")
            if not pngs:
                note = "This live panel runs in JupyterLab only (no image of it was saved)."
            outputs += [{"output_type": "display_data", "metadata": {}, "data": {"image/png": png}} for png in pngs]
            outputs.append({"output_type": "display_data", "metadata": {},
                            "data": {"text/markdown": f"*{note}*", "text/plain": note}})
        if "outputs" in cell:
            cell["outputs"] = outputs
    nb.get("metadata", {}).pop("widgets", None)
    return n


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
    from .report import RECORD_MIME

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
    from . import __version__

    shutil.rmtree(src, ignore_errors=True)
    src.mkdir(parents=True)
    course = load_course()
    stems = [ch["notebook"] for ch in course["chapters"] if (Path(executed) / f"{ch['notebook']}.ipynb").exists()]
    if not stems:
        raise CourseError(f"no executed notebooks in {executed}: run `make report` (or `mlpl-lab report "
                          f"--profile smoke --out {executed}`) first; the book never executes them again")
    for stem in stems:
        write_nb(book_notebook(read_nb(Path(executed) / f"{stem}.ipynb"), stem, variant), src / f"{stem}.ipynb")
    profile_runs = timings_from_executed(Path(executed))
    profiles = sorted(profile_runs) or ["?"]
    shutil.copy(NOTEBOOK_DIR / "conf.py", src / "conf.py")
    # the fidelity page (the losses against the official code) follows the chapters in both books
    pages = ["syllabus"] + stems + ["fidelity"] + (["guide"] if variant == "instructor" else [])
    shutil.copy(NOTEBOOK_DIR / "fidelity.md", src / "fidelity.md")
    index = _page("index.md").replace("{edition}", __version__).replace("{variant}", variant)
    index += "\n```{toctree}\n:maxdepth: 1\n\n" + "\n".join(pages) + "\n```\n"
    (src / "index.md").write_text(index, encoding="utf-8")
    timings = load_timings()
    for profile, found in profile_runs.items():
        timings.setdefault(profile, {}).update(found)
    (src / "syllabus.md").write_text(_page("syllabus.md").replace("{syllabus}", syllabus_markdown(course, timings, stems)
                                                                   .split("\n", 2)[2]), encoding="utf-8")
    if variant == "instructor":
        ranges = merge_ranges(load_ranges(), expected_ranges({p: Path(executed) for p in profiles}))
        shown = [p for p in PROFILES if any(p in v for rows in ranges.values() for v in rows.values())]
        ranges = ranges_markdown(ranges, shown or profiles)
        (src / "guide.md").write_text(_page("guide.md").replace("{expected_ranges}", ranges), encoding="utf-8")
    (src / "_variant.txt").write_text(variant)
    return stems


def build_book(executed: Path, out: Path, variant: str = "student", strict: bool = False) -> Path:
    """Stage the sources and run ``sphinx-build`` (html; ``-W --keep-going`` when ``strict``)
    into ``out``, then copy MathJax into its ``_static`` folder. Returns ``out/index.html``."""
    import subprocess
    import sys

    from .report import install_mathjax

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
