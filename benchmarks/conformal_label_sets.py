"""Label sets you can trust? Class-wise conformal thresholds against thresholds read off the
observed (partial) validation labels, on trained runs of several methods. Writes
``benchmarks/records/conformal_label_sets_<profile>.json``.

For every stored run with weights that the arguments select (by default: one data set family of
chapter 07, every method and seed of it), the run's probabilities on its own validation and test
scenes, then per miscoverage level α (:mod:`mlpl_lab.analysis.conformal`):

* **calibrated**: class-wise split conformal thresholds on a small *fully labelled* calibration
  set, ``--cal`` images drawn from the validation scenes (``--draws`` draws per run); the
  guarantee is per class, P(c in set | y_c = 1) >= 1 − α;
* **observed**: the same rule fed with the observed positives of the partially labelled validation
  split (what a practitioner holds under single positive: no guarantee);
* **oracle**: thresholds read on the test labels themselves (a ceiling, never a method).

Each is scored on the test scenes: the share of positives in their image's set (coverage), the
smallest per-class coverage, and the mean set size. Beside them, the class priors Crisp's estimator
(Eq. 2) reads off each run's training-set scores and observed positives, against the true priors
of its training labels. The mean over runs and draws per method and α is the record's summary;
every run's values are kept. Nothing is trained.

Usage: ``python benchmarks/conformal_label_sets.py [--family "data sets: printed letters"]
[--cal 200] [--draws 20] [--alphas 0.1 0.2]`` (``MLPL_LAB_DATA`` names the store).
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any, Dict, List

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from records_io import write_record  # noqa: E402

from mlpl_lab.analysis import conformal as cf  # noqa: E402
from mlpl_lab.commands.arguments import notebook_paths  # noqa: E402
from mlpl_lab.engine.train import predict_dataset  # noqa: E402
from mlpl_lab.protocol.plan import run_families  # noqa: E402
from mlpl_lab.runs.ensure import load_method  # noqa: E402
from mlpl_lab.runs.spec import RunSpec  # noqa: E402
from mlpl_lab.runs.splits_cache import build_splits  # noqa: E402
from mlpl_lab.runs.store import RunStore  # noqa: E402


def scores(run) -> Dict[str, np.ndarray]:
    """The run's probabilities and labels on its validation and test scenes."""
    import torch

    splits = build_splits(run.spec)
    method = load_method(run)
    out = {}
    for name in ("train", "val", "test"):
        ds = getattr(splits, name)
        out[f"p_{name}"] = predict_dataset(method, ds, torch.device("cpu")).double().numpy()
        out[f"y_{name}"] = ds.scenes.labels.numpy()
    out["obs_val"] = splits.val.observed.numpy()
    out["obs_train"] = splits.train.observed.numpy()
    return out


def prior_errors(s: Dict[str, np.ndarray]) -> Dict[str, float]:
    """Crisp's estimator (Eq. 2, :func:`mlpl_lab.losses.crisp.estimate_class_priors`) on this run's
    training-set probabilities and observed positives, against the true training priors."""
    import torch

    from mlpl_lab.losses.crisp import estimate_class_priors

    est = estimate_class_priors(torch.as_tensor(s["p_train"]), torch.as_tensor(s["obs_train"])).double().numpy()
    true = (s["y_train"] == 1).mean(axis=0)
    err = est - true
    return {"mean_abs_error": float(np.abs(err).mean()), "max_abs_error": float(np.abs(err).max()),
            "mean_signed_error": float(err.mean()), "mean_true_prior": float(true.mean())}


def evaluate_run(s: Dict[str, np.ndarray], alphas: List[float], cal: int, draws: int, seed: int) -> Dict[str, Any]:
    rng = np.random.default_rng(seed)
    out: Dict[str, Any] = {}
    for alpha in alphas:
        res: Dict[str, List[Dict[str, float]]] = {"calibrated": [], "observed": [], "oracle": []}
        for _ in range(draws):
            idx = rng.choice(len(s["p_val"]), size=min(cal, len(s["p_val"])), replace=False)
            t = cf.classwise_thresholds(s["p_val"][idx], s["y_val"][idx], alpha)
            res["calibrated"].append(_score(s, t))
        res["observed"].append(_score(s, cf.observed_thresholds(s["p_val"], s["obs_val"], alpha)))
        res["oracle"].append(_score(s, cf.oracle_thresholds(s["p_test"], s["y_test"], alpha)))
        out[str(alpha)] = {k: {m: statistics.fmean(r[m] for r in v) for m in v[0]} for k, v in res.items()}
    return out


def _score(s, thresholds) -> Dict[str, float]:
    e = cf.evaluate(s["p_test"], s["y_test"], thresholds)
    per = np.asarray(e["per_class"], dtype=float)
    return {"coverage": float(e["overall"]), "min_class_coverage": float(np.nanmin(per)),
            "mean_set_size": float(e["mean_set_size"])}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--family", default="data sets: printed letters", help="a family of notebook 07")
    ap.add_argument("--profile", default="cpu")
    ap.add_argument("--cal", type=int, default=200, help="calibration images drawn from validation")
    ap.add_argument("--draws", type=int, default=20)
    ap.add_argument("--alphas", type=float, nargs="+", default=[0.1, 0.2])
    ap.add_argument("--out", default=None)
    args = ap.parse_args(argv)

    store = RunStore()
    fams = run_families(args.profile, notebook_paths(["07"]))
    runs = []
    for key, (_, fam) in sorted(fams.items()):
        folder = store.root / key
        if fam != args.family or not (folder / "weights.pt").exists():
            continue
        run = store.get(RunSpec.from_dict(json.loads((folder / "spec.json").read_text())))
        if run is not None and run.spec.method != "full":  # the oracle sets no label-set question
            runs.append(run)
    if not runs:
        raise SystemExit(f"no stored run with weights in family {args.family!r} of notebook 07 "
                         f"in {store.root}: train it first (mlpl-lab train {args.family!r})")
    t0 = time.perf_counter()
    per_run, per_method = {}, {}
    for i, run in enumerate(sorted(runs, key=lambda r: (r.spec.method, r.spec.seed))):
        sc = scores(run)
        res = evaluate_run(sc, args.alphas, args.cal, args.draws, seed=1000 + i)
        res["priors"] = prior_errors(sc)
        label = f"{run.spec.method} · seed {run.spec.seed}"
        per_run[label] = res
        per_method.setdefault(run.spec.method, []).append(res)
        print(f"{label}: " + "; ".join(f"α={a}: cal cov {res[str(a)]['calibrated']['coverage']:.3f} "
                                       f"size {res[str(a)]['calibrated']['mean_set_size']:.2f}, obs cov "
                                       f"{res[str(a)]['observed']['coverage']:.3f}" for a in args.alphas)
              + f"; prior MAE {res['priors']['mean_abs_error']:.3f}", flush=True)
    alphas = [str(a) for a in args.alphas]
    summary = {m: {a: {k: {f: statistics.fmean(r[a][k][f] for r in rs) for f in rs[0][a][k]}
                       for k in rs[0][a]} for a in alphas}
               | {"priors": {f: statistics.fmean(r["priors"][f] for r in rs) for f in rs[0]["priors"]}}
               for m, rs in per_method.items()}
    record = {"benchmark": "conformal_label_sets", "profile": args.profile, "family": args.family,
              "calibration_images": args.cal, "draws": args.draws, "alphas": args.alphas,
              "runs": len(per_run), "seconds": round(time.perf_counter() - t0, 1),
              "summary": summary, "per_run": per_run}
    write_record(args.out or Path(__file__).resolve().parent / "records" / f"conformal_label_sets_{args.profile}.json",
                 record)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
