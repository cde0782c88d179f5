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


def pytest_sessionfinish(session, exitstatus):
    shutil.rmtree(_DATA, ignore_errors=True)


@pytest.fixture(scope="session")
def executed_notebooks(tmp_path_factory):
    """``executed_notebooks(name)`` runs ``notebooks/<name>`` with papermill under the smoke
    profile (once per session) and returns its records."""
    from mlpl_lab.cli import execute_notebook
    from mlpl_lab.reporting.report import read_records

    out = tmp_path_factory.mktemp("executed")
    cache = {}

    def run(name: str):
        if name not in cache:
            path = NOTEBOOKS / name
            assert path.exists(), f"missing notebook {path}"
            executed = execute_notebook(path, out, profile="smoke", html=True, timeout=600)
            cache[name] = read_records(executed)
        return cache[name]

    return run
