"""A warm report's wall time, with and without the next notebook's kernel started ahead.

``python benchmarks/bench_report.py [--profile smoke] [--notebooks 00 01 ...] [--repeats 2]``

A *warm* report is one whose runs are all in the store: the notebooks only read them back, and
the time goes to starting kernels, importing torch and the package, plotting and exporting HTML.
The script first runs the series once (training what the store lacks: under ``smoke`` in a fresh
temporary store unless ``MLPL_LAB_DATA`` names one), then times ``--repeats`` warm series each way,
alternating: ``ahead`` (:mod:`mlpl_lab.reporting.next_kernel`, the report's behaviour) and ``one by one``
(every kernel started by papermill when its notebook's turn comes). It refuses to time a series
that trained anything (that would not be warm).

Measured 2026-11-24 on the 2-core machine, the cpu store of the series (all 8 notebooks): one by
one 128 s, ahead 92 s (the report's own count; 134 s and 100 s of wall time with the command's
start); records identical. Its default, a warm smoke series (8 notebooks, after a 122 s first
series that trains them): one by one 86.3 s, ahead 54.0 s.
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def series(paths, out: Path, profile: str, ahead: bool, warm: bool = True) -> float:
    """Seconds of one series; ``warm``: refuse a series that trained anything."""
    from mlpl_lab.commands.series import run_notebooks
    from mlpl_lab.reporting import next_kernel

    progress = out / ".progress.log"
    progress.write_text("")
    os.environ["MLPL_LAB_PROGRESS_FILE"] = str(progress)
    real_start = next_kernel.NextKernel.start
    if not ahead:
        next_kernel.NextKernel.start = lambda self, *a, **k: None
    t0 = time.perf_counter()
    try:
        run_notebooks(paths, out, profile)
    finally:
        next_kernel.NextKernel.start = real_start
    seconds = time.perf_counter() - t0
    trained = [line for line in progress.read_text().splitlines() if ": epoch " in line]
    if warm and trained:
        raise SystemExit(f"the series trained {len(trained)} epochs: not warm ({trained[0]})")
    return seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--profile", default="smoke")
    parser.add_argument("--notebooks", nargs="*")
    parser.add_argument("--repeats", type=int, default=2)
    args = parser.parse_args()
    if "MLPL_LAB_DATA" not in os.environ:
        os.environ["MLPL_LAB_DATA"] = tempfile.mkdtemp(prefix="bench-report-store-")
    from mlpl_lab.commands.arguments import notebook_paths

    paths = notebook_paths(args.notebooks)
    out = Path(tempfile.mkdtemp(prefix="bench-report-"))
    print(f"store {os.environ['MLPL_LAB_DATA']}; {len(paths)} notebooks under {args.profile}; "
          "first series (trains what the store lacks) ...", flush=True)
    first = series(paths, out, args.profile, ahead=True, warm=False)
    print(f"first series: {first:.0f} s", flush=True)
    times = {"ahead": [], "one by one": []}
    for _ in range(args.repeats):
        for mode in ("one by one", "ahead"):
            times[mode].append(series(paths, out, args.profile, ahead=mode == "ahead"))
            print(f"warm, {mode}: {times[mode][-1]:.1f} s", flush=True)
    for mode, values in times.items():
        print(f"{mode:>10}: best {min(values):.1f} s of {len(values)} warm series ({len(paths)} notebooks)")


if __name__ == "__main__":
    main()
