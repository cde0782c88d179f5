r"""GR Loss — the generalised robust loss of Chen et al. (IJCAI 2024).

The framework (Eq. 4–5): with s the observed label (1 observed positive, 0 otherwise),

.. math::

    \mathcal{L} = \frac{1}{N}\sum_{n,i} v(p_i^n;\alpha)\Big[s_i^n \mathcal{L}_{i,1}^n
        + (1 - s_i^n)\big(\hat k(p_i^n;\beta)\,\mathcal{L}_{i,2}^n
        + (1 - \hat k(p_i^n;\beta))\,\mathcal{L}_{i,3}^n\big)\Big]

is the empirical risk of Eq. (2)/(3) with the unknown probability k(x) = P(y = 1 | x, s = 0)
replaced by an online estimate k̂(p; β) of the model output p = σ(z), a weight v(p; α), and
three surrogate losses. GR Loss instantiates it with (Eq. 7, 11, 14)

* k̂(p; β) = σ(w·p + b)                      (β = [w, b]; a soft pseudo-label)
* v(p; α) = exp(-(p - μ)² / (2σ²)) if s = 0, 1 if s = 1   (α = [μ, σ])
* L1 = (1 - p^{q1})/q1,  L2 = (1 - p^{q2})/q2,  L3 = (1 - (1 - p)^{q3})/q3   (GCE-style robust losses)

k̂ and v are computed from a **detached** p (the paper stops their gradient, Sec. 3.3, and the
official code passes ``preds.detach()``), so autograd of this loss gives exactly Eq. (18):
∂L∅/∂z = (1 - k̂)(1 - p)^{q3} p - k̂ p^{q2} (1 - p), times v.

Our labels have a third state the paper does not: an *observed negative* (0). ``neg`` says
what it costs:

* ``neg="l3"`` (**default**, the lab's): L3 with k̂ = 0 and v = 1 — the framework's own
  reading of a certain negative (Eq. 4–5 with k(x) known to be 0 and full weight), so a
  partial-label run of GR differs from a single-positive run only by what is observed, not by
  another loss. At q3 = 1, L3 = p (gradient p(1 − p)).
* ``neg="bce"``: -log(1 - p), plain BCE on a known negative.
* ``neg="zero"``: no loss and zero gradient — the official ``GR_loss``
  (``yan4xi1/GRLoss`` ``losses.py``), which writes losses only where the Cole-style label is
  1 or 0 (unobserved) and leaves the -1 entries (observed negatives) at 0.

Single-positive labels have no observed negatives, so the choice changes nothing in the paper's
setting; the benchmark's partial-label regimes do observe negatives, and there the lab uses
``"l3"`` (the framework's treatment above) rather than throwing the observation away.

Schedules (Eq. 9, 10, 12, 13): w, b, μ, σ move linearly per epoch from initial to final values;
see :func:`gr_schedule` for the paper's schedule and the official code's one-step offset.

Defaults, and where they come from:

* q2 = 0.01, q3 = 1 (paper Sec. 4.1 and Table 6: "typically 0.01 and 1");
* q1 = None: the exact -log p of the official code (``GR_loss`` uses ``neg_log``); the paper
  writes L1 with q1 = 0.01 (Sec. 4.4), available as ``q1=0.01``; the two differ by ~1–2 %;
* w: 0 -> 2, b: -2 -> -2 (paper Table 6, VOC: 20 classes like our embedded data; w0 = 0 is
  Assumption 1; b0 = -2 is the code's default since the paper does not give it);
* μ: 0.5 -> 0.8, σ: 2 -> 0.5 (paper Table 6; μ0 = 0.5, σ0 = 2 from the code, the paper is
  silent).

Reduction: the mean over all N x C entries (``loss_mtx.mean()`` in the official code).

Measured against the official code (fidelity audit, ``notebooks/fidelity.md``): the code's schedule
(``schedule="code"``) agrees to ~1e-7 (the code's ``-log(p + 1e-7)`` on positives against
the exact -log p here); observed negatives differ as ``neg`` says above.
"""
from __future__ import annotations

from typing import Dict

import torch

from .registry import check_inputs, reduce, register_loss
from .terms import check_positive, gce_neg, gce_pos, masks, nll_neg

#: schedule defaults (paper Table 6 for VOC-like data; initial values from the official code)
GR_SCHEDULE_DEFAULTS: Dict[str, float] = {
    "w0": 0.0, "w_T": 2.0, "b0": -2.0, "b_T": -2.0,
    "mu0": 0.5, "mu_T": 0.8, "sigma0": 2.0, "sigma_T": 0.5,
}
SCHEDULES = ("paper", "code")
#: what an observed negative costs in GR Loss (module docstring): L3 (the lab's default), plain
#: BCE, or nothing (the official code)
GR_NEGATIVES = ("l3", "bce", "zero")


def k_hat(p: torch.Tensor, w, b) -> torch.Tensor:
    """k̂(p; β) = σ(w·p + b) (Eq. 7); ``w = b = None`` switches k̂ off (k̂ ≡ 0, AN)."""
    if (w is None) != (b is None):
        raise ValueError("k_hat: pass both w and b, or neither (None = k̂ switched off)")
    if w is None:
        return torch.zeros_like(p)
    return torch.sigmoid(w * p + b)


def v_weight(p: torch.Tensor, mu, sigma) -> torch.Tensor:
    """v(p; α) = exp(-(p - μ)²/(2σ²)) (Eq. 11, s = 0); ``mu = sigma = None``: v ≡ 1."""
    if (mu is None) != (sigma is None):
        raise ValueError("v_weight: pass both mu and sigma, or neither (None = v switched off)")
    if mu is None:
        return torch.ones_like(p)
    check_positive("sigma", sigma)
    return torch.exp(-((p - mu) ** 2) / (2.0 * sigma * sigma))


def compose(logits: torch.Tensor, labels: torch.Tensor, *, k, v, L1, L2, L3, L_neg=None,
            v_pos=1.0, reduction: str = "mean") -> torch.Tensor:
    """The framework of Eq. (4)–(5) from its parts, each an N x C tensor (or a scalar).

    Entry by entry: observed positive -> v_pos·L1; unknown -> v·[k·L2 + (1 - k)·L3];
    observed negative -> ``L_neg`` (default L3: k̂ = 0, v = 1). Every row of the paper's
    Table 1 is such a choice of parts (see :mod:`mlpl_lab.losses.framework`).
    """
    pos, _, unk = masks(labels)
    unknown = v * (k * L2 + (1 - k) * L3)
    negative = L3 if L_neg is None else L_neg
    matrix = torch.where(pos, v_pos * L1, torch.where(unk, unknown, negative))
    return reduce(matrix, reduction)


@register_loss("gr")
def gr_loss(logits, labels, w=0.0, b=-2.0, mu=0.5, sigma=2.0, q1=None, q2=0.01, q3=1.0, *,
            neg="l3", reduction="mean"):
    """GR Loss (Chen et al. 2024, Eq. 4, 5, 7, 11, 14) at fixed (w, b, μ, σ).

    L_ij = -log p (or (1 - p^{q1})/q1)                           observed positive
         = v(p)·[k̂(p)·(1 - p^{q2})/q2 + (1 - k̂(p))·(1 - (1-p)^{q3})/q3]   unknown
         = (1 - (1-p)^{q3})/q3                                     observed negative

    ``neg`` (observed negatives, module docstring): ``"l3"`` (default, the line above),
    ``"bce"`` (-log(1 - p)) or ``"zero"`` (no loss, the official code).

    with k̂ = σ(w·p + b) and v = exp(-(p-μ)²/(2σ²)) from a detached p. ``w = b = None``
    switches k̂ off (k̂ ≡ 0) and ``mu = sigma = None`` switches v off (v ≡ 1): the Table 3
    ablations. The defaults are the schedule's epoch-0 values; a training run gets the
    per-epoch values from :func:`gr_schedule` (method ``"gr"``). Reduction: mean over N x C.
    """
    check_inputs(logits, labels)
    check_positive("q1", q1, allow_none=True)
    check_positive("q2", q2)
    check_positive("q3", q3)
    if neg not in GR_NEGATIVES:
        raise ValueError(f"neg (the loss of an observed negative) must be one of {GR_NEGATIVES} "
                         f"('l3': L3 with k̂ = 0, v = 1, the lab's; 'bce': -log(1 - p); 'zero': none, "
                         f"the official code), got {neg!r}")
    p = torch.sigmoid(logits).detach()
    L_neg = None if neg == "l3" else (nll_neg(logits) if neg == "bce" else torch.zeros_like(logits))
    return compose(logits, labels, k=k_hat(p, w, b), v=v_weight(p, mu, sigma),
                   L1=gce_pos(logits, q1), L2=gce_pos(logits, q2), L3=gce_neg(logits, q3),
                   L_neg=L_neg, reduction=reduction)


def schedule_values(**values: float) -> Dict[str, float]:
    """:data:`GR_SCHEDULE_DEFAULTS` with ``values`` over them; a name outside them is a
    ``TypeError`` (an unknown hyperparameter, as a constructor would say)."""
    unknown = sorted(set(values) - set(GR_SCHEDULE_DEFAULTS))
    if unknown:
        raise TypeError(f"unknown GR schedule values {unknown}; valid: {sorted(GR_SCHEDULE_DEFAULTS)}")
    return {k: values.get(k, v) for k, v in GR_SCHEDULE_DEFAULTS.items()}


def gr_schedule(epoch: int, num_epochs: int, *, schedule: str = "paper", linear_init: int = 0,
                **values: float) -> Dict[str, float]:
    """(w, b, μ, σ) of a 0-based ``epoch`` out of ``num_epochs`` = T (Eq. 9, 10, 12, 13);
    ``values``: start and end values (w0, w_T, b0, b_T, mu0, mu_T, sigma0, sigma_T) over
    :data:`GR_SCHEDULE_DEFAULTS`.

    ``linear_init`` = n (default 0) is the official code's warm-up: the first n epochs keep
    the start values.

    ``schedule="paper"`` (default): x = x^(0) + (x^(T) - x^(0))·τ for all four, with
    τ = max(epoch - n, 0) / (T - 1 - n): the first epoch trains with the start values (k̂
    constant, Assumption 1, w0 = 0) and **the last epoch with the end values** of Table 6.
    (With T - 1 - n <= 0 there is no room for a ramp: epochs from n on use the end values.)

    ``schedule="code"``: the official ``train.py``, with a 1-based epoch t = epoch + 1:
    w, b use max(t - n - 1, 0)/(T - n) — start values in the first epoch, and (T - n - 1)/(T - n)
    of the way in the last, so w_T, b_T are never used — while μ, σ use max(t - n, 0)/(T - n):
    one step along in the first epoch and μ_T, σ_T in the last (Table 6 was tuned this way).
    """
    if schedule not in SCHEDULES:
        raise ValueError(f"schedule must be one of {SCHEDULES} (paper: Eq. 9-13 with one t; "
                         f"code: mu/sigma one epoch ahead of w/b), got {schedule!r}")
    if not isinstance(num_epochs, int) or num_epochs < 1:
        raise ValueError(f"num_epochs must be an integer >= 1, got {num_epochs!r}")
    if not isinstance(epoch, int) or not 0 <= epoch < num_epochs:
        raise ValueError(f"epoch must be a 0-based integer in [0, {num_epochs}), got {epoch!r}")
    if isinstance(linear_init, bool) or not isinstance(linear_init, int) or not 0 <= linear_init < num_epochs:
        raise ValueError(f"linear_init must be an integer in [0, {num_epochs}), got {linear_init!r}")
    v = schedule_values(**values)
    w0, w_T, b0, b_T = v["w0"], v["w_T"], v["b0"], v["b_T"]
    mu0, mu_T, sigma0, sigma_T = v["mu0"], v["mu_T"], v["sigma0"], v["sigma_T"]
    n = linear_init
    if schedule == "paper":
        span = num_epochs - 1 - n
        t_wb = (1.0 if epoch >= n else 0.0) if span <= 0 else min(max(epoch - n, 0) / span, 1.0)
        t_ms = t_wb
    else:
        t = epoch + 1
        t_wb = max(t - n - 1, 0) / (num_epochs - n)
        t_ms = max(t - n, 0) / (num_epochs - n)
    return {
        "w": w0 + (w_T - w0) * t_wb,
        "b": b0 + (b_T - b0) * t_wb,
        "mu": mu0 + (mu_T - mu0) * t_ms,
        "sigma": sigma0 + (sigma_T - sigma0) * t_ms,
    }
