"""Entropy maximisation (EM) and its asymmetric pseudo-labelling (APL), Zhou et al. ECCV 2022.

Formulas follow ``Correr-Zhou/SPML-AckTheUnknown`` (``losses.py: loss_EM, loss_EM_APL``) and
GR Loss Appendix B, Eq. (22)–(23). Zhou computes ``-log(x + 1e-5)`` from probabilities; we
use logits-space forms (:mod:`mlpl_lab.losses.terms`), the ε = 0 limit, finite everywhere.

Measured against the official code (float64, identical inputs; fidelity audit,
``notebooks/fidelity.md``): EM and EM+APL agree to 1e-14 with the official ε set to 0. With ε = 1e-5
the loss differs by ≈ 4e-3 and clamps at extreme logits; EM+APL's soft-negative BCE also forms
1 − σ(z) from a rounded σ(z), which loses precision at z = ±30 (σ(30) = 1 − 9.4e-14 in float64).
Ours use σ(−z) and softplus instead: exact.

Encoding: Zhou stores APL's soft negatives *inside* the label matrix as ``-p`` (a negative
value = "soft negative with target p"). We keep one hard encoding (1 / 0 / -1) and pass the
soft targets as a separate float tensor ``soft_targets`` (NaN where an entry has none), so the
label encoding stays one.
"""
from __future__ import annotations

import torch

from .registry import check_inputs, reduce, register_loss
from .terms import entropy, masks, nll_neg, nll_pos, soft_bce

#: Zhou's PASCAL VOC values (20 classes, like the embedded scenes): α, β.
EM_ALPHA = 0.2
APL_BETA = 0.02


@register_loss("em")
def em_loss(logits, labels, *, alpha=EM_ALPHA, reduction="mean"):
    """Entropy-maximisation loss (EM; Zhou et al. ECCV 2022; GR Loss Eq. 22–23 without APL).

    L = -log p (observed positive); -α·H(p) (unknown: maximise the entropy of the
    prediction instead of pushing it to 0); -log(1 - p) (observed negative, certain).
    H(p) = -p log p - (1-p) log(1-p). Default α = 0.2 (Zhou's PASCAL value). Mean over N x C.
    Exact in logits space; Zhou's ``-log(x + 1e-5)`` differs by ≈ 4e-3 (module docstring).
    """
    check_inputs(logits, labels)
    pos, neg, _ = masks(labels)
    matrix = torch.where(pos, nll_pos(logits),
                         torch.where(neg, nll_neg(logits), -alpha * entropy(logits)))
    return reduce(matrix, reduction)


def check_soft_targets(soft_targets, logits: torch.Tensor) -> torch.Tensor:
    """``soft_targets``: None or an (N, C) float tensor with values in [0, 1] or NaN."""
    if soft_targets is None:
        return torch.full_like(logits, float("nan"))
    if not torch.is_tensor(soft_targets) or soft_targets.shape != logits.shape:
        raise ValueError("soft_targets must be an (N, C) float tensor shaped like logits "
                         "(NaN = no soft target), e.g. the rows of the em_apl method's matrix")
    finite = soft_targets[~torch.isnan(soft_targets)]
    if finite.numel() and (finite.min() < 0 or finite.max() > 1):
        raise ValueError("soft_targets must lie in [0, 1] (or be NaN)")
    return soft_targets.to(logits.dtype)


@register_loss("em_apl")
def em_apl_loss(logits, labels, *, soft_targets=None, alpha=EM_ALPHA, beta=APL_BETA,
                reduction="mean"):
    """EM with asymmetric pseudo-labelling (EM+APL; Zhou et al. ECCV 2022; GR Loss Eq. 21–23).

    L = -log p                                 observed positive
      = β·BCE(p, p̂)                            unknown with a soft negative pseudo-label p̂
      = -α·H(p)                                other unknown labels
      = -log(1 - p)                            observed negative (certain)

    p̂ = ``soft_targets`` (the prediction when the entry was pseudo-labelled, a constant:
    ``-observed`` in Zhou's code). Which entries get one is decided at the end of epochs by
    the ``em_apl`` method (ranking over the training set). Defaults α = 0.2, β = 0.02 (Zhou's
    PASCAL values). Mean over N x C. Exact in logits space: Zhou's 1e-5 epsilon and his
    1 − σ(z) from a rounded σ(z) at ±30 are the measured differences (module docstring).
    """
    check_inputs(logits, labels)
    soft = check_soft_targets(soft_targets, logits)
    pos, neg, unk = masks(labels)
    has_soft = unk & ~torch.isnan(soft)
    target = torch.nan_to_num(soft, nan=0.0)
    unknown = torch.where(has_soft, beta * soft_bce(logits, target), -alpha * entropy(logits))
    matrix = torch.where(pos, nll_pos(logits), torch.where(neg, nll_neg(logits), unknown))
    return reduce(matrix, reduction)
