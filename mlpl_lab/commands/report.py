"""``mlpl-lab report [--profile smoke|cpu|gpu] [--notebooks 00 02 ...] [--out reports/] [--fresh]
[--instructor]`` executes the notebooks in order with papermill (kernel ``python3``), injecting the
profile, and exports each to HTML with nbconvert (inputs hidden) (:mod:`mlpl_lab.commands.series`).
By default it is the **student's** report: it executes the student copies (each solution a stub,
:func:`mlpl_lab.course.notebooks.write_variant`, generated into a temporary folder from the one
source) with ``$MLPL_LAB_ANSWERS=student``, so no exercise's reference answer is in its HTML;
``--instructor`` executes the notebooks themselves, solutions included, with
``$MLPL_LAB_ANSWERS=instructor`` (every check states its reference; the kernels inherit it) into
``reports/instructor`` by default (:func:`answers_for`). It first
trains the series' planned runs (:mod:`mlpl_lab.commands.plan_first`), and writes notebook 07's
tables as CSV (:mod:`mlpl_lab.commands.benchmark_csv`). An empty store starts from the shipped
course pack; ``--cold`` retrains every run, saying first what that cost when it was measured.

Arguments are checked before any work: a bad one is answered at once, before torch is imported."""
from __future__ import annotations

import contextlib
import os
import sys
import tempfile
import time
from pathlib import Path

from ..profiles import PROFILE_NAMES
from ..reporting.report import NOTEBOOK_DIR
from .arguments import add_engine_args, add_plan_workers_arg, check_out_dir, notebook_paths
from .errors import CommandError, UsageError
from .fresh import add_fresh_args, parse_fresh_after
from .series import run_series


def add_parser(sub) -> None:
    rep = sub.add_parser("report", help="execute the notebooks and write HTML reports")
    rep.add_argument("--profile", default="cpu", choices=PROFILE_NAMES)
    rep.add_argument("--notebooks", nargs="*", default=None,
                     help="names or unique prefixes, e.g. 00 02_gr_loss")
    rep.add_argument("--out", default=None,
                     help="default reports (the student's report), reports/instructor with --instructor")
    rep.add_argument("--instructor", action="store_true",
                     help="the instructor's report: the notebooks with their solutions, each exercise's "
                          "check stating its reference answer (default: the student's, no answer stated)")
    rep.add_argument("--cold", action="store_true",
                     help="retrain every run (says the measured time first); without it an empty store "
                          "starts from the shipped course pack")
    rep.add_argument("--no-cold", action="store_true",
                     help="refuse to start when the store is empty and no pack is shipped (make book)")
    add_fresh_args(rep)
    add_engine_args(rep)
    add_plan_workers_arg(rep, "the planned runs", "the notebooks train every run")
    rep.set_defaults(func=cmd_report, validate=validate)


def default_out(args) -> str:
    """``--out`` as given, else ``reports`` (``reports/instructor`` for ``--instructor``)."""
    if args.out is None:
        from ..course.notebooks import instructor_report

        args.out = str(instructor_report(Path("reports"))) if args.instructor else "reports"
    return args.out


def validate(args) -> None:
    """Every argument checked before any work."""
    default_out(args)
    paths = notebook_paths(args.notebooks)
    check_pending_choice(args.profile, paths)
    check_out_dir(args.out)
    args.fresh_after = parse_fresh_after(args.fresh_after, args.out)


def check_pending_choice(profile: str, paths) -> None:
    """A ``MLPL_LAB_TRAIN_PENDING`` that names a pending family none of the notebooks declares is
    refused before any work (a typo would otherwise train nothing and say nothing)."""
    from ..protocol.asked import PENDING_ENV
    from ..protocol.plan import unknown_pending_families

    unknown, known = unknown_pending_families(profile, paths)
    if unknown:
        raise UsageError(f"{PENDING_ENV} names {', '.join(repr(u) for u in unknown)}, which no notebook "
                         f"here declares as a pending family under profile {profile}; the pending families "
                         f"are: {', '.join(repr(k) for k in known) or 'none'} (separated by ';'), or 1 for all")


def cmd_report(args) -> int:
    paths = notebook_paths(args.notebooks)
    out = check_out_dir(default_out(args))
    if not paths:
        print(f"no notebooks found in {NOTEBOOK_DIR}", file=sys.stderr)
        return 1
    from ..runs.store import RunStore

    if args.cold:
        from ..protocol.asked import PENDING_ENV

        print("[mlpl-lab] --cold: " + cold_estimate(args.profile, paths), flush=True)
        args.fresh = True
        # a cold series is the one that makes a pack: it trains the pending runs too (the designed
        # controls and longer runs a pack-served report only reads); its kernels inherit this
        pending_before = os.environ.get(PENDING_ENV)
        os.environ[PENDING_ENV] = "1"
    elif args.fresh or args.fresh_after is not None:
        # a fresh series (or its resumption) retrains what it reads: importing the course pack into
        # its store would only mix another series' runs into it
        print("[mlpl-lab] --fresh/--fresh-after: the shipped course pack is not imported", flush=True)
    serve_pack = None
    if not (args.cold or args.fresh or args.fresh_after is not None):
        def serve_pack():  # run by the series while the first kernels start (they import meanwhile)
            import_shipped_pack(args.profile)
            if args.no_cold and args.profile != "smoke" and not any(True for _ in RunStore().keys()):
                raise CommandError(f"the run store is empty and no course pack is shipped for profile "
                                   f"{args.profile}: {cold_estimate(args.profile, paths)}. Start it on "
                                   "purpose (make report COLD=1), or import a pack first (mlpl-lab pack "
                                   "import FILE)")
    total = time.perf_counter()
    try:
        # a report trains nothing a pack does not hold: the live exercises are left to class
        with answers_for(args.instructor, paths) as executed:
            run_series(args, out, executed, {"live_training": False}, before_plan=serve_pack)
    finally:
        if args.cold:
            if pending_before is None:
                os.environ.pop(PENDING_ENV, None)
            else:
                os.environ[PENDING_ENV] = pending_before
    print(f"[mlpl-lab] {len(paths)} notebooks in {time.perf_counter() - total:.0f} s", flush=True)
    return 0


@contextlib.contextmanager
def answers_for(instructor: bool, paths):
    """The notebooks a report executes and whether their checks state the reference answers:
    ``instructor`` -- ``paths`` themselves (their solutions run) with ``$MLPL_LAB_ANSWERS`` set to
    ``instructor``; else the student copies of ``paths``, generated into a temporary folder, with
    it set to ``student``. The kernels inherit it; the caller's value is put back after."""
    from ..protocol.grading import ANSWERS_ENV, INSTRUCTOR
    from ..course.notebooks import write_variant

    saved = os.environ.get(ANSWERS_ENV)
    os.environ[ANSWERS_ENV] = INSTRUCTOR if instructor else "student"
    try:
        if instructor:
            print("[mlpl-lab] the instructor's report: the notebooks with their solutions, every check "
                  "stating its reference answer", flush=True)
            yield list(paths)
        else:
            with tempfile.TemporaryDirectory(prefix="mlpl-lab-student-") as tmp:
                print("[mlpl-lab] the student's report: the student copies (solutions as stubs, no "
                      "reference answer stated; `--instructor` for the instructor's)", flush=True)
                yield write_variant(Path(tmp) / "student", "student", list(paths))
    finally:
        if saved is None:
            os.environ.pop(ANSWERS_ENV, None)
        else:
            os.environ[ANSWERS_ENV] = saved


def import_shipped_pack(profile: str) -> None:
    """Import the shipped course pack of ``profile`` when the store lacks any run it holds (the
    one implementation every notebook's ``setup_notebook`` uses too:
    :func:`mlpl_lab.runs.shipped.import_missing`; verified whole first, a local run wins; a
    damaged pack stops the report with the reason and writes nothing)."""
    from ..runs.shipped import ShippedPackError, import_missing

    try:
        done = import_missing(profile)
    except ShippedPackError as exc:
        raise CommandError(str(exc)) from None
    if done is not None:
        print(done["line"], flush=True)


def cold_estimate(profile: str, paths) -> str:
    """What a cold series of ``paths`` costs, from the measured ``notebooks/timings.json``."""
    from ..course.syllabus import load_timings

    measured = load_timings().get(profile, {})
    known = {p.stem: measured[p.stem] for p in paths if p.stem in measured}
    text = (f"every run is retrained; a cold {profile} series of these notebooks took "
            f"{sum(known.values()) / 3600:.1f} h when it was measured (notebooks/timings.json)")
    unknown = [p.stem for p in paths if p.stem not in measured]
    if unknown:
        text += f"; no measurement for {', '.join(unknown)}"
    return text
