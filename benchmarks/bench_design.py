"""Memory and time of building a profile's benchmark design, and of the gpu grid's data path
(not a test; prints numbers).

    python benchmarks/bench_design.py [--profiles smoke cpu gpu] [--grid-data]

For each profile, in a fresh process with an empty data folder (cold: the validation scenes that
EPR's and ROLE's expected positives read are generated) and then again (warm: read from the
disk cache): the seconds to build the benchmark design and every spec of its grid, and the
process's peak resident memory (the issue's bound: 2 GB and 10 s). ``--grid-data`` also walks the
gpu grid's data path as training would — the splits of every (regime, seed) cell in grid order,
through the runner's bytes-bounded scene-set cache — and prints the peak resident memory and the
cache's largest total (the issue's bound for the gpu grid: 16 GB of host RAM). That walk generates
five gpu scene sets (1.3 GB each on disk, in a temporary folder).
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")

CHILD = r"""
import json, resource, sys, time
t0 = time.perf_counter()
from mlpl_lab.chapters import benchmark as bm
from mlpl_lab.profiles import get_profile
from mlpl_lab.runs import splits_cache
imported = time.perf_counter()
P = get_profile(sys.argv[1])
design = bm.design(P)
asked = bm.specs(design, lambda spec: None)  # nothing stored: every cell, choices as stand-ins
specs = asked.flat("now") + asked.flat("later")
built = time.perf_counter()
out = {"profile": P.name, "specs": len(specs),
       "design_s": built - imported, "import_s": imported - t0,
       "peak_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}
if sys.argv[2] == "grid":
    most = 0
    for s in specs:
        splits_cache.build_splits(s)
        most = max(most, splits_cache._SCENE_SETS.total_bytes())
    out.update(grid_peak_mib=resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
               cache_most_mib=most / 2 ** 20, grid_s=time.perf_counter() - built)
print(json.dumps(out))
"""


def child(profile: str, data: str, grid: bool = False) -> dict:
    env = dict(os.environ, MLPL_LAB_DATA=data, PYTHONPATH=ROOT)
    r = subprocess.run([sys.executable, "-c", CHILD, profile, "grid" if grid else "design"],
                       env=env, capture_output=True, text=True, check=True)
    return json.loads(r.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--profiles", nargs="+", default=["smoke", "cpu", "gpu"])
    ap.add_argument("--grid-data", action="store_true", help="walk the gpu grid's data path too")
    args = ap.parse_args()
    print("benchmark design (specs only, no training): seconds after imports, peak resident memory")
    for profile in args.profiles:
        with tempfile.TemporaryDirectory() as data:
            for state in ("cold", "warm"):
                r = child(profile, data)
                print(f"  {profile:5s} {state}: {r['specs']:4d} specs in {r['design_s']:5.1f} s "
                      f"(imports {r['import_s']:.1f} s), peak {r['peak_mib']:6.0f} MiB")
    if args.grid_data:
        with tempfile.TemporaryDirectory() as data:
            r = child("gpu", data, grid=True)
            print(f"gpu grid data path ({r['specs']} cells' splits, in grid order): peak "
                  f"{r['grid_peak_mib'] / 1024:.2f} GiB resident, the scene-set cache at most "
                  f"{r['cache_most_mib'] / 1024:.2f} GiB, {r['grid_s']:.0f} s")


if __name__ == "__main__":
    main()
