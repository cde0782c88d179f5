"""Full-label BCE and the assume-negative (AN) baseline.

Both are the binary cross-entropy, computed from logits with ``softplus`` so they are finite
for any logit: -log σ(s) = softplus(-s) and -log(1 - σ(s)) = softplus(s).
"""
from __future__ import annotations

import torch
import torch.nn.functional as F

from .registry import check_inputs, reduce, register_loss


def positive_term(logits: torch.Tensor) -> torch.Tensor:
    """-log σ(s), finite for every logit."""
    return F.softplus(-logits)


def negative_term(logits: torch.Tensor) -> torch.Tensor:
    """-log(1 - σ(s)), finite for every logit."""
    return F.softplus(logits)


@register_loss("bce")
def bce_loss(logits, labels, *, reduction="mean"):
    """Binary cross-entropy on fully observed labels (the full-label oracle).

    L_ij = -[y_ij log σ(s_ij) + (1 - y_ij) log(1 - σ(s_ij))]   (OPML paper, Eq. 7)

    ``labels`` must be fully observed (1 / 0): an unknown (-1) raises, because the oracle
    must see the truth. Use ``"an"`` for partial labels. Reduction: mean over N x C.
    """
    check_inputs(logits, labels)
    if bool((labels == -1).any()):
        raise ValueError(
            "bce is the full-label oracle and got unknown labels (-1); train it on the true "
            "labels (regime 'full') or use the 'an' loss for partial labels"
        )
    y = labels.to(logits.dtype)
    return reduce(y * positive_term(logits) + (1 - y) * negative_term(logits), reduction)


@register_loss("an")
def an_loss(logits, labels, *, reduction="mean"):
    """Assume negative (AN): BCE where every unknown label is taken as a negative.

    L_ij = -log σ(s_ij) if y_ij = 1, else -log(1 - σ(s_ij))   (Cole et al. 2021, Eq. 2/3)

    Observed negatives (0) and unknowns (-1) both take the negative term; this is what turns
    hidden positives into false negatives. Reduction: mean over N x C (Cole's code).

    Cole's ``loss_an`` takes -log(x + 1e-5) of probabilities; with that ε set to 0 the two agree
    to ~1e-16 (fidelity audit, ``notebooks/fidelity.md``). With it, they differ by ≈ 4e-3 in the loss,
    and Cole's caps a confidently wrong entry at -log 1e-5 ≈ 11.5 with a vanishing gradient;
    this form is exact at any logit (see :mod:`mlpl_lab.losses.cole`).
    """
    check_inputs(logits, labels)
    pos = (labels == 1).to(logits.dtype)
    return reduce(pos * positive_term(logits) + (1 - pos) * negative_term(logits), reduction)
