"""Per-entry loss terms shared by the loss zoo, all written in logits space.

Every term is a function of the raw logit ``z`` (and maybe a target) that returns an
N x C matrix, finite with a finite gradient for any finite logit (the tests sweep
[-1e4, 1e4]). The trick is always the same: never form ``log(p)`` or ``log(1 - p)`` from a
rounded probability; use ``logsigmoid``/``softplus`` (``-log σ(z) = softplus(-z)``,
``-log(1 - σ(z)) = softplus(z)``) and take ``1 - p`` as ``σ(-z)``.

The reference codes (Cole et al., EM/APL, GR Loss) compute ``-log(p + ε)`` from
probabilities with ε = 1e-5 (Cole, EM) or 1e-7 (GR Loss). Our forms are the ε = 0 limits:
they differ from the references by at most ε/p relatively (below 1e-3 for p > 1e-2), and,
unlike the references, they keep the gradient of a confidently wrong entry instead of
flattening it at -log ε.
"""
from __future__ import annotations

import torch
import torch.nn.functional as F


def masks(labels: torch.Tensor):
    """Boolean masks (observed positive, observed negative, unknown) of 1 / 0 / -1 labels."""
    return labels == 1, labels == 0, labels == -1


def nll_pos(z: torch.Tensor) -> torch.Tensor:
    """-log σ(z): the BCE term of a positive target."""
    return F.softplus(-z)


def nll_neg(z: torch.Tensor) -> torch.Tensor:
    """-log(1 - σ(z)): the BCE term of a negative target."""
    return F.softplus(z)


def soft_bce(z: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    """-[t log σ(z) + (1 - t) log(1 - σ(z))] for a soft target t in [0, 1]."""
    return target * F.softplus(-z) + (1 - target) * F.softplus(z)


def entropy(z: torch.Tensor) -> torch.Tensor:
    """Binary entropy H(p) = -p log p - (1 - p) log(1 - p) of p = σ(z), in nats."""
    return torch.sigmoid(z) * F.softplus(-z) + torch.sigmoid(-z) * F.softplus(z)


def gce_pos(z: torch.Tensor, q) -> torch.Tensor:
    """(1 - p^q) / q (GR Loss Eq. 14, L1/L2); ``q=None`` gives its q -> 0 limit -log p.

    Written as ``-expm1(q · logσ(z)) / q`` so that it is exact for small q and finite for
    any logit (p^q underflows to 0 only where the value is exactly 1/q anyway).
    """
    if q is None:
        return F.softplus(-z)
    return -torch.expm1(q * F.logsigmoid(z)) / q


def gce_neg(z: torch.Tensor, q) -> torch.Tensor:
    """(1 - (1 - p)^q) / q (GR Loss Eq. 14, L3); ``q=None`` gives -log(1 - p)."""
    if q is None:
        return F.softplus(z)
    return -torch.expm1(q * F.logsigmoid(-z)) / q


def focal_margin_pos(z: torch.Tensor, margin: float = 1.0, gamma: float = 2.0) -> torch.Tensor:
    """Focal-margin positive term (Zhang et al. 2021): -(1 - p_m)^γ log p_m, p_m = σ(z - m)."""
    zm = z - margin
    return torch.sigmoid(-zm) ** gamma * F.softplus(-zm)


def focal_neg(z: torch.Tensor, gamma: float = 2.0) -> torch.Tensor:
    """Focal negative term (Lin et al. 2017, α = 1): -p^γ log(1 - p)."""
    return torch.sigmoid(z) ** gamma * F.softplus(z)


def hill_neg(z: torch.Tensor, lamb: float = 1.5) -> torch.Tensor:
    """Hill negative term (Zhang et al. 2021, Eq. 24 of GR Loss): (λ - p) p²."""
    p = torch.sigmoid(z)
    return (lamb - p) * p * p


def check_positive(name: str, value, allow_none: bool = False) -> None:
    """Clear error for a hyperparameter that must be a positive number."""
    if value is None and allow_none:
        return
    try:
        ok = float(value) > 0
    except (TypeError, ValueError):
        ok = False
    if not ok:
        extra = " or None" if allow_none else ""
        raise ValueError(f"{name} must be a positive number{extra}, got {value!r}")
