"""What side information buys, and label sets with a stated error rate: the numbers of chapter 08.

Three computations, each on records (per-seed test mAP of stored runs, or a run's probabilities),
never on a chapter's state:

* :func:`gain_curve`: a sweep of wrong side information (the priors times a factor, the
  cardinality off by an offset) as its mean test mAP and its **gain over AN**, paired by seed,
  with a 95 % t-interval per point; :func:`vanishing_point` reads where the mean gain falls to
  zero on each side of the truth (linear interpolation between the two sweep points around the
  crossing; ``None`` when the gain stays above zero over the whole side, "beyond the sweep");
* :func:`prior_table`: Crisp's estimated priors (Eq. 2) against the true ones, class by class;
* :func:`label_set_rows`: thresholds from three sources (:mod:`mlpl_lab.analysis.conformal`) —
  class-wise conformal on a small clean calibration set drawn from validation, the same rule on
  the observed (partial) validation labels, and the oracle on test (a ceiling) — scored on test:
  coverage of the positives, the smallest per-class coverage and the mean set size.
"""
from __future__ import annotations

import math
from typing import Any, Dict, Mapping, Optional, Sequence

import numpy as np

from . import conformal as cf
from .claims import t_interval

#: the interval level of a sweep point (one point is description, not a claim)
CURVE_LEVEL = 0.95


def gain_curve(points: Mapping[float, Mapping[int, float]], baseline: Mapping[int, float]):
    """A sweep as a DataFrame indexed by its x (the factor or the offset, ascending): the mean test
    mAP of the point, its mean gain over ``baseline`` on the seeds both hold, the 95 % t-interval
    of that gain (``low``, ``high``; NaN with one seed) and the seeds paired. ``points``:
    ``{x: {seed: test mAP}}``; ``baseline``: ``{seed: test mAP}`` (AN)."""
    import pandas as pd

    rows = {}
    for x in sorted(points):
        vals = points[x]
        seeds = sorted(set(vals) & set(baseline))
        diffs = [vals[s] - baseline[s] for s in seeds]
        lo, hi = t_interval(diffs, CURVE_LEVEL) if len(diffs) > 1 else (math.nan, math.nan)
        rows[x] = {"mAP": float(np.mean(list(vals.values()))) if vals else math.nan,
                   "gain": float(np.mean(diffs)) if diffs else math.nan, "low": lo, "high": hi,
                   "seeds": len(seeds)}
    return pd.DataFrame.from_dict(rows, orient="index").rename_axis("x")


def vanishing_point(curve, truth: float) -> Dict[str, Any]:
    """Where the mean gain of ``curve`` (:func:`gain_curve`) falls to zero on each side of
    ``truth`` (the x of correct side information): ``{"below": x or None, "above": x or None}``.
    Walking outward from the sweep point nearest the truth, the first point whose gain is ≤ 0 and
    the point before it (gain > 0) bracket the crossing, read by linear interpolation; a side
    whose gain stays > 0 gives None (it does not vanish within the sweep). Where the truth itself
    gains ≤ 0 both sides give the truth's x: there is no gain to lose."""
    xs = [float(x) for x in curve.index]
    g = [float(v) for v in curve["gain"]]
    if not xs:
        raise ValueError("vanishing_point: the curve has no point")
    start = min(range(len(xs)), key=lambda i: (abs(xs[i] - truth), xs[i]))
    out: Dict[str, Any] = {}
    for side, step in (("below", -1), ("above", 1)):
        if g[start] <= 0:
            out[side] = xs[start]
            continue
        found = None
        i = start
        while 0 <= i + step < len(xs):
            j = i + step
            if g[j] <= 0:
                found = xs[i] + (xs[j] - xs[i]) * g[i] / (g[i] - g[j])
                break
            i = j
        out[side] = found
    return out


def prior_table(estimated: Sequence[float], true: Sequence[float], class_names: Sequence[str] | None = None):
    """Per class: the true prior, the estimate and their difference; sorted by the true prior."""
    import pandas as pd

    est, tru = np.asarray(estimated, dtype=float), np.asarray(true, dtype=float)
    if est.shape != tru.shape:
        raise ValueError(f"estimated {est.shape} and true {tru.shape} priors must have one value per class each")
    names = list(class_names) if class_names is not None else [str(c) for c in range(len(tru))]
    frame = pd.DataFrame({"true prior": tru, "estimated": est, "error": est - tru}, index=names)
    return frame.sort_values("true prior").rename_axis("class")


def _scores(probs, labels, thresholds) -> Dict[str, float]:
    e = cf.evaluate(probs, labels, thresholds)
    per = np.asarray(e["per_class"], dtype=float)
    return {"coverage": float(e["overall"]), "min_class_coverage": float(np.nanmin(per)),
            "mean_set_size": float(e["mean_set_size"])}


SOURCES = ("calibrated", "observed", "oracle")


def label_set_rows(s: Mapping[str, np.ndarray], alphas: Sequence[float], calibration: int, draws: int,
                   seed: int) -> Dict[float, Dict[str, Dict[str, float]]]:
    """One run's label sets: ``{alpha: {source: {coverage, min_class_coverage, mean_set_size}}}``.

    ``s`` holds the run's probabilities ``p_val``, ``p_test``, the true labels ``y_val``, ``y_test``
    and the observed validation labels ``obs_val`` (1 / 0 / −1). *calibrated*: the mean over
    ``draws`` draws of ``calibration`` validation images (without replacement, a numpy generator
    seeded with ``seed``) of class-wise conformal thresholds on their true labels; *observed*: the
    same rule on every validation image's observed positives; *oracle*: the test labels themselves."""
    if calibration < 1 or draws < 1:
        raise ValueError(f"calibration images and draws must be ≥ 1, got {calibration} and {draws}")
    rng = np.random.default_rng(seed)
    n_val = len(s["p_val"])
    out: Dict[float, Dict[str, Dict[str, float]]] = {}
    for alpha in alphas:
        cal = []
        for _ in range(draws):
            idx = rng.choice(n_val, size=min(calibration, n_val), replace=False)
            cal.append(_scores(s["p_test"], s["y_test"], cf.classwise_thresholds(s["p_val"][idx], s["y_val"][idx], alpha)))
        out[float(alpha)] = {
            "calibrated": {k: float(np.mean([c[k] for c in cal])) for k in cal[0]},
            "observed": _scores(s["p_test"], s["y_test"], cf.observed_thresholds(s["p_val"], s["obs_val"], alpha)),
            "oracle": _scores(s["p_test"], s["y_test"], cf.oracle_thresholds(s["p_test"], s["y_test"], alpha)),
        }
    return out


def label_set_table(per_run: Mapping[str, Mapping[int, Mapping[float, Mapping[str, Mapping[str, float]]]]]):
    """``{method: {seed: label_set_rows(...)}}`` as one DataFrame: a row per (method, α, source)
    with the mean over seeds of coverage, smallest class coverage and mean set size, and the
    seeds."""
    import pandas as pd

    rows = []
    for method, by_seed in per_run.items():
        alphas = sorted({a for r in by_seed.values() for a in r})
        for alpha in alphas:
            for source in SOURCES:
                vals = [r[alpha][source] for r in by_seed.values() if alpha in r]
                rows.append({"method": method, "α": alpha, "thresholds": source,
                             "target 1 − α": 1 - alpha,
                             **{k: float(np.mean([v[k] for v in vals])) for k in vals[0]},
                             "seeds": len(vals)})
    return pd.DataFrame(rows).set_index(["method", "α", "thresholds"])


def coverage_met(table, slack: float = 0.02) -> Dict[str, Dict[float, bool]]:
    """Per method and α: whether the calibrated thresholds' mean coverage is at least
    1 − α − ``slack`` (the chapter's check of the guarantee on its test scenes)."""
    out: Dict[str, Dict[float, bool]] = {}
    for (method, alpha, source), row in table.iterrows():
        if source == "calibrated":
            out.setdefault(method, {})[float(alpha)] = bool(row["coverage"] >= 1 - alpha - slack)
    return out
