"""Partial BCE: binary cross-entropy on the observed entries only (positives and negatives)."""
from __future__ import annotations

import torch.nn.functional as F

from .registry import check_inputs, reduce, register_loss


@register_loss("partial_bce")
def partial_bce_loss(logits, labels, *, reduction="mean"):
    """BCE over the **observed** entries (1 and 0); unknowns (-1) are ignored.

    L = -1/|O| Σ_{(i,j) ∈ O} [y_ij log σ(s_ij) + (1 - y_ij) log(1 - σ(s_ij))],  O = {y_ij ≠ -1}

    The baseline of the known-label-proportion protocol (HCP-MLR-PL; PU-MLC's comparisons use
    methods that read annotated negatives): unlike AN it does not invent negatives, unlike
    PU-MLC it trusts the annotated ones. ``reduction``: ``"mean"`` over observed entries (0 when
    none is observed), ``"sum"``, or ``"none"`` (the N x C matrix, 0 at unknowns).
    """
    check_inputs(logits, labels)
    observed = (labels != -1).to(logits.dtype)
    matrix = F.binary_cross_entropy_with_logits(logits, (labels == 1).to(logits.dtype), reduction="none") * observed
    return reduce(matrix, reduction, denominator=observed.sum().clamp(min=1))
