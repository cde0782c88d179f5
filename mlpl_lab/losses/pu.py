"""The variational PU loss of PU-MLC (Zhixiang Yuan, Kaixin Zhang, Tao Huang, *Positive Label
Is All You Need for Multi-Label Classification*, ICME 2024), per class.

PU-MLC trains on the observed **positives only**: for class c, P_c = the images whose label
is an observed positive, and the unlabeled set U = **every** image of the batch (the
positives included, as the paper and the code say). Anything that is not an observed
positive — unknowns and observed negatives alike — is only part of U; the loss never reads a
negative.

Per class c, with logits s_·c of the batch (notes §3.5)::

    T_c = min(α · std_i(s_ic), 1)          adaptive temperature, Eq. 10 (population std, detached)
    q_ic = σ(s_ic / T_c)
    w_c = (mean_i p_ic)^γ                   re-balance factor, Eq. 9 (detached)
    L_c = w_c · log mean_i q_ic − mean_{i ∈ P_c} log q_ic        Eq. 11

Eq. 7 is the plain per-class vPU loss (w_c = 1, T_c = 1), Eq. 9 adds w_c, Eq. 11 the
temperature. L = Σ_c L_c, the first term of Eq. 8 (the code's scale: summed over classes, so
it grows with C). A class with no
positive in the batch contributes its unlabeled term only. Prediction uses the untempered
σ(s).

Paper vs code: Eq. 9 averages the **untempered** p = σ(s) in w_c (``rebalance="paper"``,
default); the official code averages the tempered q (``rebalance="code"``). The official
code has no guard for a class whose logits have zero spread in the batch (T = 0 gives
inf/NaN); here T_c is floored at ``min_temperature`` (default 1e-3, documented). With
``alpha=None`` there is no temperature (T = 1) and with ``gamma=0`` no re-balancing: plain
vPU (Chen et al., NeurIPS 2020).

Defaults α = 1.0, γ = 0.55: the paper's and code's COCO values (VOC: α = 2.0, γ = 0.85).
"""
from __future__ import annotations

import math

import torch
import torch.nn.functional as F

from .registry import check_inputs, register_loss

REBALANCE = ("paper", "code")


def pu_temperature(logits: torch.Tensor, alpha: float | None, min_temperature: float = 1e-3) -> torch.Tensor:
    """T_c = min(α · std_i(s_ic), 1) per class (C,), detached, floored at ``min_temperature``;
    all ones when ``alpha`` is None."""
    if alpha is None:
        return torch.ones(logits.shape[1], dtype=logits.dtype, device=logits.device)
    std = logits.detach().std(dim=0, unbiased=False)
    return torch.clamp(alpha * std, min=min_temperature, max=1.0)


@register_loss("vpu")
def vpu_loss(logits, labels, *, alpha: float | None = 1.0, gamma: float = 0.55,
             rebalance: str = "paper", min_temperature: float = 1e-3, reduction: str = "sum"):
    """PU-MLC's variational PU loss (module docstring; paper Eq. 7, 9–11). ``reduction``: ``"sum"``
    over classes (default, the paper's and code's scale), ``"mean"`` over classes, or
    ``"none"`` for the (C,) per-class losses."""
    check_inputs(logits, labels)
    if alpha is not None and not (isinstance(alpha, (int, float)) and alpha > 0):
        raise ValueError(f"alpha must be a positive number or None (no temperature), got {alpha!r}")
    if not (isinstance(gamma, (int, float)) and gamma >= 0):
        raise ValueError(f"gamma must be a number >= 0, got {gamma!r}")
    if rebalance not in REBALANCE:
        raise ValueError(f"rebalance must be one of {REBALANCE} (paper: untempered σ(s); code: tempered q), "
                         f"got {rebalance!r}")
    if not min_temperature > 0:
        raise ValueError(f"min_temperature must be > 0, got {min_temperature!r}")
    if reduction not in ("sum", "mean", "none"):
        raise ValueError(f"reduction must be 'sum', 'mean' or 'none', got {reduction!r}")
    s = logits.float()
    B = s.shape[0]
    T = pu_temperature(s, alpha, min_temperature)
    log_q = F.logsigmoid(s / T)                                   # (B, C)
    log_mean_q = torch.logsumexp(log_q, dim=0) - math.log(B)      # log mean_i q_ic
    with torch.no_grad():
        base = torch.sigmoid(s) if rebalance == "paper" else torch.exp(log_q)
        w = base.mean(dim=0) ** gamma
    pos = (labels == 1).to(s.dtype)
    n_pos = pos.sum(dim=0)
    pos_term = -(log_q * pos).sum(dim=0) / n_pos.clamp(min=1)    # 0 for a class with no positive
    per_class = w * log_mean_q + pos_term
    if reduction == "none":
        return per_class
    return per_class.sum() if reduction == "sum" else per_class.mean()
