"""``mlpl-lab``: run the notebook series as reports; look after the run store.

``mlpl-lab report [--profile smoke|cpu|gpu] [--notebooks 00 02 ...] [--out reports/] [--fresh]``
executes the notebooks in order with papermill (kernel ``python3``), injecting the profile,
and exports each to HTML with nbconvert (inputs hidden). Notebooks run one after another:
two torch processes at once are several times slower on 2 cores; only the next notebook's kernel
starts (and imports) while the current one runs (:mod:`mlpl_lab.reporting.next_kernel`). While a notebook trains,
the terminal shows which run and epoch, with an estimate of the time left. No report hangs: a cell
may run the profile's ``cell_timeout_s`` (``--cell-timeout SECONDS`` overrides it); a notebook
whose cell raises, outlasts that limit or loses its kernel is reported at once (notebook, cell
index and first line), its kernel is stopped, and the series goes on; every failure is listed at
the end and the command exits with 1.

``mlpl-lab benchmark [--profile ...] [--methods AN GR ...] [--regimes single drop50 ...] [--[no-]tuning]``
runs or completes the benchmark grid (resumable: finished runs are stored one by one, so an
interrupted grid continues where it stopped), writes notebook 07 as HTML and its tables as
CSV next to it (``07_benchmark_<table>.csv``). ``mlpl-lab report`` writes the same CSVs.

``--workers N`` (``report`` and ``benchmark``) starts a local Dask cluster of N single-threaded
workers that train the missing runs side by side (one GPU each where GPUs exist); ``--scheduler
ADDRESS`` sends them to an existing Dask cluster instead (:mod:`mlpl_lab.runs.cluster`). The
notebooks' kernels find the cluster through ``MLPL_LAB_SCHEDULER``; with either, the plan below is
left to the cluster.

``mlpl-lab report`` (and ``benchmark``) first trains the series' planned runs — every run the notebooks ask for
that does not depend on another run's results, deduplicated, stage one before stage two, longest
first (:mod:`mlpl_lab.chapters.plan`) — on ``--plan-workers N`` single-thread worker processes
(default: one per core, or one per GPU; :mod:`mlpl_lab.runs.workers`), then executes the notebooks
warm; ``--plan-workers 0`` leaves every run to the notebooks. ``mlpl-lab plan [--profile ...]
[--notebooks ...] [--tflops X]`` prints that plan: runs per notebook, images trained, FLOPs per
image and the time they take at X TFLOP/s.

``mlpl-lab store [--clear]`` lists (or deletes) the stored runs.

``--fresh`` retrains every run made before this invocation started, and records that time in
``<out>/.mlpl-lab-fresh``; ``--fresh-after last`` resumes an interrupted fresh report (runs the
first invocation already made are served, nothing is retrained twice); ``--fresh-after UNIX_TIME``
names the time.

Arguments are checked before any work: a bad one is answered at once (``report``'s before torch
is imported; ``benchmark``'s method and regime names need the chapter's tables, a second or two).
"""
from __future__ import annotations

import argparse
import contextlib
import os
import sys
import threading
import time
from pathlib import Path

from .profiles import PROFILE_NAMES
from .reporting.report import MATHJAX_CONFIG, NOTEBOOK_DIR, install_mathjax  # noqa: F401 (moved to report)


class UsageError(Exception):
    """A bad command-line argument (exit code 2, message names the fix)."""


class CommandError(Exception):
    """A command that cannot finish correctly (exit code 1, message says why and what to do)."""


def check_benchmark_args(args) -> None:
    """Method and regime names (the chapter's tables), before any training or notebook starts."""
    from .chapters import benchmark as bm
    from .chapters.common import with_dataset

    check_data_args(args)
    try:
        bm.resolve_methods(args.methods)
        bm.resolve_regimes(args.regimes)
        with_dataset(args.profile, args.dataset, args.root, args.layout)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    check_out_dir(args.out)


def check_data_args(args) -> None:
    """``--dataset/--root/--layout`` before any work: the scenes take neither a root nor a layout;
    a real dataset needs a root that exists, resolved here against the caller's directory (the
    notebook kernel runs in ``notebooks/``, so a relative path would point elsewhere there)."""
    if args.dataset in (None, "scenes"):
        given = [f for f, v in (("--root", args.root), ("--layout", args.layout)) if v is not None]
        if given:
            raise UsageError(f"{' and '.join(given)} {'is' if len(given) == 1 else 'are'} for a real "
                             "dataset, not the embedded scenes; "
                             "add --dataset voc2012|coco2014|nuswide|cub, or drop them")
        return
    if args.root is None:
        raise UsageError(f"--dataset {args.dataset} needs --root /path/to/it (nothing is downloaded)")
    root = Path(args.root).expanduser().resolve()
    if not root.is_dir():
        raise UsageError(f"--root {args.root!r} is not a folder ({root}); give the folder that holds "
                         f"the {args.dataset} files")
    args.root = str(root)
    args.layout = args.layout or "cole"


def notebook_paths(names=None):
    """The notebooks to run, in series order. ``names``: exact file names, stems or unique
    prefixes ("02", "02_gr"); an ambiguous or unknown name, or a duplicate, is an error."""
    paths = sorted(NOTEBOOK_DIR.glob("[0-9][0-9]_*.ipynb"))
    if names is None:
        return paths
    if len(names) == 0:
        raise UsageError("--notebooks needs at least one name or prefix, e.g. --notebooks 00 02; "
                         f"available: {[p.stem for p in paths]}")
    chosen = []
    for name in names:
        exact = [p for p in paths if name in (p.name, p.stem)]
        match = exact or [p for p in paths if p.name.startswith(name)]
        if not match:
            raise UsageError(f"no notebook matches {name!r}; available: {[p.stem for p in paths]}")
        if len(match) > 1:
            raise UsageError(f"{name!r} matches several notebooks {[p.stem for p in match]}; "
                             "give a longer prefix")
        if match[0] in chosen:
            raise UsageError(f"notebook {match[0].stem} is named twice in --notebooks")
        chosen.append(match[0])
    return sorted(chosen)


def check_out_dir(out: str) -> Path:
    path = Path(out)
    try:
        path.mkdir(parents=True, exist_ok=True)
        probe = path / ".mlpl-lab-write-test"
        probe.write_text("")
        probe.unlink()
    except OSError as exc:
        raise UsageError(f"--out {out!r} cannot be created or written ({exc.strerror or exc}); "
                         "choose a writable folder") from None
    return path


#: parameters a report passes to every notebook, dropped where a notebook does not declare them
REPORT_PARAMETERS = {"live_training"}


def execute_notebook(path: Path, out_dir: Path, profile: str, parameters=None, html: bool = True,
                     timeout: int | None = None, km=None) -> Path:
    """Execute ``path`` with papermill under ``profile``; write the executed notebook (and its
    HTML export) to ``out_dir``. Returns the executed notebook's path. ``km``: a kernel already
    started for this notebook (:mod:`mlpl_lab.reporting.next_kernel`; the caller shuts it down); without
    it papermill starts one. ``timeout``: seconds a cell may run (None: no limit).

    A notebook that does not run to its end -- a cell raising, a cell past ``timeout``, a dead
    kernel -- raises :class:`~mlpl_lab.reporting.report.NotebookFailed` naming the notebook and the cell
    (no HTML is written for it; the executed notebook keeps what ran)."""
    import papermill as pm

    from .reporting.report import describe_failure

    out_dir.mkdir(parents=True, exist_ok=True)
    executed = out_dir / path.name
    os.environ.setdefault("MLPL_LAB_PROGRESS", "0")  # progress bars would clutter reports
    params = {"profile": profile} | dict(parameters or {})
    if REPORT_PARAMETERS & set(params):  # given to every notebook of a report: only where declared
        declared = set(pm.inspect_notebook(str(path)))
        params = {k: v for k, v in params.items() if k not in REPORT_PARAMETERS or k in declared}
    executed.unlink(missing_ok=True)  # what a failure reports on is this execution's
    try:
        pm.execute_notebook(str(path), str(executed), parameters=params, kernel_name="python3",
                            cwd=str(path.parent), progress_bar=False, execution_timeout=timeout,
                            config=kernel_config(), **({"km": km} if km is not None else {}))
    except Exception as exc:
        (out_dir / (path.stem + ".html")).unlink(missing_ok=True)  # no earlier report passes for this one
        raise describe_failure(path, executed, exc, timeout) from exc
    if html:  # offline: MathJax next to the report, widgets as their default images, no CDN script
        import nbformat

        from .reporting.html_export import report_html

        from .reporting.report import strip_records, write_record_csvs

        nb = nbformat.read(str(executed), as_version=4)
        strip_records(nb)  # the records stay in the .ipynb; the HTML draws no empty area for them
        body = report_html(nb, out_dir)
        (out_dir / (path.stem + ".html")).write_text(body, encoding="utf-8")
        write_record_csvs(executed, out_dir)  # the full tables the notebook shows compacted
    return executed


def kernel_config():
    """How papermill talks to the kernel: local IPC sockets (files under a private temporary
    folder), so the kernel never runs over plain TCP (it said "Kernel is running over TCP without
    encryption" for every notebook). CurveZMQ-encrypted TCP was tried first: under a loaded
    2-core machine a notebook's client and kernel once both waited for a message neither got."""
    import tempfile

    from traitlets.config import Config

    folder = Path(tempfile.mkdtemp(prefix="mlpl-lab-kernel-"))
    # waits without a deadline re-poll (mlpl_lab.reporting.kernel_client: a report once hung on a lost wake-up)
    return Config({"KernelManager": {"transport": "ipc", "ip": str(folder / "kernel")},
                   "AsyncKernelManager": {"client_class": "mlpl_lab.reporting.kernel_client.RepollingKernelClient"}})


class _Tail(threading.Thread):
    """Print the lines the runner appends to the progress file while a notebook runs."""

    def __init__(self, path: Path):
        super().__init__(daemon=True)
        # from the file's end: an earlier notebook's lines were printed while it ran
        self.path, self.stop = path, threading.Event()
        self.pos = path.stat().st_size if path.exists() else 0

    def poll(self):
        if self.path.exists():
            with open(self.path, encoding="utf-8") as f:
                f.seek(self.pos)
                for line in f:
                    print("  " + line.rstrip(), flush=True)
                self.pos = f.tell()

    def run(self):
        while not self.stop.wait(1.0):
            self.poll()
        self.poll()


@contextlib.contextmanager
def dask_engine(args):
    """``--workers N``: a local Dask cluster for the whole command; ``--scheduler ADDRESS``: an
    existing one (checked now). The notebooks' kernels join it through ``MLPL_LAB_SCHEDULER``."""
    if not (args.workers or args.scheduler):
        yield
        return
    from .runs import cluster

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


def cmd_report(args) -> int:
    paths = notebook_paths(args.notebooks)
    out = check_out_dir(args.out)
    if not paths:
        print(f"no notebooks found in {NOTEBOOK_DIR}", file=sys.stderr)
        return 1
    from .runs.runner import PROGRESS_FILE_ENV
    from .runs.store import RunStore

    if args.cold:
        print("[mlpl-lab] --cold: " + cold_estimate(args.profile, paths), flush=True)
        args.fresh = True
    else:
        import_shipped_pack(args.profile)
        if args.no_cold and args.profile != "smoke" and not any(True for _ in RunStore().keys()):
            raise CommandError(f"the run store is empty and no course pack is shipped for profile "
                               f"{args.profile}: {cold_estimate(args.profile, paths)}. Start it on "
                               "purpose (make report COLD=1), or import a pack first (mlpl-lab pack "
                               "import FILE)")
    set_fresh(args, out)
    progress_file = out / ".progress.log"
    progress_file.write_text("")
    os.environ[PROGRESS_FILE_ENV] = str(progress_file.resolve())
    total = time.perf_counter()
    try:
        train_plan_first(args, paths)
        with dask_engine(args):
            # a report trains nothing a pack does not hold: the live exercises are left to class
            _run_notebooks(paths, out, args.profile, {"live_training": False}, cell_timeout=args.cell_timeout)
    finally:
        progress_file.unlink(missing_ok=True)
    print(f"[mlpl-lab] {len(paths)} notebooks in {time.perf_counter() - total:.0f} s", flush=True)
    return 0


#: at most this many rounds of plan-then-train (each round reaches past the choices made from the
#: runs the round before stored: tuning, chapter 06's γ)
PLAN_ROUNDS = 4


def train_plan_first(args, paths, parameters=None) -> None:
    """``report`` and ``benchmark``: train the notebooks' planned runs (under ``parameters``, the
    notebooks' own where None) on worker processes before the notebooks run (skipped with
    ``--plan-workers 0`` and under Dask's ``--workers`` / ``--scheduler``). Planned in rounds
    (:data:`PLAN_ROUNDS`): after a round is trained the series is planned again with the stored
    runs served, so runs chosen from results (tuning, chapter 06's γ) are trained here too."""
    n = getattr(args, "plan_workers", None)
    if n == 0 or getattr(args, "workers", None) or getattr(args, "scheduler", None):
        return
    from .runs import workers
    from .chapters.plan import describe, plan_series
    from .runs.store import RunStore

    store = RunStore()
    for round_ in range(1, PLAN_ROUNDS + 1):
        t0 = time.perf_counter()
        plan = plan_series(args.profile, paths, parameters, serve_stored=round_ > 1)
        todo = [s for s in plan.order if not workers.looks_stored(store, s)]
        if round_ > 1 and not todo:
            break
        text = describe(plan, stored=lambda spec: workers.looks_stored(store, spec))
        print(f"[mlpl-lab] round {round_}, planned in {time.perf_counter() - t0:.1f} s: "
              + text.replace("\n", "\n[mlpl-lab] "), flush=True)
        report = workers.train(plan.order, store, workers=n,
                               note=lambda text: print("  [plan] " + text, flush=True))
        print(f"[mlpl-lab] plan: {report.describe()}", flush=True)
        for why in list(report.failed.values()) + list(report.skipped.values()):
            print(f"  [plan] left to the notebooks: {why}", flush=True)
        if report.failed or not any(nb.left for nb in plan.notebooks):
            break  # everything reached, or a failed run the next round could not get past


def cmd_plan(args) -> int:
    """Print the series' plan (:mod:`mlpl_lab.chapters.plan`): runs per notebook, images
    trained, FLOPs per image, and the time they take at ``--tflops``."""
    from .chapters.plan import ASSUMED_TFLOPS, describe, plan_series
    from .runs.store import RunStore
    from .runs.workers import looks_stored

    paths = notebook_paths(args.notebooks)
    plan = plan_series(args.profile, paths)
    store = RunStore()
    print(describe(plan, tflops=ASSUMED_TFLOPS if args.tflops is None else args.tflops,
                   stored=lambda spec: looks_stored(store, spec)))
    return 0


def positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not (value > 0 and value != float("inf")):
        raise argparse.ArgumentTypeError(f"{text!r} is not a positive number, e.g. --tflops 77")
    return value


def count_or_zero(text: str) -> int:
    if not text.strip().isdigit():
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number >= 0; 0 leaves every run "
                                         "to the notebooks, leave it out for one worker per core")
    return int(text)


def shipped_pack(profile: str) -> Path | None:
    """The course pack shipped for ``profile`` (``data/packs/<profile>-course.mlplpack``), if any."""
    from .runs.shipped import shipped_pack as _shipped

    return _shipped(profile)


def import_shipped_pack(profile: str) -> None:
    """Import the shipped course pack of ``profile`` when the store lacks any run it holds (the
    one implementation every notebook's ``setup_notebook`` uses too:
    :func:`mlpl_lab.runs.shipped.import_missing`; verified whole first, a local run wins; a
    damaged pack stops the report with the reason and writes nothing)."""
    from .runs.shipped import ShippedPackError, import_missing

    try:
        done = import_missing(profile)
    except ShippedPackError as exc:
        raise CommandError(str(exc)) from None
    if done is not None:
        print(done["line"], flush=True)


def cold_estimate(profile: str, paths) -> str:
    """What a cold series of ``paths`` costs, from the measured ``notebooks/timings.json``."""
    from .course.syllabus import load_timings

    measured = load_timings().get(profile, {})
    known = {p.stem: measured[p.stem] for p in paths if p.stem in measured}
    text = (f"every run is retrained; a cold {profile} series of these notebooks took "
            f"{sum(known.values()) / 3600:.1f} h when it was measured (notebooks/timings.json)")
    unknown = [p.stem for p in paths if p.stem not in measured]
    if unknown:
        text += f"; no measurement for {', '.join(unknown)}"
    return text


FRESH_STAMP = ".mlpl-lab-fresh"


def parse_fresh_after(value: str | None, out: str) -> float | None:
    """``--fresh-after``: a UNIX time, or ``last`` (the time the last ``--fresh`` into ``out``
    recorded)."""
    if value is None:
        return None
    if value == "last":
        stamp = Path(out) / FRESH_STAMP
        try:
            return float(stamp.read_text().strip())
        except (OSError, ValueError):
            raise UsageError(f"--fresh-after last: no --fresh run has recorded its time in {stamp}; "
                             "start with --fresh") from None
    try:
        return float(value)
    except ValueError:
        raise UsageError(f"--fresh-after takes a UNIX time (as --fresh prints it) or 'last', "
                         f"got {value!r}") from None


def set_fresh(args, out: Path) -> None:
    """``--fresh``: runs made before now are retrained; the time is recorded in ``out`` and
    printed, so an interrupted report resumes with ``--fresh-after last`` without retraining
    what it already made. ``--fresh-after``: that time instead of now."""
    from .runs.store import FRESH_ENV

    after = args.fresh_after
    if args.fresh:
        after = time.time()
        (out / FRESH_STAMP).write_text(repr(after))
        print(f"[mlpl-lab] --fresh: runs made before {time.ctime(after)} are retrained; to resume "
              f"after an interruption: --fresh-after last (or --fresh-after {after!r})", flush=True)
    if after is not None:
        os.environ[FRESH_ENV] = repr(float(after))


BENCHMARK_NOTEBOOK = "07_benchmark"


def write_benchmark_csv(out: Path, profile: str, parameters=None) -> list:
    """The benchmark's tables as CSV next to its HTML: the chapter's grid under the parameters
    the notebook was given, read back from the run store (the notebook just stored every run)."""
    from .chapters import benchmark
    from .chapters.common import with_dataset

    from .runs.runner import read_only

    p = dict(parameters or {})
    P = with_dataset(profile, p.get("dataset", "scenes"), p.get("data_root"), p.get("data_layout", "cole"))
    with read_only("the CSV tables are read from the runs notebook 07 stored"):
        _, results, _ = benchmark.run(P, p.get("methods"), p.get("regimes"), p.get("tuning"))
    return benchmark.write_csv(benchmark.tables(results), out)


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


def _run_notebooks(paths, out: Path, profile: str, parameters=None, **kwargs) -> None:
    """:func:`_execute_series` with the caller's environment kept (:func:`environment_kept`)."""
    with environment_kept():
        _execute_series(paths, out, profile, parameters, **kwargs)


def _execute_series(paths, out: Path, profile: str, parameters=None,
                    cell_timeout: float | None = None) -> None:
    """Execute ``paths`` in order; each next notebook's kernel starts, and imports what that
    notebook imports, while the current one runs (:mod:`mlpl_lab.reporting.next_kernel`).

    A cell may run ``cell_timeout`` seconds (default: the profile's ``cell_timeout_s``). A notebook
    that fails -- a cell raising, a cell past the limit, a dead kernel -- is reported at once, its
    kernel is stopped, and the series goes on with the next notebook; at the end every failure is
    listed in one :class:`CommandError` (exit code 1)."""
    from .reporting.audit import summarise, summary_text
    from .reporting.next_kernel import NextKernel, shutdown
    from .profiles import get_profile
    from .reporting.report import NotebookFailed, read_records
    from .core.numerics import NUMERICS_VERSION, version_on_disk
    from .runs.access import CHAPTER_ENV, PROFILE_ENV, forget_access
    from .runs.store import RunStore

    done, failures = [], []
    timeout = cell_timeout if cell_timeout is not None else get_profile(profile).cell_timeout_s
    os.environ[PROFILE_ENV] = profile  # the kernels log the runs they read under this profile
    progress_file = Path(os.environ["MLPL_LAB_PROGRESS_FILE"])
    os.environ.setdefault("MLPL_LAB_PROGRESS", "0")  # before any kernel starts: they inherit it
    ahead = NextKernel(kernel_config)
    try:
        for i, path in enumerate(paths):
            t0 = time.perf_counter()
            km, started = ahead.take(path)
            # the numerics version the kernel will import: read when its kernel started
            numerics_before = started["numerics"] if km is not None else version_on_disk()
            print(f"[mlpl-lab] {path.name} (profile {profile}) ...", flush=True)
            os.environ[CHAPTER_ENV] = path.stem
            forget_access(RunStore().root, profile, path.stem)  # its access log, for run packs
            if i + 1 < len(paths):
                nxt = paths[i + 1]
                ahead.start(nxt, dict(os.environ) | {CHAPTER_ENV: nxt.stem},
                            numerics=version_on_disk())
            tail = _Tail(progress_file)
            tail.start()
            failed = None
            try:
                executed = execute_notebook(path, out, profile, parameters, km=km, timeout=timeout)
            except NotebookFailed as exc:
                failed = exc
            finally:
                tail.stop.set()
                tail.join()
                if km is not None:
                    shutdown(km, now=failed is not None)  # a stuck kernel would not answer
            if failed is not None:
                failures.append(failed)
                print(f"[mlpl-lab]   FAILED after {time.perf_counter() - t0:.0f} s: {failed}", flush=True)
                continue
            records = read_records(executed)
            done.append(executed)
            print(f"[mlpl-lab]   done in {time.perf_counter() - t0:.0f} s; {len(records)} records; "
                  f"HTML: {out / (path.stem + '.html')}", flush=True)
            if path.stem == BENCHMARK_NOTEBOOK:
                numerics_after = version_on_disk()
                if not numerics_before == numerics_after == NUMERICS_VERSION:
                    raise CommandError(
                        f"the numerics version changed while {path.name} ran ({NUMERICS_VERSION} at "
                        f"the start, {numerics_before} -> {numerics_after} in the notebook): its runs "
                        "and the CSV tables would come from different code, so no CSV was written. "
                        "Run the command again (stored runs of the current version are reused).")
                csvs = write_benchmark_csv(out, profile, parameters)
                print(f"[mlpl-lab]   {len(csvs)} benchmark tables as CSV: "
                      f"{out}/{BENCHMARK_NOTEBOOK}_*.csv", flush=True)
    finally:
        ahead.close()
    # the protocol, checked on what ran: converged runs and findings vs observations
    summarise(done).to_csv(out / "protocol.csv")
    print("[mlpl-lab] " + summary_text(done).replace("\n", "\n[mlpl-lab] "), flush=True)
    if failures:
        raise CommandError(f"{len(failures)} of {len(paths)} notebooks did not run to their end "
                           "(the others did):\n  " + "\n  ".join(map(str, failures)))


def cmd_benchmark(args) -> int:
    """Run (or complete) the benchmark grid, then write its report and CSV tables."""
    out = check_out_dir(args.out)
    from .chapters import benchmark
    from .runs.runner import PROGRESS_FILE_ENV

    from .chapters.common import with_dataset

    P = with_dataset(args.profile, args.dataset, args.root, args.layout)
    design = benchmark.chapter_design(P, args.methods, args.regimes, args.tuning)
    print(f"[mlpl-lab] benchmark, profile {args.profile}, data {args.dataset}: {design.describe()}",
          flush=True)
    set_fresh(args, out)
    progress_file = out / ".progress.log"
    progress_file.write_text("")
    os.environ[PROGRESS_FILE_ENV] = str(progress_file.resolve())
    path = [p for p in notebook_paths() if p.stem == BENCHMARK_NOTEBOOK][0]
    total = time.perf_counter()
    parameters = {"methods": args.methods, "regimes": args.regimes, "tuning": args.tuning,
                  "dataset": args.dataset, "data_root": args.root, "data_layout": args.layout or "cole"}
    try:
        train_plan_first(args, [path], parameters)
        with dask_engine(args):
            _run_notebooks([path], out, args.profile, parameters, cell_timeout=args.cell_timeout)
    finally:
        progress_file.unlink(missing_ok=True)
    print(f"[mlpl-lab] benchmark done in {time.perf_counter() - total:.0f} s", flush=True)
    return 0


def cmd_store(args) -> int:
    from .runs.store import RunStore

    store = RunStore()
    if args.clear:
        n = store.clear()
        print(f"removed {n} stored runs from {store.root}")
        return 0
    import json

    keys = list(store.keys())
    print(f"{len(keys)} runs in {store.root}")
    for k in keys:
        try:
            s = json.loads((store.root / k / "summary.json").read_text())
            env = s.get("environment") or {}
            print(f"  {k}  {s.get('describe', '?')}  test mAP {s.get('test_mAP', float('nan')):.2f}  "
                  f"{s.get('seconds', 0):.0f} s  [torch {env.get('torch', '?')}, {env.get('device', '?')}, "
                  f"AMP {env.get('amp_dtype', '?')}, {env.get('world_size', '?')} process(es)]")
        except (OSError, ValueError, TypeError) as exc:
            print(f"  {k}  damaged ({type(exc).__name__}: {exc}); it is retrained when next needed")
    return 0


def cmd_pack(args) -> int:
    """``mlpl-lab pack export|inspect|import``: run packs (:mod:`mlpl_lab.runs.pack`)."""
    from .runs import pack

    try:
        if args.pack_command == "export":
            names = [p.stem for p in notebook_paths(args.notebooks)]
            if args.notebooks is None:  # every notebook that asks for runs (00 asks for none)
                from .chapters.plan import plan_series

                plan = plan_series(args.profile, notebook_paths(None))
                names = [nb.name for nb in plan.notebooks if nb.specs]
            manifest = pack.export(args.file, args.profile, names, weights=args.weights, name=args.name)
            print(pack.describe(manifest, Path(args.file).stat().st_size))
            print(f"wrote {args.file}")
        elif args.pack_command == "inspect":
            print(pack.describe(pack.inspect(args.file), Path(args.file).stat().st_size))
        else:
            counts = pack.import_pack(args.file, replace=args.replace)
            print(f"pack {counts['manifest']['name']}: imported {counts['imported']} runs, kept "
                  f"{counts['kept']} already in the store" + (f", replaced {counts['replaced']}"
                                                              if args.replace else " (--replace replaces them)"))
    except pack.PackError as exc:
        raise CommandError(str(exc)) from None
    return 0


def add_fresh_args(parser) -> None:
    fresh = parser.add_mutually_exclusive_group()
    fresh.add_argument("--fresh", action="store_true",
                       help="retrain every run made before now (the time is recorded in --out)")
    fresh.add_argument("--fresh-after", default=None, metavar="TIME",
                       help="retrain runs made before TIME (UNIX time, or 'last': the last --fresh "
                            "into --out); resumes an interrupted --fresh")


def positive_int(text: str) -> int:
    if not text.strip().isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number >= 1; leave --workers out "
                                         "to train in this process")
    return int(text)


def add_plan_workers_arg(parser, what: str, zero: str) -> None:
    """``--plan-workers N``: train ``what`` first on N single-thread worker processes."""
    parser.add_argument("--plan-workers", type=count_or_zero, default=None, metavar="N",
                        help=f"train {what} first on N single-thread worker processes (default: one "
                             f"per core, or one per GPU); 0: {zero}")


def add_engine_args(parser) -> None:
    engine = parser.add_mutually_exclusive_group()
    engine.add_argument("--workers", type=positive_int, default=None,
                        help="train missing runs on a local Dask cluster of N single-threaded workers")
    engine.add_argument("--scheduler", default=None,
                        help="train missing runs on an existing Dask cluster (its scheduler address)")
    parser.add_argument("--cell-timeout", type=positive_seconds, default=None, metavar="SECONDS",
                        help="the seconds one notebook cell may run before its notebook is stopped "
                             "and reported (default: the profile's cell_timeout_s)")


def positive_seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not (0 < value < float("inf")):
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds > 0, e.g. "
                                         "--cell-timeout 7200; leave it out for the profile's limit")
    return value


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="mlpl-lab", description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    rep = sub.add_parser("report", help="execute the notebooks and write HTML reports")
    rep.add_argument("--profile", default="cpu", choices=PROFILE_NAMES)
    rep.add_argument("--notebooks", nargs="*", default=None,
                     help="names or unique prefixes, e.g. 00 02_gr_loss")
    rep.add_argument("--out", default="reports")
    rep.add_argument("--cold", action="store_true",
                     help="retrain every run (says the measured time first); without it an empty store "
                          "starts from the shipped course pack")
    rep.add_argument("--no-cold", action="store_true",
                     help="refuse to start when the store is empty and no pack is shipped (make book)")
    add_fresh_args(rep)
    add_engine_args(rep)
    add_plan_workers_arg(rep, "the planned runs", "the notebooks train every run")
    rep.set_defaults(func=cmd_report)
    pl = sub.add_parser("plan", help="print the series' runs, images trained, FLOPs and a time projection")
    pl.add_argument("--profile", default="cpu", choices=PROFILE_NAMES)
    pl.add_argument("--notebooks", nargs="*", default=None,
                    help="names or unique prefixes, e.g. 00 02_gr_loss")
    pl.add_argument("--tflops", type=positive_float, default=None,
                    help="the effective throughput the projection assumes, in TFLOP/s (default: an "
                         "A100's on the CIFAR-10 ResNet-18 speed runs, printed with the result)")
    pl.set_defaults(func=cmd_plan)
    bench = sub.add_parser("benchmark", help="run or complete the benchmark grid; report + CSV tables")
    bench.add_argument("--profile", default="cpu", choices=PROFILE_NAMES)
    bench.add_argument("--methods", nargs="+", default=None,
                       help="rows by label or registered name, e.g. AN GR em_apl cls")
    bench.add_argument("--regimes", nargs="+", default=None,
                       help="columns by label or slug: single drop25 drop50 drop75 known10 pos10")
    bench.add_argument("--tuning", action=argparse.BooleanOptionalAction, default=None,
                       help="equal-budget tuning on the clean validation split (default: the "
                            "profile's design: on for cpu and gpu, off for smoke)")
    bench.add_argument("--dataset", default="scenes",
                       help="scenes (embedded) or voc2012, coco2014, nuswide, cub (with --root)")
    bench.add_argument("--root", default=None, help="the real dataset's folder (nothing is downloaded)")
    bench.add_argument("--layout", default=None, choices=("cole", "voc_raw", "coco_json"),
                       help="how the files under --root are laid out (default cole)")
    bench.add_argument("--out", default="reports")
    add_fresh_args(bench)
    add_engine_args(bench)
    add_plan_workers_arg(bench, "the grid's planned runs", "the notebook trains every run")
    bench.set_defaults(func=cmd_benchmark)
    st = sub.add_parser("store", help="list the stored runs (or --clear them)")
    st.add_argument("--clear", action="store_true", help="delete every stored run")
    st.set_defaults(func=cmd_store)
    pk = sub.add_parser("pack", help="run packs: carry a store's runs to other machines")
    pk_sub = pk.add_subparsers(dest="pack_command", required=True)
    ex = pk_sub.add_parser("export", help="write the runs the notebooks read to one checksummed file")
    ex.add_argument("file", help="the pack to write (*.mlplpack)")
    ex.add_argument("--profile", default="cpu", choices=PROFILE_NAMES)
    ex.add_argument("--notebooks", nargs="*", default=None, help="names or unique prefixes (default: all)")
    ex.add_argument("--weights", default="needed", choices=("needed", "all", "none"),
                    help="which runs' weights: those a notebook loads (default), all, none")
    ex.add_argument("--name", default=None, help="the pack's name (default <profile>-<date>)")
    ins = pk_sub.add_parser("inspect", help="verify a pack and print its runs, sizes and provenance")
    ins.add_argument("file")
    im = pk_sub.add_parser("import", help="verify a pack whole, then add its runs to the store")
    im.add_argument("file")
    im.add_argument("--replace", action="store_true", help="replace runs already in the store")
    pk.set_defaults(func=cmd_pack)
    from .course.commands import add_course_parser  # course material: sync, export, timings, book (issue 22)

    add_course_parser(sub)
    return parser


def main(argv=None) -> int:
    """Run one command. The environment variables a command sets for the kernels and workers it
    starts (the notebook being run, the profile, the progress file, FRESH) are put back as they
    were when it returns, so a caller in the same process -- a test, a notebook -- is not left
    logging its own reads as a chapter's."""
    parser = build_parser()
    args = parser.parse_args(argv)
    with environment_kept():
        return _main(parser, args)


def _main(parser, args) -> int:
    try:
        if args.command == "report":
            notebook_paths(args.notebooks)  # every argument checked before any work
            check_out_dir(args.out)
        if args.command == "benchmark":
            check_benchmark_args(args)
        if args.command in ("report", "benchmark"):
            args.fresh_after = parse_fresh_after(args.fresh_after, args.out)
        return args.func(args)
    except UsageError as exc:
        parser.exit(2, f"mlpl-lab: error: {exc}\n")
    except CommandError as exc:
        parser.exit(1, f"mlpl-lab: error: {exc}\n")


if __name__ == "__main__":
    raise SystemExit(main())
