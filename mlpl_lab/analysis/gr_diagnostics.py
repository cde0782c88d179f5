"""Diagnostics of GR Loss that need the true labels (the embedded data keeps them).

* :func:`fn_rate_by_confidence` — GR Loss Appendix E.3 / Fig. 5: split [0, 1] into buckets
  of the model's confidence p and, among the *unknown* training labels of each bucket, the
  fraction that are hidden positives, FN / (FN + TN). Assumption 1 says this is flat before
  training; Assumption 2 that it increases with p after training, like k̂(p) (Eq. 6).
* :func:`separation` — Fig. 3a: the Wasserstein-1 distance between the confidence
  distributions of hidden positives and true negatives among the unknown labels (larger =
  the model tells them apart better).
* per epoch, every run of the lab records the separation through the loop's ``separation``
  probe (:mod:`mlpl_lab.methods.probes`), so GR and AN can be compared epoch by epoch from
  their histories (``chapters.gr.separation_table``).

Where we measure: the paper uses the *validation* set's unannotated labels (its val labels
are single-positive); our validation and test sets are fully labelled, so we measure on the
unknown labels of the *training* set — the very labels the loss treats with k̂ and v.
"""
from __future__ import annotations

from typing import Dict

import numpy as np
import torch

from ..methods.probes import separation_probe


def _as_tensors(probs, observed, true_labels):
    probs = torch.as_tensor(probs).detach().float().cpu()
    observed = torch.as_tensor(observed).cpu()
    true_labels = torch.as_tensor(true_labels).cpu()
    if not (probs.shape == observed.shape == true_labels.shape) or probs.ndim != 2:
        raise ValueError(f"probs {tuple(probs.shape)}, observed {tuple(observed.shape)} and "
                         f"true_labels {tuple(true_labels.shape)} must all be the same (N, C)")
    return probs, observed, true_labels


def unknown_confidences(probs, observed, true_labels):
    """Confidences of the unknown labels (observed == -1), split into hidden positives
    (true label 1) and true negatives (true label 0): two 1-D numpy arrays."""
    probs, observed, true_labels = _as_tensors(probs, observed, true_labels)
    unk = observed == -1
    hidden = probs[unk & (true_labels == 1)].numpy()
    negatives = probs[unk & (true_labels == 0)].numpy()
    return hidden, negatives


def fn_rate_by_confidence(probs, observed, true_labels, bins: int = 20) -> Dict[str, np.ndarray]:
    """FN / (FN + TN) among unknown labels per confidence bucket (GR Loss Fig. 5).

    Returns ``{"edges", "centers", "rate", "count"}``; ``rate`` is NaN for an empty bucket.
    The paper uses 100 buckets on large validation sets; 20 suit our few thousand images.
    """
    if not isinstance(bins, int) or bins < 1:
        raise ValueError(f"bins must be a positive integer, got {bins!r}")
    hidden, negatives = unknown_confidences(probs, observed, true_labels)
    edges = np.linspace(0.0, 1.0, bins + 1)
    fn, _ = np.histogram(hidden, bins=edges)
    tn, _ = np.histogram(negatives, bins=edges)
    count = fn + tn
    with np.errstate(invalid="ignore", divide="ignore"):
        rate = np.where(count > 0, fn / np.maximum(count, 1), np.nan)
    return {"edges": edges, "centers": (edges[:-1] + edges[1:]) / 2, "rate": rate, "count": count}


def separation(probs, observed, true_labels) -> float:
    """W1 distance between hidden-positive and true-negative confidences (GR Loss Fig. 3a).
    NaN when either group is empty (e.g. fully observed labels)."""
    # the same measurement the training loop's separation probe records each epoch
    return separation_probe(*_as_tensors(probs, observed, true_labels))["separation"]


def label_frequency(observed, true_labels) -> float:
    """a = P(s = 1 | y = 1), the fraction of true positives that are observed (SCAR constant
    of Eq. 6); 1/1.46 on VOC in the paper's Fig. 5c."""
    observed = torch.as_tensor(observed)
    true_labels = torch.as_tensor(true_labels)
    n_true = int((true_labels == 1).sum())
    if n_true == 0:
        raise ValueError("label_frequency: there are no true positives")
    return int(((observed == 1) & (true_labels == 1)).sum()) / n_true


def k_from_assumption(p, a: float) -> np.ndarray:
    """k(x) = (1 - a)·p / (1 - a·p) (Eq. 6): what k̂(p) should approach at the end of
    training if p were the calibrated posterior and labels were missing completely at random."""
    p = np.asarray(p, dtype=np.float64)
    return (1 - a) * p / (1 - a * p)
