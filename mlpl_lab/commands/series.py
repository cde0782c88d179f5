"""Executing the notebook series (``report``, ``benchmark``). Notebooks run one after another:
two torch processes at once are several times slower on 2 cores; only the next notebook's kernel
starts (and imports) while the current one runs (:mod:`mlpl_lab.reporting.next_kernel`). While a
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
from .plan_first import train_plan_first
from .progress import progress_log, tailing


def run_series(args, out: Path, paths, parameters=None, plan_parameters=None) -> None:
    """``report`` and ``benchmark``: ``--fresh``, the progress file, the planned runs trained
    first (under ``plan_parameters``), then the notebooks under ``parameters`` (on the Dask
    cluster of ``--workers`` / ``--scheduler`` where one is asked for)."""
    set_fresh(args, out)
    with progress_log(out):
        train_plan_first(args, paths, plan_parameters)
        with dask_engine(args):
            run_notebooks(paths, out, args.profile, parameters, cell_timeout=args.cell_timeout)


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
                   cell_timeout: float | None = None) -> None:
    """Execute ``paths`` in order; each next notebook's kernel starts, and imports what that
    notebook imports, while the current one runs (:mod:`mlpl_lab.reporting.next_kernel`).

    A cell may run ``cell_timeout`` seconds (default: the profile's ``cell_timeout_s``). A notebook
    that fails -- a cell raising, a cell past the limit, a dead kernel -- is reported at once, its
    kernel is stopped, and the series goes on with the next notebook; at the end every failure is
    listed in one :class:`CommandError` (exit code 1)."""
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
    ahead = NextKernel(kernel_config)
    try:
        for i, path in enumerate(paths):
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
        ahead.close()
    # the protocol, checked on what ran: converged runs and findings vs observations
    summarise(done).to_csv(out / "protocol.csv")
    print("[mlpl-lab] " + summary_text(done).replace("\n", "\n[mlpl-lab] "), flush=True)
    if failures:
        raise CommandError(f"{len(failures)} of {len(paths)} notebooks did not run to their end "
                           "(the others did):\n  " + "\n  ".join(map(str, failures)))


def execute_one(path: Path, out: Path, profile: str, parameters, km, timeout, progress_file: Path):
    """One notebook, its progress lines printed while it runs; its kernel (``km``, started ahead)
    shut down after, at once where the notebook failed (a stuck kernel would not answer).
    Returns ``(executed, None)``, or ``(None, NotebookFailed)``."""
    from ..reporting import next_kernel
    from ..reporting.report import NotebookFailed

    executed = failed = None
    try:
        with tailing(progress_file):
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


def start_ahead(ahead, path: Path, out: Path | None = None) -> None:
    """Start ``path``'s kernel now, under its own chapter name (and, with ``out``, its own figure
    log: :mod:`mlpl_lab.reporting.figure_log`), while the current notebook runs."""
    from ..core.numerics import versions_on_disk
    from ..reporting.figure_log import ENV as FIGURE_ENV
    from ..runs.access import CHAPTER_ENV

    env = dict(os.environ) | {CHAPTER_ENV: path.stem}
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
