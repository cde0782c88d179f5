"""Train the scene candidates of ``mlpl_lab.protocol.scenes_choice`` and record the rule's choice.

For each candidate (``SCENE_CANDIDATES``) the full-label oracle and AN under single positive are
trained on seed 0 under a profile's protocol (default ``cpu``: its epochs, cosine, from the shared
pretraining run; the first record, ``scene_candidates_cpu_36epochs.json``, trained 36, the cpu
profile's length then, and chose a setting whose oracle left the band at 54; the current record
trains the profile's 54, and notebook 01 reads the targets again on the profile's own runs); then ``choose_scenes`` reads their validation mAP, and the top two candidates
are trained on ``--confirm-seeds`` too: the chosen one and the next eligible by val gap, or,
with fewer than two eligible, the next by val gap whose oracle val mAP lies in the issue's band
(``ORACLE_BAND``, no margin). The record (JSON, rewritten after every run so a long measurement
can be polled) holds per run its val and test mAP at the best-val epoch, the best epoch,
convergence and times (``train_seconds``: the run's epochs as stored; ``wall_seconds``: only for
a run trained by this invocation or recorded by an earlier one in ``--out``, ``null`` for a run
read from the store without one), per seed set the rule's answer, and ``decision``: the answer
on the most seeds (the top two's, when they ran). Run again, it reads the stored runs and trains
only what is missing.

Usage (one thread; a separate store keeps the lab's ``data/`` clean)::

    OMP_NUM_THREADS=1 MLPL_LAB_DATA=/work/scene_store .venv/bin/python benchmarks/scene_candidates.py \\
        --profile cpu --workers 2 --out benchmarks/records/scene_candidates_cpu.json
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

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from mlpl_lab.protocol import scenes_choice as sc  # noqa: E402
from mlpl_lab.protocol.common import as_profile  # noqa: E402
from mlpl_lab.core.paths import data_root  # noqa: E402
from mlpl_lab.runs.ensure import ensure
from mlpl_lab.runs.store import RunStore  # noqa: E402


def run_row(run, wall: float | None, cand: str, label: str) -> dict:
    conv = run.convergence
    return {"candidate": cand, "method": label, "seed": run.spec.seed, "key": run.spec.key,
            "val_mAP": float(run.best["val_mAP"]), "test_mAP": float(run.best["test_mAP"]),
            "best_epoch": run.best_epoch + 1, "epochs": len(run.history),
            "converged": bool(run.converged), "last_quarter_gain": conv.get("gain"),
            "train_seconds": float(run.summary.get("seconds", float("nan"))),
            "wall_seconds": wall}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--profile", default="cpu")
    ap.add_argument("--seed", type=int, default=0, help="the seed every candidate runs on")
    ap.add_argument("--confirm-seeds", type=int, nargs="*", default=[1],
                    help="seeds the two best eligible candidates also run on")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--workers", type=int, default=0,
                    help="train the missing runs of each stage first on N single-thread Dask workers "
                         "(their wall_seconds are then null: only train_seconds is per run)")
    ap.add_argument("--out", default="benchmarks/records/scene_candidates_cpu.json")
    args = ap.parse_args(argv)
    torch.set_num_threads(args.threads)
    P = as_profile(args.profile)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    earlier = {}  # key -> wall seconds an earlier invocation measured for that run
    record_first = None  # when the first invocation writing ``--out`` started
    if out.exists():
        old = json.loads(out.read_text())
        earlier = {r["key"]: r["wall_seconds"] for r in old.get("runs", []) if r.get("wall_seconds")}
        record_first = old.get("first_started") or old.get("started")
        pre_old = old.get("pretraining") or {}
        if pre_old.get("wall_seconds"):
            earlier[pre_old["key"]] = pre_old["wall_seconds"]
    record = {"what": "scene candidates of mlpl_lab.protocol.scenes_choice: oracle and AN (single "
                      "positive) per candidate; the rule reads val mAP and convergence only",
              "profile": P.name, "started": _dt.datetime.now().isoformat(timespec="seconds"),
              "first_started": record_first,
              "machine": {"python": platform.python_version(), "torch": torch.__version__,
                          "threads": torch.get_num_threads(), "cpus": os.cpu_count(),
                          "OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS")},
              "store": str(data_root()), "candidates": sc.SCENE_CANDIDATES,
              "rule": {"oracle_band": list(sc.ORACLE_BAND), "min_gap": sc.MIN_GAP, "margin": sc.MARGIN,
                       "gap_tie": sc.GAP_TIE},
              "pretraining": None, "runs": [], "choice": {}}

    def save():
        tmp = out.with_suffix(".tmp")
        tmp.write_text(json.dumps(record, indent=1, default=str) + "\n")
        os.replace(tmp, out)

    pre_spec = P.spec("an", scene={}).backbone_from
    stored = RunStore().get(pre_spec) is not None
    t0 = time.perf_counter()
    pre = ensure([pre_spec], quiet=True)[0]
    record["pretraining"] = {"key": pre.spec.key, "val_mAP": float(pre.best["val_mAP"]),
                             "train_seconds": float(pre.summary.get("seconds", float("nan"))),
                             "wall_seconds": earlier.get(pre_spec.key) if stored else time.perf_counter() - t0}
    save()

    runs = {}

    def train(cands, seeds):
        grid = sc.candidate_specs(P, seeds, cands)
        if args.workers > 1:
            from mlpl_lab.runs.ensure import ensure_grid
            t = time.perf_counter()
            ensure_grid(grid, workers=args.workers, quiet=True)
            record.setdefault("worker_stages", []).append(
                {"workers": args.workers, "seeds": list(seeds), "candidates": list(cands),
                 "wall_seconds": time.perf_counter() - t})
        for (cand, label), specs in grid.items():
            for spec in specs:
                stored = RunStore().get(spec) is not None
                t = time.perf_counter()
                run = ensure([spec], quiet=True)[0]
                wall = earlier.get(spec.key) if stored else time.perf_counter() - t
                runs.setdefault(cand, {}).setdefault(label, []).append(run)
                record["runs"].append(run_row(run, wall, cand, label))
                print(f"{cand} · {label} · seed {spec.seed}: val {run.best['val_mAP']:.2f} test "
                      f"{run.best['test_mAP']:.2f} best epoch {run.best_epoch + 1} converged "
                      f"{run.converged} ({'stored' if stored else f'{wall:.0f} s'})", flush=True)
                save()

    train(sc.SCENE_CANDIDATES, [args.seed])
    choice = sc.choose_scenes(runs)
    record["choice"][f"seed {args.seed}"] = choice | {"table": sc.summarise(runs)}
    record["decision"] = {"seeds": [args.seed], "chosen": choice["chosen"], "reason": choice["reason"]}
    save()
    print(json.dumps(choice, indent=1), flush=True)
    if args.confirm_seeds and choice["eligible"]:
        rows = sc.summarise(runs)
        by_gap = sorted(rows, key=lambda c: -rows[c]["gap val"])
        in_band = [c for c in by_gap if sc.ORACLE_BAND[0] <= rows[c]["oracle val"] <= sc.ORACLE_BAND[1]]
        ranked = [choice["chosen"]] + [c for c in by_gap if c in choice["eligible"] and c != choice["chosen"]]
        ranked += [c for c in in_band if c not in ranked]
        top = {c: sc.SCENE_CANDIDATES[c] for c in ranked[:2]}
        record["confirmed"] = list(top)
        train(top, args.confirm_seeds)
        both = {c: runs[c] for c in top}
        seeds = [args.seed] + list(args.confirm_seeds)
        confirmed = sc.choose_scenes(both)
        record["choice"]["seeds " + ", ".join(map(str, seeds)) + " (top two)"] = (
            confirmed | {"table": sc.summarise(both)})
        # the answer on the most seeds decides: the top two rerun by the same rule
        record["decision"] = {"seeds": seeds, "chosen": confirmed["chosen"], "reason": confirmed["reason"]}
    record["finished"] = _dt.datetime.now().isoformat(timespec="seconds")
    save()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
