"""Notebooks as raw JSON and the two versions of each: student copies with each
solution between ``# BEGIN SOLUTION`` / ``# END SOLUTION`` replaced by a stub, instructor copies
with the markers removed (:func:`export`), outputs stripped. Edited as raw JSON so every cell
this package does not touch keeps its bytes. Also the course's files and its error type."""
from __future__ import annotations

import ast
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


