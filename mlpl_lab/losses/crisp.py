r"""Crisp — class priors for single-positive labels (Liu, Xu, Wang, Geng, *Can Class-Priors Help
Single-Positive Multi-Label Learning?*, NeurIPS 2025, arXiv 2309.13886; no public code: written
from the paper).

Two parts, each a plain function here; :mod:`mlpl_lab.methods.crisp` alternates them (Algorithm 1).

**The class-prior estimator** (Sec. 4.1, Theorem 4.1, Eq. 2, Appendix A.2). For class j, with
f_j(x) ∈ [0, 1] the score of a trained classifier, the n training examples and the set S_j of the
n^p_j examples whose label j is an observed positive:

.. math::

    \hat q_j(z) = \frac{1}{n}\sum_{i=1}^{n} \mathbb 1(f_j(x_i) \ge z), \qquad
    \hat q^p_j(z) = \frac{1}{n^p_j}\sum_{x\in S_j} \mathbb 1(f_j(x) \ge z)

    \hat z = \arg\min_z \Big[\frac{\hat q_j(z)}{\hat q^p_j(z)} + \frac{1+\tau}{\hat q^p_j(z)}
        \Big(\sqrt{\tfrac{\log(4/\delta)}{2n}} + \sqrt{\tfrac{\log(4/\delta)}{2n^p_j}}\Big)\Big]
        \qquad \text{(Eq. 2)}

    \hat\pi_j = \hat q_j(\hat z) / \hat q^p_j(\hat z)

The ratio q_j(z)/q^p_j(z) = π_j + (1 − π_j) q^n_j(z)/q^p_j(z) is never below π_j and reaches it
on a "top bin" that holds positives only (the top-bin idea of Garg et al., NeurIPS 2021, which
the paper cites); the second term is the upper confidence bound that keeps the bin from being
chosen too small. The search runs over the classifier's own outputs (Appendix A.2: exhaustive
search over {f_j(x_i)}). Defaults δ = τ = 0.01 (Appendix A.6, "fixed as 0.01").

Choices the paper leaves open, made here: the scores are all n training examples, the observed
positives included (q̂_j is over "the total number of samples", Algorithm 1 step 4); among
thresholds with the same objective the lowest wins; a class with no observed positive gets
π̂_j = 0 (the estimator's lower bound n^p_j/n, nothing to estimate from).

**The risk** (Sec. 4.1, Eq. 3–7, Appendix A.4). With the absolute loss ℓ(f, y) = |f − y| the
supervised risk Σ_j E|f_j(x) − y_j| rewrites, using p(x) = π_j p(x|y_j=1) + (1 − π_j) p(x|y_j=0),
as (Eq. 5)

.. math::

    R(f) = \sum_j \Big[2\pi_j\,\mathbb E_{x\sim p(x|y_j=1)}[1 - f_j(x)]
            + \mathbb E_{x\sim p(x)}[f_j(x)] - \pi_j\Big]

and the paper puts an absolute value on the second term, to keep it non-negative and to align
the model's mean output with the prior (Eq. 6); its empirical form (Eq. 7), per batch here:

.. math::

    \hat R(f) = \sum_j \Big[\frac{2\pi_j}{n^p_j}\sum_{x\in S_j}(1 - f_j(x))
            + \Big|\frac{1}{n}\sum_{i=1}^{n} f_j(x_i) - \pi_j\Big|\Big]

with f_j = σ(g_j) of the logits g. ``absolute=False`` drops the absolute value: Eq. (5)'s
empirical form, the unbiased one (with the true π and full labels it equals the mean absolute
error Σ_j (1/n) Σ_i |f_j(x_i) − y_ij| exactly). A class with no observed positive in the batch
contributes its second term only.

The paper's Eq. (8) modifies Eq. (7) with a further λ-weighted term in the logits, against the
decision boundary drifting towards the positives of rare classes; the lab's copy of the paper does
not show that formula, so it is not implemented: this is Eq. (7), the risk Theorem 4.2 bounds.

Observed negatives (label 0; the paper's single-positive labels have none) are read as unlabeled:
the risk reads the observed positives and the batch's mean output only.
"""
from __future__ import annotations

import math
from typing import Sequence, Tuple, Union

import torch

from .registry import check_inputs, register_loss

#: δ and τ of Eq. (2): the paper's fixed values (Appendix A.6)
CRISP_DELTA = 0.01
CRISP_TAU = 0.01

Priors = Union[float, Sequence[float], torch.Tensor]


def check_delta_tau(delta, tau) -> None:
    """δ in (0, 1) and τ in [0, 1] (Eq. 2), or a ValueError."""
    if not (isinstance(delta, (int, float)) and 0 < delta < 1):
        raise ValueError(f"delta (Eq. 2's confidence) must be in (0, 1), got {delta!r}")
    if not (isinstance(tau, (int, float)) and 0 <= tau <= 1):
        raise ValueError(f"tau (Eq. 2's slack) must be in [0, 1], got {tau!r}")


def threshold_prior(scores, positive_scores, *, delta: float = CRISP_DELTA,
                    tau: float = CRISP_TAU) -> Tuple[float, float]:
    """One class's prior by Eq. (2): ``(π̂, ẑ)``.

    ``scores``: f_j(x) of all n examples (the mixture); ``positive_scores``: f_j(x) of the n^p
    observed positives. The threshold ẑ minimises Eq. (2) over the values of ``scores``
    (ties: the lowest); π̂ = q̂(ẑ)/q̂^p(ẑ). No positive: ``(0.0, inf)``. Computed in float64."""
    check_delta_tau(delta, tau)
    s = torch.as_tensor(scores, dtype=torch.float64).detach().flatten().cpu()
    sp = torch.as_tensor(positive_scores, dtype=torch.float64).detach().flatten().cpu()
    if s.numel() == 0:
        raise ValueError("threshold_prior: no scores (the mixture sample is empty)")
    if torch.isnan(s).any() or torch.isnan(sp).any():
        raise ValueError("threshold_prior: scores contain NaN")
    n, n_p = s.numel(), sp.numel()
    if n_p == 0:
        return 0.0, math.inf
    cand = torch.unique(s)                                  # ascending
    q = (n - torch.searchsorted(torch.sort(s).values, cand, right=False)).double() / n
    qp = (n_p - torch.searchsorted(torch.sort(sp).values, cand, right=False)).double() / n_p
    slack = (1.0 + tau) * (math.sqrt(math.log(4.0 / delta) / (2 * n))
                           + math.sqrt(math.log(4.0 / delta) / (2 * n_p)))
    objective = torch.where(qp > 0, (q + slack) / qp.clamp(min=1e-300), torch.full_like(q, math.inf))
    i = int(torch.argmin(objective))                        # the first minimum: the lowest threshold
    return float(q[i] / qp[i]), float(cand[i])


def estimate_class_priors(probs: torch.Tensor, observed: torch.Tensor, *, delta: float = CRISP_DELTA,
                          tau: float = CRISP_TAU) -> torch.Tensor:
    """π̂ of every class (C,), float32: :func:`threshold_prior` on column j of ``probs`` (N, C), the
    classifier's f_j(x) over the training set, with the rows whose ``observed`` label j is 1 as the
    positives (Algorithm 1, steps 3–5)."""
    probs = torch.as_tensor(probs).detach().cpu()
    observed = torch.as_tensor(observed).cpu()
    if probs.ndim != 2 or probs.shape != observed.shape:
        raise ValueError(f"probs {tuple(probs.shape)} and observed {tuple(observed.shape)} must be the "
                         "same (N, C)")
    out = [threshold_prior(probs[:, j], probs[observed[:, j] == 1, j], delta=delta, tau=tau)[0]
           for j in range(probs.shape[1])]
    return torch.tensor(out, dtype=torch.float32)


def prior_vector(priors: Priors, num_classes: int, *, dtype=torch.float32, device=None) -> torch.Tensor:
    """``priors`` as a (C,) tensor: one number for every class, or one per class, each in [0, 1]."""
    if priors is None:
        raise ValueError("crisp needs the class priors: pass priors= (one number, or one per class; the "
                         "method 'crisp' estimates them with Eq. 2 or reads the true ones)")
    if isinstance(priors, str):
        raise TypeError(f"priors must be numbers here, got the string {priors!r} (the method 'crisp' "
                        "resolves 'estimated' and 'true')")
    pi = torch.as_tensor(priors, dtype=dtype, device=device).detach().flatten()
    if pi.numel() == 1:
        pi = pi.expand(num_classes)
    if pi.numel() != num_classes:
        raise ValueError(f"priors: one number or one per class ({num_classes}), got {pi.numel()}")
    if torch.isnan(pi).any() or bool(((pi < 0) | (pi > 1)).any()):
        raise ValueError(f"priors must lie in [0, 1], got {pi.tolist()[:8]}")
    return pi


@register_loss("crisp")
def crisp_loss(logits, labels, *, priors: Priors = None, absolute: bool = True, reduction: str = "sum"):
    """Crisp's empirical risk, Eq. (7) (module docstring), at the given class priors:

        Σ_j [ 2π_j/n^p_j · Σ_{observed positives of j} (1 − σ(g_j)) + | mean_batch σ(g_j) − π_j | ]

    ``priors``: one number or one per class (required). ``absolute=False``: Eq. (5)'s unbiased
    form, no absolute value. ``reduction``: ``"sum"`` over classes (default: the paper's Σ_j),
    ``"mean"`` over classes, ``"none"`` for the (C,) per-class risks. Computed in float32 at least."""
    check_inputs(logits, labels)
    if reduction not in ("sum", "mean", "none"):
        raise ValueError(f"reduction must be 'sum', 'mean' or 'none', got {reduction!r}")
    z = logits.float() if logits.dtype in (torch.float16, torch.bfloat16) else logits
    pi = prior_vector(priors, z.shape[1], dtype=z.dtype, device=z.device)
    f = torch.sigmoid(z)
    pos = (labels == 1).to(z.dtype)
    n_pos = pos.sum(dim=0)
    positive = 2.0 * pi * ((1.0 - f) * pos).sum(dim=0) / n_pos.clamp(min=1)
    gap = f.mean(dim=0) - pi
    per_class = positive + (gap.abs() if absolute else gap)
    if reduction == "none":
        return per_class
    return per_class.sum() if reduction == "sum" else per_class.mean()
