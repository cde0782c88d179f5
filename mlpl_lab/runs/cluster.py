"""The run grid beyond one process: Dask distributed workers fill the one run store.

The run store is content-addressed and written atomically (:mod:`mlpl_lab.runs.store`), so any
process that shares its folder can fill it. This module hands the runs
:func:`mlpl_lab.runs.ensure.ensure` finds missing to a Dask cluster instead of training them one
after another (its executor :class:`mlpl_lab.runs.executors.Dask`):

* ``workers=N`` (``mlpl-lab benchmark --workers N``, env ``MLPL_LAB_WORKERS``) starts a local
  cluster of N worker processes with one thread each (``LocalCluster(processes=True,
  threads_per_worker=1)``; every task also calls ``torch.set_num_threads(1)``). Where CUDA
  GPUs exist every worker advertises the resource ``GPU=1``, sees one GPU
  (``CUDA_VISIBLE_DEVICES``, worker ``i`` gets GPU ``i mod n``) and every run asks for it, so
  one run holds one GPU.
* ``scheduler=ADDRESS`` (``--scheduler``, env ``MLPL_LAB_SCHEDULER``) joins an existing
  cluster (``dask scheduler`` + ``dask worker`` on other machines, or dask-jobqueue's
  ``SLURMCluster`` — README, "Beyond one process"); its workers must see the same store folder
  and the same package source (the store key hashes the source). Workers started with
  ``--resources GPU=1`` get one run per GPU.
* **Dependencies**: a stage-two spec (``init_from``, and ``backbone_from`` where the spec has
  one) is submitted after its stage one, with the stage one's future as an argument, so Dask
  starts it only when the stage one is stored; every distinct dependency is trained once.
* **Failures**: a run that raises is retried (``retries``, default 1); a worker that dies is
  replaced by its nanny and its run rescheduled (Dask's ``allowed-failures``, default 3).
  A run that still fails is reported, the others complete, and :func:`train` then raises an
  error naming the failed runs; a second call trains only what is missing.
* **Two writers of one key** (the same spec submitted by two clients, or a retry of a run
  whose first attempt was stored before its worker died): every task reads the store first
  and skips a run already there; a writer that loses the final rename reads the winner's run.
* **Progress**: runs done, running and left, with an estimate, to the run progress
  file (``mlpl-lab report`` / ``benchmark`` print it).

The default stays one process: nothing here runs unless workers or a scheduler are asked for.
Dask is an optional extra (``pip install 'mlpl-lab[cluster]'``): on one machine the lab's own
process pool (``--plan-workers``) trains the same grid faster, so only a cluster needs it;
:func:`require_dask` says so, before anything trains, where it is missing.
Reasons for Dask over Ray (install weight, start-up on 2 cores, SLURM/PBS via dask-jobqueue,
Kubernetes via dask-kubernetes, resources for GPU placement): README, "Beyond one process".
"""
from __future__ import annotations

import atexit
import os
import time
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

from .store import FRESH_ENV, RunStore

from .spec import RunSpec

#: env var: number of local single-threaded workers (set by ``--workers``)
WORKERS_ENV = "MLPL_LAB_WORKERS"
#: env var: address of an existing Dask scheduler (set by ``--scheduler``, or by ``--workers``
#: for the notebooks' kernels, which then share the one local cluster ``mlpl-lab`` started)
SCHEDULER_ENV = "MLPL_LAB_SCHEDULER"
#: env vars a task takes from the process that submitted it (scene cache, --fresh)
FORWARDED_ENV = ("MLPL_LAB_DATA", FRESH_ENV)
#: how often a run that raised is tried again (a worker that dies is Dask's allowed-failures)
RETRIES = 1
#: seconds between progress lines while nothing finishes
HEARTBEAT_S = 60.0
#: how long joining an existing scheduler may take before it counts as unreachable
CONNECT_TIMEOUT = "30s"

_CLIENTS: Dict[Tuple[Any, Any], Any] = {}


def check_workers(value) -> Optional[int]:
    """``None`` (one process) or a positive number of workers; anything else is an error."""
    if value is None or value == "":
        return None
    n = None
    if isinstance(value, int) and not isinstance(value, bool):
        n = value
    elif isinstance(value, str) and value.strip().isdigit():
        n = int(value)
    if n is None or n < 1:
        raise ValueError(f"workers must be a whole number >= 1 (got {value!r}); leave --workers / "
                         f"{WORKERS_ENV} unset to train in this process")
    return n


def requested(workers=None, scheduler=None) -> Optional[Tuple[Optional[int], Optional[str]]]:
    """``(workers, scheduler)`` asked for by the arguments, else by the environment
    (:data:`WORKERS_ENV`, :data:`SCHEDULER_ENV`); ``None``: train in this process."""
    if workers is None and scheduler is None:
        workers, scheduler = os.environ.get(WORKERS_ENV) or None, os.environ.get(SCHEDULER_ENV) or None
    workers = check_workers(workers)
    if workers is not None and scheduler:
        raise ValueError("give either workers (a local cluster) or a scheduler address (an "
                         "existing cluster), not both")
    if workers is None and not scheduler:
        return None
    return workers, scheduler or None


def gpu_count() -> int:
    """CUDA devices visible here (0 without torch's CUDA)."""
    import torch

    return torch.cuda.device_count() if torch.cuda.is_available() else 0


#: what to install where Dask is missing
INSTALL_HINT = "pip install 'mlpl-lab[cluster]'"


def require_dask() -> None:
    """Raise a :class:`RuntimeError` naming the install command when Dask's ``distributed`` is
    not installed (it is the ``cluster`` extra, not a dependency of the lab)."""
    try:
        import dask  # noqa: F401
        import distributed  # noqa: F401
    except ImportError:
        raise RuntimeError("--workers and --scheduler run the grid on Dask, which is an optional extra "
                           f"that is not installed here: {INSTALL_HINT} (or drop the option: one machine's "
                           "own process pool, --plan-workers, needs no Dask)") from None


def one_gpu_plugin(n_gpus: int):
    """A worker plugin: worker ``i`` of a local cluster sees GPU ``i mod n_gpus`` only (set
    before any task initialises CUDA)."""
    from distributed.diagnostics.plugin import WorkerPlugin

    class OneGPU(WorkerPlugin):
        name = "mlpl-lab-one-gpu"

        def setup(self, worker):
            try:
                index = int(str(worker.name).rsplit("-", 1)[-1])
            except ValueError:
                index = 0
            os.environ["CUDA_VISIBLE_DEVICES"] = str(index % n_gpus)

    return OneGPU()


def start_local(workers: int):
    """A local cluster of ``workers`` processes with one thread each (and one GPU each where
    GPUs exist); returns its :class:`distributed.Client`."""
    import logging

    import dask
    from distributed import Client, LocalCluster

    n_gpus = gpu_count()
    # a one-thread worker gets one task at a time: "running" in the progress line is exact
    with dask.config.set({"distributed.scheduler.worker-saturation": 1.0}):
        cluster = LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                               dashboard_address=None, silence_logs=logging.ERROR,
                               resources={"GPU": 1} if n_gpus else None)
        client = Client(cluster)
    if n_gpus:
        client.register_plugin(one_gpu_plugin(n_gpus))
    client.wait_for_workers(workers)
    return client


def client(workers: Optional[int] = None, scheduler: Optional[str] = None):
    """The Dask client for ``workers`` / ``scheduler`` (one per process, closed at exit)."""
    require_dask()
    key = (workers, scheduler)
    c = _CLIENTS.get(key)
    if c is not None and c.status == "running":
        return c
    if scheduler:
        from distributed import Client

        try:
            c = Client(scheduler, timeout=CONNECT_TIMEOUT)
        except OSError as exc:
            raise RuntimeError(f"no Dask scheduler answers at {scheduler!r} ({exc}); start one "
                               "(`dask scheduler`, then `dask worker ADDRESS --nthreads 1`) or use "
                               "--workers N for a local cluster") from None
    else:
        c = start_local(workers)
    _CLIENTS[key] = c
    return c


def close(workers: Optional[int] = None, scheduler: Optional[str] = None) -> None:
    """Close the client of ``workers`` / ``scheduler`` (and the local cluster it started)."""
    c = _CLIENTS.pop((workers, scheduler), None)
    if c is None:
        return
    local = getattr(c, "cluster", None)
    try:
        c.close()
        if local is not None:
            local.close()
    except Exception:  # closing at interpreter exit: never mask the real outcome
        pass


def close_all() -> None:
    """Close every client (and the local clusters this process started)."""
    for key in list(_CLIENTS):
        close(*key)


atexit.register(close_all)


def dependencies(spec: RunSpec) -> List[RunSpec]:
    """The runs ``spec`` starts from: ``init_from`` and (where specs have it) ``backbone_from``."""
    deps = []
    for name in ("init_from", "backbone_from"):
        dep = getattr(spec, name, None)
        if isinstance(dep, RunSpec):
            deps.append(dep)
    return deps


def plan(todo: Sequence[RunSpec], stored: Callable[[RunSpec], bool]) -> List[RunSpec]:
    """Every distinct run to train, dependencies before the runs that need them: ``todo`` plus
    the dependencies of its runs that are not ``stored`` (each once, by key)."""
    order: List[RunSpec] = []
    seen: Dict[str, bool] = {}

    def visit(spec: RunSpec, needed: bool) -> None:
        if spec.key in seen:
            return
        if not needed and stored(spec):
            seen[spec.key] = False
            return
        seen[spec.key] = True
        for dep in dependencies(spec):
            visit(dep, needed=False)
        order.append(spec)

    for spec in todo:
        visit(spec, needed=True)
    return order


def train_task(spec: RunSpec, store_root: str, execute: Callable, env: Dict[str, Optional[str]],
               *stage_one: Any) -> Dict[str, Any]:
    """One run on a worker: one thread, the submitter's environment, the store read first.

    ``execute(spec, store)`` trains and stores (:func:`mlpl_lab.runs.ensure.execute`);
    ``stage_one``: the results of the runs this one starts from (Dask passes them once they
    are stored). Returns ``{"key", "trained", "seconds"}``.
    """
    import torch

    torch.set_num_threads(1)
    for name, value in env.items():
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = value
    for name in (WORKERS_ENV, SCHEDULER_ENV):  # a stage one inside this run trains here
        os.environ.pop(name, None)
    # no progress bars from the workers: the client's progress line speaks for the grid
    os.environ["MLPL_LAB_PROGRESS"] = "0"
    store = RunStore(store_root)
    t0 = time.perf_counter()
    if store.get(spec) is not None:  # stored meanwhile (another client, an earlier attempt)
        return {"key": spec.key, "trained": False, "seconds": 0.0}
    try:
        execute(spec, store)
    except OSError:
        # two writers of one key: the loser's rename fails once the winner's folder is in place
        if store.get(spec) is None:
            raise
        return {"key": spec.key, "trained": False, "seconds": time.perf_counter() - t0}
    return {"key": spec.key, "trained": True, "seconds": time.perf_counter() - t0}


class GridFailed(RuntimeError):
    """Some runs of a grid failed; the others are stored."""


def _fmt(s: float) -> str:
    s = max(0.0, s)
    return f"{s / 60:.1f} min" if s >= 90 else f"{s:.0f} s"


def train(todo: Sequence[RunSpec], store: RunStore, execute: Callable, progress=None,
          workers: Optional[int] = None, scheduler: Optional[str] = None,
          retries: int = RETRIES, task: Optional[Callable] = None) -> Dict[str, Any]:
    """Train ``todo`` (specs missing from ``store``) on the cluster; return
    ``{key: task result}``. ``progress``: :class:`~mlpl_lab.runs.progress.Progress`
    (its ``note`` gets the progress lines). Raises :class:`GridFailed` naming the runs that
    failed after the other runs completed. ``task``: :func:`train_task` (default) or a wrapper."""
    task = task or train_task
    c = client(workers, scheduler)
    specs = plan(todo, lambda s: store.get(s) is not None)
    env = {name: os.environ.get(name) for name in FORWARDED_ENV}
    gpu = any(w.get("resources", {}).get("GPU") for w in c.scheduler_info()["workers"].values())
    extra = {"resources": {"GPU": 1}} if gpu else {}
    token = f"{os.getpid()}-{time.time_ns()}"
    futures: Dict[str, Any] = {}
    for spec in specs:
        deps = [futures[d.key] for d in dependencies(spec) if d.key in futures]
        futures[spec.key] = c.submit(task, spec, str(store.root), execute, env, *deps,
                                     key=f"mlpl-run-{spec.method}-{spec.key}-{token}",
                                     retries=retries, pure=False, **extra)
    by_key = {s.key: s for s in specs}
    n_threads = max(1, sum(c.nthreads().values()))
    note = progress.note if progress is not None else (lambda text: None)
    note(f"{len(specs)} runs on {len(c.nthreads())} Dask workers"
         + (" (one GPU each)" if gpu else "") + f" ({c.scheduler.address})")
    results: Dict[str, Any] = {}
    failed: Dict[str, BaseException] = {}
    pending = dict(futures)
    t0, last = time.perf_counter(), 0.0
    while pending:
        changed = False
        for k, f in list(pending.items()):
            if f.status == "finished":
                results[k] = f.result()
            elif f.status in ("error", "cancelled"):
                failed[k] = f.exception() if f.status == "error" else RuntimeError("cancelled")
                note(f"FAILED {by_key[k].describe()}: {type(failed[k]).__name__}: {failed[k]}")
            else:
                continue
            del pending[k]
            changed = True
        now = time.perf_counter()
        if changed or now - last >= HEARTBEAT_S or not pending:
            note(_line(c, results, failed, pending, n_threads, now - t0))
            last = now
        if pending:
            time.sleep(0.25)
    for f in futures.values():
        f.release()
    if failed:
        lines = "; ".join(f"{by_key[k].describe()}: {type(e).__name__}: {e}" for k, e in failed.items())
        raise GridFailed(f"{len(failed)} of {len(specs)} runs failed ({lines}). The other runs are "
                         "stored; run the same command again to train only the missing ones")
    return results


def _line(c, results, failed, pending, n_threads: int, elapsed: float) -> str:
    """``done, running, left`` and an estimate: mean seconds per trained run × runs left /
    workers (the running runs count half)."""
    try:
        busy = {k for ks in c.processing().values() for k in ks}
    except Exception:
        busy = set()
    running = min(n_threads, sum(1 for f in pending.values() if f.key in busy))
    left = len(pending) - running
    trained = [r["seconds"] for r in results.values() if r.get("trained")]
    eta = "?"
    if trained and pending:
        eta = _fmt(sum(trained) / len(trained) * (left + 0.5 * running) / n_threads)
    elif not pending:
        eta = "0 s"
    text = (f"runs: {len(results)} done, {running} running, {left} left"
            + (f", {len(failed)} failed" if failed else "")
            + f" · {_fmt(elapsed)} so far, about {eta} left")
    return text
