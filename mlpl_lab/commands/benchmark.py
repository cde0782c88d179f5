"""``mlpl-lab benchmark [--profile ...] [--methods AN GR ...] [--regimes single drop50 ...]
[--[no-]tuning] [--add FILE]`` runs or completes the benchmark grid (resumable: finished runs are stored one by
one, so an interrupted grid continues where it stopped), writes notebook 07 as HTML and its tables
as CSV next to it (``07_benchmark_<table>.csv``, :mod:`mlpl_lab.commands.benchmark_csv`).
``--add FILE`` ranks your own method among the course's rows instead, training only its runs
(:mod:`mlpl_lab.commands.benchmark_add`).

Arguments are checked before any work; the method and regime names need the chapter's tables (a
second or two)."""
from __future__ import annotations

import argparse
import time

from ..profiles import PROFILE_NAMES
from .arguments import (add_engine_args, add_plan_workers_arg, check_data_args, check_out_dir,
                        notebook_paths)
from .benchmark_csv import BENCHMARK_NOTEBOOK
from .errors import UsageError
from .fresh import add_fresh_args, parse_fresh_after
from .series import run_series


def add_parser(sub) -> None:
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
    bench.add_argument("--add", default=None, metavar="FILE",
                       help="your own method (a .py file with LABEL and a loss or a Method subclass): "
                            "train only its runs and rank it among the course's rows, served from the "
                            "store or the shipped pack (the handbook's 'Rank your own method against "
                            "the course')")
    add_fresh_args(bench)
    add_engine_args(bench)
    add_plan_workers_arg(bench, "the grid's planned runs", "the notebook trains every run")
    bench.set_defaults(func=cmd_benchmark, validate=validate)


def validate(args) -> None:
    """Every argument checked before any work (a method file first: a damaged one writes nothing)."""
    if args.add is not None:
        from .benchmark_add import check_add_args

        check_add_args(args)
    check_benchmark_args(args)
    args.fresh_after = parse_fresh_after(args.fresh_after, args.out)


def check_benchmark_args(args) -> None:
    """Method and regime names (the chapter's tables), before any training or notebook starts."""
    from ..protocol.common import with_dataset
    from ..protocol.recipes import resolve_methods
    from ..protocol.regimes import resolve_regimes

    check_data_args(args)
    try:
        resolve_methods(args.methods)
        resolve_regimes(args.regimes)
        with_dataset(args.profile, args.dataset, args.root, args.layout)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    check_out_dir(args.out)


def cmd_benchmark(args) -> int:
    """Run (or complete) the benchmark grid, then write its report and CSV tables (``--add``: rank
    one method file among the course's rows, :func:`mlpl_lab.commands.benchmark_add.cmd_add`)."""
    if args.add is not None:
        from .benchmark_add import cmd_add

        return cmd_add(args)
    out = check_out_dir(args.out)
    from ..chapters import benchmark

    design = benchmark.design(args.profile, args.methods, args.regimes, args.tuning, args.dataset,
                              args.root, args.layout or "cole")
    print(f"[mlpl-lab] benchmark, profile {args.profile}, data {args.dataset}: {design.describe()}",
          flush=True)
    path = [p for p in notebook_paths() if p.stem == BENCHMARK_NOTEBOOK][0]
    total = time.perf_counter()
    parameters = {"methods": args.methods, "regimes": args.regimes, "tuning": args.tuning,
                  "dataset": args.dataset, "data_root": args.root, "data_layout": args.layout or "cole"}
    run_series(args, out, [path], parameters, plan_parameters=parameters)
    print(f"[mlpl-lab] benchmark done in {time.perf_counter() - total:.0f} s", flush=True)
    return 0
