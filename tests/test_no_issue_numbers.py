"""Words that mean nothing to a reader: an issue number ("issue 36") or a path that only the
lab's repository holds (``benchmarks/records/...``) in what a reader sees. Oracle: a regular
expression over the text itself — every notebook cell, the book's pages, and every string literal
of the package (docstrings included for issue numbers; for ``benchmarks/`` paths, the strings that
are not docstrings, i.e. what the code prints or shows)."""
from __future__ import annotations

import ast
import re
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parent.parent
ISSUE = re.compile(r"\bissues? #?\d+|\bissue-\d+", re.I)
#: another project's public tracker, cited as a source (not this lab's issue numbers)
CITED = re.compile(r"elijahcole/single-positive-multi-label issues #\d+ and #\d+")
REPO_PATH = re.compile(r"\bbenchmarks/")
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))
PAGES = [ROOT / "notebooks" / n for n in ("handbook.md", "fidelity.md", "index.md")]


def _hits(pattern, text, allowed=None):
    text = allowed.sub("", text) if allowed is not None else text
    return [text[max(0, m.start() - 40):m.end() + 40].replace("\n", " ") for m in pattern.finditer(text)]


def test_the_patterns_catch_what_they_should():
    assert ISSUE.search("a row 'probe (issue 36)'") and ISSUE.search("(issues 33 and 48)")
    assert ISSUE.search("Issue 51") and not ISSUE.search("the issue's targets, an issue of scale")
    assert REPO_PATH.search("`benchmarks/records/gr_length_probe_cpu.json`") and not REPO_PATH.search("the benchmark's records")


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_no_notebook_cell_names_an_issue_or_a_repository_path(path):
    nb = nbformat.read(str(path), as_version=4)
    found = [(i, h) for i, c in enumerate(nb.cells) for p in (ISSUE, REPO_PATH) for h in _hits(p, c.source)]
    assert not found, f"{path.name}: {found[:5]} — say the reason instead (readers have no tracker and no checkout)"


@pytest.mark.parametrize("path", PAGES, ids=lambda p: p.name)
def test_no_book_page_names_an_issue(path):
    assert not _hits(ISSUE, path.read_text(encoding="utf-8")), path.name


def _strings(tree):
    """``(docstring?, text)`` of every string constant of a module."""
    docs = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            body = getattr(node, "body", [])
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
                    and isinstance(body[0].value.value, str):
                docs.add(id(body[0].value))
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            yield id(node) in docs, node.value


def test_no_string_of_the_package_names_an_issue_or_shows_a_repository_path():
    from mlpl_lab.protocol.scenes_choice import RENAMED  # names a record was written under, never shown

    issues, paths = [], []
    #: writes the README's measured lines, which sit in the repository beside the records they cite
    readme = ROOT / "mlpl_lab" / "course" / "readme_times.py"
    for path in sorted((ROOT / "mlpl_lab").rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for doc, text in _strings(tree):
            if text in RENAMED:
                continue
            issues += [(path.name, h) for h in _hits(ISSUE, text, CITED)]
            if not doc and path != readme:
                paths += [(path.name, h) for h in _hits(REPO_PATH, text)]
    assert not issues, f"{len(issues)} issue numbers, e.g. {issues[:5]}"
    assert not paths, f"{len(paths)} repository paths in strings the code shows, e.g. {paths[:5]}"


def test_no_comment_of_the_package_names_an_issue():
    found = []
    for path in sorted((ROOT / "mlpl_lab").rglob("*.py")):
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if "#" in line and _hits(ISSUE, line.split("#", 1)[1], CITED):
                found.append(f"{path.name}:{n}")
    assert not found, found[:5]
