"""Every cross-reference of the notebooks, the guide, the handbook and the README resolves: a
section of the README or the handbook it names exists there, a numbered section of a notebook
("section 4") is a heading of that notebook, a path of this project it names exists, and nothing
cites a path outside the project (``../shared``)."""
from __future__ import annotations

import glob
import json
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
NB = ROOT / "notebooks"
PAGES = {"README": ROOT / "README.md", "handbook": NB / "handbook.md", "guide": NB / "guide.md"}
#: top-level entries of the project a path may start with
TOPS = ("notebooks/", "mlpl_lab/", "benchmarks/", "tests/", "data/packs/", ".ci/")
#: generated outputs, not in a checkout
GENERATED = ("data/runs", "data/cache", "reports/", "dist/")


def _headings(text: str):
    return [re.sub(r"[*_`]", "", m.group(1)).strip() for m in re.finditer(r"^#+ +(.+)$", text, re.M)]


def _texts():
    for path in sorted(NB.glob("*.ipynb")):
        cells = json.loads(path.read_text())["cells"]
        yield path.name, "\n".join("".join(c["source"]) for c in cells if c["cell_type"] == "markdown"), path
    for name, path in PAGES.items():
        yield path.name, path.read_text(encoding="utf-8"), path
    yield "fidelity.md", (NB / "fidelity.md").read_text(encoding="utf-8"), NB / "fidelity.md"


def test_named_sections_of_the_readme_and_the_handbook_exist():
    heads = {name: _headings(path.read_text(encoding="utf-8")) for name, path in PAGES.items()}
    pat = re.compile(r"(README|handbook)(?:'s)?,? (?:section|the section) \*([^*]+)\*", re.I)
    errors, found = [], 0
    for where, text, _ in _texts():
        for m in pat.finditer(re.sub(r"\s+", " ", text)):
            found += 1
            page, section = m.group(1).lower(), m.group(2)
            key = "README" if page == "readme" else "handbook"
            if section not in heads[key]:
                errors.append(f"{where}: the {key} has no section {section!r}")
    assert found, "the pattern found no reference at all: the test would check nothing"
    assert not errors, "\n".join(errors)


def test_numbered_sections_a_notebook_names_are_its_headings():
    errors = []
    for path in sorted(NB.glob("*.ipynb")):
        cells = json.loads(path.read_text())["cells"]
        text = "\n".join("".join(c["source"]) for c in cells if c["cell_type"] == "markdown")
        numbers = {m.group(1) for m in re.finditer(r"^##+ +(\d+) ·", text, re.M)}
        for m in re.finditer(r"(?<![.\w])(?:the paper's |its |paper's )?sections? (\d+)\b", text):
            if m.group(0).startswith(("the paper's", "its", "paper's")):
                continue
            if m.group(1) not in numbers:
                errors.append(f"{path.name}: 'section {m.group(1)}' is not a numbered heading "
                              f"(headings: {sorted(numbers, key=int)})")
    assert not errors, "\n".join(errors)


def _paths_in(text: str):
    for m in re.finditer(r"`([^`\s]+)`", text):
        token = m.group(1).rstrip(".,;:")
        if token.startswith(TOPS) or token in ("Makefile", "README.md", "pyproject.toml", "CHANGELOG.md"):
            yield token.split("::")[0]


def test_every_project_path_the_pages_name_exists():
    errors, found = [], 0
    for where, text, _ in _texts():
        for token in _paths_in(text):
            if token.startswith(GENERATED) or "<" in token or "{" in token:
                continue
            found += 1
            if not glob.glob(str(ROOT / token.rstrip("/"))):
                errors.append(f"{where}: names `{token}`, which is not in the project")
    assert found > 20, "too few paths found: the test would check nothing"
    assert not errors, "\n".join(errors)


def test_nothing_shipped_cites_a_path_outside_the_project():
    pat = re.compile(r"(\.\./shared|/work/shared|`shared/(?:papers|notes)|``shared/(?:papers|notes)|shared/papers/|shared/notes)")
    errors = []
    for path in [*NB.glob("*.ipynb"), *NB.glob("*.md"), NB / "course.yml", ROOT / "README.md",
                 *(ROOT / "mlpl_lab").rglob("*.py")]:
        for i, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if pat.search(line):
                errors.append(f"{path.relative_to(ROOT)}:{i}: {line.strip()[:120]}")
    assert not errors, "\n".join(errors)
