"""The variational PU loss of PU-MLC (Zhixiang Yuan, Kaixin Zhang, Tao Huang, *Positive Label
Is All You Need for Multi-Label Classification*, ICME 2024), per class.

PU-MLC trains on the observed **positives only**: for class c, P_c = the images whose label
is an observed positive, and the unlabeled set U = **every** image of the batch (the
positives included, as the paper and the code say). Anything that is not an observed
positive — unknowns and observed negatives alike — is only part of U; the loss never reads a
negative.

Per class c, with logits s_·c of the batch (the paper's Eq. 7–11 with the official code's choices)::

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
default); the official code averages the tempered q (``rebalance="code"``). With
``alpha=None`` there is no temperature (T = 1) and with ``gamma=0`` no re-balancing: plain
vPU (Chen et al., NeurIPS 2020).

Measured against the official ``vpuLoss`` (``TAKELAMAG/PU-MLC`` ``src/loss_functions/vpu_loss.py``,
float64, identical inputs; fidelity audit, ``notebooks/fidelity.md``): with ``rebalance="code"`` the two
agree to 5e-6 on ordinary logits. Where they differ, and why:

* **log q near zero.** The code forms log q as ``log(exp(log(σ + 1e-10)) + 1e-10)``, which is
  floored near log(2e-10) ≈ −22.3: on a positive whose tempered logit is below about −20 its
  gradient nearly vanishes. Here log q = logσ(s/T), exact for every logit, so a confidently
  missed positive keeps its pull.
* **zero spread.** A class whose logits have zero spread in the batch has T = 0 in the code:
  inf/NaN values and NaN gradients. Here T_c is floored at ``min_temperature`` (default 1e-3).

dtype: the loss is computed in the logits' dtype — float64 stays float64 (so it can be
gradchecked), half-precision logits (autocast) are computed in float32.

Defaults α = 1.0, γ = 0.55: the paper's and code's COCO values (VOC: α = 2.0, γ = 0.85).
"""
from __future__ import annotations

import math

import torch
import torch.nn.functional as F

from .registry import check_inputs, register_loss

REBALANCE = ("paper", "code")


def at_least_float32(x: torch.Tensor) -> torch.Tensor:
    """``x`` in its own dtype when that is float32 or float64; half precision (autocast's
    float16/bfloat16) is raised to float32, where logs and log-sum-exps of probabilities keep
    their small terms."""
    return x.float() if x.dtype in (torch.float16, torch.bfloat16) else x


def pu_temperature(logits: torch.Tensor, alpha: float | None, min_temperature: float = 1e-3) -> torch.Tensor:
    """T_c = min(α · std_i(s_ic), 1) per class (C,), detached, floored at ``min_temperature``;
    all ones when ``alpha`` is None."""
    if alpha is None:
        return torch.ones(logits.shape[1], dtype=logits.dtype, device=logits.device)
    std = logits.detach().std(dim=0, unbiased=False)
    return torch.clamp(alpha * std, min=min_temperature, max=1.0)


def vpu_rebalance_weight(logits: torch.Tensor, temperature: torch.Tensor, gamma: float,
                         rebalance: str = "paper") -> torch.Tensor:
    """w_c = (mean_i p_ic)^γ (Eq. 9), detached: p = σ(s) (``"paper"``) or the tempered
    q = σ(s/T_c) (``"code"``). Shape (C,)."""
    with torch.no_grad():
        s = logits.detach()
        base = torch.sigmoid(s) if rebalance == "paper" else torch.exp(F.logsigmoid(s / temperature))
        return base.mean(dim=0) ** gamma


def vpu_from_statistics(logits: torch.Tensor, positives: torch.Tensor, temperature: torch.Tensor,
                        weight: torch.Tensor) -> torch.Tensor:
    """The per-class losses (C,) of Eq. 11 for **given** T_c and w_c (both (C,) constants):

        L_c = w_c · log mean_i σ(s_ic / T_c) − mean_{i ∈ P_c} log σ(s_ic / T_c)

    ``positives``: (B, C), 1 on the observed positives. This is the differentiable part of
    :func:`vpu_loss`, which computes T_c and w_c from the detached logits and calls it; it is
    exposed so that its gradient can be checked with the detached statistics held fixed."""
    s = at_least_float32(logits)
    B = s.shape[0]
    T = temperature.detach().to(s.dtype)
    log_q = F.logsigmoid(s / T)                                   # (B, C), exact for any logit
    log_mean_q = torch.logsumexp(log_q, dim=0) - math.log(B)      # log mean_i q_ic
    pos = (positives == 1).to(s.dtype)
    n_pos = pos.sum(dim=0)
    pos_term = -(log_q * pos).sum(dim=0) / n_pos.clamp(min=1)    # 0 for a class with no positive
    return weight.detach().to(s.dtype) * log_mean_q + pos_term


@register_loss("vpu")
def vpu_loss(logits, labels, *, alpha: float | None = 1.0, gamma: float = 0.55,
             rebalance: str = "paper", min_temperature: float = 1e-3, reduction: str = "sum"):
    """PU-MLC's variational PU loss (module docstring; paper Eq. 7, 9–11). ``reduction``: ``"sum"``
    over classes (default, the paper's and code's scale), ``"mean"`` over classes, or
    ``"none"`` for the (C,) per-class losses.

    Options (defaults first): ``alpha`` 1.0 (None: no temperature), ``gamma`` 0.55,
    ``rebalance`` ``"paper"`` | ``"code"``, ``min_temperature`` 1e-3 (the lab's floor on T_c;
    the code has none). Computed in the logits' dtype (float32 at least). Differences from the
    official code, measured: module docstring."""
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
    s = at_least_float32(logits)
    T = pu_temperature(s, alpha, min_temperature)
    w = vpu_rebalance_weight(s, T, gamma, rebalance)
    per_class = vpu_from_statistics(s, labels, T, w)
    if reduction == "none":
        return per_class
    return per_class.sum() if reduction == "sum" else per_class.mean()
