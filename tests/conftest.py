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
# under pytest-xdist (make test / make test-all run ``-n 2``) each worker is its own process and
# gets one torch thread, it and the kernels and workers it starts (they inherit OMP_NUM_THREADS):
# two workers on two cores. Tests that need a thread count set it themselves (tests/goldens.py).
XDIST_WORKER = os.environ.get("PYTEST_XDIST_WORKER")
if XDIST_WORKER:
    os.environ["OMP_NUM_THREADS"] = os.environ["MKL_NUM_THREADS"] = "1"
    import torch

    torch.set_num_threads(1)
# the test session gets its own run store and scene cache (the notebooks run in kernels that
# inherit this environment), so tests never read or write the user's data/ folder
# (one per process: every xdist worker imports this file, so each has its own store)
_DATA = tempfile.mkdtemp(prefix="mlpl-lab-test-data-")
os.environ["MLPL_LAB_DATA"] = _DATA
# the notebooks' kernels get an IPython folder of their own (no user profile or start-up file);
# what every figure shows is logged by the report's own hook (mlpl_lab.reporting.figure_log):
# execute_notebook writes <stem>.figures.jsonl beside each executed notebook
_IPYTHONDIR = Path(_DATA) / "ipython"
(_IPYTHONDIR / "profile_default" / "startup").mkdir(parents=True)
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
    # CI hands the smoke series' runs this session trained to `make book` (tests/keep_runs.py)
    target = os.environ.get("MLPL_LAB_TEST_KEEP_RUNS")
    runs = Path(_DATA) / "runs"
    if target and runs.is_dir() and any(runs.iterdir()):
        from keep_runs import keep_smoke_runs

        n = keep_smoke_runs(target, NOTEBOOKS.glob("[0-9][0-9]_*.ipynb"))
        print(f"\n[conftest] kept {n} runs of the smoke series in {target} (MLPL_LAB_TEST_KEEP_RUNS)")
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
        item = _running.get("item")
        if name != SMOKE_NOTEBOOK and item is not None and item.get_closest_marker("smoke"):
            pytest.fail(f"{item.nodeid} is marked smoke (make test's fast tier) but executes {name}; "
                        f"the fast tier executes {SMOKE_NOTEBOOK} alone", pytrace=False)
        if name not in cache:
            path = NOTEBOOKS / name
            assert path.exists(), f"missing notebook {path}"
            executed = execute_notebook(path, out, profile="smoke", html=True, timeout=600)
            cache[name] = read_records(executed)
        return cache[name]

    run.out = out  # the executed notebooks, their HTML and figure logs (<stem>.figures.jsonl)
    return run


#: make test's one smoke notebook: tests marked ``smoke`` execute it and no other (the fast tier)
SMOKE_NOTEBOOK = "01_assume_negative.ipynb"
_running = {}  # the test now running (executed_notebooks is session-scoped and cannot ask for it)


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item):
    _running["item"] = item


def pytest_collection_modifyitems(config, items):
    """A test run over every notebook is in the fast tier for the smoke notebook alone."""
    for item in items:
        callspec = getattr(item, "callspec", None)
        if callspec is not None and callspec.params.get("name") == SMOKE_NOTEBOOK and \
                "executed_notebooks" in item.fixturenames:
            item.add_marker(pytest.mark.smoke)


def _notebook_files() -> set[str]:
    """The test files that ask for ``executed_notebooks`` (read from their text: the controller
    of an xdist run sees node ids, not fixtures)."""
    return {str(path.relative_to(ROOT)) for path in Path(__file__).parent.rglob("test_*.py")
            if "executed_notebooks" in path.read_text(encoding="utf-8")}


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config, log):
    """``--dist loadfile`` (make test, make test-all) sends each test file to one worker, so a
    module's fixtures (trained models, exported packs) are built once; here every file that asks
    for the executed smoke notebooks also goes to one worker, so the session's notebooks (and the
    runs they store, shared from one notebook to the next) are executed once, not once per worker;
    the two gpu_shape notebooks go out apart, and the longest units first
    (``tests/scheduling.py``). (xdist's ``loadgroup`` cannot do it under pytest 9: it renames node
    ids through an attribute pytest no longer reads.)"""
    if config.getvalue("dist") != "loadfile":
        return None
    from collections import OrderedDict

    from xdist.scheduler import LoadFileScheduling

    from scheduling import longest_first, recorded_seconds, scope_of

    notebooks = _notebook_files()
    seconds = recorded_seconds(notebooks)

    class NotebooksTogether(LoadFileScheduling):
        ordered = False

        def _split_scope(self, nodeid: str) -> str:
            return scope_of(nodeid, notebooks)

        def _assign_work_unit(self, node) -> None:
            # the first assignment comes once the whole queue is built: order it, longest first
            if not self.ordered:
                self.workqueue = OrderedDict((s, self.workqueue[s])
                                             for s in longest_first(self.workqueue, seconds))
                self.ordered = True
            super()._assign_work_unit(node)

    return NotebooksTogether(config, log)
