"""Wall time of ``make test-gpu-shape``: every notebook under the ``gpu_shape`` profile on the CPU
(ResNet-18 at 64 px, bfloat16 autocast, NHWC, every chapter's gpu design at small sizes).

``python benchmarks/bench_gpu_shape.py [--threads 2]`` (``make bench-gpu-shape``)

Runs exactly what the Makefile target runs (``pytest tests/test_gpu_shape.py`` with
``MLPL_LAB_GPU_SHAPE=all``) in a fresh store, keeps the executed notebooks, and writes
``benchmarks/records/gpu_shape_cpu.json``: the wall seconds of the whole test run, pytest's exit
code, each notebook's papermill duration, the thread count, the load average before and after
(a figure taken under load overstates the time) and the commit. A failed test run writes no
record. ``mlpl-lab course sync`` puts the figure in the README.
"""
from __future__ import annotations

import argparse
import datetime as _dt
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
RECORD = ROOT / "benchmarks" / "records" / "gpu_shape_cpu.json"


def _load():
    return [round(x, 2) for x in os.getloadavg()]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--threads", type=int, default=2, help="OMP/torch threads of the kernels")
    ap.add_argument("--out", default=str(RECORD))
    args = ap.parse_args(argv)
    work = Path(tempfile.mkdtemp(prefix="bench_gpu_shape_"))
    env = os.environ | {"MLPL_LAB_GPU_SHAPE": "all", "MLPL_LAB_GPU_SHAPE_OUT": str(work / "executed"),
                        "OMP_NUM_THREADS": str(args.threads)}
    load_before = _load()
    start = time.perf_counter()
    rc = subprocess.call([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                          "tests/test_gpu_shape.py"], cwd=ROOT, env=env)
    seconds = time.perf_counter() - start
    from mlpl_lab.course.syllabus import timings_from_executed  # papermill's durations, as timings.json reads them

    found = timings_from_executed(work / "executed")
    durations = {nb: round(sec, 1) for per_profile in found.values() for nb, sec in per_profile.items()}
    print(f"make test-gpu-shape: {seconds / 60:.1f} min, pytest exit {rc}, {len(durations)} notebooks "
          f"executed ({', '.join(f'{k} {v / 60:.1f} min' for k, v in durations.items())})")
    if rc != 0:
        print("the test run failed: no record written")
        return rc
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True,
                            text=True).stdout.strip() or None
    record = {"what": "wall seconds of `make test-gpu-shape` (pytest tests/test_gpu_shape.py, "
                      "MLPL_LAB_GPU_SHAPE=all) from an empty store", "seconds": round(seconds, 1),
              "notebooks": len(durations), "notebook_seconds": durations, "threads": args.threads,
              "date": _dt.date.today().isoformat(), "commit": commit,
              "load_before": load_before, "load_after": _load()}
    Path(args.out).write_text(json.dumps(record, indent=1) + "\n")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
