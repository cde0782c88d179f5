r"""GR Loss Table 1 made executable: EN, EM, Hill and SPLC as configurations of the framework.

Each loss below is :func:`mlpl_lab.losses.gr.compose` (Eq. 4–5) with the k̂(p), v(p), L1, L2,
L3 that Table 1 (= Appendix Table 4) lists for that method; the tests check that each one
equals the standalone loss of the zoo to float64 precision. "Undefined" cells of the table
multiply a zero weight, so they are filled with 0.

=========  ==========================  ===========================  =====================
method     k̂(p)                        v(p) on unknown labels       L1 / L2 / L3
=========  ==========================  ===========================  =====================
EN         0                           1 if pseudo-negative else 0  -log p / – / -log(1-p)
EM (+APL)  1, or 0 if pseudo-negative  α, or β if pseudo-negative   -log p / -H(p) / BCE(p, p̂)
Hill       0                           1                            -log p / – / (λ-p)p²
SPLC       1[p > τ] (epoch ≥ 1)        1                            fm / fm / (λ-p)p²
GR         σ(w p + b)                  exp(-(p-μ)²/2σ²)             GCE q1 / q2 / q3
=========  ==========================  ===========================  =====================

(fm = focal margin, H = binary entropy.) The table writes SPLC's L3 as Hill and its L2 with
the margin; the SPLC code uses a focal negative and no margin on corrected labels —
``negative="focal", corrected_margin=False`` give that, to match ``splc``'s defaults.
"""
from __future__ import annotations

import torch

from .entropy import EM_ALPHA, APL_BETA, check_soft_targets
from .gr import compose
from .pseudo_negative import pseudo_negatives
from .registry import check_inputs, register_loss
from .robust import HILL_NEGATIVES, splc_corrected
from .terms import entropy, focal_margin_pos, focal_neg, hill_neg, masks, nll_neg, nll_pos, soft_bce


@register_loss("gr_as_en")
def gr_as_en(logits, labels, *, tau=None, negatives=None, reduction="mean"):
    """EN as a framework configuration: k̂ = 0; v = 1 on pseudo-negatives, 0 on the other
    unknown labels; L1 = L2 = -log p, L3 = -log(1 - p) (Table 1, column 1). Equals ``en``."""
    check_inputs(logits, labels)
    pseudo = pseudo_negatives(logits, labels, tau, negatives).to(logits.dtype)
    return compose(logits, labels, k=torch.zeros_like(logits), v=pseudo, L1=nll_pos(logits),
                   L2=nll_pos(logits), L3=nll_neg(logits), reduction=reduction)


@register_loss("gr_as_em")
def gr_as_em(logits, labels, *, soft_targets=None, alpha=EM_ALPHA, beta=APL_BETA,
             reduction="mean"):
    """EM (+APL) as a configuration: on unknown labels k̂ = 1, v = α, L2 = p log p +
    (1-p) log(1-p) = -H(p); on APL's soft negatives k̂ = 0, v = β, L3 = -p̂ log p -
    (1 - p̂) log(1 - p) (Table 1, column 2). L1 = -log p. Equals ``em`` (no soft targets)
    and ``em_apl``; observed negatives take L3 with p̂ = 0, i.e. -log(1 - p)."""
    check_inputs(logits, labels)
    soft = check_soft_targets(soft_targets, logits)
    _, _, unk = masks(labels)
    has_soft = unk & ~torch.isnan(soft)
    k = (~has_soft).to(logits.dtype)
    v = torch.where(has_soft, torch.full_like(logits, beta), torch.full_like(logits, alpha))
    target = torch.nan_to_num(soft, nan=0.0)
    return compose(logits, labels, k=k, v=v, L1=nll_pos(logits), L2=-entropy(logits),
                   L3=soft_bce(logits, target), L_neg=nll_neg(logits), reduction=reduction)


@register_loss("gr_as_hill")
def gr_as_hill(logits, labels, *, lamb=1.5, margin=1.0, gamma=2.0, positive="bce",
               reduction="mean"):
    """Hill as a configuration: k̂ = 0, v = 1, L1 = -log p, L2 undefined (0),
    L3 = (λ - p) p² (Table 1, column 3). ``positive="focal_margin"`` uses the Hill paper's
    positive term instead. Equals ``hill`` with the same ``positive``."""
    check_inputs(logits, labels)
    if positive not in ("focal_margin", "bce"):
        raise ValueError(f"positive must be 'focal_margin' or 'bce', got {positive!r}")
    L1 = nll_pos(logits) if positive == "bce" else focal_margin_pos(logits, margin, gamma)
    zero = torch.zeros_like(logits)
    return compose(logits, labels, k=zero, v=torch.ones_like(logits), L1=L1, L2=zero,
                   L3=hill_neg(logits, lamb), reduction=reduction)


@register_loss("gr_as_splc")
def gr_as_splc(logits, labels, *, epoch=0, tau=0.6, change_epoch=1, margin=1.0, gamma=2.0,
               negative="hill", corrected_margin=True, lamb=1.5, reduction="mean"):
    """SPLC as a configuration: k̂ = 1[p > τ] (a step; from ``change_epoch`` on), v = 1,
    L1 = L2 = focal margin, L3 = (λ - p) p² (Table 1, column 4, literally). The SPLC code's
    choices are options: ``negative="focal"`` (focal negative) and ``corrected_margin=False``
    (L2 without margin). Equals ``splc`` with the same ``negative``/``corrected_margin``.

    **This literal Table 1 form collapses when trained on the embedded scenes** (44.6 vs 83.9
    mAP on the cpu profile; see ``splc``): the margin on corrected labels keeps pushing
    confident pseudo-positives up. The working form — the SPLC code's — is registered as
    ``gr_as_splc_code`` (``negative="focal", corrected_margin=False``); train that one to
    reproduce SPLC inside the framework."""
    check_inputs(logits, labels)
    if negative not in HILL_NEGATIVES:
        raise ValueError(f"negative must be one of {HILL_NEGATIVES}, got {negative!r}")
    k = splc_corrected(logits, labels, tau, epoch, change_epoch).to(logits.dtype)
    L3 = hill_neg(logits, lamb) if negative == "hill" else focal_neg(logits, gamma)
    return compose(logits, labels, k=k, v=torch.ones_like(logits),
                   L1=focal_margin_pos(logits, margin, gamma),
                   L2=focal_margin_pos(logits, margin if corrected_margin else 0.0, gamma),
                   L3=L3, reduction=reduction)


@register_loss("gr_as_splc_code")
def gr_as_splc_code(logits, labels, *, epoch=0, tau=0.6, change_epoch=1, margin=1.0, gamma=2.0,
                    reduction="mean"):
    """SPLC inside the framework in the form that trains: the official SPLC code's focal
    negative as L3 and no margin on corrected labels (L2 = focal, p unshifted). Equals
    ``splc`` at its defaults; :func:`gr_as_splc` is the literal Table 1 form."""
    return gr_as_splc(logits, labels, epoch=epoch, tau=tau, change_epoch=change_epoch,
                      margin=margin, gamma=gamma, negative="focal", corrected_margin=False,
                      reduction=reduction)
