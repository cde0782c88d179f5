"""Who trains the runs :func:`mlpl_lab.runs.ensure.ensure` found missing: one interface,
``executor.train(specs, store, progress) -> {key: stored run}``, over

* :class:`Sequential`: here, one run after another (two torch jobs at once are several times
  slower on 2 cores); under torchrun every rank trains the same list and rank 0 stores;
* :class:`Dask`: on Dask workers, local or an existing cluster (:mod:`mlpl_lab.runs.cluster`, the
  path beyond one machine), read back from the store once they are stored;
* :class:`mlpl_lab.runs.workers.WorkerPool`: on plain single-thread worker processes.

:func:`choose` picks one, once per call of ``ensure``. An executor trains the specs it is given
(a run they start from is trained first by ``execute`` itself) and reports through ``progress``
(:class:`mlpl_lab.runs.progress.Progress`, None on ranks other than 0).
"""
from __future__ import annotations

import time
from typing import Callable, Dict, Optional, Protocol, Sequence

from ..engine import distributed
from . import cluster
from .progress import Progress, _fmt_seconds, current_chapter
from .spec import RunSpec
from .store import RunStore, StoredRun


class Executor(Protocol):
    def train(self, specs: Sequence[RunSpec], store: RunStore,
              progress: Optional[Progress]) -> Dict[str, Optional[StoredRun]]: ...


class Sequential:
    """The runs here, one after another, each with its progress lines and the chapter's line
    (``execute``: :func:`mlpl_lab.runs.ensure.execute`)."""

    def __init__(self, execute: Callable):
        self.execute = execute

    def train(self, specs, store, progress=None):
        chapter = current_chapter() if distributed.is_main() else None
        runs: Dict[str, Optional[StoredRun]] = {}
        for i, spec in enumerate(specs, start=1):
            t0 = time.perf_counter()
            if chapter is not None:
                chapter.begin(spec)
            finished = False
            try:
                runs[spec.key] = self.execute(spec, store, progress, index=i, runs_left=len(specs) - i)
                finished = True
            finally:
                if chapter is not None:
                    chapter.end(spec, finished)
            if progress is not None:
                progress.note(f"run {i}/{len(specs)} {spec.describe()} done in "
                              f"{_fmt_seconds(time.perf_counter() - t0)}")
        return runs


class Dask:
    """The runs on Dask workers (``workers`` local ones, or the cluster at ``scheduler``), then
    read back from the store with ``load`` (:func:`mlpl_lab.runs.ensure.load_method`)."""

    def __init__(self, execute: Callable, load: Callable, workers: Optional[int] = None,
                 scheduler: Optional[str] = None):
        self.execute, self.load = execute, load
        self.workers, self.scheduler = workers, scheduler

    def train(self, specs, store, progress=None):
        cluster.train(specs, store, self.execute, progress, self.workers, self.scheduler)
        return {s.key: store.get(s, loader=self.load) for s in specs}


def choose(execute: Callable, load: Callable, workers: Optional[int] = None,
           scheduler: Optional[str] = None) -> Executor:
    """Dask where ``workers`` / ``scheduler`` (or ``MLPL_LAB_WORKERS`` / ``MLPL_LAB_SCHEDULER``)
    ask for it, outside torchrun; otherwise :class:`Sequential` (under torchrun on every rank)."""
    if distributed.is_distributed():
        return Sequential(execute)
    engine = cluster.requested(workers, scheduler)
    return Sequential(execute) if engine is None else Dask(execute, load, *engine)
