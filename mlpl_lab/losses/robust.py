"""Robust losses used as SPML baselines: Focal, ASL, Hill and SPLC.

All of them live under the assume-negative view: unknown labels (-1) are negatives, some of
them false; the losses differ in how much a confident "negative" is allowed to pull.
Observed negatives (0) are certain negatives and take the same negative term (nothing here
re-labels them; SPLC corrects unknown labels only).

Reduction: the reference codes (``Alibaba-MIIL/ASL``, ``xinyu1205/robust-loss-mlml``) *sum*
over the batch; we default to the mean over N x C like the rest of the zoo, so one learning
rate fits every loss of a comparison. With Adam the two differ only through Adam's ε;
``reduction="sum"`` gives the reference scale.

Measured against the official code (float64, identical inputs, settings matched; fidelity
audit, ``notebooks/fidelity.md``): Focal, ASL, Hill and SPLC agree to ≤ 1e-11. Where they differ:

* the official ``AsymmetricLoss`` (which the robust-loss code also uses for Focal) takes
  ``log(p.clamp(min=1e-8))``, so a positive whose logit is below logit(1e-8) ≈ −18.4 gets a
  constant loss (−log 1e-8 ≈ 18.4) and **zero gradient**; ours (logits space) is exact;
* the robust-loss baselines' Focal computes the focusing weight without gradient
  (``disable_torch_grad_focal_loss=True``): ``focal(detach_weight=True)``;
* SPLC's official targets are 0/1 (no observed-negative state), so it also relabels an
  **observed negative** whose p exceeds τ; ours corrects unknown labels only.
"""
from __future__ import annotations

import torch
import torch.nn.functional as F

from .registry import check_inputs, reduce, register_loss
from .terms import focal_margin_pos, focal_neg, hill_neg, nll_pos

HILL_NEGATIVES = ("focal", "hill")


@register_loss("focal")
def focal_loss(logits, labels, *, gamma=2.0, alpha=None, detach_weight=False, reduction="mean"):
    """Focal loss (Lin et al. ICCV 2017, Sec. 3) under assume negative: unknown labels and
    observed negatives alike are negatives.

    L = -α_t (1 - p_t)^γ log p_t, p_t = p for an observed positive, 1 - p otherwise.
    Defaults γ = 2 (Lin et al.) and ``alpha=None`` (no class-balance factor, as the SPML
    baselines in GR Loss Table 2 and the robust-loss code); ``alpha=0.25`` gives Lin's α_t
    (α on positives, 1 - α on negatives). ``detach_weight=True`` treats the modulating factor
    (1 - p_t)^γ as a constant in the backward pass: same value, gradient -(1 - p_t)^γ (1 - p_t)
    instead of Lin's full derivative. That is what the robust-loss baselines' Focal computes
    (``xinyu1205/robust-loss-mlml``, ``AsymmetricLoss`` with ``disable_torch_grad_focal_loss=True``);
    default False (Lin et al.). The official code also clamps log p at 1e-8 (module docstring:
    zero gradient on a positive below a logit of ≈ −18.4); ours is exact. Mean over N x C.
    """
    check_inputs(logits, labels)
    if gamma < 0:
        raise ValueError(f"gamma must be >= 0, got {gamma!r}")
    pos = labels == 1
    w_pos, w_neg = torch.sigmoid(-logits) ** gamma, torch.sigmoid(logits) ** gamma
    if detach_weight:
        w_pos, w_neg = w_pos.detach(), w_neg.detach()
    pos_term = w_pos * nll_pos(logits)
    neg_term = w_neg * F.softplus(logits)
    if alpha is not None:
        if not 0.0 < float(alpha) < 1.0:
            raise ValueError(f"alpha must be in (0, 1) or None, got {alpha!r}")
        pos_term, neg_term = alpha * pos_term, (1 - alpha) * neg_term
    return reduce(torch.where(pos, pos_term, neg_term), reduction)


@register_loss("asl")
def asl_loss(logits, labels, *, gamma_neg=4.0, gamma_pos=0.0, clip=0.05, detach_focal=False,
             reduction="mean"):
    """Asymmetric loss (ASL, Ridnik et al. ICCV 2021: asymmetric focusing + probability shifting)
    under assume negative: unknown labels and observed negatives alike are negatives.

    L+ = (1 - p)^{γ+} · (-log p);  L- = p_m^{γ-} · (-log(1 - p_m)),  p_m = max(p - m, 0).

    Defaults γ- = 4, γ+ = 0, m = ``clip`` = 0.05: the training defaults of the official
    ``train.py`` (the class default is γ+ = 1). ``detach_focal``: the paper differentiates
    through the focusing weight (its gradient analysis, Sec. 3.3), the code's
    ``disable_torch_grad_focal_loss=True`` computes the weight without gradient; default
    False (paper), True gives the code. -log(1 - p_m) is computed as
    -log(min(σ(-z) + m, 1)), finite for every logit. -log p is exact (softplus): the official
    ``log(p.clamp(min=1e-8))`` gives a positive below a logit of logit(1e-8) ≈ −18.4 a constant
    loss and zero gradient (measured in the fidelity audit, ``notebooks/fidelity.md``). Mean over N x C.
    """
    check_inputs(logits, labels)
    if gamma_neg < 0 or gamma_pos < 0 or not 0 <= clip < 1:
        raise ValueError(f"need gamma_neg, gamma_pos >= 0 and 0 <= clip < 1, got "
                         f"{gamma_neg!r}, {gamma_pos!r}, {clip!r}")
    pos = labels == 1
    one_minus_p = torch.sigmoid(-logits)
    if clip > 0:
        log_neg = torch.log(torch.clamp(one_minus_p + clip, max=1.0))
    else:
        log_neg = F.logsigmoid(-logits)
    w_pos = one_minus_p ** gamma_pos
    w_neg = torch.clamp(torch.sigmoid(logits) - clip, min=0.0) ** gamma_neg
    if detach_focal:
        w_pos, w_neg = w_pos.detach(), w_neg.detach()
    matrix = torch.where(pos, w_pos * nll_pos(logits), -w_neg * log_neg)
    return reduce(matrix, reduction)


@register_loss("hill")
def hill_loss(logits, labels, *, lamb=1.5, margin=1.0, gamma=2.0, positive="focal_margin",
              reduction="mean"):
    """Hill loss (Zhang et al. 2021, arXiv 2112.07368; GR Loss Eq. 24).

    Negatives (unknown and observed): L- = (λ - p) p², a hill-shaped weight on -p that
    stops pulling confident "negatives" (possible false negatives) down.
    Positives: ``positive="focal_margin"`` (default, the Hill paper and the official ``Hill``
    class): (1 - p_m)^γ (-log p_m) with p_m = σ(z - m); ``positive="bce"``: -log p, the form in
    GR Loss Table 1 and in the GR Loss repository's ``hill_loss``.
    Defaults λ = 1.5, m = 1, γ = 2 (official class defaults). Mean over N x C.
    """
    check_inputs(logits, labels)
    if positive not in ("focal_margin", "bce"):
        raise ValueError(f"positive must be 'focal_margin' or 'bce', got {positive!r}")
    pos = labels == 1
    pos_term = focal_margin_pos(logits, margin, gamma) if positive == "focal_margin" \
        else nll_pos(logits)
    return reduce(torch.where(pos, pos_term, hill_neg(logits, lamb)), reduction)


def splc_corrected(logits: torch.Tensor, labels: torch.Tensor, tau: float, epoch: int,
                   change_epoch: int) -> torch.Tensor:
    """SPLC's step pseudo-label: unknown entries with σ(z) > τ, from ``change_epoch`` on."""
    if epoch < change_epoch:
        return torch.zeros_like(labels, dtype=torch.bool)
    return (labels == -1) & (torch.sigmoid(logits.detach()) > tau)


@register_loss("splc")
def splc_loss(logits, labels, *, epoch=0, tau=0.6, change_epoch=1, margin=1.0, gamma=2.0,
              negative="focal", corrected_margin=False, lamb=1.5, reduction="mean"):
    """Self-paced loss correction with focal margin (SPLC, Zhang et al. 2021, Eq. 25 of GR Loss).

    L+ = loss+(p) for observed positives;
    L- = 1[p ≤ τ]·loss-(p) + 1[p > τ]·loss+(p) for unknown labels (from ``change_epoch`` on;
    the correction holds for this batch only, nothing is stored); observed negatives: loss-.

    loss+ = focal margin (1 - p_m)^γ (-log p_m), p_m = σ(z - m).
    loss- = ``negative="focal"`` (default, the official ``SPLC`` class): p^γ (-log(1 - p));
    ``negative="hill"``: (λ - p) p² with λ = ``lamb`` (1.5), the L3 that GR Loss's Table 1
    lists for SPLC.
    ``corrected_margin``: what a corrected label pays. SPLC's paper writes loss+(p) as a
    function of p = σ(z) and its code subtracts the margin from *observed* positives only, so
    a corrected label gets (1 - p)^γ (-log p) (default, ``False``). GR Loss's Table 1 writes
    L2 = focal margin, i.e. with the margin (``True``; the default of ``gr_as_splc``). On the
    embedded scenes the margin on corrected labels is not harmless: it keeps pushing already
    confident pseudo-positives up and the cpu-profile run collapses (44.6 vs 83.9 mAP).
    Defaults τ = 0.6, change_epoch = 1 (0-based: from the second epoch), m = 1, γ = 2
    (official class defaults). Mean over N x C.

    Observed negatives are never corrected here. The official ``SPLC`` works on 0/1 targets, so
    an observed negative (0, like an unknown) above τ is relabelled too; in single-positive data
    there are none, in the partial-label regimes ours keeps the observation.
    """
    check_inputs(logits, labels)
    if negative not in HILL_NEGATIVES:
        raise ValueError(f"negative must be one of {HILL_NEGATIVES}, got {negative!r}")
    if not 0.0 < float(tau) < 1.0:
        raise ValueError(f"tau must be in (0, 1), got {tau!r}")
    pos = labels == 1
    corrected = splc_corrected(logits, labels, tau, epoch, change_epoch)
    pos_term = focal_margin_pos(logits, margin, gamma)
    corr_term = focal_margin_pos(logits, margin if corrected_margin else 0.0, gamma)
    neg_term = focal_neg(logits, gamma) if negative == "focal" else hill_neg(logits, lamb)
    matrix = torch.where(pos, pos_term, torch.where(corrected, corr_term, neg_term))
    return reduce(matrix, reduction)
