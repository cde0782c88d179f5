"""A series' runs on a worker pool vs one process, and where a series' time goes (issue 34).

    OMP_NUM_THREADS=1 MLPL_LAB_PROGRESS=0 python benchmarks/bench_series.py \\
        [--profile smoke] [--notebooks 01 02 05] [--workers N] [--threads T] [--out FILE]
    python benchmarks/bench_series.py --breakdown [--profile cpu] [--store data/runs] [--out FILE]
    OMP_NUM_THREADS=1 python benchmarks/bench_series.py --engines [--epochs 2] [--repeat 3]

**Pool vs one process** (default): the plan of ``--notebooks`` under ``--profile`` (default: the
smoke plan of notebooks 01, 02 and 05 — pretraining, stage-one and LAC's stage-two runs) is
trained twice from an empty run store in a temporary folder (the scene cache is warmed first, so
data generation counts for neither side): once in this process with ``torch.set_num_threads(T)``
(default: one per core, what a notebook's kernel does; ``--threads 1 2`` times each), runs one
after another in the plan's order (:func:`mlpl_lab.runs.ensure.ensure`); once on ``N`` single-thread worker processes (default: one
per core; :func:`mlpl_lab.runs.workers.train`, worker start-up included). Prints both times and writes
a JSON record (``benchmarks/records/bench_series_<profile>.json`` unless ``--out``): the machine,
the load average before and after (the machine may be shared), the plan, both wall times, the
speed-up, and each run's seconds and recorded thread count on each side.

**Breakdown** (``--breakdown``): after a series (``mlpl-lab report --profile P``), where its time
went, from the store's run summaries (``seconds``: the sum of the run's epoch times, evaluation
included; ``environment.threads``): per notebook the runs it asks for first in the series' plan,
how many are stored, their total, mean, median and longest seconds; the runs the notebooks read
that the plan did not name (chosen from results; from the store's access logs, where ``mlpl-lab
report`` wrote them); the longest runs; the span from the first run's creation to the last's; and
the time the store was busy training (the union of the runs' intervals ``[created - seconds,
created]``): the series' wall time without the pauses of a series that was stopped and resumed.
Written to ``benchmarks/records/series_breakdown_<profile>.json`` unless ``--out``.

**Engines** (``--engines``): why ``mlpl_lab.runs.cluster``'s Dask workers measured 0.43x of one process
(README): the same cpu run, one thread each, in this process, in a warm Dask worker and in a pool
worker; the seconds inside ``fit`` (``train_seconds``) and the wall time of each
(``benchmarks/records/bench_series_engines.json``).
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
RECORDS = ROOT / "benchmarks" / "records"


def notebook_paths(names):
    from mlpl_lab.commands.arguments import notebook_paths as paths

    return paths(names)


def machine() -> dict:
    import torch

    return {"python": platform.python_version(), "torch": torch.__version__, "cpus": os.cpu_count(),
            "OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS"), "platform": platform.platform()}


def summaries(store, specs) -> dict:
    out = {}
    for s in specs:
        path = store.path(s) / "summary.json"
        if path.exists():
            out[s.key] = json.loads(path.read_text())
    return out


def busy_seconds(intervals) -> float:
    """The length of the union of ``(start, end)`` intervals: the time at least one run was
    training. A series stopped and resumed (a session's end, a pause for a benchmark) has a span
    that counts the pauses; this does not. Runs killed half-way are not in the store and do not
    count either."""
    total, end = 0.0, None
    for a, b in sorted(intervals):
        if end is None or a > end:
            total += b - a
            end = b
        elif b > end:
            total += b - end
            end = b
    return total


def compare(args) -> dict:
    from mlpl_lab.runs import ensure, splits_cache, workers
    from mlpl_lab.protocol.plan import plan_series
    from mlpl_lab.runs.store import RunStore
    import torch

    paths = notebook_paths(args.notebooks)
    data = Path(tempfile.mkdtemp(prefix="bench-series-"))
    os.environ["MLPL_LAB_DATA"] = str(data)  # scene cache and both stores
    os.environ.setdefault("MLPL_LAB_PROGRESS", "0")
    threads = args.threads or [os.cpu_count() or 1]
    try:
        plan = plan_series(args.profile, paths)
        order = workers.with_dependencies(plan.order)
        for s in order:
            splits_cache.build_splits(s)  # warm the scene cache on disk
        splits_cache.clear_caches()  # this process reads the disk cache, as the workers do
        load_before = os.getloadavg()
        print(f"{len(order)} runs ({args.profile} plan of {', '.join(p.stem for p in paths)}); "
              f"{os.cpu_count()} cores; load average {load_before}", flush=True)

        ones = {}
        for n in threads:
            before = torch.get_num_threads()
            torch.set_num_threads(n)
            one_store = RunStore(data / f"one-{n}")
            t0 = time.perf_counter()
            try:
                for s in order:  # in the plan's order, as the pool takes them
                    ensure.ensure([s], store=one_store, quiet=True)
            finally:
                torch.set_num_threads(before)
            ones[n] = (time.perf_counter() - t0, one_store)
            print(f"  1 process × {n} thread(s): {ones[n][0]:.1f} s; load average {os.getloadavg()}",
                  flush=True)
        one = ones[threads[-1]][0]

        pool_store = RunStore(data / "pool")
        t0 = time.perf_counter()
        report = workers.train(order, pool_store, workers=args.workers, threads=1)
        pool = time.perf_counter() - t0
        print(f"  {report.workers} workers × 1 thread: {pool:.1f} s (worker start-up included); "
              f"speed-up {one / pool:.2f}x over 1 process × {threads[-1]} thread(s); load average "
              f"{os.getloadavg()}", flush=True)
        if report.failed or report.skipped:
            print(f"  the pool left runs untrained: {report.describe()}", flush=True)

        def per_run(store):
            return {k: {"describe": s["describe"], "seconds": s["seconds"],
                        "threads": s["environment"].get("threads")}
                    for k, s in summaries(store, order).items()}

        return {"what": "a series plan trained by a worker pool vs one process (benchmarks/bench_series.py)",
                "started": datetime.datetime.now().isoformat(timespec="seconds"),
                "machine": machine(), "load_average_before": load_before,
                "load_average_after": os.getloadavg(),
                "profile": args.profile, "notebooks": [p.stem for p in paths], "runs": len(order),
                "one_process": [{"threads": n, "seconds": t, "runs": per_run(st)} for n, (t, st) in ones.items()],
                "pool": {"workers": report.workers, "threads": 1, "seconds": pool,
                         "failed": report.failed, "skipped": report.skipped, "runs": per_run(pool_store)},
                "speed_up": {f"over 1 process x {n} thread(s)": t / pool for n, (t, _) in ones.items()}}
    finally:
        shutil.rmtree(data, ignore_errors=True)


def engines(args) -> dict:
    """The same run (cpu profile, AN from scratch, ``--epochs``) trained ``--repeat`` times in this
    process with one thread, in a warm one-thread Dask worker (:mod:`mlpl_lab.runs.cluster`) and in a
    pool worker (:mod:`mlpl_lab.runs.workers`, a fresh process each time): wall and in-``fit`` seconds."""
    from mlpl_lab.runs import cluster, ensure, splits_cache, workers
    from mlpl_lab.profiles import get_profile
    from mlpl_lab.runs.store import RunStore
    import torch

    data = Path(tempfile.mkdtemp(prefix="bench-engines-"))
    os.environ["MLPL_LAB_DATA"] = str(data)
    os.environ.setdefault("MLPL_LAB_PROGRESS", "0")
    P = get_profile(args.profile or "cpu", init="scratch")
    rows = []
    try:
        splits_cache.build_splits(P.spec("an", seed=0))
        c = cluster.client(1)
        c.run(lambda: __import__("torch").zeros(1))
        torch.set_num_threads(1)
        for rep in range(args.repeat):
            spec = P.spec("an", seed=0, epochs=args.epochs, lr=P.lr * (1 + 1e-6 * rep))  # a new key each time
            row = {"load_average": os.getloadavg()[0]}
            for name, train in (
                    ("this process", lambda st: ensure.execute(spec, st)),
                    ("Dask worker", lambda st: cluster.train([spec], st, ensure.execute, workers=1)),
                    ("pool worker", lambda st: workers.train([spec], st, workers=1))):
                store = RunStore(data / f"{name.split()[0]}-{rep}")
                t0 = time.perf_counter()
                train(store)
                summary = store.get(spec).summary
                row[name] = {"wall_seconds": time.perf_counter() - t0, "fit_seconds": summary["train_seconds"],
                             "threads": summary["environment"].get("threads")}
            rows.append(row)
            print("  " + "; ".join(f"{k}: fit {v['fit_seconds']:.1f} s, wall {v['wall_seconds']:.1f} s"
                                   for k, v in row.items() if k != "load_average")
                  + f" (load {row['load_average']:.1f})", flush=True)
        cluster.close(1)
    finally:
        shutil.rmtree(data, ignore_errors=True)
    return {"what": "one run in this process, a Dask worker and a pool worker (benchmarks/bench_series.py --engines)",
            "started": datetime.datetime.now().isoformat(timespec="seconds"), "machine": machine(),
            "spec": spec.describe(), "rows": rows}


def breakdown(args) -> dict:
    from mlpl_lab.protocol.plan import plan_series
    from mlpl_lab.runs.store import RunStore
    from mlpl_lab.runs.access import accessed

    paths = notebook_paths(args.notebooks)
    store = RunStore(args.store) if args.store else RunStore()
    if args.store:  # the dry run reads this store: the chapters ask the default one
        os.environ["MLPL_LAB_DATA"] = str(Path(args.store).resolve().parent)
    # the runs chosen from results too (tuning, 06's γ): the dry run reads the stored ones, as the
    # report's later rounds do
    plan = plan_series(args.profile, paths, serve_stored=True)
    first = plan.first_notebook()
    stored = summaries(store, plan.order)
    by_key = {s.key: s for s in plan.order}
    notebooks, extra = {}, {}
    for nb in plan.notebooks:
        mine = [k for k, n in first.items() if n == nb.name]
        secs = [stored[k]["seconds"] for k in mine if k in stored]
        notebooks[nb.name] = {
            "runs_planned": len(mine), "runs_stored": len(secs),
            "seconds_total": sum(secs), "seconds_mean": statistics.mean(secs) if secs else None,
            "seconds_median": statistics.median(secs) if secs else None,
            "seconds_max": max(secs) if secs else None,
            "threads": sorted({stored[k]["environment"].get("threads") for k in mine if k in stored},
                              key=str)}
        read = accessed(store.root, args.profile, nb.name)  # written by mlpl-lab report's notebooks
        unplanned = [k for k in read if k not in by_key and (store.root / k / "summary.json").exists()]
        if unplanned:
            rows = [json.loads((store.root / k / "summary.json").read_text()) for k in unplanned]
            extra[nb.name] = {"runs": len(rows), "seconds_total": sum(r["seconds"] for r in rows),
                              "runs_described": [r["describe"] for r in rows]}
    longest = sorted(stored.values(), key=lambda s: -s["seconds"])[:10]
    created = [s["created"] for s in stored.values()]
    every = list(stored.values()) + [json.loads((store.root / k / "summary.json").read_text())
                                      for nb in extra for k in accessed(store.root, args.profile, nb)
                                      if k not in by_key and (store.root / k / "summary.json").exists()]
    return {"what": "where a series' time went, from the run store's summaries (benchmarks/bench_series.py --breakdown)",
            "made": datetime.datetime.now().isoformat(timespec="seconds"),
            "store": str(store.root), "profile": args.profile,
            "runs_planned": len(plan.order), "runs_stored": len(stored),
            "run_seconds_total": sum(s["seconds"] for s in every),
            "span_seconds": (max(created) - min(created)) if created else None,
            "busy_seconds": busy_seconds([(s["created"] - s["seconds"], s["created"]) for s in every]),
            "notebooks": notebooks, "notebook_trained_beyond_the_plan": extra,
            "longest": [{"describe": s["describe"], "seconds": s["seconds"],
                         "threads": s["environment"].get("threads")} for s in longest]}


def print_breakdown(rec: dict) -> None:
    print(f"series {rec['profile']} in {rec['store']}: {rec['runs_stored']} of {rec['runs_planned']} "
          f"planned runs stored; {rec['run_seconds_total'] / 3600:.2f} h of run time"
          + (f"; the runs were made over {rec['span_seconds'] / 3600:.2f} h" if rec["span_seconds"] else "")
          + (f", {rec['busy_seconds'] / 3600:.2f} h of it training (pauses left out)"
             if rec.get("busy_seconds") else ""))
    print(f"  {'notebook':22s} {'runs':>5s} {'stored':>6s} {'total':>9s} {'mean':>7s} {'median':>7s} "
          f"{'max':>7s}  threads")
    for name, r in rec["notebooks"].items():
        f = (lambda v: "-" if v is None else f"{v:.0f} s")
        print(f"  {name:22s} {r['runs_planned']:5d} {r['runs_stored']:6d} {r['seconds_total'] / 60:7.1f} m "
              f"{f(r['seconds_mean']):>7s} {f(r['seconds_median']):>7s} {f(r['seconds_max']):>7s}  {r['threads']}")
    for name, r in rec["notebook_trained_beyond_the_plan"].items():
        print(f"  {name}: {r['runs']} runs beyond the plan (chosen from results), {r['seconds_total'] / 60:.1f} min")
    print("  longest runs:")
    for r in rec["longest"]:
        print(f"    {r['seconds']:7.0f} s  {r['describe']}  ({r['threads']} thread(s))")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--breakdown", action="store_true", help="where a finished series' time went")
    ap.add_argument("--engines", action="store_true",
                    help="one run in this process vs in a Dask worker vs in a pool worker")
    ap.add_argument("--epochs", type=int, default=2, help="--engines: the run's epochs")
    ap.add_argument("--repeat", type=int, default=3, help="--engines: how many times")
    ap.add_argument("--profile", default=None, help="smoke (default) for the comparison, cpu for --breakdown")
    ap.add_argument("--notebooks", nargs="*", default=None,
                    help="default: 01 02 05 for the comparison, every notebook for --breakdown")
    ap.add_argument("--workers", type=int, default=None, help="pool size (default: one per core)")
    ap.add_argument("--threads", type=int, nargs="+", default=None,
                    help="the one process's threads, one timing each (default: one per core)")
    ap.add_argument("--store", default=None, help="--breakdown: the run store (default: the project's)")
    ap.add_argument("--out", default=None, help="the JSON record (default: benchmarks/records/...)")
    args = ap.parse_args(argv)
    if args.engines:
        rec = engines(args)
        out = Path(args.out or RECORDS / "bench_series_engines.json")
    elif args.breakdown:
        args.profile = args.profile or "cpu"
        rec = breakdown(args)
        print_breakdown(rec)
        out = Path(args.out or RECORDS / f"series_breakdown_{args.profile}.json")
    else:
        args.profile = args.profile or "smoke"
        args.notebooks = args.notebooks if args.notebooks is not None else ["01", "02", "05"]
        rec = compare(args)
        out = Path(args.out or RECORDS / f"bench_series_{args.profile}.json")
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(rec, indent=1, default=str))
    print(f"record: {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
