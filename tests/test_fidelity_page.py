"""The book's fidelity page (notebooks/fidelity.md): staged into both books after the chapters,
built by Sphinx with warnings as errors, and every name its table gives for a lab loss or option
still exists in the code."""
from __future__ import annotations

import inspect
import re
import shutil
from pathlib import Path

import pytest

from mlpl_lab import losses
from mlpl_lab.course import book
from mlpl_lab.methods import build_method
from mlpl_lab.methods.registry import METHODS

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "notebooks" / "fidelity.md"
FIRST = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))[0]


def table_rows():
    lines = [ln for ln in PAGE.read_text(encoding="utf-8").splitlines() if ln.startswith("| ")]
    return [[c.strip() for c in ln.strip("|").split("|")] for ln in lines[1:]]  # skip the header


def test_every_row_has_its_five_columns_and_names_a_repository():
    rows = table_rows()
    assert len(rows) >= 10
    for row in rows:
        assert len(row) == 5 and all(row), row
        assert re.search(r"`[\w-]+/[\w.-]+`", row[1]), row[1]  # owner/name of the official code


def test_names_in_the_table_exist_in_the_code():
    """A renamed loss or option would leave the page pointing at nothing."""
    from mlpl_lab.losses.lac import lac_loss

    names = {n for row in table_rows() for n in re.findall(r"`([a-z_]+)`", row[0])}
    assert {"vpu", "gr", "plc", "ll_cp", "em_apl", "mixup_form"} <= names
    for name in names - {"lac_loss", "mixup_form"}:
        assert name in losses.LOSSES or name in METHODS, name
    assert callable(lac_loss)
    from mlpl_lab.models.heads import HEADS

    heads = {n for row in table_rows() for n in re.findall(r'`head="([a-z_]+)"`', row[0])}
    assert "boostlu" in heads and heads <= set(HEADS), heads
    assert build_method("pu_mlc", mixup_form="official").mixup_form == "official"
    assert build_method("pu_mlc").mixup_form == "exact"
    assert inspect.signature(losses.get("gr")).parameters["neg"].default == "l3"
    assert inspect.signature(losses.get("focal")).parameters["detach_weight"].default is False


@pytest.mark.parametrize("variant", ["student", "instructor"])
def test_the_page_is_staged_after_the_chapters(variant, tmp_path):
    executed = tmp_path / "executed"
    executed.mkdir()
    shutil.copy(FIRST, executed / FIRST.name)
    src = tmp_path / "src"
    book.stage_book(executed, src, variant)
    assert (src / "fidelity.md").read_text(encoding="utf-8") == PAGE.read_text(encoding="utf-8")
    toc = (src / "index.md").read_text(encoding="utf-8").split("```{toctree}")[1].split("```")[0]
    entries = [ln for ln in toc.splitlines()[2:] if ln.strip()]
    want = ["syllabus", FIRST.stem, "fidelity", "handbook"] + (["guide"] if variant == "instructor" else [])
    assert entries == want


def test_the_book_builds_strictly_with_the_page(tmp_path):
    """Sphinx with -W: a malformed table or a broken reference on the page fails the build."""
    pytest.importorskip("sphinx")
    pytest.importorskip("myst_nb")
    executed = tmp_path / "executed"
    executed.mkdir()
    shutil.copy(FIRST, executed / FIRST.name)
    index = book.build_book(executed, tmp_path / "book", "student", strict=True)
    html = (index.parent / "fidelity.html").read_text(encoding="utf-8")
    assert "<table" in html and "TAKELAMAG/PU-MLC" in html
    assert 'href="fidelity.html"' in index.read_text(encoding="utf-8")
