"""The series' guardrails under a candidate cpu schedule, measured before the series: does a shorter
schedule keep the five claims the course stands on?

A candidate changes the cpu profile's epochs and learning rate (:data:`CANDIDATES`) and scales
PU-MLC's epochs by the same factor. For each guardrail claim this trains, on the given seeds and
from the candidate's own pretraining run, exactly the runs that chapter's ``specs`` asks for on
both sides of the claim (the chapter's design under the candidate profile):

* 01: the full-label oracle vs AN under single positive (and the gap must stay >= 10 mAP);
* 02: GR (the paper's defaults) vs AN; 03: OPML-SP vs AN; 04: CLS vs AN (single positive);
* 06: PU-MLC vs partial BCE at p = 0.5, clean negatives.

Per pair: the paired differences of test mAP per seed, their mean and a t-interval (n-1 dof), and
the convergence of each run by the lab's criterion. The cost is the images trained; seconds are
recorded but on a shared machine they are not the cost.

Usage::

    OMP_NUM_THREADS=1 MLPL_LAB_DATA=/tmp/guard_store .venv/bin/python benchmarks/guardrail_probe.py \\
        --candidate e27_lr4 --seeds 1 2 3 --out benchmarks/records/guardrail_probe_cpu.json
"""
from __future__ import annotations

import argparse
import datetime as _dt
import json
import math
import os
import platform
import sys
from dataclasses import replace
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from records_io import write_record  # noqa: E402
from mlpl_lab.chapters import cls, opml, pu_mlc  # noqa: E402
from mlpl_lab.protocol.asked import nothing_stored  # noqa: E402
from mlpl_lab.profiles import get_profile  # noqa: E402
from mlpl_lab.runs.ensure import ensure  # noqa: E402

#: e27_lr4: half the epochs at twice the learning rate; e27_lr4_n2000: that on half the training
#: images (the one lever left between the science-keeping cuts and the 2.5 h target:
#: benchmarks/records/series_budget_cpu.json)
CANDIDATES = {"profile": {}, "e27_lr4": {"epochs": 27, "lr": 4e-3},
              "e27_lr4_n2000": {"epochs": 27, "lr": 4e-3, "n_train": 2000}}
#: two-sided t quantiles at 0.975 by dof (a printed table)
T975 = {1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571}


def find(asked, label_part, seeds, regime=None, method=None):
    """The specs of the first row whose label contains ``label_part`` (any family of now/pending),
    restricted to ``seeds`` (and to ``regime``/``method`` when given)."""
    for which in ("now", "pending"):
        for fam in getattr(asked, which).values():
            for label, specs in fam.items():
                if label_part in label:
                    out = [s for s in specs if s.seed in seeds and (regime is None or s.regime == regime)
                           and (method is None or s.method == method)]
                    if out:
                        return label, out
    raise KeyError(label_part)


def pairs(P, seeds, pu_epochs):
    """``{claim: (winner specs, loser specs)}`` from the chapters' own specs under ``P``."""
    base = {"oracle": [P.spec("full", seed=s) for s in seeds], "AN": [P.spec("an", seed=s) for s in seeds]}
    gr_runs = [P.spec("gr", seed=s) for s in seeds]  # paper defaults (02 tunes them on seed 0)
    o = opml.specs(opml.design(P), nothing_stored)
    _, sp = find(o, "OPML-SP", seeds)
    c = cls.specs(cls.design(P), nothing_stored)
    _, cl = find(c, "CLS", seeds, regime="single_positive")
    d = replace(pu_mlc.design(P), pu_epochs=pu_epochs, longer_baseline=None)
    u = pu_mlc.specs(d, nothing_stored)
    pu = pb = None
    for fam in u.now.values():
        for label, specs in fam.items():
            sel = [s for s in specs if s.seed in seeds and s.regime_params.get("p") == d.sweep_p
                   and float(s.regime_params.get("fn_rate", 0.0)) == 0.0]
            if sel and sel[0].method == "pu_mlc" and pu is None:
                pu = (label, sel)
            if sel and sel[0].method == "partial_bce" and pb is None:
                pb = (label, sel)
    return {"full labels beat AN (01)": (base["oracle"], base["AN"]),
            "GR beats AN (02)": (gr_runs, base["AN"]),
            "OPML-SP beats AN (03)": (sp, base["AN"]),
            "CLS beats AN (04)": (cl, base["AN"]),
            f"PU-MLC beats partial BCE at p = {d.sweep_p} (06)": (pu[1], pb[1])}


def register(candidate: str):
    """The candidate as a registered profile (the chapters rebuild a profile from its name) that
    takes the cpu profile's chapter designs."""
    from mlpl_lab import profiles
    from mlpl_lab.protocol import common

    name = f"cpu_{candidate}"
    profiles.PROFILES[name] = replace(get_profile("cpu"), name=name, **CANDIDATES[candidate])
    common.DESIGN_OF[name] = "cpu"
    return profiles.PROFILES[name]


def interval(diffs):
    n = len(diffs)
    m = sum(diffs) / n
    if n < 2:
        return m, None
    sd = math.sqrt(sum((x - m) ** 2 for x in diffs) / (n - 1))
    h = T975[n - 1] * sd / math.sqrt(n)
    return m, [m - h, m + h]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--candidate", default="e27_lr4", choices=list(CANDIDATES))
    ap.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3])
    ap.add_argument("--out", type=Path, default=Path("benchmarks/records/guardrail_probe_cpu.json"))
    args = ap.parse_args(argv)
    torch.set_num_threads(1)
    P0 = get_profile("cpu")
    P = register(args.candidate)
    pu_epochs = round(pu_mlc.design(P0).pu_epochs * P.epochs / P0.epochs)
    claims = pairs(P, args.seeds, pu_epochs)
    results, runs = {}, {}
    for claim, (win, lose) in claims.items():
        rows = []
        for a, b in zip(win, lose):
            ra, rb = (runs.get(s.key) or ensure([s], quiet=True)[0] for s in (a, b))
            runs[a.key], runs[b.key] = ra, rb
            ca, cb = (r.summary.get("convergence") or {} for r in (ra, rb))
            rows.append({"seed": a.seed, "winner": a.describe(), "loser": b.describe(),
                         "winner_test_mAP": ra.summary["test_mAP"], "loser_test_mAP": rb.summary["test_mAP"],
                         "winner_converged": ca.get("converged"), "loser_converged": cb.get("converged"),
                         "winner_epochs": int(a.train["epochs"]), "loser_epochs": int(b.train["epochs"])})
            print(claim, json.dumps(rows[-1]), flush=True)
        mean, ci = interval([r["winner_test_mAP"] - r["loser_test_mAP"] for r in rows])
        results[claim] = {"runs": rows, "mean_difference": mean, "ci95": ci,
                          "holds_at_95": bool(ci and ci[0] > 0)}
    record = {"what": "the series' guardrail claims under a candidate cpu schedule (paired seeds, test mAP "
                      "at the best-val epoch, unadjusted 95 % t-intervals)",
              "candidate": args.candidate, "profile_changes": CANDIDATES[args.candidate],
              "pu_epochs": pu_epochs, "seeds": args.seeds,
              "date": _dt.datetime.now().isoformat(timespec="seconds"),
              "machine": {"python": platform.python_version(), "torch": torch.__version__, "threads": 1,
                          "cpus": os.cpu_count(), "load_average_at_end": list(os.getloadavg())},
              "claims": results,
              "runs_trained": len(runs),
              "converged": sum(bool((r.summary.get("convergence") or {}).get("converged")) for r in runs.values())}
    write_record(args.out, record)
    return 0


if __name__ == "__main__":
    sys.exit(main())
