"""Shorter cpu schedules, measured against the 54-epoch protocol: is a run that costs half as much
still the same science?

The cold cpu series is too long for one sitting, and fewer epochs alone is not the cut: at 27 or
18 epochs with the profile's learning rate every method loses 6-11 mAP and GR's share of the
full-label -> AN gap drops. A shorter schedule counts only if it *reaches the 54-epoch numbers*.
Each candidate here changes the cpu profile's training length, learning rate or training-set
size (:data:`CANDIDATES`) and trains the full-label oracle, AN and GR (paper defaults, single
positive) on the given seeds from the profile's shared pretraining run; the record sets each
beside the profile's own runs of the same seeds (read from ``--reference``, a store holding the
shipped pack's runs: ``mlpl-lab report`` imports it into ``data/runs``).

Per run: test and val mAP at the best-val epoch, the best epoch, convergence (the lab's
criterion), and the cost in training images (epochs x images: the FLOPs per image do not change).
Per candidate and seed: the oracle - AN gap, GR's share of it, and each method's difference from
the 54-epoch run. Seconds are recorded, but on a shared machine they are not the cost: the images
trained are.

Usage (one thread per process; a separate store keeps the lab's ``data/`` clean)::

    OMP_NUM_THREADS=1 MLPL_LAB_DATA=/tmp/schedule_store .venv/bin/python \\
        benchmarks/schedule_candidates.py --seeds 1 2 --candidates e27_lr4 \\
        --reference data/runs --out benchmarks/records/schedule_candidates_cpu.json
"""
from __future__ import annotations

import argparse
import datetime as _dt
import json
import os
import platform
import shutil
import sys
from dataclasses import replace
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from mlpl_lab.core.paths import runs_dir  # noqa: E402
from mlpl_lab.profiles import get_profile  # noqa: E402
from mlpl_lab.runs.ensure import ensure  # noqa: E402

#: candidate -> the cpu profile's fields it changes (the profile: 54 epochs, lr 2e-3, 4000 images)
CANDIDATES = {
    "n2000": {"n_train": 2000},
    "e27_lr4": {"epochs": 27, "lr": 4e-3},
    "e18_lr6": {"epochs": 18, "lr": 6e-3},
    "n2000_e36_lr4": {"n_train": 2000, "epochs": 36, "lr": 4e-3},
}
METHODS = ("full", "an", "gr")


def row(spec, summary: dict) -> dict:
    conv = summary.get("convergence") or {}
    return {"method": spec.method, "seed": spec.seed, "key": spec.key,
            "epochs": int(spec.train["epochs"]), "lr": float(spec.train["lr"]),
            "n_train": int(spec.data["n_train"]),
            "images_trained": int(spec.train["epochs"]) * int(spec.data["n_train"]),
            "test_mAP": summary["test_mAP"], "val_mAP": summary["val_mAP"],
            "best_epoch": summary["best_epoch"] + 1, "converged": conv.get("converged"),
            "last_quarter_gain": conv.get("gain"), "seconds": summary.get("seconds")}


def summarise(rows: list) -> list:
    """Per (candidate, seed): the gap, GR's share, and the differences from the 54-epoch runs."""
    out = []
    by = {}
    for r in rows:
        by.setdefault((r["candidate"], r["seed"]), {})[r["method"]] = r
    for (cand, seed), m in sorted(by.items()):
        if not all(k in m for k in METHODS):
            continue
        gap = m["full"]["test_mAP"] - m["an"]["test_mAP"]
        entry = {"candidate": cand, "seed": seed, "gap": gap,
                 "gr_share": (m["gr"]["test_mAP"] - m["an"]["test_mAP"]) / gap if gap else None,
                 "converged": {k: m[k]["converged"] for k in METHODS}}
        ref = by.get(("profile", seed))
        if ref and cand != "profile" and all(k in ref for k in METHODS):
            entry["minus_profile"] = {k: m[k]["test_mAP"] - ref[k]["test_mAP"] for k in METHODS}
        out.append(entry)
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seeds", type=int, nargs="+", default=[1])
    ap.add_argument("--candidates", nargs="+", default=list(CANDIDATES), choices=list(CANDIDATES))
    ap.add_argument("--reference", type=Path, default=None,
                    help="a run store holding the profile's own runs (the shipped pack imported)")
    ap.add_argument("--out", type=Path, default=Path("benchmarks/records/schedule_candidates_cpu.json"))
    args = ap.parse_args(argv)
    torch.set_num_threads(1)
    P0 = get_profile("cpu")
    pre = P0.pretrain_spec()
    if args.reference is not None and (args.reference / pre.key).is_dir() and not (runs_dir() / pre.key).exists():
        shutil.copytree(args.reference / pre.key, runs_dir() / pre.key)  # the shared backbone, not retrained
    rows = []
    if args.reference is not None:
        for seed in args.seeds:
            for m in METHODS:
                spec = P0.spec(m, seed=seed)
                path = args.reference / spec.key / "summary.json"
                if path.exists():
                    rows.append({"candidate": "profile"} | row(spec, json.loads(path.read_text())))
    for cand in args.candidates:
        P = replace(P0, **CANDIDATES[cand])
        for seed in args.seeds:
            for m in METHODS:
                spec = P.spec(m, seed=seed)
                [run] = ensure([spec], quiet=True)
                rows.append({"candidate": cand} | row(spec, dict(run.summary)))
                print(json.dumps(rows[-1]), flush=True)
    record = {"what": "shorter cpu schedules against the 54-epoch protocol: oracle, AN and GR on the same "
                      "seeds (single positive); the cost is images trained, not the seconds of a shared machine",
              "date": _dt.datetime.now().isoformat(timespec="seconds"),
              "machine": {"python": platform.python_version(), "torch": torch.__version__, "threads": 1,
                          "cpus": os.cpu_count(), "load_average_at_end": list(os.getloadavg())},
              "candidates": {k: CANDIDATES[k] for k in args.candidates},
              "runs": rows, "summary": summarise(rows)}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    tmp = args.out.with_suffix(".tmp")
    tmp.write_text(json.dumps(record, indent=1) + "\n")
    os.replace(tmp, args.out)
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
