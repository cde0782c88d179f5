"""2 single-thread Dask workers vs 1 process with 2 threads, on the smoke grid and a small cpu grid.

    OMP_NUM_THREADS=1 MLPL_LAB_PROGRESS=0 python benchmarks/bench_workers.py [--grids smoke cpu]
        [--threads 2] [--workers 2] [--repeat 1]

Each grid is trained twice from an empty run store (a temporary folder; the scene cache is
warmed first, so data generation counts for neither side): once in this process with
``torch.set_num_threads(threads)`` (the default path of :func:`mlpl_lab.runs.ensure.ensure`), once on
a local Dask cluster of ``workers`` single-thread workers (``ensure(..., workers=N)``). The
cluster's start-up is timed apart from the grid (it is paid once per command). Grids:

* ``smoke``: notebook 07's smoke grid (oracle, AN, GR × single positive and drop 50 % × 2
  seeds: 10 distinct runs of a few seconds);
* ``cpu``: AN and GR under single positive on seeds 0 and 1 with the cpu profile (4 runs of
  about 13 s each on a quiet 2-core machine).

Timings on a shared machine are noisy: the script prints the load average before and after.
"""
from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


def grid(name: str):
    from mlpl_lab.chapters import benchmark
    from mlpl_lab.profiles import get_profile

    if name == "smoke":
        return benchmark.specs(benchmark.design("smoke"), lambda spec: None).flat()
    P = get_profile("cpu")
    return [P.spec(m, seed=s) for m in ("an", "gr") for s in (0, 1)]


def one_process(specs, root: Path, threads: int) -> float:
    import torch

    from mlpl_lab.runs import ensure, splits_cache
    from mlpl_lab.runs.store import RunStore

    torch.set_num_threads(threads)
    splits_cache._SPLITS_CACHE.clear()  # read the scenes from the disk cache, as the workers do
    t0 = time.perf_counter()
    ensure.ensure(specs, store=RunStore(root), label="bench 1 process")
    return time.perf_counter() - t0


def on_workers(specs, root: Path, workers: int):
    from mlpl_lab.runs import cluster, ensure
    from mlpl_lab.runs.store import RunStore

    t0 = time.perf_counter()
    c = cluster.client(workers)
    c.run(lambda: __import__("torch").zeros(1))  # torch imported on every worker, as after a first run
    start = time.perf_counter() - t0
    t0 = time.perf_counter()
    ensure.ensure(specs, store=RunStore(root), label="bench workers", workers=workers)
    took = time.perf_counter() - t0
    cluster.close(workers)
    return start, took


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--grids", nargs="+", default=["smoke", "cpu"], choices=["smoke", "cpu"])
    parser.add_argument("--threads", type=int, default=2, help="threads of the one process")
    parser.add_argument("--workers", type=int, default=2, help="single-thread Dask workers")
    parser.add_argument("--repeat", type=int, default=1)
    args = parser.parse_args(argv)

    data = Path(tempfile.mkdtemp(prefix="bench-workers-"))
    os.environ["MLPL_LAB_DATA"] = str(data)  # the scene cache (warmed below) and the stores
    os.environ.pop("MLPL_LAB_WORKERS", None)
    os.environ.pop("MLPL_LAB_SCHEDULER", None)
    from mlpl_lab.runs import splits_cache

    print(f"load average before: {os.getloadavg()}; {os.cpu_count()} cores", flush=True)
    try:
        for name in args.grids:
            specs = grid(name)
            for s in specs:
                splits_cache.build_splits(s)  # warm the scene cache on disk
            for r in range(args.repeat):
                tag = f"{name}-{r}"
                one = one_process(specs, data / f"one-{tag}", args.threads)
                print(f"  {name}: 1 process × {args.threads} threads {one:.1f} s", flush=True)
                start, many = on_workers(specs, data / f"many-{tag}", args.workers)
                n = len({s.key for s in specs})
                print(f"{name} grid ({n} runs), repeat {r + 1}: 1 process × {args.threads} threads "
                      f"{one:.1f} s; {args.workers} workers × 1 thread {many:.1f} s "
                      f"(+ {start:.1f} s cluster start-up): speed-up {one / many:.2f}× "
                      f"({one / (many + start):.2f}× with the start-up); load {os.getloadavg()[0]:.1f}",
                      flush=True)
    finally:
        shutil.rmtree(data, ignore_errors=True)
    print(f"load average after: {os.getloadavg()}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
