"""Train-set AP against the observed labels: the reliability signal of OPML-SP (used during
training, so it lives with the methods).

The OPML paper (Sec. III-E) smooths and corrects labels with the per-class AP "on the
training set" and says "we use the AP scores of the observed labels".  Under single
positive the observed matrix holds positives and unknowns only; with the unknowns *ignored*
no negative is left and every class with a positive gets AP = 1 (scikit-learn's and our
``metrics.average_precision``'s convention), which would make the AP useless.  So the
default treats the unknowns as negatives (the AN reading, ``labels.assume_negative``): AP_j
then says how well the model ranks the observed positives of class j above everything
else, a number the learner can compute without the truth.  ``unknowns="ignore"`` gives the
literal ``average_precision(..., ignore_index=-1)`` reading (meaningful only when observed
negatives exist, e.g. regime "full" or "known_proportion").
"""
from __future__ import annotations

import torch

from ..core import labels as L
from ..core.metrics import average_precision



def train_ap_observed(probs: torch.Tensor, observed: torch.Tensor, unknowns: str = "negative") -> torch.Tensor:
    """Per-class AP (C,) in [0, 1] of ``probs`` (N, C) against the observed labels (1/0/-1).

    ``unknowns="negative"`` (default): unknown entries count as negatives (see the module
    docstring for why); ``"ignore"``: unknown entries are left out (``ignore_index=-1``).
    A class with no observed positive gets AP 0 (Cole's convention).
    """
    L.validate(observed)
    obs = torch.as_tensor(observed).long().cpu()
    if unknowns == "negative":
        return average_precision(probs, torch.as_tensor(L.assume_negative(obs)).long(), ignore_index=-1)
    if unknowns == "ignore":
        return average_precision(probs, obs, ignore_index=-1)
    raise ValueError(f"unknowns must be 'negative' (AN reading) or 'ignore', got {unknowns!r}")


def correction_precision(flipped: torch.Tensor, true_labels: torch.Tensor) -> float:
    """Share of corrected (flipped to positive) entries that are true positives; NaN if none.

    A diagnostic only: it reads the truth, which no method may train on."""
    flipped = torch.as_tensor(flipped).bool()
    n = int(flipped.sum())
    if n == 0:
        return float("nan")
    return float((torch.as_tensor(true_labels).bool() & flipped).sum()) / n
