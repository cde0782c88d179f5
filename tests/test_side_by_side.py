"""Notebooks executed side by side when every planned run is stored
(``mlpl_lab.commands.series.execute_side_by_side``, ``mlpl_lab.commands.plan_first.lanes_for``).

Oracles: marks each notebook leaves and waits for (each sees the other's only if they ran at once), the
environment each kernel reports, the process's working folder before and after, and thread
counts worked out from ``os.cpu_count()`` by hand.
"""
from __future__ import annotations

import json
import os
from pathlib import Path

import nbformat
import pytest

from mlpl_lab.commands import benchmark_csv, series
from mlpl_lab.commands.errors import CommandError
from mlpl_lab.commands.plan_first import LANES_ENV, lanes_for
from mlpl_lab.reporting import next_kernel
from test_next_kernel import _notebook  # a notebook of code cells, its first the parameters


# each notebook leaves a mark and waits (up to 60 s) for the other's: both see the other's mark
# only if they ran at once (one after another, the first waits in vain and says so)
PROBE = ("import os, time, json, pathlib\n"
         "me = os.environ.get('MLPL_LAB_CHAPTER'); marks = pathlib.Path(os.getcwd())\n"
         "(marks / (me + '.here')).write_text('')\n"
         "t0 = time.time()\n"
         "while len(list(marks.glob('*.here'))) < 2 and time.time() - t0 < 60: time.sleep(0.1)\n"
         "print(json.dumps({'chapter': me, 'cwd': os.getcwd(),\n"
         "  'omp': os.environ.get('OMP_NUM_THREADS'), 'met': len(list(marks.glob('*.here'))) == 2}))")


def _probe(out: Path, name: str) -> dict:
    nb = nbformat.read(str(out / name), as_version=4)
    cell = next(c for c in nb.cells if c.cell_type == "code" and c.source.startswith("import os, time"))
    return json.loads(cell.outputs[0]["text"])


def test_two_notebooks_run_at_once_each_on_its_own_kernel(tmp_path, monkeypatch):
    """Bugs caught: the lanes running one after another (no overlap), a kernel carrying the other
    notebook's chapter name (its access log and progress lines under the wrong chapter), torch
    free to use every core in each lane (two lanes oversubscribe 2 cores: measured slower than one
    by one), papermill's ``cwd`` changing the whole process's working folder (a relative output
    folder then pointed elsewhere: the first try lost two notebooks), a kernel left running."""
    first = _notebook(tmp_path / "a_first.ipynb", ["profile = 'smoke'", PROBE])
    second = _notebook(tmp_path / "b_second.ipynb", ["profile = 'smoke'", PROBE])
    monkeypatch.setenv("MLPL_LAB_PROGRESS_FILE", str(tmp_path / "progress"))
    monkeypatch.setattr(benchmark_csv, "BENCHMARK_NOTEBOOK", "none")
    stopped = []
    real_shutdown = next_kernel.shutdown

    def shutdown(km, now=False):
        real_shutdown(km, now=now)
        stopped.append(km)

    monkeypatch.setattr(next_kernel, "shutdown", shutdown)
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    series.run_notebooks([first, second], Path("out"), "smoke", lanes=2)  # a relative output folder

    assert Path.cwd() == work
    a, b = _probe(work / "out", first.name), _probe(work / "out", second.name)
    assert (a["chapter"], b["chapter"]) == ("a_first", "b_second")
    assert a["cwd"] == b["cwd"] == str(tmp_path)  # each kernel in its notebook's folder
    threads = str(max(1, (os.cpu_count() or 1) // 2))
    assert a["omp"] == b["omp"] == threads
    assert a["met"] and b["met"]  # each saw the other's mark while it ran: they overlapped
    from jupyter_core.utils import run_sync
    assert len(stopped) == 2 and not any(run_sync(km.is_alive)() for km in stopped)


def test_a_failing_notebook_beside_another_is_listed_and_the_other_ends(tmp_path, monkeypatch):
    """Bugs caught: one lane's failure stopping the series (the other notebook's report lost), a
    failure not listed in the command's error."""
    good = _notebook(tmp_path / "a_good.ipynb", ["profile = 'smoke'", "print('ran')"])
    bad = _notebook(tmp_path / "b_bad.ipynb", ["profile = 'smoke'", "raise ValueError('broken on purpose')"])
    monkeypatch.setenv("MLPL_LAB_PROGRESS_FILE", str(tmp_path / "progress"))
    monkeypatch.setattr(benchmark_csv, "BENCHMARK_NOTEBOOK", "none")
    with pytest.raises(CommandError, match=r"1 of 2 notebooks(.|\n)*b_bad"):
        series.run_notebooks([bad, good], tmp_path / "out", "smoke", lanes=2)
    nb = nbformat.read(str(tmp_path / "out" / good.name), as_version=4)
    assert nb.cells[-1].outputs[0]["text"] == "ran\n"


def test_lanes_are_two_only_when_every_run_is_stored_and_the_setting_is_checked(monkeypatch):
    """Bugs caught: notebooks side by side while they may train (two torch processes on 2 cores
    train several times slower), more lanes than cores, a bad setting taken silently."""
    monkeypatch.delenv(LANES_ENV, raising=False)
    monkeypatch.setattr(os, "cpu_count", lambda: 2)
    assert (lanes_for(True), lanes_for(False)) == (2, 1)
    monkeypatch.setattr(os, "cpu_count", lambda: 1)
    assert lanes_for(True) == 1
    monkeypatch.setenv(LANES_ENV, "3")
    assert lanes_for(False) == 3
    for bad in ("0", "two", "-1"):
        monkeypatch.setenv(LANES_ENV, bad)
        with pytest.raises(CommandError, match=LANES_ENV):
            lanes_for(True)


PID = ("import os, json\n"
       "print(json.dumps({'pid': os.getpid(), 'chapter': os.environ.get('MLPL_LAB_CHAPTER'),\n"
       "  'omp': os.environ.get('OMP_NUM_THREADS')}))")


def test_kernels_started_while_the_series_is_planned_run_its_first_notebooks(tmp_path, monkeypatch):
    """``series.prewarm`` starts the first notebooks' kernels before the plan; side by side, each
    notebook then runs on the kernel started for it (the pid its cell prints is that kernel's), under
    its own chapter and one lane's threads; a kernel no notebook took is shut down. Bugs caught: a
    warm kernel handed to the wrong notebook (its access log and figure log under another chapter),
    both started and then ignored (a second kernel started per notebook), one left running."""
    from jupyter_core.utils import run_sync

    first = _notebook(tmp_path / "a_first.ipynb", ["profile = 'smoke'", PID])
    second = _notebook(tmp_path / "b_second.ipynb", ["profile = 'smoke'", PID])
    monkeypatch.setenv(LANES_ENV, "2")
    monkeypatch.setenv("MLPL_LAB_PROGRESS_FILE", str(tmp_path / "progress"))
    monkeypatch.setattr(benchmark_csv, "BENCHMARK_NOTEBOOK", "none")
    out = tmp_path / "out"
    warm = series.prewarm([first, second], out, "smoke")
    assert set(warm) == {first, second}
    pids = {path.name: ahead.km.provisioner.process.pid for path, ahead in warm.items()}
    kms = [ahead.km for ahead in warm.values()]
    series.run_notebooks([first, second], out, "smoke", lanes=2, warm=warm)
    assert warm == {}  # each taken by its notebook
    for path in (first, second):
        nb = nbformat.read(str(out / path.name), as_version=4)
        got = json.loads(nb.cells[-1].outputs[0]["text"])
        assert got == {"pid": pids[path.name], "chapter": path.stem, "omp": str(max(1, (os.cpu_count() or 1) // 2))}
    assert not any(run_sync(km.is_alive)() for km in kms)
    # a series that does not run side by side shuts the kernels started for it
    warm = series.prewarm([first, second], out, "smoke")
    kms = [ahead.km for ahead in warm.values()]
    series.close_all(warm)
    assert warm == {} and not any(run_sync(km.is_alive)() for km in kms)
