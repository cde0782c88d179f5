r"""Calibrated label sets: class-wise split conformal thresholds for a multi-label classifier.

The idea is LAMC's (Hagos, Lundström, *Least-Ambiguous Multi-Label Classifier*, arXiv 2509.10689,
2025; no public code): calibrate one threshold per class on a small held-out, fully labelled
calibration set and predict the set of labels that pass them. The lab could read the paper's
abstract and summary only (class-wise calibration thresholds; about ten calibration images per
label suffice), so this module is **standard class-wise split conformal prediction** (the
class-conditional, "Mondrian" form of split conformal prediction: Vovk et al.), not a reading of
LAMC's equations.

For class c, an image's nonconformity score is s_c(x) = 1 − p_c(x). On the n_c calibration images
where c is a positive, with scores s_(1) ≤ ... ≤ s_(n_c):

.. math::

    t_c = s_{(\lceil (n_c+1)(1-\alpha)\rceil)} \quad (t_c = +\infty \text{ when that rank exceeds } n_c),
    \qquad \Gamma(x) = \{c : 1 - p_c(x) \le t_c\}

If the calibration positives of c and a new positive of c are exchangeable, the new one is in the
set with probability P(c ∈ Γ(X) | y_c = 1) ≥ 1 − α (and below 1 − α + 1/(n_c + 1) when the scores
have no ties): coverage of the positives, class by class. Too few positives for the level
(n_c < 1/α − 1) give t_c = +∞: class c is in every set.

Three sources of thresholds, one rule (:func:`classwise_thresholds`):

* **calibrated** — the true positives of a small fully labelled calibration set (the guarantee above);
* **observed** — :func:`observed_thresholds`: the same rule fed with the *observed* positives of
  partially labelled validation data (label 1 in the lab's encoding). No guarantee: an observed
  positive is the annotator's pick, not an exchangeable draw of the class's positives;
* **oracle** — :func:`oracle_thresholds`: on the test set itself, the smallest threshold covering
  ⌈n_c(1 − α)⌉ of its positives; a ceiling to compare against, never a method.

:func:`coverage` and :func:`mean_set_size` score a set of thresholds on a labelled set.
Everything is numpy, float64; ``probs`` are probabilities (N, C), ``labels`` 1 for a positive
(any other value is not one).
"""
from __future__ import annotations

import math
from typing import Dict

import numpy as np

__all__ = ["conformal_rank", "conformal_quantile", "classwise_thresholds", "observed_thresholds",
           "oracle_thresholds", "label_sets", "coverage", "mean_set_size", "evaluate"]


def _check_alpha(alpha) -> float:
    if isinstance(alpha, bool) or not isinstance(alpha, (int, float)) or not 0 < alpha < 1:
        raise ValueError(f"alpha (the miscoverage level) must be in (0, 1), got {alpha!r}")
    return float(alpha)


def _arrays(probs, labels):
    p = np.asarray(probs, dtype=np.float64)
    y = np.asarray(labels)
    if p.ndim != 2 or p.shape != y.shape:
        raise ValueError(f"probs {p.shape} and labels {y.shape} must be the same (N, C)")
    if np.isnan(p).any():
        raise ValueError("probs contain NaN")
    return p, y == 1


def conformal_rank(n: int, alpha: float) -> int:
    """⌈(n + 1)(1 − α)⌉: the 1-based rank of the conformal quantile among n scores (it may exceed
    n). The product is rounded to 9 decimals first, so 10 × 0.9 counts as 9, not 9 + 1e-15."""
    alpha = _check_alpha(alpha)
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 0:
        raise ValueError(f"n must be an integer >= 0, got {n!r}")
    return math.ceil(round((n + 1) * (1 - alpha), 9))


def conformal_quantile(scores, alpha: float) -> float:
    """The ⌈(n + 1)(1 − α)⌉-th smallest of ``scores`` (n of them); +inf when that rank exceeds n
    (too few scores for the level: every label passes)."""
    s = np.sort(np.asarray(scores, dtype=np.float64).ravel())
    if np.isnan(s).any():
        raise ValueError("scores contain NaN")
    r = conformal_rank(int(s.size), alpha)
    return math.inf if r > s.size else float(s[r - 1])


def classwise_thresholds(probs, labels, alpha: float) -> np.ndarray:
    """t_c (C,) of every class: :func:`conformal_quantile` of 1 − p_c over the rows where
    ``labels`` is 1 in column c."""
    p, pos = _arrays(probs, labels)
    return np.array([conformal_quantile(1.0 - p[pos[:, c], c], alpha) for c in range(p.shape[1])])


def observed_thresholds(probs, observed, alpha: float) -> np.ndarray:
    """The same rule on partially labelled data: the observed positives (1 in the lab's 1/0/-1
    encoding) stand in for the positives. No coverage guarantee (module docstring)."""
    return classwise_thresholds(probs, np.asarray(observed) == 1, alpha)


def oracle_thresholds(probs, labels, alpha: float) -> np.ndarray:
    """The smallest t_c covering at least 1 − α of the positives of ``probs``/``labels`` (the test
    set itself): the ⌈n_c(1 − α)⌉-th smallest score; −inf for a class without positives (nothing to
    cover). A ceiling, not a method: it reads the test labels."""
    alpha = _check_alpha(alpha)
    p, pos = _arrays(probs, labels)
    out = np.empty(p.shape[1])
    for c in range(p.shape[1]):
        s = np.sort(1.0 - p[pos[:, c], c])
        out[c] = -math.inf if s.size == 0 else s[max(math.ceil(round(s.size * (1 - alpha), 9)), 1) - 1]
    return out


def label_sets(probs, thresholds) -> np.ndarray:
    """Γ(x) as a bool matrix (N, C): label c is in the set of image x when 1 − p_c(x) ≤ t_c."""
    p = np.asarray(probs, dtype=np.float64)
    t = np.asarray(thresholds, dtype=np.float64).ravel()
    if p.ndim != 2 or t.size != p.shape[1]:
        raise ValueError(f"thresholds: one per class ({p.shape[1] if p.ndim == 2 else '?'}), got {t.size}")
    return (1.0 - p) <= t[None, :]


def coverage(sets, labels) -> Dict[str, object]:
    """How many positives the sets hold: ``{"overall": share of all positive entries in their
    image's set, "per_class": (C,) the share per class}`` (NaN where there is no positive)."""
    s = np.asarray(sets, dtype=bool)
    pos = np.asarray(labels) == 1
    if s.shape != pos.shape:
        raise ValueError(f"sets {s.shape} and labels {pos.shape} must be the same (N, C)")
    hit, count = (s & pos).sum(axis=0), pos.sum(axis=0)
    with np.errstate(invalid="ignore", divide="ignore"):
        per_class = np.where(count > 0, hit / np.maximum(count, 1), np.nan)
    overall = float(hit.sum() / count.sum()) if count.sum() else math.nan
    return {"overall": overall, "per_class": per_class}


def mean_set_size(sets) -> float:
    """The mean number of labels per set."""
    s = np.asarray(sets, dtype=bool)
    return float(s.sum(axis=1).mean()) if s.size else math.nan


def evaluate(probs, labels, thresholds) -> Dict[str, object]:
    """The sets of ``thresholds`` on a labelled set: coverage (overall, per class) and mean size."""
    sets = label_sets(probs, thresholds)
    return {**coverage(sets, labels), "mean_set_size": mean_set_size(sets)}
