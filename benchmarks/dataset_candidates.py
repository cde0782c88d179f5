"""Measure the independent data set candidates of ``mlpl_lab.protocol.datasets``: their independence
and the room each leaves (the full-label oracle against AN under single positive).

For every pair of candidates: the median same-index pixel correlation of their test images and
the seeds and structure seeds they share. For every candidate: the oracle and AN trained on its
first seed(s) under a profile's protocol (from the shared pretraining run), their test mAP at the
best-validation epoch, the gap, and whether it reaches ``MIN_GAP``. Runs are trained on worker
processes into the store, each stored as it ends: stopped and run again, it trains only what is
missing. The record is rewritten after the training, so a second call only reads.

Usage::

    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/dataset_candidates.py --profile cpu --workers 1
"""
from __future__ import annotations

import argparse
import datetime as _dt
import json
import os
import platform
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from mlpl_lab.protocol import datasets as ds  # noqa: E402
from mlpl_lab.runs import workers  # noqa: E402
from mlpl_lab.runs.ensure import ensure_grid  # noqa: E402
from mlpl_lab.runs.store import RunStore  # noqa: E402


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--profile", default="cpu")
    ap.add_argument("--workers", type=int, default=1)
    ap.add_argument("--seeds-each", type=int, default=1, help="how many of each data set's seeds to train")
    ap.add_argument("--out", default=None, help="the record (default: protocol.datasets.CPU_RECORD for cpu)")
    args = ap.parse_args(argv)
    out = Path(args.out) if args.out else (ds.CPU_RECORD if args.profile == "cpu"
                                           else ds.CPU_RECORD.with_name(f"dataset_candidates_{args.profile}.json"))
    t0 = time.perf_counter()
    independence = ds.independence(args.profile)
    print(f"independence of {len(independence)} pairs in {time.perf_counter() - t0:.0f} s", flush=True)
    grid = ds.gap_specs(args.profile, seeds_each=args.seeds_each)
    specs = [s for group in grid.values() for s in group]
    t1 = time.perf_counter()
    report = workers.train(specs, RunStore(), workers=args.workers,
                           note=lambda text: print("  " + text, flush=True))
    print(report.describe(), flush=True)
    runs = ensure_grid(grid, label="data set candidates")
    gaps = ds.gaps(runs)
    record = {
        "what": "independent data set candidates: independence of every pair, oracle - AN gap under single positive",
        "profile": args.profile, "min_gap": ds.MIN_GAP, "max_pixel_correlation": ds.MAX_PIXEL_CORRELATION,
        "datasets": {name: {"scene": d["scene"], "seeds": list(d["seeds"])} for name, d in ds.DATASETS.items()},
        "independence": independence, "gaps": gaps,
        "runs": {f"{name} · {label}": [{"key": r.spec.key, "seed": r.spec.seed,
                                         "test_mAP": round(float(r.best["test_mAP"]), 3),
                                         "val_mAP": round(float(r.best["val_mAP"]), 3),
                                         "best_epoch": r.best_epoch + 1, "epochs": len(r.history),
                                         "converged": bool(r.converged),
                                         "seconds": round(float(r.summary.get("seconds", float("nan"))), 1)}
                                        for r in rs] for (name, label), rs in runs.items()},
        "trained_here": len(report.trained), "train_wall_seconds": round(time.perf_counter() - t1, 1),
        "cores": os.cpu_count(), "python": platform.python_version(),
        "date": _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
    }
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(record, indent=1) + "\n")
    print(f"record: {out}")
    for name, g in gaps.items():
        print(f"  {name}: oracle {g['oracle test']:.1f}, AN {g['AN test']:.1f}, gap {g['gap test']:.1f} "
              f"({'met' if g['gap met'] else 'NOT met'}; {g['converged']} of {g['runs']} converged)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
