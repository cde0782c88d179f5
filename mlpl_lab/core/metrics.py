"""Evaluation metrics in the conventions of the partial-label papers.

* Average precision (AP) per class and its mean (mAP) follow Cole et al. (CVPR 2021,
  ``metrics.compute_avg_precision``), reused by Large Loss Matters, GR Loss, LAGC and OPML:
  scikit-learn's non-interpolated ``average_precision_score`` per class, **a class with no
  positive scores 0 and still counts in the mean**, reported in percent.  We compute it with
  torchmetrics' functional ``multilabel_average_precision`` in exact mode
  (``thresholds=None``), which equals scikit-learn per class.
* CP / CR / CF1 / OP / OR / OF1 follow ML-GCN (Chen et al., CVPR 2019,
  ``AveragePrecisionMeter.evaluation``), the convention that SSGRL, HCP-MLR-PL and PU-MLC
  report.  CF1 is the harmonic mean of macro precision and macro recall, *not* the mean of
  per-class F1 scores (torchmetrics' ``multilabel_f1_score(average="macro")``).

All functions take **probabilities**.  torchmetrics decides per call whether its input is
logits (it applies a sigmoid if any value lies outside [0, 1]), so a batch of logits that
happens to fall inside [0, 1] would silently be treated as probabilities; we refuse
anything outside [0, 1] instead.
"""

from __future__ import annotations

import math
import warnings
from typing import Dict, Optional, Sequence, Union

import numpy as np
import torch

from mlpl_lab.core.labels import UNK, validate

__all__ = [
    "average_precision",
    "mean_average_precision",
    "f1_scores",
    "f1_scores_swept",
    "evaluate",
    "wasserstein_1d",
]

ArrayLike = Union[torch.Tensor, np.ndarray, Sequence]


def _as_probs(probs: ArrayLike) -> torch.Tensor:
    """Validate scores: 2-D, finite, inside [0, 1]; return a float64 CPU tensor."""
    t = torch.as_tensor(probs).detach()
    if t.ndim != 2:
        raise ValueError(f"probs must be 2-D (num_images, num_classes), got shape "
                         f"{tuple(t.shape)}")
    if t.is_complex():
        raise ValueError(f"probs must be a real tensor of probabilities, got dtype {t.dtype}")
    t = t.to(device="cpu", dtype=torch.float64)
    if torch.isnan(t).any():
        raise ValueError("probs contains NaN; check the model output (a diverged loss?)")
    if t.numel() and (t.min() < 0 or t.max() > 1):
        raise ValueError(
            f"probs has values in [{t.min().item():.4g}, {t.max().item():.4g}], outside "
            f"[0, 1]: pass probabilities (torch.sigmoid(logits)), not logits"
        )
    return t


def _as_targets(targets: ArrayLike, shape, ignore_index: Optional[int]) -> torch.Tensor:
    """Validate targets: {0,1} true labels, or our observed encoding with ignore_index=-1."""
    t = torch.as_tensor(targets).detach().cpu()
    if tuple(t.shape) != tuple(shape):
        raise ValueError(f"targets has shape {tuple(t.shape)} but probs has shape "
                         f"{tuple(shape)}; they must match (num_images, num_classes)")
    if ignore_index is None:
        vals = torch.unique(t)
        bad = [v.item() for v in vals if v.item() not in (0, 1)][:5]
        if bad:
            hint = (" -- these look like observed labels with unknowns; pass "
                    "ignore_index=-1 to ignore them" if -1 in bad else "")
            raise ValueError(f"targets must be {{0,1}} true labels, found values {bad}{hint}")
    else:
        if ignore_index != UNK:
            raise ValueError(f"ignore_index must be None or {UNK} (our UNK code), got "
                             f"{ignore_index!r}")
        validate(t)
    return t.to(torch.int64)


def average_precision(probs: ArrayLike, targets: ArrayLike,
                      ignore_index: Optional[int] = None) -> torch.Tensor:
    """Per-class average precision, a float64 tensor of shape (C,) with values in [0, 1].

    Parameters
    ----------
    probs: (N, C) probabilities in [0, 1] (apply ``torch.sigmoid`` to logits first).
    targets: (N, C) true labels in {0, 1}; or, with ``ignore_index=-1``, an observed-label
        matrix in our encoding (POS=1, NEG=0, UNK=-1) whose unknown entries are left out of
        the computation -- metrics against observed labels ignore unknowns.
    ignore_index: None or -1.

    AP is scikit-learn's non-interpolated average precision (torchmetrics exact mode,
    ``thresholds=None``; torchmetrics works in float32, so values agree with
    scikit-learn to about 1e-7).  A class with no (non-ignored) positive gets AP = 0, Cole et al.'s
    convention; we set it explicitly instead of relying on torchmetrics' fallback, and
    silence torchmetrics' "no positive samples" warning.
    """
    p = _as_probs(probs)
    t = _as_targets(targets, p.shape, ignore_index)
    num_classes = p.shape[1]
    if num_classes == 0:
        return torch.zeros(0, dtype=torch.float64)
    has_pos = (t == 1).any(dim=0)
    ap = torch.zeros(num_classes, dtype=torch.float64)
    if has_pos.any() and p.shape[0] > 0:
        # imported here: torchmetrics takes about 3 s to import, which every notebook kernel paid
        # at start-up although a pack-served notebook computes no AP
        from torchmetrics.functional.classification import binary_average_precision, multilabel_average_precision

        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message=".*[Nn]o positive samples.*")
            warnings.filterwarnings("ignore", message=".*[Nn]o negative samples.*")
            if num_classes == 1:
                # torchmetrics' multilabel task needs at least two labels
                res = binary_average_precision(p[:, 0], t[:, 0], thresholds=None,
                                               ignore_index=ignore_index).reshape(1)
            else:
                res = multilabel_average_precision(
                    p, t, num_labels=num_classes, average=None, thresholds=None,
                    ignore_index=ignore_index,
                )
        ap = torch.where(has_pos, res.to(torch.float64), ap)
    # a class with positives but no (non-ignored) negatives has AP 1 in both sklearn and
    # torchmetrics; NaN would only arise from degenerate input, count it as 0 like Cole
    return torch.nan_to_num(ap, nan=0.0)


def mean_average_precision(probs: ArrayLike, targets: ArrayLike, exclude_empty: bool = False,
                           ignore_index: Optional[int] = None) -> float:
    """Mean average precision **in percent** (0-100), as the papers report it.

    The mean over classes of :func:`average_precision`, times 100.  With
    ``exclude_empty=False`` (default, Cole et al.'s ``compute_avg_precision`` and the SPML
    papers) a class without any positive counts with AP 0; with ``exclude_empty=True`` it
    is left out of the mean (what scikit-learn's ``average_precision_score(average=
    "macro")`` would do if it skipped undefined classes).  Raises ValueError when
    ``exclude_empty=True`` and no class has a positive (the mean is undefined).
    """
    p = _as_probs(probs)
    t = _as_targets(targets, p.shape, ignore_index)
    ap = average_precision(p, t, ignore_index=ignore_index)
    if exclude_empty:
        keep = (t == 1).any(dim=0)
        if not keep.any():
            raise ValueError("no class has a positive target, so mAP over non-empty classes "
                             "is undefined; use exclude_empty=False (empty classes score 0)")
        ap = ap[keep]
    if ap.numel() == 0:
        raise ValueError("mAP of zero classes is undefined; probs has no columns")
    return float(ap.mean().item() * 100.0)


def _safe_div(num: torch.Tensor, den: torch.Tensor) -> torch.Tensor:
    """num / den with 0/0 -> 0 (and x/0 -> 0), elementwise."""
    num = torch.as_tensor(num, dtype=torch.float64)
    den = torch.as_tensor(den, dtype=torch.float64)
    return torch.where(den > 0, num / torch.where(den > 0, den, torch.ones_like(den)),
                       torch.zeros_like(num))


def _f1_from_counts(nc: torch.Tensor, np_: torch.Tensor, ng: torch.Tensor) -> Dict[str, float]:
    np_ = torch.where(np_ == 0, torch.ones_like(np_), np_)  # ML-GCN: Np = 0 -> 1
    ng = torch.where(ng == 0, torch.ones_like(ng), ng)      # ours: Ng = 0 -> 1 likewise
    op = _safe_div(nc.sum(), np_.sum())
    orr = _safe_div(nc.sum(), ng.sum())
    of1 = _safe_div(2 * op * orr, op + orr)
    cp = (nc / np_).mean() if nc.numel() else torch.tensor(0.0, dtype=torch.float64)
    cr = (nc / ng).mean() if nc.numel() else torch.tensor(0.0, dtype=torch.float64)
    cf1 = _safe_div(2 * cp * cr, cp + cr)
    return {k: float(v) * 100.0 for k, v in
            (("OP", op), ("OR", orr), ("OF1", of1), ("CP", cp), ("CR", cr), ("CF1", cf1))}


def _counts(p: torch.Tensor, t: torch.Tensor, threshold: float):
    pred = p >= threshold
    pos = t == 1
    nc = (pred & pos).sum(dim=0).to(torch.float64)
    np_ = pred.sum(dim=0).to(torch.float64)
    ng = pos.sum(dim=0).to(torch.float64)
    return nc, np_, ng


def f1_scores(probs: ArrayLike, targets: ArrayLike, threshold: float = 0.5) -> Dict[str, float]:
    """OP, OR, OF1, CP, CR, CF1 in percent, in the ML-GCN convention the papers use.

    A label is predicted positive when ``prob >= threshold`` (ML-GCN thresholds logits at
    0, i.e. probabilities at 0.5).  Per class c: Ng = number of ground-truth positives,
    Np = number of predicted positives, Nc = number of correctly predicted positives.

    * Np = 0 is replaced by 1 *before* anything is summed (exactly ML-GCN / PU-MLC
      ``AveragePrecisionMeter.evaluation``), so a class never predicted adds precision 0 to
      CP and 1 to the denominator of OP.
    * Ng = 0 is treated the same way (ML-GCN would divide by zero and return NaN): such a
      class adds recall 0 to CR and 1 to the denominator of OR.  Real test sets have no
      such class; tiny batches do.
    * OP = sum Nc / sum Np,  OR = sum Nc / sum Ng,  OF1 = 2 OP OR / (OP + OR).
    * CP = mean_c Nc/Np,  CR = mean_c Nc/Ng,  **CF1 = 2 CP CR / (CP + CR)**: the harmonic
      mean of macro precision and macro recall, NOT the mean of per-class F1 scores
      (torchmetrics' macro F1), which is usually smaller.
    * 0/0 anywhere gives 0.

    ``targets`` must be true {0,1} labels.
    """
    p = _as_probs(probs)
    t = _as_targets(targets, p.shape, None)
    thr = float(threshold)
    if not 0.0 <= thr <= 1.0:
        raise ValueError(f"threshold must be in [0, 1] (it applies to probabilities), got {threshold}")
    return _f1_from_counts(*_counts(p, t, thr))


def f1_scores_swept(probs: ArrayLike, targets: ArrayLike,
                    thresholds: Optional[Sequence[float]] = None) -> Dict[str, float]:
    """Best OF1 and best CF1 over a grid of thresholds -- an **oracle**, optimistic number.

    PU-MLC (Yuan et al., ICME 2024, ``src/helper_functions/metrics.py``) sweeps the
    threshold over 0.01, 0.02, ..., 0.99 *on the test set* and reports the best OF1 and the
    best CF1 (each at its own threshold).  Choosing a threshold with test labels is an
    oracle: it overstates what a deployed model achieves.  Report :func:`f1_scores` at 0.5
    as the main number and this only for comparison with PU-MLC.

    Returns ``{"OF1", "OF1_threshold", "CF1", "CF1_threshold"}`` (F1 in percent; the first
    threshold wins ties).
    """
    p = _as_probs(probs)
    t = _as_targets(targets, p.shape, None)
    if thresholds is None:
        grid = [i / 100 for i in range(1, 100)]
    else:
        grid = [float(x) for x in thresholds]
        if not grid:
            raise ValueError("thresholds is empty; pass at least one value in [0, 1]")
        if any(not 0.0 <= x <= 1.0 for x in grid):
            raise ValueError("thresholds must lie in [0, 1] (they apply to probabilities)")
    best = {"OF1": -1.0, "OF1_threshold": math.nan, "CF1": -1.0, "CF1_threshold": math.nan}
    for thr in grid:
        s = _f1_from_counts(*_counts(p, t, thr))
        for key in ("OF1", "CF1"):
            if s[key] > best[key]:
                best[key] = s[key]
                best[f"{key}_threshold"] = thr
    return best


def evaluate(probs: ArrayLike, targets: ArrayLike, threshold: float = 0.5) -> Dict[str, object]:
    """All test metrics at once (the training engine calls this every epoch).

    Returns ``{"mAP", "CF1", "OF1", "CP", "CR", "OP", "OR", "AP"}``: mAP and the F1 family in
    percent (empty classes count as AP 0 in mAP, Cole's convention; F1 family at
    ``threshold``, ML-GCN convention), ``AP`` the per-class AP in percent as a list of
    Python floats.  ``targets`` are true {0,1} labels.
    """
    p = _as_probs(probs)
    t = _as_targets(targets, p.shape, None)
    ap = average_precision(p, t)
    out: Dict[str, object] = {"mAP": float(ap.mean().item() * 100.0) if ap.numel() else 0.0}
    out.update(f1_scores(p, t, threshold=threshold))
    out["AP"] = [float(v) * 100.0 for v in ap.tolist()]
    return out


def wasserstein_1d(a: ArrayLike, b: ArrayLike) -> float:
    """1-D earth mover's (Wasserstein-1) distance between two samples.

    Used for the GR Loss paper's Fig. 3a (how far the score distribution of hidden
    positives is from that of true negatives).  Uses ``scipy.stats.wasserstein_distance``
    when scipy is installed; otherwise the same quantity from sorted samples:
    W1 = integral |F_a(x) - F_b(x)| dx over the merged support, F the empirical CDFs.
    """
    x = np.asarray(torch.as_tensor(a).detach().cpu().numpy() if isinstance(a, torch.Tensor)
                   else a, dtype=np.float64).reshape(-1)
    y = np.asarray(torch.as_tensor(b).detach().cpu().numpy() if isinstance(b, torch.Tensor)
                   else b, dtype=np.float64).reshape(-1)
    if x.size == 0 or y.size == 0:
        raise ValueError("wasserstein_1d needs two non-empty samples")
    if not (np.isfinite(x).all() and np.isfinite(y).all()):
        raise ValueError("wasserstein_1d got NaN or infinite values")
    try:
        from scipy.stats import wasserstein_distance
    except ImportError:  # pragma: no cover - scipy is a dependency; keep a fallback anyway
        return _wasserstein_numpy(x, y)
    return float(wasserstein_distance(x, y))


def _wasserstein_numpy(x: np.ndarray, y: np.ndarray) -> float:
    """Sort-based W1: sum over merged breakpoints of |F_x - F_y| times the gap width."""
    x = np.sort(x)
    y = np.sort(y)
    allv = np.sort(np.concatenate([x, y]))
    deltas = np.diff(allv)
    cdf_x = np.searchsorted(x, allv[:-1], side="right") / x.size
    cdf_y = np.searchsorted(y, allv[:-1], side="right") / y.size
    return float(np.sum(np.abs(cdf_x - cdf_y) * deltas))
