"""Executing the notebook series (``report``, ``benchmark``). Notebooks run one after another
while anything may train (two torch processes at once are several times slower on 2 cores): only
the next notebook's kernel starts (and imports) while the current one runs
(:mod:`mlpl_lab.reporting.next_kernel`). Where every planned run is stored they only read, and
run two at a time (:func:`~mlpl_lab.commands.plan_first.lanes_for`). While a
notebook trains, the terminal shows which run and epoch, with an estimate of the time left
(:mod:`mlpl_lab.commands.progress`). No report hangs: a cell may run the profile's
``cell_timeout_s`` (``--cell-timeout SECONDS`` overrides it); a notebook whose cell raises,
outlasts that limit or loses its kernel is reported at once (notebook, cell index and first line),
its kernel is stopped, and the series goes on; every failure is listed at the end and the command
exits with 1.

:func:`execute_series` is the loop; each role has its own step: the kernel started ahead
(:func:`take_kernel`, :func:`start_ahead`), the access logs the run packs are made from
(:func:`log_reads_under`, :func:`enter_chapter`), the progress thread
(:func:`~mlpl_lab.commands.progress.tailing`) and notebook 07's CSV tables
(:func:`~mlpl_lab.commands.benchmark_csv.after_benchmark`)."""
from __future__ import annotations

import contextlib
import os
import time
from pathlib import Path

from ..reporting.execute import execute_notebook, kernel_config
from . import benchmark_csv
from .dask_engine import dask_engine
from .errors import CommandError
from .fresh import set_fresh
from .plan_first import lanes_for, train_plan_first
from .progress import progress_log, tailing


def run_series(args, out: Path, paths, parameters=None, plan_parameters=None, before_plan=None) -> None:
    """``report`` and ``benchmark``: ``--fresh``, the progress file, ``before_plan()`` (the report's
    import of the shipped pack), the planned runs trained first (under ``plan_parameters``), then the
    notebooks under ``parameters`` (on the Dask cluster of ``--workers`` / ``--scheduler`` where one
    is asked for)."""
    set_fresh(args, out)
    with progress_log(out):
        # the first notebooks' kernels start (and import) while the pack is imported and the series
        # planned: one Python thread, so the kernels' imports take the idle core; used if the
        # notebooks run side by side (every planned run stored), shut down otherwise
        warm = prewarm(paths, out, args.profile) if not (getattr(args, "workers", None)
                                                         or getattr(args, "scheduler", None)) else {}
        try:
            if before_plan is not None:
                before_plan()
            all_stored = train_plan_first(args, paths, plan_parameters)
            lanes = lanes_for(all_stored)
            if all_stored and lanes > 1:
                print("[mlpl-lab] every planned run is stored: the notebooks only read, and run side by side",
                      flush=True)
            else:
                close_all(warm)
            with dask_engine(args):
                run_notebooks(paths, out, args.profile, parameters, cell_timeout=args.cell_timeout,
                              lanes=lanes, warm=warm)
        finally:
            close_all(warm)


def prewarm(paths, out: Path, profile: str) -> dict:
    """``{path: NextKernel}``: the kernels of the notebooks a side-by-side series runs first (one per
    lane, :func:`side_by_side_order`), each started now under the environment it would get when its
    notebook starts (its chapter, figure log, profile, one lane's torch threads) and importing what
    its notebook imports. Empty where the series could not run side by side."""
    from ..reporting.next_kernel import NextKernel

    lanes = lanes_for(True)
    if lanes < 2 or len(paths) < 2:
        return {}
    warm = {}
    with environment_kept():
        log_reads_under(profile)
        os.environ.setdefault("MLPL_LAB_PROGRESS", "0")
        for path in side_by_side_order(paths, profile)[:lanes]:
            ahead = NextKernel(kernel_config)
            start_ahead(ahead, path, out, threads=lane_threads(lanes))
            warm[path] = ahead
    return warm


def close_all(warm: dict) -> None:
    """Shut down the kernels of :func:`prewarm` no notebook took."""
    while warm:
        _, ahead = warm.popitem()
        ahead.close()


def lane_threads(lanes: int) -> int:
    """Torch threads per kernel when ``lanes`` notebooks run at once: no lane oversubscribes the cores."""
    return max(1, (os.cpu_count() or 1) // lanes)


def side_by_side_order(paths, profile: str) -> list:
    """``paths`` longest first by their measured served times (:func:`served_seconds`), so no lane
    ends with a long one."""
    served = served_seconds(profile)
    return sorted(paths, key=lambda p: -served.get(Path(p).stem, 0.0))


@contextlib.contextmanager
def environment_kept():
    """Within this block a command may set environment variables for the kernels and workers it
    starts (the notebook being run, the profile, the progress file); on leaving, the caller's
    environment is put back as it was, so an in-process caller -- a test, a notebook -- is not
    left logging its own reads as a chapter's."""
    saved = dict(os.environ)
    try:
        yield
    finally:
        os.environ.clear()
        os.environ.update(saved)


def run_notebooks(paths, out: Path, profile: str, parameters=None, **kwargs) -> None:
    """:func:`execute_series` with the caller's environment kept (:func:`environment_kept`)."""
    with environment_kept():
        execute_series(paths, out, profile, parameters, **kwargs)


def execute_series(paths, out: Path, profile: str, parameters=None,
                   cell_timeout: float | None = None, lanes: int = 1, warm: dict | None = None) -> None:
    """Execute ``paths`` in order; each next notebook's kernel starts, and imports what that
    notebook imports, while the current one runs (:mod:`mlpl_lab.reporting.next_kernel`).

    A cell may run ``cell_timeout`` seconds (default: the profile's ``cell_timeout_s``). A notebook
    that fails -- a cell raising, a cell past the limit, a dead kernel -- is reported at once, its
    kernel is stopped, and the series goes on with the next notebook; at the end every failure is
    listed in one :class:`CommandError` (exit code 1).

    ``lanes`` > 1: that many notebooks at once, each on its own kernel started for it (threads;
    each thread runs its own event loop), reported as each ends; for series that only read.
    ``warm``: kernels already started for some of ``paths`` (:func:`prewarm`), taken by them."""
    from ..profiles import get_profile
    from ..reporting.audit import summarise, summary_text
    from ..reporting.next_kernel import NextKernel
    from ..reporting.report import read_records
    from ..runs.progress import PROGRESS_FILE_ENV

    done, failures = [], []
    timeout = cell_timeout if cell_timeout is not None else get_profile(profile).cell_timeout_s
    log_reads_under(profile)
    progress_file = Path(os.environ[PROGRESS_FILE_ENV])
    os.environ.setdefault("MLPL_LAB_PROGRESS", "0")  # before any kernel starts: they inherit it
    if lanes > 1 and len(paths) > 1:
        done, failures = execute_side_by_side(paths, out, profile, parameters, timeout, progress_file, lanes,
                                              warm)
        ahead = None
    else:
        ahead = NextKernel(kernel_config)
    try:
        for i, path in enumerate(paths if ahead is not None else ()):
            t0 = time.perf_counter()
            km, numerics_before = take_kernel(ahead, path)
            print(f"[mlpl-lab] {path.name} (profile {profile}) ...", flush=True)
            enter_chapter(path, profile)
            if i + 1 < len(paths):
                start_ahead(ahead, paths[i + 1], out)
            executed, failed = execute_one(path, out, profile, parameters, km, timeout, progress_file)
            if failed is not None:
                failures.append(failed)
                print(f"[mlpl-lab]   FAILED after {time.perf_counter() - t0:.0f} s: {failed}", flush=True)
                continue
            records = read_records(executed)
            done.append(executed)
            print(f"[mlpl-lab]   done in {time.perf_counter() - t0:.0f} s; {len(records)} records; "
                  f"HTML: {out / (path.stem + '.html')}", flush=True)
            if path.stem == benchmark_csv.BENCHMARK_NOTEBOOK:
                benchmark_csv.after_benchmark(path, out, profile, parameters, numerics_before)
    finally:
        if ahead is not None:
            ahead.close()
    # the protocol, checked on what ran: converged runs and findings vs observations
    summarise(done).to_csv(out / "protocol.csv")
    print("[mlpl-lab] " + summary_text(done).replace("\n", "\n[mlpl-lab] "), flush=True)
    if failures:
        raise CommandError(f"{len(failures)} of {len(paths)} notebooks did not run to their end "
                           "(the others did):\n  " + "\n  ".join(map(str, failures)))


def execute_side_by_side(paths, out: Path, profile: str, parameters, timeout, progress_file: Path,
                         lanes: int, warm: dict | None = None):
    """``paths`` executed ``lanes`` at a time, each in a thread of its own that starts the
    notebook's kernel (under its chapter's name and figure log) and runs it; a line as each
    ends. Returns ``(executed notebooks in the series' order, failures)``; 07's CSV tables are
    written once every notebook has ended."""
    from concurrent.futures import ThreadPoolExecutor

    from ..reporting.next_kernel import NextKernel
    from ..reporting.report import read_records

    print(f"[mlpl-lab] {len(paths)} notebooks, {lanes} at a time", flush=True)
    for path in paths:
        enter_chapter(path, profile)  # each access log starts empty, before any kernel reads

    threads = lane_threads(lanes)
    warm = warm if warm is not None else {}

    def one(path: Path):
        t0 = time.perf_counter()
        ahead = warm.pop(path, None)  # started while the series was planned (prewarm)
        if ahead is None:
            ahead = NextKernel(kernel_config)
            start_ahead(ahead, path, out, threads=threads)
        km, numerics_before = take_kernel(ahead, path)
        executed, failed = execute_one(path, out, profile, parameters, km, timeout, None)
        seconds = time.perf_counter() - t0
        if failed is not None:
            print(f"[mlpl-lab] {path.name}: FAILED after {seconds:.0f} s: {failed}", flush=True)
        else:
            print(f"[mlpl-lab] {path.name} (profile {profile}): done in {seconds:.0f} s; "
                  f"{len(read_records(executed))} records; HTML: {out / (path.stem + '.html')}", flush=True)
        return executed, failed, numerics_before

    # longest first (the served times measured for ``make report``), so no lane ends with a long one
    order = side_by_side_order(paths, profile)
    with tailing(progress_file), ThreadPoolExecutor(max_workers=lanes) as pool:
        by_path = dict(zip(order, pool.map(one, order)))
    results = [by_path[path] for path in paths]
    done = [executed for executed, failed, _ in results if failed is None]
    failures = [failed for _, failed, _ in results if failed is not None]
    for path, (executed, failed, numerics_before) in zip(paths, results):
        if failed is None and path.stem == benchmark_csv.BENCHMARK_NOTEBOOK:
            benchmark_csv.after_benchmark(path, out, profile, parameters, numerics_before)
    return done, failures


def served_seconds(profile: str) -> dict:
    """``{notebook stem: seconds}`` each notebook took served from the pack under ``profile``
    (``notebooks/timings.json``, written by ``mlpl-lab course timings``); empty if not measured."""
    import json

    from ..reporting.serve import TIMINGS_FILE

    try:
        return dict(json.loads(TIMINGS_FILE.read_text()).get(f"{profile}-pack", {}))
    except (OSError, ValueError):
        return {}


def execute_one(path: Path, out: Path, profile: str, parameters, km, timeout, progress_file: Path):
    """One notebook, its progress lines printed while it runs; its kernel (``km``, started ahead)
    shut down after, at once where the notebook failed (a stuck kernel would not answer).
    Returns ``(executed, None)``, or ``(None, NotebookFailed)``."""
    from ..reporting import next_kernel
    from ..reporting.report import NotebookFailed

    executed = failed = None
    try:
        with (tailing(progress_file) if progress_file is not None else contextlib.nullcontext()):
            executed = execute_notebook(path, out, profile, parameters, km=km, timeout=timeout)
    except NotebookFailed as exc:
        failed = exc
    finally:
        if km is not None:
            next_kernel.shutdown(km, now=failed is not None)
    return executed, failed


# ---------------------------------------------------------------- the kernel started ahead
def take_kernel(ahead, path: Path):
    """The kernel started ahead for ``path`` (None: papermill starts one) and the numerics
    versions that kernel imports: read when it started, or now where none was started."""
    from ..core.numerics import versions_on_disk

    km, started = ahead.take(path)
    return km, (started["numerics"] if km is not None else versions_on_disk())


def start_ahead(ahead, path: Path, out: Path | None = None, threads: int | None = None) -> None:
    """Start ``path``'s kernel now, under its own chapter name (and, with ``out``, its own figure
    log: :mod:`mlpl_lab.reporting.figure_log`), while the current notebook runs."""
    from ..core.numerics import versions_on_disk
    from ..reporting.figure_log import ENV as FIGURE_ENV
    from ..runs.access import CHAPTER_ENV

    env = dict(os.environ) | {CHAPTER_ENV: path.stem}
    if threads is not None:  # torch's threads in that kernel (notebooks side by side share the cores)
        env |= {"OMP_NUM_THREADS": str(threads), "MKL_NUM_THREADS": str(threads)}
    if out is not None:  # the kernel inherits its environment now, not when its notebook starts
        env[FIGURE_ENV] = str((Path(out) / f"{path.stem}.figures.jsonl").resolve())
    ahead.start(path, env, numerics=versions_on_disk())


# ---------------------------------------------------------------- the access logs
def log_reads_under(profile: str) -> None:
    """The kernels log the runs they read under this profile (:mod:`mlpl_lab.runs.access`)."""
    from ..runs.access import PROFILE_ENV

    os.environ[PROFILE_ENV] = profile


def enter_chapter(path: Path, profile: str) -> None:
    """The runs read from now on are ``path``'s: its access log (for run packs) starts empty."""
    from ..runs.access import CHAPTER_ENV, forget_access
    from ..runs.store import RunStore

    os.environ[CHAPTER_ENV] = path.stem
    forget_access(RunStore().root, profile, path.stem)
