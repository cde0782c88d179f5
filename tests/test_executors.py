"""The run machinery split by role (issue 50): ensure hands the runs it finds missing to one
executor (here, Dask, worker processes: the same ``train(specs, store, progress)``)."""
from __future__ import annotations

import pytest
import torch

from mlpl_lab.engine import distributed
from mlpl_lab.profiles import get_profile
from mlpl_lab.runs import cluster, ensure, executors, splits_cache, workers
from mlpl_lab.runs.store import FRESH_ENV, RunStore

@pytest.fixture
def data_root(tmp_path, monkeypatch):
    monkeypatch.setenv("MLPL_LAB_DATA", str(tmp_path))
    monkeypatch.delenv(FRESH_ENV, raising=False)
    for name in (cluster.WORKERS_ENV, cluster.SCHEDULER_ENV):
        monkeypatch.delenv(name, raising=False)
    splits_cache.clear_caches()
    return tmp_path


@pytest.fixture
def P():
    return get_profile("smoke", n_train=64, n_val=32, n_test=32, epochs=1, batch_size=32,
                       model_kwargs={"width": 4}, seeds=[0, 1], init="scratch")


def test_choose_picks_dask_only_when_asked_and_never_under_torchrun(monkeypatch):
    for name in (cluster.WORKERS_ENV, cluster.SCHEDULER_ENV):
        monkeypatch.delenv(name, raising=False)
    run, load = object(), object()
    assert type(executors.choose(run, load)) is executors.Sequential
    dask = executors.choose(run, load, workers=3)
    assert type(dask) is executors.Dask and (dask.workers, dask.scheduler) == (3, None)
    monkeypatch.setenv(cluster.SCHEDULER_ENV, "tcp://10.0.0.1:8786")
    dask = executors.choose(run, load)
    assert type(dask) is executors.Dask and (dask.workers, dask.scheduler) == (None, "tcp://10.0.0.1:8786")
    monkeypatch.setattr(distributed, "is_distributed", lambda: True)  # torchrun: every rank trains
    assert type(executors.choose(run, load, workers=3)) is executors.Sequential
    monkeypatch.undo()
    with pytest.raises(ValueError, match="workers must be a whole number"):
        executors.choose(run, load, workers="two")


class Recording:
    """An executor that records what ensure hands it and trains through the sequential one."""

    def __init__(self):
        self.calls = []

    def train(self, specs, store, progress):
        self.calls.append([s.key for s in specs])
        return executors.Sequential(ensure.execute).train(specs, store, progress)


def test_ensure_hands_only_the_missing_runs_once_each_to_the_executor(data_root, P):
    store = RunStore(data_root / "runs")
    a, b = P.spec("an", seed=0), P.spec("an", seed=1)
    first = ensure.ensure([a], store=store, quiet=True)[0]
    rec = Recording()
    runs = ensure.ensure([a, b, a, b], store=store, quiet=True, executor=rec)
    assert rec.calls == [[b.key]]  # a stored, b asked twice: trained once
    assert [r.spec.key for r in runs] == [a.key, b.key, a.key, b.key]
    assert runs[0].history == first.history and runs[1] is runs[3]
    again = Recording()
    ensure.ensure([a, b], store=store, quiet=True, executor=again)
    assert again.calls == []  # nothing missing: the executor is not called


@pytest.mark.slow  # spawns a worker process that imports torch
def test_the_worker_pool_is_an_executor_that_ensure_reads_back(data_root, P):
    store = RunStore(data_root / "runs")
    specs = [P.spec("an", seed=0), P.spec("gr", seed=0)]
    pool = workers.WorkerPool(workers=1)
    runs = ensure.ensure(specs, store=store, quiet=True, executor=pool)
    assert sorted(pool.report.trained) == sorted(s.key for s in specs)
    assert not pool.report.failed and pool.report.workers == 1
    assert [r.spec.key for r in runs] == [s.key for s in specs]
    for run in runs:  # the stored runs, as this process reads them
        stored = store.get(run.spec, loader=ensure.load_method)
        assert stored.history == run.history
        mine, theirs = run.method.net.state_dict(), stored.method.net.state_dict()
        assert mine.keys() == theirs.keys() and all(torch.equal(mine[k], theirs[k]) for k in mine)
