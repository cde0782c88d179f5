"""``--workers N`` / ``--scheduler ADDRESS`` (``report``, ``benchmark``): a local Dask cluster of
N single-threaded workers that train the missing runs side by side (one GPU each where GPUs
exist), or an existing one (:mod:`mlpl_lab.runs.cluster`). The notebooks' kernels find it
through ``MLPL_LAB_SCHEDULER``; with either, the plan is left to the cluster."""
from __future__ import annotations

import contextlib
import os

from .errors import UsageError


@contextlib.contextmanager
def dask_engine(args):
    """``--workers N``: a local Dask cluster for the whole command; ``--scheduler ADDRESS``: an
    existing one (checked now). The notebooks' kernels join it through ``MLPL_LAB_SCHEDULER``."""
    if not (args.workers or args.scheduler):
        yield
        return
    from ..runs import cluster

    try:
        c = cluster.client(args.workers, args.scheduler)
    except RuntimeError as exc:
        raise UsageError(str(exc)) from None
    address = c.scheduler.address
    print(f"[mlpl-lab] Dask: {len(c.nthreads())} workers at {address}", flush=True)
    before = os.environ.get(cluster.SCHEDULER_ENV)
    os.environ[cluster.SCHEDULER_ENV] = address
    try:
        yield
    finally:
        if before is None:
            os.environ.pop(cluster.SCHEDULER_ENV, None)
        else:
            os.environ[cluster.SCHEDULER_ENV] = before
        cluster.close(args.workers, args.scheduler)
