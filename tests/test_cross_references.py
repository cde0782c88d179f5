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


# ---------------------------------------------------------------------------------------
# figure, table and equation numbers; sections of other chapters
# ---------------------------------------------------------------------------------------
#: what a number of each kind is written as (the kind is the key)
_KINDS = {"Fig": r"Fig(?:ure)?s?\.?", "Table": r"Tables?", "Eq": r"Eqs?\.|Equations?"}
_NUM = r"\(?\d+[a-z]?\)?(?:\s*(?:[–,/-]|and)\s*\(?\d+[a-z]?\)?)*"
_MENTION = re.compile(r"(?<![\w'])(" + "|".join(f"(?P<{k}>{v})" for k, v in _KINDS.items()) + r")\s*(" + _NUM + r")")
#: words before a mention that make it a citation of a paper's item (not this project's)
_CITED = re.compile(r"(paper's|paper|papers'|\bits|Appendix|Cole et al\.'s|LL's|Hill's|SPLC's|official code's)"
                    r"[^.;:()\n]{0,25}$", re.I)
_HERE = re.compile(r"^[^.;\n]{0,25}\b(above|below)\b", re.I)


def _numbers(text: str):
    """'7–8' -> {'7', '8'}, '9, 10, 12, 13' -> four, '1a' -> {'1a', '1'}, '(3)' -> {'3'}."""
    out = set()
    parts = re.split(r"\s*(?:,|/|and)\s*", re.sub(r"[()]", "", text))
    for part in parts:
        ends = re.split(r"\s*[–-]\s*", part.strip())
        if len(ends) == 2 and ends[0].isdigit() and ends[1].isdigit() and int(ends[0]) < int(ends[1]):
            out |= {str(i) for i in range(int(ends[0]), int(ends[1]) + 1)}
        else:
            for e in ends:
                if e:
                    out |= {e, re.sub(r"[a-z]$", "", e)}
    return out


def _markdown_cells(path: Path):
    """Every cell's markdown, "" for a code cell (so an index is the notebook's cell number)."""
    return ["".join(c["source"]) if c["cell_type"] == "markdown" else ""
            for c in json.loads(path.read_text())["cells"]]


def titled_items(cells) -> dict:
    """``{kind: {number: the indices of the cells that show it}}``: the figures, tables and
    equations a notebook *shows* — a heading that names them ("### Fig. 1a — ...",
    "## 7 · Ablation (Fig. 6) and sensitivity (Figs. 7–8)", "### Table 1: ..."), a displayed
    formula tagged with the number (``\\tag{4, 5}``, ``\\text{(Eq. 10)}``), or a formula introduced
    by its number: "(Eq. 7): $...$", "**High rank (Eq. 10).** ... $$", "(Eq. 18, Appendix C) $$...$$"."""
    out: dict = {k: {} for k in _KINDS}

    def add(kind, nums, i):
        for n in _numbers(nums):
            out[kind].setdefault(n, set()).add(i)

    for i, text in enumerate(cells):
        for line in re.findall(r"^#+ +(.+)$", text, re.M):
            for m in _MENTION.finditer(line):
                add(m.lastgroup if m.lastgroup in _KINDS else _kind(m), m.group(len(_KINDS) + 2), i)
        for m in re.finditer(r"\\tag\{([^}]+)\}", text):
            add("Eq", m.group(1), i)
        for m in re.finditer(r"\\text\{\(Eq\. ?([^)]+)\)\}", text):
            add("Eq", m.group(1), i)
        # a number that introduces a formula (within 30 characters before its first $) or follows
        # one (within 30 characters after its last $)
        for m in re.finditer(r"\(Eqs?\. ?([\d–, -]+?)(?:, Appendix [A-Z])?\)(?=[^$()]{0,30}\$)", text):
            add("Eq", m.group(1), i)
        for m in re.finditer(r"\$[^$()]{0,30}?\(Eqs?\. ?([\d–, -]+?)\)", text):
            add("Eq", m.group(1), i)
    return out


def _kind(m) -> str:
    return next(k for k in _KINDS if m.group(k))


def _mentions(cells):
    """(cell index, kind, numbers, text before, text after) of every Fig./Table/Eq. mention."""
    for i, text in enumerate(cells):
        for line in text.split("\n"):
            if line.lstrip().startswith("#"):
                continue  # a heading titles, it does not refer
            for m in _MENTION.finditer(line):
                yield i, _kind(m), _numbers(m.group(len(_KINDS) + 2)), line[:m.start()], line[m.end():]


def unresolved_numbers(cells) -> list:
    """The rule this test applies to a notebook's markdown (``cells``, in order):

    * a mention *cited* to a paper — "the paper's Table 6", "its Fig. 6", "the GR Loss paper's Fig. 4",
      "(Eq. 18, Appendix C)" follows the same rule — is a citation and is not looked up here;
    * every other "Fig. N", "Table N" or "Eq. N" names an item of this notebook: the notebook must
      show it (:func:`titled_items`: a heading, an equation tag, or a formula introduced by its
      number). "above" after it means a cell before (or the same), "below" a cell after (or the
      same). So a reader who meets "Fig. 5" or "Eq. 7" finds it on the page, and a number the
      notebook does not show says whose it is.
    """
    titled = titled_items(cells)
    errors = []
    for i, kind, nums, before, after in _mentions(cells):
        if _CITED.search(before):
            continue
        where = _HERE.match(after)
        for n in sorted(nums):
            at = titled[kind].get(n, set())
            if not at:
                errors.append(f"cell {i}: {kind}. {n} is neither shown in this notebook nor cited to a paper "
                              f"({before[-40:]}⟨{kind} {n}⟩{after[:30]})")
            elif where and where.group(1).lower() == "above" and min(at) > i:
                errors.append(f"cell {i}: {kind}. {n} 'above' is shown only below (cells {sorted(at)})")
            elif where and where.group(1).lower() == "below" and max(at) < i:
                errors.append(f"cell {i}: {kind}. {n} 'below' is shown only above (cells {sorted(at)})")
    return errors


def test_figure_table_and_equation_numbers_resolve_in_their_notebook():
    errors, found = [], 0
    for path in sorted(NB.glob("0*.ipynb")):
        cells = _markdown_cells(path)
        found += sum(1 for _ in _mentions(cells))
        errors += [f"{path.name}: {e}" for e in unresolved_numbers(cells)]
    assert found > 50, "too few Fig./Table/Eq. mentions found: the test would check nothing"
    assert not errors, "\n".join(errors)


def test_the_rule_catches_what_it_should():
    """Hand-made pages: the rule rejects an unshown bare number and an 'above' that is below, and
    accepts a heading, a tag, a cited number and a formula introduced by its number."""
    ok = ["### Fig. 1a — the curves", "$$x = 1 \\tag{4, 5}$$", "* **Weight** (Eq. 11): $v = 1$",
          "As Fig. 1a above shows, Eq. 4–5 and Eq. 11 hold; the paper's Table 6 and its Fig. 9 are cited."]
    assert unresolved_numbers(ok) == []
    assert titled_items(ok)["Eq"].keys() >= {"4", "5", "11"}
    bad = ["See Fig. 2 and Table 3 above.", "### Table 3 — the ablation", "Eq. 4 below is wrong."]
    errs = unresolved_numbers(bad)
    assert any("Fig. 2 is neither shown" in e for e in errs)
    assert any("Table. 3 'above'" in e for e in errs)
    assert any("Eq. 4 is neither shown" in e for e in errs)
    assert unresolved_numbers(["$$y \\tag{4}$$", "Eq. 4 below"]) == [
        "cell 1: Eq. 4 'below' is shown only above (cells [0])"]


#: a section of another chapter: "chapter 00's section 2", "notebook 01, section 3",
#: "section 4 of notebook 02" (and "Sec." for "section")
_OTHER_SECTION = re.compile(
    r"(?:(?:chapter|notebook) (?P<a>\d\d)(?:'s|,) (?:section|Sec\.) (?P<s1>\d+))"
    r"|(?:(?:section|Sec\.) (?P<s2>\d+) of (?:chapter|notebook) (?P<b>\d\d))")
_OTHER_CHAPTER = re.compile(r"\b(?:chapter|notebook)s? (\d\d)\b")


def _numbered_sections(path: Path) -> set:
    text = "\n".join(_markdown_cells(path))
    return {m.group(1) for m in re.finditer(r"^##+ +(\d+) ·", text, re.M)}


def test_sections_and_chapters_of_other_notebooks_resolve():
    """A chapter named by number ("notebook 00", "chapter 05's AN row", "chapters 01–06") is a notebook
    of the book, and a section of another chapter ("chapter 00's section 2", "notebook 01, section 3",
    "section 4 of notebook 02") is a numbered heading ("## 4 · ...") of that notebook; "Sec. N" counts
    as "section N", and a same-notebook "Sec. 3 below" must be one of its numbered headings."""
    books = {p.name[:2]: p for p in NB.glob("0*.ipynb")}
    errors, found = [], 0
    for where, text, _ in _texts():
        flat = re.sub(r"\s+", " ", text)
        for m in _OTHER_CHAPTER.finditer(flat):
            found += 1
            if m.group(1) not in books:
                errors.append(f"{where}: names chapter {m.group(1)}, which is not a notebook of the book")
        for m in _OTHER_SECTION.finditer(flat):
            nb, sec = (m.group("a"), m.group("s1")) if m.group("a") else (m.group("b"), m.group("s2"))
            if nb not in books or sec not in _numbered_sections(books[nb]):
                errors.append(f"{where}: section {sec} of notebook {nb} is not a numbered heading there")
    for path in sorted(NB.glob("0*.ipynb")):
        numbers = _numbered_sections(path)
        for m in re.finditer(r"(?<!the paper's )\bSec\. (\d+)\b", "\n".join(_markdown_cells(path))):
            if m.group(1) not in numbers:
                errors.append(f"{path.name}: 'Sec. {m.group(1)}' is not a numbered heading")
    assert found > 10, "too few chapter references found: the test would check nothing"
    assert not errors, "\n".join(errors)


_CHAPTER_MARK = re.compile(r"\b(?:chapter|notebook)s? (\d\d)\b|\b(\d\d) ·|\*\*(\d\d)\*\*")


def _blocks(text: str):
    """A page's paragraphs, split further into table rows and list items."""
    for para in re.split(r"\n\s*\n", text):
        yield from (b for b in re.split(r"\n(?=\s*(?:\||[*-] ))", para) if b.strip())


def test_figure_table_and_equation_numbers_of_the_pages_resolve_in_their_chapter():
    """The guide, the handbook and the README: a Fig./Table/Eq. number not cited to a paper belongs to a
    chapter its paragraph, table row or list item names ("02 · GR Loss", "**02**", "notebook 02"), and
    that chapter's notebook shows it (the rule of :func:`unresolved_numbers`)."""
    books = {p.name[:2]: titled_items(_markdown_cells(p)) for p in NB.glob("0*.ipynb")}
    errors, found = [], 0
    for name, path in PAGES.items():
        for block in _blocks(path.read_text(encoding="utf-8")):
            flat = re.sub(r"\s+", " ", block)
            chapters = {next(g for g in m.groups() if g) for m in _CHAPTER_MARK.finditer(flat)}
            for m in _MENTION.finditer(flat):
                if _CITED.search(flat[:m.start()]):
                    continue
                found += 1
                kind, nums = _kind(m), _numbers(m.group(len(_KINDS) + 2))
                if not chapters:
                    errors.append(f"{name}: {m.group(0)!r} names no chapter in its paragraph ({flat[:60]}…)")
                    continue
                for n in nums:
                    if not any(n in books.get(c, {}).get(kind, {}) for c in chapters):
                        errors.append(f"{name}: {kind}. {n} is shown in none of chapters {sorted(chapters)}")
    assert found >= 3, "too few Fig./Table/Eq. mentions in the pages: the test would check nothing"
    assert not errors, "\n".join(errors)


def test_the_readme_is_a_front_door_of_at_most_150_lines():
    """Bug caught: details growing into the README instead of the handbook (the README is the
    front door: what, two commands, chapters, packs, where the book is)."""
    lines = (Path(__file__).resolve().parents[1] / "README.md").read_text().splitlines()
    assert len(lines) <= 150, f"README.md has {len(lines)} lines: move details to the handbook"
