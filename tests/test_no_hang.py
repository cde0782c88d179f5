"""`mlpl-lab report` never hangs (issue 34): a cell past its time limit, or a dead kernel, stops its
notebook with an error naming the notebook and the cell; the series goes on with the next notebook
and lists every failure at the end (exit code 1).

Oracles: notebooks written here whose cells hang (``time.sleep``), kill their own kernel
(``os._exit``) or raise, and the records and processes that are (or are not) left afterwards.
"""
from __future__ import annotations

import argparse

import nbformat
import psutil
import pytest

from mlpl_lab import cli
from mlpl_lab.commands import report, series
from mlpl_lab.commands.errors import CommandError
from mlpl_lab.profiles import PROFILES, get_profile
from mlpl_lab.reporting.report import read_records


def notebook(folder, name, cells):
    """A notebook of a parameters cell and ``cells`` (code); its path."""
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    params = nbformat.v4.new_code_cell("profile = 'cpu'")
    params.metadata["tags"] = ["parameters"]
    nb.cells = [params] + [nbformat.v4.new_code_cell(c) for c in cells]
    path = folder / f"{name}.ipynb"
    nbformat.write(nb, str(path))
    return path


def kernels_left():
    """Kernel processes started by this test process and still running."""
    return [p for p in psutil.Process().children(recursive=True)
            if p.is_running() and p.status() != psutil.STATUS_ZOMBIE
            and "ipykernel" in " ".join(p.cmdline())]


@pytest.mark.timeout(180)
def test_a_stuck_cell_a_dead_kernel_and_an_error_are_named_and_the_series_goes_on(tmp_path, monkeypatch):
    """Bugs caught: a report that waits forever on a stuck cell (the test's timeout fails it); one
    that stops at the first failing notebook (the last notebook would not have run); a failure
    that names neither the notebook nor the cell; a stuck kernel left running; failures that are
    printed but end with exit code 0 (no CommandError)."""
    monkeypatch.setenv("MLPL_LAB_DATA", str(tmp_path / "data"))
    monkeypatch.setenv("MLPL_LAB_PROGRESS_FILE", str(tmp_path / "progress.log"))
    (tmp_path / "progress.log").write_text("")
    src = tmp_path / "src"
    src.mkdir()
    paths = [
        notebook(src, "a_stuck", ["import time", "x = 1", "time.sleep(600)  # stuck\ny = 2", "z = 3"]),
        notebook(src, "b_dies", ["import os", "\n\nos._exit(1)"]),
        notebook(src, "c_raises", ["raise ValueError('no such run')"]),
        notebook(src, "d_fine", ["from mlpl_lab.reporting.report import record", "record('ran', 1)"]),
    ]
    out = tmp_path / "out"
    with pytest.raises(CommandError) as failed:
        series.run_notebooks(paths, out, "smoke", cell_timeout=3)
    lines = str(failed.value).splitlines()
    assert lines[0].startswith("3 of 4 notebooks did not run to their end")
    stuck, dies, raises = lines[1:]
    assert stuck.strip().startswith("a_stuck.ipynb: cell index 3 (`time.sleep(600)  # stuck`) was "
                                    "still running after 3 s") and "--cell-timeout" in stuck
    assert dies.strip().startswith("b_dies.ipynb: the kernel died while cell index 2 (`os._exit(1)`) ran")
    assert raises.strip().startswith("c_raises.ipynb: cell index 1 (`raise ValueError('no such run')`) "
                                     "raised ValueError: no such run")
    assert read_records(out / "d_fine.ipynb") == {"ran": 1}
    assert (out / "d_fine.html").exists() and not (out / "a_stuck.html").exists()
    executed = nbformat.read(str(out / "a_stuck.ipynb"), as_version=4)  # kept as far as it ran
    assert any(c.get("metadata", {}).get("papermill", {}).get("start_time") for c in executed.cells)
    assert kernels_left() == []


def test_every_profile_has_a_cell_limit_and_the_report_gives_it_to_papermill(tmp_path, monkeypatch):
    """Bugs caught: a profile without a limit (a stuck cell would hang the report forever), the
    limit not reaching papermill, ``--cell-timeout`` not overriding it."""
    assert all(p.cell_timeout_s > 0 for p in PROFILES.values())
    given = []

    def fake_execute(path, out, profile, parameters=None, html=True, timeout=None, km=None):
        given.append(timeout)
        raise CommandError("stop here")  # nothing needs to run

    monkeypatch.setattr(series, "execute_notebook", fake_execute)
    monkeypatch.setenv("MLPL_LAB_DATA", str(tmp_path))
    monkeypatch.setenv("MLPL_LAB_PROGRESS_FILE", str(tmp_path / "progress.log"))
    path = notebook(tmp_path, "n", ["x = 1"])
    for kwargs, want in (({}, get_profile("smoke").cell_timeout_s), ({"cell_timeout": 12.5}, 12.5)):
        with pytest.raises(CommandError, match="stop here"):
            series.run_notebooks([path], tmp_path / "out", "smoke", **kwargs)
        assert given[-1] == want
    seen = []
    monkeypatch.setattr(series, "run_notebooks", lambda *a, **k: seen.append(k.get("cell_timeout")))
    for module, step in ((series, "train_plan_first"), (report, "import_shipped_pack")):
        monkeypatch.setattr(module, step, lambda *a, **k: None)  # work before the notebooks: none here
    monkeypatch.setattr(report, "notebook_paths", lambda names=None: [path])
    assert cli.main(["report", "--profile", "smoke", "--cell-timeout", "90", "--out", str(tmp_path / "o")]) == 0
    assert seen == [90.0]


@pytest.mark.parametrize("value", ["0", "-5", "soon", "inf"])
def test_a_bad_cell_timeout_is_refused_before_any_work(value, capsys, monkeypatch, tmp_path):
    monkeypatch.setattr(series, "run_notebooks", lambda *a, **k: pytest.fail("work started"))
    with pytest.raises(SystemExit) as exc:
        cli.main(["report", "--cell-timeout", value, "--out", str(tmp_path)])
    assert exc.value.code == 2 and "is not a number of seconds > 0" in capsys.readouterr().err


def test_the_failing_cell_is_counted_as_in_the_notebook_file(tmp_path):
    """Papermill adds cells to an executed notebook (the injected parameters, error banners).
    Bug caught: a cell index counted in the executed file, off by those cells."""
    from mlpl_lab.reporting.report import stopped_cell

    nb = nbformat.v4.new_notebook()
    banner = nbformat.v4.new_markdown_cell("An Exception was encountered")
    banner.metadata["tags"] = ["papermill-error-cell-tag"]
    injected = nbformat.v4.new_code_cell("profile = 'smoke'")
    injected.metadata["tags"] = ["injected-parameters"]
    cells = [banner, nbformat.v4.new_code_cell("profile = 'cpu'"), injected,
             nbformat.v4.new_markdown_cell("# text"), nbformat.v4.new_code_cell("\n  train(specs)\n"),
             nbformat.v4.new_code_cell("later()")]
    for i, cell in enumerate(cells):
        cell.metadata["papermill"] = {"start_time": "2026-11-25T10:00:00" if i <= 4 else None}
    nb.cells = cells
    path = tmp_path / "x.ipynb"
    nbformat.write(nb, str(path))
    assert stopped_cell(path) == (2, "train(specs)")
    assert stopped_cell(tmp_path / "missing.ipynb") is None
