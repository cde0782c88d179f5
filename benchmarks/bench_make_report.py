"""``make report`` as a newcomer meets it: the shipped course pack imported into an empty store,
then every chapter executed, timed end to end (the command's wall clock, not the notebooks' cells).

``python benchmarks/bench_make_report.py [--profile cpu] [--lanes 2 1]``

For each ``--lanes`` value (``MLPL_LAB_REPORT_LANES``: notebooks at once; 1 = one by one) the
script runs ``mlpl-lab report`` in a fresh temporary store and output folder and records its wall
seconds, what it imported, how many runs it trained (the store's runs less those imported: a
report served from the pack trains none), and each notebook's own time. The load average before and after is kept: a loaded machine is slower.

Writes ``benchmarks/records/make_report_<profile>.json``; the README's line on ``make report``
is generated from it (:mod:`mlpl_lab.course.readme_times`).
"""
from __future__ import annotations

import argparse
import datetime as dt
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.records_io import write_record  # noqa: E402

DONE = re.compile(r"\[mlpl-lab\] (?:(\S+?)\.ipynb \(profile \S+\): )?\s*done in (\d+) s")
NAMED = re.compile(r"\[mlpl-lab\] (\S+?)\.ipynb \(profile \S+\) \.\.\.")
IMPORTED = re.compile(r"imported (\d+), from (\d+) of its (\d+) parts")


def parse(log: str) -> dict:
    """What one report's log says: imported runs and parts, trained runs, per-notebook seconds."""
    notebooks, current = {}, None
    for line in log.splitlines():
        named = NAMED.search(line)
        if named:
            current = named.group(1)
        done = DONE.search(line)
        if done:
            notebooks[done.group(1) or current] = int(done.group(2))
    imported = IMPORTED.search(log)
    return {"imported_runs": int(imported.group(1)) if imported else 0,
            "imported_parts": int(imported.group(2)) if imported else 0,
            "plan_said": "nothing to train" if "nothing to train" in log else "it trained", "notebooks": notebooks}


def one(profile: str, lanes: int, keep: str | None = None) -> dict:
    with tempfile.TemporaryDirectory(prefix="mlpl-bench-report-") as tmp:
        out = Path(keep) if keep else Path(tmp) / "reports"
        env = dict(os.environ, MLPL_LAB_DATA=str(Path(tmp) / "data"), MLPL_LAB_REPORT_LANES=str(lanes))
        load_before = os.getloadavg()[0]
        t0 = time.perf_counter()
        proc = subprocess.run([str(Path(sys.executable).parent / "mlpl-lab"), "report", "--profile", profile,
                               "--out", str(out)],
                              cwd=ROOT, env=env, capture_output=True, text=True)
        seconds = time.perf_counter() - t0
        from mlpl_lab.runs.store import RunStore

        stored = sum(1 for _ in RunStore(Path(tmp) / "data" / "runs").keys())
        if proc.returncode != 0:
            raise SystemExit(f"mlpl-lab report failed (exit {proc.returncode}):\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")
    row = {"lanes": lanes, "seconds": round(seconds, 1), "load_average_before": round(load_before, 2),
           "load_average_after": round(os.getloadavg()[0], 2)} | parse(proc.stdout)
    row["runs_trained"] = stored - row["imported_runs"]  # the store holds what was imported and what trained
    print(f"lanes {lanes}: {seconds:.0f} s, imported {row['imported_runs']} runs, "
          f"{row['runs_trained']} runs trained", flush=True)
    return row


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--profile", default="cpu")
    ap.add_argument("--lanes", type=int, nargs="+", default=[2, 1])
    ap.add_argument("--keep", default=None, help="write the first report here and keep it (e.g. for "
                    "`mlpl-lab course results --executed`)")
    args = ap.parse_args(argv)
    rows = [one(args.profile, lanes, args.keep if i == 0 else None) for i, lanes in enumerate(args.lanes)]
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True,
                            text=True).stdout.strip()
    write_record(ROOT / "benchmarks" / "records" / f"make_report_{args.profile}.json", {
        "what": "mlpl-lab report into an empty store: the shipped pack imported, every chapter executed; "
                "wall seconds of the whole command",
        "profile": args.profile, "cores": os.cpu_count(), "python": sys.version.split()[0], "commit": commit,
        "date": dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"), "runs": rows})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
