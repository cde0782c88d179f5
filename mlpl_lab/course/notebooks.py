"""Notebooks as raw JSON and the two versions of each: student copies with each
solution between ``# BEGIN SOLUTION`` / ``# END SOLUTION`` replaced by a stub, instructor copies
with the markers removed (:func:`export`; :func:`lab_copies`, the ones ``make lab`` opens),
outputs stripped. Edited as raw JSON so every cell
this package does not touch keeps its bytes. Also the course's files and its error type."""
from __future__ import annotations

import ast
import base64
import json
import shutil
import textwrap
from pathlib import Path
from typing import Any, Dict, List, Optional

from ..reporting.report import NOTEBOOK_DIR

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
# quiz banks as the student copies hold them (read back by mlpl_lab.course.quiz)
# ---------------------------------------------------------------------------------------
#: the key of an encoded bank (a student copy): ``{ENCODED: base64 of the bank's JSON}``
ENCODED = "jupyterquiz bank, base64 of its JSON"


def b64_of(questions: List[Dict[str, Any]]) -> str:
    """The bank's JSON, ASCII only (``\\uXXXX`` escapes, so the browser's ``atob`` gives it back
    unchanged), in base64."""
    return base64.b64encode(json.dumps(questions, ensure_ascii=True).encode("ascii")).decode("ascii")


def encode_bank(questions: List[Dict[str, Any]]) -> Dict[str, str]:
    """A student copy of a bank: its answers and feedback not readable as text."""
    return {ENCODED: b64_of(questions)}


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


VARIANTS = {"student": False, "instructor": True}  # which copy: solutions kept or not
#: where ``mlpl-lab report --instructor`` writes by default: this folder inside the student report's
INSTRUCTOR_REPORT = "instructor"


def instructor_report(student_report: Path) -> Path:
    """The instructor report that goes with the student report in ``student_report``."""
    return Path(student_report) / INSTRUCTOR_REPORT


def write_variant(target: Path, which: str, notebooks: Optional[List[Path]] = None) -> List[Path]:
    """Write the ``which`` copies (:data:`VARIANTS`) of ``notebooks`` (default: every chapter) into
    ``target``, replacing what is there, with the quiz banks beside them (the notebooks' quiz cells
    read ``quizzes/`` next to them: plain for the instructor, encoded for the students,
    :func:`encode_bank`). Returns the notebooks written."""
    keep = VARIANTS[which]
    target = Path(target)
    shutil.rmtree(target, ignore_errors=True)
    target.mkdir(parents=True)
    written = []
    for path in notebooks or chapter_notebooks():
        write_nb(version_of(read_nb(path), keep), target / path.name)
        written.append(target / path.name)
    write_banks(target / "quizzes", which)
    return written


def write_banks(folder: Path, which: str) -> None:
    """The quiz banks as the ``which`` copies read them, in ``folder`` (replaced)."""
    shutil.rmtree(folder, ignore_errors=True)
    if not QUIZ_DIR.exists():
        return
    if VARIANTS[which]:  # the instructor copy: the banks as they are
        shutil.copytree(QUIZ_DIR, folder)
        return
    folder.mkdir(parents=True)  # the student copy: each bank encoded, no answer readable as text
    for bank in sorted(QUIZ_DIR.glob("*.json")):
        questions = json.loads(bank.read_text(encoding="utf-8"))
        (folder / bank.name).write_text(json.dumps(encode_bank(questions)) + "\n", encoding="utf-8")


def export(out: Path, notebooks: Optional[List[Path]] = None) -> Dict[str, List[Path]]:
    """Write ``out/student/*.ipynb`` and ``out/instructor/*.ipynb`` (:func:`write_variant`);
    returns the written paths."""
    return {which: write_variant(Path(out) / which, which, notebooks) for which in VARIANTS}


# ---------------------------------------------------------------------------------------
# the copies JupyterLab opens (make lab: students, make lab-instructor)
# ---------------------------------------------------------------------------------------
#: the folder ``make lab`` serves: ``lab/student`` (and ``lab/instructor``), beside notebooks/
LAB_DIR = NOTEBOOK_DIR.parent / "lab"
#: in each copy folder: ``{notebook: sha256 of the bytes last generated}``
GENERATED = ".generated.json"


def _sha(data: bytes) -> str:
    import hashlib

    return hashlib.sha256(data).hexdigest()


def lab_copies(target: Path, which: str, notebooks: Optional[List[Path]] = None) -> Dict[str, List[str]]:
    """Generate the ``which`` copies (:data:`VARIANTS`) JupyterLab opens into ``target``, from the
    one source in ``notebooks/``, with their quiz banks. A copy is written where it is missing or
    still as it was generated (the source's new version replaces it); a copy changed since (answers
    written, cells run and saved) is **kept**: delete it to get the current version. Returns
    ``{"written": [...], "current": [...], "kept": [...]}`` (notebook names)."""
    keep = VARIANTS[which]
    target = Path(target)
    target.mkdir(parents=True, exist_ok=True)
    stamps_file = target / GENERATED
    stamps = json.loads(stamps_file.read_text()) if stamps_file.exists() else {}
    done: Dict[str, List[str]] = {"written": [], "current": [], "kept": []}
    for path in notebooks or chapter_notebooks():
        new = (json.dumps(version_of(read_nb(path), keep), indent=1, ensure_ascii=False) + "\n").encode("utf-8")
        copy = target / path.name
        old = copy.read_bytes() if copy.exists() else None
        if old == new:
            done["current"].append(path.name)
        elif old is not None and _sha(old) != stamps.get(path.name):
            done["kept"].append(path.name)
            continue
        else:
            copy.write_bytes(new)
            done["written"].append(path.name)
        stamps[path.name] = _sha(new)
    stamps_file.write_text(json.dumps(stamps, indent=1, sort_keys=True) + "\n")
    write_banks(target / "quizzes", which)
    return done
