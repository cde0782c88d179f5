"""The single-positive baselines of Cole et al. (CVPR 2021): WAN, AN-LS, EPR and ROLE.

Formulas follow the official ``losses.py`` of ``elijahcole/single-positive-multi-label``
(function names given below). Cole computes ``-log(x + 1e-5)`` from probabilities
(``neg_log``); we use the logits-space forms of :mod:`mlpl_lab.losses.terms` (the ε = 0 limit),
so extreme logits give finite values and gradients instead of a clamp at -log 1e-5.

Measured against the official code (float64, identical inputs; fidelity audit,
``notebooks/fidelity.md``): AN, AN-LS, WAN, EPR and ROLE agree to ~1e-16 once Cole's 1e-5 is set to 0.
With it they differ by ≈ 4e-3 in the loss (the ε/p shift of every log), and at extreme logits
Cole's values clamp near -log 1e-5 ≈ 11.5 and their gradients vanish; ours are exact.

Reduction: Cole's ``compute_batch_loss`` divides the loss matrix by B·C and sums, i.e. the
mean over all N x C entries, then adds the batch-level regulariser (EPR, ROLE). For those two,
``reduction="none"`` returns the per-entry matrix *plus* the regulariser on every entry, so
that its mean is the loss, and ``"sum"`` is N·C times the mean.

Observed negatives (label 0; Cole's -1) are certain negatives: they take -log(1 - p) with
weight 1 in every loss here (Cole's AN/WAN/EPR assert there are none; his ROLE uses them only
to initialise the label estimate).
"""
from __future__ import annotations

import torch

from .registry import check_inputs, reduce, register_loss
from .terms import check_positive, masks, nll_neg, nll_pos, soft_bce

#: Cole's ``expected_num_pos`` for PASCAL VOC (20 classes, like the embedded scenes).
EXPECTED_NUM_POS = 1.5
#: Cole's ``ls_coef``.
LS_COEF = 0.1


def _reduce_with_reg(matrix: torch.Tensor, reg: torch.Tensor, reduction: str) -> torch.Tensor:
    """Cole's ``mean(matrix) + reg``; "none" spreads reg over every entry (same mean)."""
    if reduction == "mean":
        return matrix.mean() + reg
    if reduction == "sum":
        return matrix.sum() + matrix.numel() * reg
    if reduction == "none":
        return matrix + reg
    raise ValueError(f"reduction must be 'mean', 'sum' or 'none', got {reduction!r}")


def expected_positive_regularizer(probs: torch.Tensor, expected_num_pos: float) -> torch.Tensor:
    """R(p) = (mean_n Σ_i p_ni - k)² / C²  (Cole et al. 2021, ``expected_positive_regularizer`` with
    ``norm='2'``, divided by C² as ``loss_epr`` does)."""
    num_classes = probs.shape[1]
    return (probs.sum(1).mean(0) - expected_num_pos) ** 2 / num_classes ** 2


@register_loss("wan")
def wan_loss(logits, labels, *, reduction="mean"):
    """Weak assume negative (WAN, Cole et al. 2021; code ``loss_wan``).

    L = -log p (observed positive); -log(1 - p)/(C - 1) (unknown, assumed negative, down-
    weighted by γ = 1/(C - 1) so the assumed negatives of a row weigh like one positive);
    -log(1 - p) (observed negative: certain, full weight). Mean over N x C.
    """
    check_inputs(logits, labels)
    pos, neg, unk = masks(labels)
    c = logits.shape[1]
    weight = 1.0 / max(c - 1, 1)
    matrix = torch.where(pos, nll_pos(logits),
                         torch.where(unk, weight * nll_neg(logits), nll_neg(logits)))
    return reduce(matrix, reduction)


@register_loss("an_ls")
def an_ls_loss(logits, labels, *, ls_coef=LS_COEF, reduction="mean"):
    """Assume negative with label smoothing (AN-LS, Cole et al. Sec. 3; ``loss_an_ls``).

    Every target is smoothed by ε = ``ls_coef`` (default 0.1, Cole's ``ls_coef``):
    positive: (1-ε)(-log p) + ε(-log(1-p)); unknown and observed negative (target 0):
    (1-ε)(-log(1-p)) + ε(-log p). Mean over N x C.
    """
    check_inputs(logits, labels)
    if not 0.0 <= float(ls_coef) < 1.0:
        raise ValueError(f"ls_coef must be in [0, 1), got {ls_coef!r}")
    target = (labels == 1).to(logits.dtype)
    smoothed = (1 - ls_coef) * target + ls_coef * (1 - target)
    return reduce(soft_bce(logits, smoothed), reduction)


@register_loss("epr")
def epr_loss(logits, labels, *, expected_num_pos=EXPECTED_NUM_POS, reduction="mean"):
    """Expected positive regularisation (EPR, Cole et al. 2021; code ``loss_epr``).

    L = mean_{N x C}[ 1[s=1]·(-log p) + 1[s=0 observed]·(-log(1-p)) ] + (mean_n Σ_i p_ni - k)²/C²

    Unknown labels get no per-entry loss; the regulariser pulls the expected number of
    positives per image to k = ``expected_num_pos`` (default 1.5, Cole's value for PASCAL VOC;
    pass the statistic of your data, e.g. from the clean validation labels).
    """
    check_inputs(logits, labels)
    check_positive("expected_num_pos", expected_num_pos)
    pos, neg, _ = masks(labels)
    zero = torch.zeros_like(logits)
    matrix = torch.where(pos, nll_pos(logits), torch.where(neg, nll_neg(logits), zero))
    reg = expected_positive_regularizer(torch.sigmoid(logits), expected_num_pos)
    return _reduce_with_reg(matrix, reg, reduction)


@register_loss("role")
def role_loss(logits, labels, *, label_logits=None, expected_num_pos=EXPECTED_NUM_POS,
              reduction="mean"):
    """Regularised online label estimation (ROLE, Cole et al. 2021; code ``loss_role``).

    ``label_logits`` are the rows of the learnable N x C label matrix for this batch
    (g = σ(label_logits), the label estimate); f = σ(logits) the classifier. Then

    L = ½[L_pos(f) + L_pos(g)] + ½[BCE(f; ĝ) + BCE(g; f̂)] + ½[R(f) + R(g)]

    where ĝ, f̂ are detached (each side learns from the other as a soft target), L_pos is
    -log(·) on observed positives (and -log(1 - ·) on observed negatives, our addition: Cole
    uses observed negatives only in the initialisation), and R is the EPR regulariser with
    k = ``expected_num_pos`` (default 1.5, Cole's PASCAL value). The label matrix, its
    initialisation and its optimiser (lr ×10) live in the ``role`` method.
    """
    check_inputs(logits, labels)
    if not torch.is_tensor(label_logits) or label_logits.shape != logits.shape:
        raise ValueError("role needs label_logits: the (N, C) rows of the learnable label "
                         f"matrix for this batch, shaped like logits {tuple(logits.shape)}")
    check_positive("expected_num_pos", expected_num_pos)
    pos, neg, _ = masks(labels)
    zero = torch.zeros_like(logits)

    def observed_term(z):
        return torch.where(pos, nll_pos(z), torch.where(neg, nll_neg(z), zero))

    f, g = torch.sigmoid(logits), torch.sigmoid(label_logits)
    matrix = 0.5 * (observed_term(logits) + observed_term(label_logits))
    matrix = matrix + 0.5 * (soft_bce(logits, g.detach()) + soft_bce(label_logits, f.detach()))
    reg = 0.5 * (expected_positive_regularizer(f, expected_num_pos)
                 + expected_positive_regularizer(g, expected_num_pos))
    return _reduce_with_reg(matrix, reg, reduction)
