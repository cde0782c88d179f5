"""A series' planned runs on a pool of worker processes: one single-thread process per core, or
several per GPU (on a GPU, the workers per device the GPU check measured best,
:mod:`mlpl_lab.runs.gpu_records`: a small run leaves a large card mostly idle).

:func:`train` takes run specs in the order a plan gives them (:mod:`mlpl_lab.protocol.plan`:
dependencies first, longest first), adds any dependency missing from the list, and trains those
not yet in the store (and a stored run imported without its weights that one of them starts from,
:func:`to_train`) on ``workers`` plain processes (``multiprocessing``'s *spawn*, no cluster
software). Each worker pins its threads before its first run (``OMP_NUM_THREADS``,
``torch.set_num_threads(threads)``, one inter-op thread: one thread without GPUs, the cores shared
out among the workers with GPUs) and, where CUDA GPUs exist, sees one GPU
(``CUDA_VISIBLE_DEVICES``, worker ``i`` gets GPU ``i mod GPUs``: with ``per_device`` workers per
GPU, that many runs share each card). The parent hands out one run at a time
to an idle worker: the first in the plan's order whose dependencies (pretraining run, stage one)
are stored — no barrier between waves, so a worker never idles while a run is ready. Every worker
writes into the one store, which takes several writers (:mod:`mlpl_lab.runs.store`); a worker reads
the store before training, so a run stored meanwhile is not trained twice.

The thread count of the process that trained a run is recorded in the run's environment
(``summary.json``: ``environment.threads``), never in its key: a store filled by single-thread
workers serves a machine with any number of cores. A retrain that should reproduce a run bitwise
uses the recorded count (:func:`reproduce`).

Failures: a run that raises is reported, the runs that depend on it are skipped, the others
complete; a worker that dies loses only its run (a new worker takes its place); a worker that dies
before taking any run stops the pool. Whatever was not trained is left to the notebooks, which
train any missing run themselves when they execute.

Why plain processes rather than :mod:`mlpl_lab.runs.cluster`'s Dask workers (the README's 0.43x of
one two-thread process on a pretraining run and four cpu runs): that grid is mostly waiting — every
run depends on the pretraining run, which one worker trains while the other idles, and four runs
leave the second round half empty — but waiting alone cannot make two workers slower than one
process; the same run also trained about twice as long *inside* ``fit`` in a one-thread Dask worker
as in a one-thread main process on the shared 2-core machine (``benchmarks/bench_series.py
--engines`` compares the main process, a Dask worker and a pool worker; not the worker's profiler,
malloc trimming or GC diagnosis, each switched off in turn; the cause is not pinned down, and the
machine's load moved the pool worker's figure too). Here the queue is the plan's, the dependencies
are the plan's waves, and nothing but the worker process runs beside a run.
"""
from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

from .folders import record_only
from .store import FRESH_ENV, RunStore

from .spec import RunSpec

#: seconds between progress lines while no run finishes
HEARTBEAT_S = 60.0


def dependencies(spec: RunSpec) -> List[RunSpec]:
    """The runs ``spec`` starts from: its pretraining run (``backbone_from``) and its stage one
    (``init_from``)."""
    return [d for d in (spec.backbone_from, spec.init_from) if d is not None]


def gpu_count() -> int:
    """CUDA devices visible here (0 without CUDA)."""
    import torch

    return torch.cuda.device_count() if torch.cuda.is_available() else 0


def default_workers(n_runs: int, gpus: int | None = None, per_device: int | None = None) -> int:
    """``per_device`` workers per GPU where there are GPUs (default: what the GPU check measured
    best, :func:`mlpl_lab.runs.gpu_records.workers_per_device`; 1 without its record), else one
    per core (``os.cpu_count()``), never more than there are runs, at least one."""
    gpus = gpu_count() if gpus is None else gpus
    if gpus > 0:
        if per_device is None:
            from .gpu_records import workers_per_device

            per_device = workers_per_device()
        n = gpus * check_count(per_device, "workers per device")
    else:
        n = os.cpu_count() or 1
    return max(1, min(n, n_runs))


def check_count(value, name: str = "workers") -> int:
    """A positive whole number of workers (or threads); anything else is an error naming the fix."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"{name} must be a whole number >= 1 (got {value!r})"
                         + ("; leave it out for one worker per core (or per GPU)" if name == "workers" else ""))
    return value


def looks_stored(store: RunStore, spec: RunSpec) -> bool:
    """Is ``spec`` in ``store`` (its ``summary.json`` there and made after ``--fresh``)? A cheap
    check: the weights are not hashed (the worker's full read does that before training, and the
    notebook's read decides about a run made in another environment)."""
    path = store.path(spec) / "summary.json"
    try:
        created = json.loads(path.read_text()).get("created", 0.0)
    except (OSError, ValueError):
        return False
    try:
        fresh = float(os.environ.get(FRESH_ENV, "0"))
    except ValueError:
        fresh = 0.0
    return created >= fresh


def to_train(store: RunStore, specs: Sequence[RunSpec]) -> List[RunSpec]:
    """The runs of ``specs`` and their dependencies (:func:`with_dependencies`, in that order) that
    must be trained: those not stored (:func:`looks_stored`), and a stored run imported without its
    weights (:func:`mlpl_lab.runs.folders.record_only`) that one of them starts from -- a stage two
    or a fine-tuning loads the weights it starts from, so that run is trained again first."""
    every = with_dependencies(specs)
    dependents: Dict[str, List[str]] = {}
    for spec in every:
        for dep in dependencies(spec):
            dependents.setdefault(dep.key, []).append(spec.key)
    chosen: set = set()
    for spec in reversed(every):  # a run's dependents come after it: decided before it is
        if not looks_stored(store, spec) or (any(k in chosen for k in dependents.get(spec.key, ()))
                                             and record_only(store.path(spec))):
            chosen.add(spec.key)
    return [s for s in every if s.key in chosen]


def _say_trained_again(store: RunStore, todo: Sequence[RunSpec], note: Callable[[str], None]) -> None:
    """Say up front which stored runs :func:`to_train` trains again (record-only, started from)."""
    again = [s for s in todo if looks_stored(store, s)]
    if again:
        note(f"{len(again)} stored run(s) came from a run pack without their weights and a run to train "
             f"starts from them ({again[0].describe()}, ...): trained again first, with their weights")


def with_dependencies(specs: Sequence[RunSpec]) -> List[RunSpec]:
    """``specs`` (each once, by key) with every dependency they name placed before the first run
    that needs it; otherwise in the given order."""
    out: Dict[str, RunSpec] = {}

    def visit(spec: RunSpec) -> None:
        if spec.key in out:
            return
        for dep in dependencies(spec):
            visit(dep)
        out[spec.key] = spec

    for spec in specs:
        visit(spec)
    return list(out.values())


# ------------------------------------------------------------------------------- in a worker
_WORKER: Dict[str, Any] = {}


def _init_worker(threads: int, gpu: Optional[int], parent: Optional[int] = None) -> None:
    """Runs once in each worker before its first run: pin the threads, pick the GPU, import the
    training path (so every worker's imports overlap instead of delaying its first run)."""
    os.environ["OMP_NUM_THREADS"] = os.environ["MKL_NUM_THREADS"] = str(threads)
    os.environ["MLPL_LAB_PROGRESS"] = "0"  # no progress bars from the workers: the parent speaks
    if gpu is not None:
        os.environ["CUDA_VISIBLE_DEVICES"] = str(gpu)
    import torch

    torch.set_num_threads(threads)
    try:
        torch.set_num_interop_threads(1)
    except RuntimeError:  # already fixed in this process
        pass
    from . import ensure  # noqa: F401

    _WORKER.update(threads=threads, gpu=gpu)
    # the parent's pid as the parent gave it: a parent killed while this worker was still
    # importing would otherwise be missed (os.getppid() would already name its new parent)
    _exit_with_parent(os.getppid() if parent is None else parent)


def _exit_with_parent(parent: int, every_s: float = 2.0) -> None:
    """A worker ends when the parent that hands out its runs is gone (killed, or its terminal
    closed): it would otherwise train its run to the end with nobody to read the answer, holding
    a core. Checked every ``every_s`` seconds on a daemon thread; the run in progress is lost (the
    store never sees half a run: runs are written whole)."""
    import threading

    def watch() -> None:
        if os.getppid() != parent:
            os._exit(3)
        while True:
            time.sleep(every_s)
            if os.getppid() != parent:
                os._exit(3)

    threading.Thread(target=watch, name="exit-with-parent", daemon=True).start()


def _train_one(spec: Dict[str, Any], root: str) -> Dict[str, Any]:
    """One run in a worker: read the store, train and store the run if it is missing."""
    import torch

    from .ensure import execute
    from .environment import ForeignRunError

    spec = RunSpec.from_dict(spec)
    store = RunStore(root)
    t0 = time.perf_counter()
    out = {"key": spec.key, "pid": os.getpid(), "threads": torch.get_num_threads(),
           "gpu": _WORKER.get("gpu"), "trained": False}
    try:
        if store.get(spec) is not None and not record_only(store.path(spec)):  # stored meanwhile
            return out | {"seconds": time.perf_counter() - t0}
    except ForeignRunError as exc:  # the notebook decides (refuse, serve or retrain)
        return out | {"seconds": time.perf_counter() - t0, "note": str(exc)}
    execute(spec, store)
    return out | {"trained": True, "seconds": time.perf_counter() - t0}


def _worker_main(index: int, threads: int, gpu: Optional[int], task: Callable, tasks, answers,
                 parent: Optional[int] = None) -> None:
    """A worker's life: pin, say it is ready, then take ``(spec, root)`` from ``tasks`` until
    ``None``, answering each on ``answers`` as ``(index, "done" | "error", result or message)``."""
    import gc
    import traceback

    _init_worker(threads, gpu, parent)
    answers.put((index, "ready", None))
    while True:
        item = tasks.get()
        if item is None:
            return
        try:
            answers.put((index, "done", task(*item)))
        except BaseException as exc:  # noqa: BLE001 — reported to the parent, the worker goes on
            answers.put((index, "error", f"{type(exc).__name__}: {exc}\n{traceback.format_exc(limit=6)}"))
        # a trained method sits in reference cycles (its context's closures) with its networks and
        # optimiser state; few Python objects, so the collector seldom reaches them: collected here,
        # a single-thread CPU worker training ResNet-18 runs (the GPU check's rehearsal) stayed at
        # 1.1 GiB over 10 runs, against 2.1 GiB after 10 without it (and 9 GiB a worker after ~40)
        gc.collect()


# ------------------------------------------------------------------------------- in the parent
@dataclass
class PoolReport:
    """What :func:`train` did: per run key its worker's answer, the failures, the skipped runs."""

    workers: int = 0
    threads: int = 1
    seconds: float = 0.0
    results: Dict[str, Dict[str, Any]] = field(default_factory=dict)
    failed: Dict[str, str] = field(default_factory=dict)
    skipped: Dict[str, str] = field(default_factory=dict)
    already_stored: int = 0

    @property
    def trained(self) -> List[str]:
        return [k for k, r in self.results.items() if r.get("trained")]

    def describe(self) -> str:
        if not self.workers:
            return f"nothing to train: the {self.already_stored} runs are stored"
        text = (f"{len(self.trained)} runs trained on {self.workers} workers × {self.threads} thread(s) "
                f"in {_fmt(self.seconds)} ({self.already_stored} were stored)")
        if self.failed:
            text += f"; {len(self.failed)} failed"
        if self.skipped:
            text += f"; {len(self.skipped)} skipped (a run they start from failed)"
        return text


def _fmt(s: float) -> str:
    s = max(0.0, s)
    return f"{s / 3600:.2f} h" if s >= 5400 else f"{s / 60:.1f} min" if s >= 90 else f"{s:.0f} s"


def time_left(elapsed: float, work_done: float, total_work: float, priced: float | None = None,
              busy: float | None = None, running: Sequence[Tuple[float, float]] = (), workers: int = 1) -> str:
    """What the progress line says is left. Once a run is done, from the rate the done runs set
    (``busy``: the seconds they were in flight, over ``work_done``, their :func:`_work`): what the
    runs in flight still need (``running``: ``(work, seconds in flight)`` each) and the queued work,
    shared among ``workers``, and never less than the longest run in flight still needs (without
    ``busy``: the elapsed time scaled by the work left). Before that: the sitting's price
    (``priced``: its wall seconds as priced from stored runs) less the elapsed time, marked
    "(priced)"; "?" without a price, and "more than priced" once the price has run out."""
    if work_done > 0 and busy is not None:
        rate = busy / work_done
        flight = [max(0.0, rate * w - e) for w, e in running]
        queued = rate * max(0.0, total_work - work_done - sum(w for w, _ in running))
        return _fmt(max(max(flight, default=0.0), (sum(flight) + queued) / max(1, workers)))
    if work_done > 0:
        return _fmt(elapsed / work_done * max(0.0, total_work - work_done))
    if priced is None or priced <= 0:
        return "?"
    if elapsed >= priced:
        return f"? (more than the {_fmt(priced)} priced)"
    return f"{_fmt(priced - elapsed)} (priced)"


def _work(spec: RunSpec) -> float:
    """A run's size for the time estimate: epochs × training images × pixels per image."""
    side = int(spec.data.get("image_size", 32))
    return float(spec.train.get("epochs", 1)) * float(spec.data.get("n_train", 1) or 1) * side * side


class _Pool:
    """``n`` worker processes (spawned), each with its own task queue, one answer queue."""

    def __init__(self, n: int, threads: int, task: Callable):
        import multiprocessing

        self.ctx = multiprocessing.get_context("spawn")
        self.threads, self.task = threads, task
        self.gpus = gpu_count()
        self.answers = self.ctx.Queue()
        self.procs: List[Any] = [None] * n
        self.queues: List[Any] = [None] * n
        for i in range(n):
            self.start(i)

    def start(self, i: int) -> None:
        self.queues[i] = self.ctx.Queue()
        gpu = i % self.gpus if self.gpus else None
        self.procs[i] = self.ctx.Process(target=_worker_main, name=f"mlpl-lab-worker-{i}",
                                         args=(i, self.threads, gpu, self.task, self.queues[i], self.answers,
                                               os.getpid()))
        self.procs[i].start()

    def dead(self) -> List[int]:
        return [i for i, p in enumerate(self.procs) if p is not None and not p.is_alive()]

    def close(self) -> None:
        for q in self.queues:
            try:
                q.put(None)
            except (OSError, ValueError):
                pass
        for p in self.procs:
            p.join(timeout=10)
            if p.is_alive():
                p.terminate()
                p.join(timeout=5)


def default_threads(workers: int, gpus: int | None = None) -> int:
    """One thread per worker on CPUs (a worker per core); with GPUs, the cores shared out among
    the workers (their threads feed a GPU)."""
    gpus = gpu_count() if gpus is None else gpus
    return max(1, (os.cpu_count() or 1) // workers) if gpus else 1


def train(specs: Sequence[RunSpec], store: RunStore | None = None, workers: int | None = None,
          threads: int | None = None, note: Callable[[str], None] | None = None,
          task: Callable | None = None, per_device: int | None = None,
          priced: float | None = None) -> PoolReport:
    """Train the runs of ``specs`` missing from ``store`` (and the missing runs they start from) on
    ``workers`` processes (default :func:`default_workers`) of ``threads`` threads each (default
    :func:`default_threads`: one without GPUs), in the order given wherever the runs they start
    from are stored. ``note`` gets the progress lines.
    Returns a :class:`PoolReport`; raises nothing for a failed run (see the module docstring).
    ``task``: the module-level function a worker runs per ``(spec dict, store root)`` (default:
    train it; tests wrap it). ``per_device``: workers per GPU when ``workers`` is None (worker
    ``i`` gets GPU ``i mod GPUs``, so each GPU is shared by that many runs at once). ``priced``:
    the wall seconds the runs were priced at, what the progress lines say is left until a run is
    done (:func:`time_left`)."""
    import queue

    store = store or RunStore()
    note = note or (lambda text: None)
    if threads is not None:
        check_count(threads, "threads")
    if workers is not None:
        check_count(workers)
    every = with_dependencies(specs)
    todo = to_train(store, specs)
    report = PoolReport(threads=threads or 1, already_stored=len(every) - len(todo))
    if not todo:
        return report
    _say_trained_again(store, todo, note)
    n = default_workers(len(todo), per_device=per_device) if workers is None else min(workers, len(todo))
    threads = report.threads = threads or default_threads(n)
    report.workers = n
    keys = {s.key for s in todo}
    needs = {s.key: [d.key for d in dependencies(s) if d.key in keys] for s in todo}
    pending, done = list(todo), set()
    running: Dict[int, RunSpec] = {}  # worker -> its run
    idle: List[int] = []
    total_work, work_done, busy = sum(_work(s) for s in todo), 0.0, 0.0
    started: Dict[int, float] = {}  # worker -> when its run started
    t0 = last = time.perf_counter()
    pool = _Pool(n, threads, task or _train_one)
    note(f"{len(todo)} runs to train ({report.already_stored} stored) on {n} worker processes × "
         f"{threads} thread(s)" + (f" sharing {pool.gpus} GPU(s), {-(-n // pool.gpus)} a GPU at most"
                                   if pool.gpus else ""))

    def finish(spec: RunSpec, failure: Optional[str] = None, result=None) -> None:
        nonlocal work_done
        if failure is not None:
            report.failed[spec.key] = f"{spec.describe()}: {failure}"
            note(f"FAILED {report.failed[spec.key]}")
            return
        report.results[spec.key] = result
        done.add(spec.key)
        work_done += _work(spec)
        note(f"run {len(done)}/{len(todo)} {spec.describe()}: "
             + (f"{result['seconds']:.0f} s" if result.get("trained") else "already stored")
             + f" (worker {result.get('pid')}, {result.get('threads')} thread(s))")

    try:
        while pending or running:
            blocked = [s for s in pending if any(d in report.failed or d in report.skipped for d in needs[s.key])]
            for spec in blocked:
                pending.remove(spec)
                report.skipped[spec.key] = f"{spec.describe()}: a run it starts from failed"
            while idle:
                ready = next((s for s in pending if all(d in done for d in needs[s.key])), None)
                if ready is None:
                    break
                pending.remove(ready)
                i = idle.pop(0)
                running[i] = ready
                started[i] = time.perf_counter()
                pool.queues[i].put((ready.as_dict(), str(store.root)))
            if not running and not (pending and len(idle) < n):
                break  # nothing runs and nothing can start: the rest waits on failed runs
            try:
                i, kind, payload = pool.answers.get(timeout=2.0)
            except queue.Empty:
                dead = pool.dead()
                if any(i not in running for i in dead):  # died without a run: cannot start at all
                    code = pool.procs[dead[0]].exitcode
                    note(f"a worker process died before taking a run (exit code {code}); "
                         "the notebooks train what is missing")
                    for spec in list(running.values()) + pending:
                        report.skipped[spec.key] = f"{spec.describe()}: the worker processes died"
                    running.clear()
                    pending.clear()
                    break
                for i in dead:  # a worker that died loses its run only; a new one replaces it
                    started.pop(i, None)
                    finish(running.pop(i), f"its worker died (exit code {pool.procs[i].exitcode})")
                    pool.start(i)
            else:
                if kind == "ready":
                    idle.append(i)
                else:
                    spec = running.pop(i)
                    began = started.pop(i, t0)
                    idle.append(i)
                    if kind == "done":
                        busy += time.perf_counter() - began
                        finish(spec, result=payload)
                    else:
                        finish(spec, payload.strip().splitlines()[0] if payload else "failed")
                    last = -HEARTBEAT_S  # a line now
            now = time.perf_counter()
            if now - last >= HEARTBEAT_S:
                last = now
                left = time_left(now - t0, work_done, total_work, priced, busy,
                                 [(_work(r), now - started.get(j, now)) for j, r in running.items()], n)
                note(f"runs: {len(done)} done, {len(running)} running, {len(pending)} waiting"
                     + (f", {len(report.failed)} failed" if report.failed else "")
                     + f" · {_fmt(now - t0)} so far, about {left} left")
    finally:
        pool.close()
        report.seconds = time.perf_counter() - t0
    for spec in pending:  # their dependencies failed
        report.skipped.setdefault(spec.key, f"{spec.describe()}: a run it starts from failed")
    return report



class WorkerPool:
    """:func:`train` as an executor (:mod:`mlpl_lab.runs.executors`: the same
    ``train(specs, store, progress)`` as here-one-after-another and Dask), e.g.
    ``ensure(specs, executor=WorkerPool(2))``: the runs on ``workers`` processes, their lines to
    ``progress.note``, then read back from the store (None where a run failed or was skipped;
    :attr:`report` says which and why)."""

    def __init__(self, workers: int | None = None, threads: int | None = None, task: Callable | None = None):
        self.workers, self.threads, self.task = workers, threads, task
        self.report: Optional[PoolReport] = None

    def train(self, specs: Sequence[RunSpec], store: RunStore, progress=None) -> Dict[str, Any]:
        from .ensure import load_method

        note = progress.note if progress is not None else None
        self.report = train(specs, store, self.workers, self.threads, note=note, task=self.task)
        return {s.key: store.get(s, loader=load_method) for s in specs}

def reproduce(run, store: RunStore):
    """Train ``run``'s spec again into ``store`` with the thread count recorded with it
    (``run.environment["threads"]``; this process's count where none was recorded) and its
    training precision (``run.environment["precision"]``, set through ``MLPL_LAB_CPU_PRECISION``;
    float32 where none was recorded: such runs predate the switch), so that on the same machine and
    torch the result is the same bit for bit; returns the new stored run. The runs it starts from
    are read from ``store`` (trained there first, with the same count, if missing). The process's
    thread count and precision setting are restored afterwards."""
    import torch

    from ..engine.device import CPU_PRECISION_ENV
    from .ensure import execute

    before = torch.get_num_threads()
    before_precision = os.environ.get(CPU_PRECISION_ENV)
    recorded = (run.environment or {}).get("threads")
    precision = {"bfloat16": "bf16", "float32": "fp32"}.get((run.environment or {}).get("precision", "float32"))
    try:
        if recorded:
            torch.set_num_threads(int(recorded))
        if precision and not run.spec.train.get("amp"):
            os.environ[CPU_PRECISION_ENV] = precision
        return execute(run.spec, store)
    finally:
        torch.set_num_threads(before)
        if before_precision is None:
            os.environ.pop(CPU_PRECISION_ENV, None)
        else:
            os.environ[CPU_PRECISION_ENV] = before_precision
