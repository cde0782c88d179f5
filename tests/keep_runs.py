"""CI's hand-over from the whole suite to ``make book``: the smoke series' runs the session trained.

The suite executes every notebook under the smoke profile, training its runs into the session's
own store (``conftest``: a temporary folder per process, deleted at the end). ``make book`` then
executes the same series again into ``reports/smoke``. With ``MLPL_LAB_TEST_KEEP_RUNS=<data
folder>`` the suite leaves the runs the smoke series asks for in that folder's store before it
deletes its own, so the book's series serves them instead of training them a second time.

Only runs the series asks for (:func:`mlpl_lab.protocol.plan.run_families` over every notebook,
its choices read from this session's store), each read whole and served here (same spec, same
data, same numeric environment; a run a test left damaged or made to look foreign is not
copied), and never over a run the target already holds. Each is copied under a temporary name
and renamed into place, so a reader never sees half a run.
"""
from __future__ import annotations

import os
import shutil
import warnings
from pathlib import Path
from typing import Iterable

KEEP_ENV = "MLPL_LAB_TEST_KEEP_RUNS"


def keep_smoke_runs(target_data: str | os.PathLike, notebooks: Iterable[Path]) -> int:
    """Copy the smoke series' runs of the default store (this session's) into the store of the
    data folder ``target_data``; returns how many were copied."""
    from mlpl_lab.protocol.plan import run_families
    from mlpl_lab.runs.environment import ForeignRunError
    from mlpl_lab.runs.folders import DamagedRunError, read_run
    from mlpl_lab.runs.spec import RunSpec
    from mlpl_lab.runs.store import RunStore

    src, dst = RunStore(), RunStore(Path(target_data) / "runs")
    if src.root.resolve() == dst.root.resolve():
        return 0
    copied = 0
    for key in run_families("smoke", sorted(notebooks)):
        path = src.root / key
        if not (path / "summary.json").exists() or (dst.root / key).exists():
            continue
        try:
            _, stored, _ = read_run(path)
            run = src.get(RunSpec.from_dict(stored))
        except (DamagedRunError, ForeignRunError, FileNotFoundError, ValueError, KeyError):
            continue
        if run is None or run.spec.key != key:
            continue
        dst.root.mkdir(parents=True, exist_ok=True)
        tmp = dst.root / f".tmp-{key}.{os.getpid()}"
        try:
            shutil.copytree(path, tmp)
            os.rename(tmp, dst.root / key)
            copied += 1
        except OSError as exc:  # another process kept the same run first
            warnings.warn(f"{KEEP_ENV}: {key} not kept ({exc})", RuntimeWarning, stacklevel=2)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    return copied
