"""Re-train stored runs of a series at other lengths (or with bfloat16 autocast) and record whether
their validation curves flatten: how the cpu profile's epochs were chosen.

    python benchmarks/probe_convergence.py --series STORE --keys K1 K2 --epochs 54 48
    python benchmarks/probe_convergence.py --series STORE --unconverged an --limit 3 --epochs 54
    python benchmarks/probe_convergence.py --series STORE --keys K1 --amp     # bf16 at the same length

Each run is the stored spec with only ``train.epochs`` (or ``train.amp`` and its backbone's) changed,
trained with one thread into ``--store`` (default: a ``probe_runs`` folder next to the series, so
the series' own store is never written); the stored run's backbone is copied there first when the
probe keeps it. One JSON line per run (stored vs probed val/test mAP, last-quarter gain, converged,
best epoch) is printed and appended to ``--out`` (benchmarks/records/convergence_probe_cpu.json
is the record of 2026-11-25: the AN runs that ended unconverged at 36 epochs in that day's cold
series, re-run at 48 and 54; and four runs with bfloat16 autocast at 36).
"""
from __future__ import annotations

import argparse
import json
import shutil
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def stored(series: Path, key: str) -> dict:
    s = json.loads((series / key / "summary.json").read_text())
    return {"val": round(s["val_mAP"], 2), "test": round(s.get("test_mAP", float("nan")), 2),
            "gain": round(s["convergence"]["gain"], 2), "converged": s["convergence"]["converged"],
            "best": s["best_epoch"], "epochs": s["epochs"]}


def unconverged(series: Path, method: str, limit: int) -> list:
    """Keys of the series' runs of ``method`` that did not converge, largest gain first."""
    found = []
    for folder in sorted(p for p in series.iterdir() if (p / "summary.json").exists()):
        spec = json.loads((folder / "spec.json").read_text())
        s = json.loads((folder / "summary.json").read_text())
        if spec["method"] == method and not s["convergence"]["converged"] and spec.get("backbone_from"):
            found.append((s["convergence"]["gain"], folder.name))
    return [k for _, k in sorted(found, reverse=True)[:limit]]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--series", required=True, help="a series' runs folder (read only)")
    ap.add_argument("--keys", nargs="*", default=[], help="run keys to re-train")
    ap.add_argument("--unconverged", metavar="METHOD", help="or: the series' unconverged runs of METHOD")
    ap.add_argument("--limit", type=int, default=3)
    ap.add_argument("--epochs", type=int, nargs="*", default=[], help="lengths to try (default: the stored)")
    ap.add_argument("--amp", action="store_true", help="bfloat16 autocast (run and backbone) at the stored length")
    ap.add_argument("--store", default=None, help="where the probe's runs go (default: SERIES/../probe_runs)")
    ap.add_argument("--out", default=None, help="append one JSON line per run here")
    args = ap.parse_args(argv)

    import torch

    torch.set_num_threads(1)
    from mlpl_lab.core.convergence import run_convergence
    from mlpl_lab.runs import ensure
    from mlpl_lab.runs.spec import RunSpec
    from mlpl_lab.runs.store import RunStore

    series = Path(args.series)
    if not series.is_dir():
        ap.error(f"--series {series}: no such folder (give a series' runs folder)")
    keys = list(args.keys) + (unconverged(series, args.unconverged, args.limit) if args.unconverged else [])
    if not keys:
        ap.error("nothing to probe: give --keys or --unconverged METHOD")
    missing = [k for k in keys if not (series / k / "spec.json").exists()]
    if missing:
        ap.error(f"not in {series}: {', '.join(missing)}")
    store = RunStore(args.store or series.parent / "probe_runs")
    for epochs in args.epochs or [None]:
        for key in keys:
            spec = RunSpec.from_dict(json.loads((series / key / "spec.json").read_text()))
            train = dict(spec.train, **({"epochs": epochs} if epochs else {}))
            backbone = spec.backbone_from
            if args.amp:
                train["amp"] = True
                backbone = backbone and backbone.replace(train=dict(backbone.train, amp=True))
            elif backbone is not None and (series / backbone.key).exists() and not store.path(backbone).exists():
                store.root.mkdir(parents=True, exist_ok=True)
                shutil.copytree(series / backbone.key, store.path(backbone))
            probe = spec.replace(train=train, backbone_from=backbone)
            t0 = time.time()
            run = ensure.ensure([probe], store=store, quiet=True)[0]
            c = run_convergence(run.history)
            best = run.history[run.best_epoch]
            row = {"ref": key, "describe": probe.describe(), "stored": stored(series, key),
                   "epochs": probe.train["epochs"], "amp": bool(probe.train.get("amp")),
                   "val": round(best["val_mAP"], 2), "test": round(best.get("test_mAP", float("nan")), 2),
                   "gain": round(c["gain"], 2), "converged": c["converged"], "best": run.best_epoch,
                   "wall_s": round(time.time() - t0)}
            print(json.dumps(row), flush=True)
            if args.out:
                with open(args.out, "a") as f:
                    f.write(json.dumps(row) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
