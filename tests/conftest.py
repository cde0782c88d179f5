"""Shared fixtures: the notebooks are executed once per session under the smoke profile."""
from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = ROOT / "notebooks"

os.environ.setdefault("MLPL_LAB_PROGRESS", "0")
# the test session gets its own run store and scene cache (the notebooks run in kernels that
# inherit this environment), so tests never read or write the user's data/ folder
_DATA = tempfile.mkdtemp(prefix="mlpl-lab-test-data-")
os.environ["MLPL_LAB_DATA"] = _DATA
# the notebooks' kernels start with tests/figure_watch.py: after each cell it writes what every
# figure shows (overlapping tick labels, legend colours, axis labels) to FIGURE_CHECK_LOG, which
# executed_notebooks points at one file per notebook (tests/test_readable.py reads them)
_IPYTHONDIR = Path(_DATA) / "ipython"
(_IPYTHONDIR / "profile_default" / "startup").mkdir(parents=True)
shutil.copy(Path(__file__).with_name("figure_watch.py"),
            _IPYTHONDIR / "profile_default" / "startup" / "00-figure-watch.py")
os.environ["IPYTHONDIR"] = str(_IPYTHONDIR)


#: the environment variables through which the lab's code and its workers talk to each other
WATCHED_ENV = ("MLPL_LAB_", "OMP_NUM_THREADS", "MKL_NUM_THREADS", "CUDA_VISIBLE_DEVICES")


def _watched() -> dict:
    return {k: v for k, v in os.environ.items() if k.startswith(WATCHED_ENV)}


@pytest.fixture(autouse=True)
def environment_unchanged():
    """Every test leaves the lab's environment variables as it found them. Bug caught: a test
    of ``--fresh`` left its time stamp in MLPL_LAB_FRESH_AFTER (monkeypatch records nothing when
    it deletes an absent variable), and a later test in the same session found every run made
    before it refused as stale -- a failure that only the full suite's order showed. The
    variables are put back and the test that changed them fails, naming them."""
    before = _watched()
    yield
    after = _watched()
    if after != before:
        changed = sorted(k for k in before.keys() | after.keys() if before.get(k) != after.get(k))
        for k in changed:
            if k in before:
                os.environ[k] = before[k]
            else:
                os.environ.pop(k, None)
        pytest.fail(f"the test changed the environment variables {changed} and left them so "
                    "(use monkeypatch.setenv / an environment_kept() block)", pytrace=False)


def pytest_sessionfinish(session, exitstatus):
    shutil.rmtree(_DATA, ignore_errors=True)


@pytest.fixture(scope="session")
def executed_notebooks(tmp_path_factory):
    """``executed_notebooks(name)`` runs ``notebooks/<name>`` with papermill under the smoke
    profile (once per session) and returns its records."""
    from mlpl_lab.reporting.execute import execute_notebook
    from mlpl_lab.reporting.report import read_records

    out = tmp_path_factory.mktemp("executed")
    cache = {}

    def run(name: str):
        if name not in cache:
            path = NOTEBOOKS / name
            assert path.exists(), f"missing notebook {path}"
            os.environ["FIGURE_CHECK_LOG"] = str(out / f"{path.stem}.figures.jsonl")
            try:
                executed = execute_notebook(path, out, profile="smoke", html=True, timeout=600)
            finally:
                os.environ.pop("FIGURE_CHECK_LOG", None)
            cache[name] = read_records(executed)
        return cache[name]

    run.out = out  # the executed notebooks, their HTML and figure logs (<stem>.figures.jsonl)
    return run
