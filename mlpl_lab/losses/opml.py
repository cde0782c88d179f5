"""OPML: pushing one pair of labels apart each time (Li, Wang & Chen, arXiv 2302.14695).

The text of the paper the lab worked from lost every equation; the formulas here are the
lab's reconstruction from its prose, each with a confidence tag (chapter 03 shows the same table):

* **[R-high]** Eq. 1-6, the loss.  Eq. 1 pushes apart the single positive and the highest-
  scoring unobserved label, ``max_n s_n - s_p``; replacing max by log-sum-exp (ref. [38])
  gives Eq. 2, and the two constants α, β that "make this loss bounded and stable" give
  Eq. 3 (single positive) and Eq. 6 (full labels, the same formula)::

      L_i = log(α + Σ_{n ∈ Ω_n} e^{s_n}) + log(β + Σ_{p ∈ Ω_p} e^{-s_p})          (Eq. 3 / 6)

  With α = β = 1 it is ZLPR (Su et al. 2022, the paper's ref. [36], "a special case of our
  loss"), registered here as ``zlpr``.  The gradients reproduce the paper's Eq. 9 claims
  (``∂L/∂s_p = σ(s_p) - 1`` at β = 1, each negative's gradient smaller than BCE's, and the
  negatives' gradients summing to less than 1) — the tests check them by autograd.
* **[R-low]** the map from (a, b) to (α, β): the paper chooses α = T(a), β = T(b) "to keep
  α, β in (0, +∞)" but the map is lost.  We use α = e^a, β = e^b (a, b ∈ ℝ; ZLPR at
  a = b = 0), so a and b are logit-space thresholds: the negative term is flat below
  s = a and the positive term flat above s = -b.  Raw ``alpha`` / ``beta`` are accepted too.
* **[R-med]** Eq. 11, the soft form: unobserved label j gets a target ε_j ∈ [0, 1], written
  the way ZLPR's own soft version is (Su, kexue.fm/archives/9064)::

      L_i = log(α + Σ_j (1 - t_ij) e^{s_ij}) + log(β + Σ_j t_ij e^{-s_ij})       (Eq. 11)

  with t = 1 for observed positives, 0 for observed negatives and ε for unknowns; t = 0 or 1
  drops the entry from the other sum, so ε = 0 is exactly Eq. 6 (the AN reading of unknowns).
  Its optimum satisfies t = σ(2s) (α = β = 1), i.e. σ(2s), not σ(s), is the calibrated
  probability of this loss family.
* **[R-med]** Eq. 10, the high-rank regulariser, :func:`high_rank_penalty`:
  ``-log det(PᵀP + δI)`` on the batch's predicted label matrix P (we take P = σ(S); the text
  does not say whether P holds scores or probabilities).

Unknown labels (-1) are negatives in Eq. 3/6 (the paper's "assumed negative labels"), and
observed negatives (0) are negatives too, so the same call serves single-positive, partial
and full labels.  Everything is computed with ``logsumexp`` / ``logaddexp`` on masked logits,
so the loss and its gradient are finite for any finite logits.
"""
from __future__ import annotations

import math
from typing import Optional

import torch

from .registry import check_inputs, register_loss

__all__ = ["opml_loss", "zlpr_loss", "soft_opml_loss", "opml_from_targets", "high_rank_penalty",
           "log_alpha_beta"]


def log_alpha_beta(a: float = 0.0, b: float = 0.0, alpha: Optional[float] = None,
                   beta: Optional[float] = None) -> tuple[float, float]:
    """(log α, log β) from the paper's (a, b) with α = e^a, β = e^b [R-low], or from raw α, β.

    Passing ``alpha`` (``beta``) overrides ``a`` (``b``); both must be > 0 (the paper:
    "two positive constants").
    """
    out = []
    for name, log_value, raw in (("a", a, alpha), ("b", b, beta)):
        if raw is not None:
            raw = float(raw)
            if not (raw > 0 and math.isfinite(raw)):
                raise ValueError(f"{'alpha' if name == 'a' else 'beta'} must be a positive finite "
                                 f"number (the paper's positive constant), got {raw!r}; or pass "
                                 f"{name} = log of it")
            out.append(math.log(raw))
        else:
            log_value = float(log_value)
            if not math.isfinite(log_value):
                raise ValueError(f"{name} must be a finite number (α = e^a, β = e^b), got {log_value!r}")
            out.append(log_value)
    return out[0], out[1]


def _masked_lse_term(x: torch.Tensor, log_weight: torch.Tensor, log_const: float) -> torch.Tensor:
    """Per row: log(e^{log_const} + Σ_j e^{x_j + log_weight_j}); entries with log_weight = -inf
    are left out.  A row with no entry gives 0 (it "contributes only its other term").

    Masked rows are filled with zeros before ``logsumexp`` so no -inf - (-inf) = NaN appears
    in the value or in the backward pass.
    """
    z = x + log_weight
    present = torch.isfinite(log_weight)
    has_any = present.any(dim=1)
    z = torch.where(present, z, torch.full_like(z, -math.inf))
    z = torch.where(has_any[:, None], z, torch.zeros_like(z))
    lse = torch.logsumexp(z, dim=1)
    term = torch.logaddexp(torch.full_like(lse, log_const), lse)
    return torch.where(has_any, term, torch.zeros_like(term))


def _reduce_rows(per_sample: torch.Tensor, reduction: str) -> torch.Tensor:
    if reduction == "mean":
        return per_sample.mean()
    if reduction == "sum":
        return per_sample.sum()
    if reduction == "none":
        return per_sample
    raise ValueError(f"reduction must be 'mean' (over samples), 'sum' or 'none' (one value per "
                     f"sample: OPML is a per-sample loss, not a per-entry one), got {reduction!r}")


def opml_from_targets(logits: torch.Tensor, targets: torch.Tensor, log_alpha: float = 0.0,
                      log_beta: float = 0.0, reduction: str = "mean") -> torch.Tensor:
    """The soft OPML/ZLPR loss (Eq. 11) for targets t ∈ [0, 1] of every entry.

    L_i = log(α + Σ_j (1 - t_ij) e^{s_ij}) + log(β + Σ_j t_ij e^{-s_ij}).
    t = 1 keeps the entry only in the positive sum and t = 0 only in the negative sum (hard
    labels, Eq. 6); soft targets are clamped to [1e-7, 1 - 1e-7] (the clipping Su recommends)
    before their logarithms are taken.  Targets are constants:
    they are detached here.  ``reduction``: "mean" over samples (default), "sum", "none" (N,).
    """
    if logits.ndim != 2 or targets.shape != logits.shape:
        raise ValueError(f"logits must be (N, C) and targets the same shape; got "
                         f"{tuple(logits.shape)} and {tuple(targets.shape)}")
    if logits.dtype in (torch.float16, torch.bfloat16):
        logits = logits.float()  # log-sum-exp over C labels in half precision loses the small terms
    t = targets.detach().to(logits.dtype)
    if bool(((t < 0) | (t > 1) | torch.isnan(t)).any()):
        raise ValueError("targets must lie in [0, 1] (1 positive, 0 negative, soft values for "
                         "smoothed unknowns)")
    neg_inf = torch.full_like(t, -math.inf)
    # weight 1 - t in the negative sum and t in the positive sum; clamping keeps the log of a
    # soft target finite, and only the side that can reach 0 is clamped, so t = 0 / t = 1
    # give exactly Eq. 6
    log_w_neg = torch.where(t < 1, torch.log1p(-t.clamp(max=1 - 1e-7)), neg_inf)
    log_w_pos = torch.where(t > 0, torch.log(t.clamp(min=1e-7)), neg_inf)
    per_sample = (_masked_lse_term(logits, log_w_neg, log_alpha)
                  + _masked_lse_term(-logits, log_w_pos, log_beta))
    return _reduce_rows(per_sample, reduction)


@register_loss("opml")
def opml_loss(logits, labels, *, a: float = 0.0, b: float = 0.0, alpha: Optional[float] = None,
              beta: Optional[float] = None, reduction: str = "mean"):
    """OPML loss (Eq. 3 single positive / Eq. 6 full labels; reconstruction [R-high]).

    L_i = log(α + Σ_{n ∈ Ω_n} e^{s_in}) + log(β + Σ_{p ∈ Ω_p} e^{-s_ip}),  α = e^a, β = e^b

    Ω_p = observed positives (1); Ω_n = observed negatives (0) and unknowns (-1), the paper's
    "assumed negative labels".  A row with no positive (or no negative) contributes only its
    other term.  Defaults a = b = 0 (α = β = 1) are ZLPR; the paper tunes (a, b) per dataset
    on the validation mAP (Fig. 5; its values are lost in our copy).  The map α = e^a is a
    reconstruction [R-low]; ``alpha``/``beta`` take the raw constants instead.

    ``reduction``: "mean" over samples (default; the paper averages per-sample losses),
    "sum", or "none" for the (N,) per-sample values.
    """
    check_inputs(logits, labels)
    la, lb = log_alpha_beta(a, b, alpha, beta)
    return opml_from_targets(logits, (labels == 1).to(logits.dtype), la, lb, reduction)


@register_loss("zlpr")
def zlpr_loss(logits, labels, *, reduction: str = "mean"):
    """ZLPR (Su et al. 2022): OPML with α = β = 1 (a = b = 0), the paper's ref. [36].

    L_i = log(1 + Σ_{n ∈ Ω_n} e^{s_in}) + log(1 + Σ_{p ∈ Ω_p} e^{-s_ip}); unknowns are negatives.
    """
    return opml_loss(logits, labels, a=0.0, b=0.0, reduction=reduction)


@register_loss("opml_soft")
def soft_opml_loss(logits, labels, *, eps=0.0, a: float = 0.0, b: float = 0.0,
                   alpha: Optional[float] = None, beta: Optional[float] = None,
                   reduction: str = "mean"):
    """Soft OPML (Eq. 11; reconstruction [R-med]): unknown labels get the soft target ε.

    L_i = log(α + Σ_{j ∈ Ω_n ∪ Ω_u} (1 - t_ij) e^{s_ij}) + log(β + Σ_{j ∈ Ω_p ∪ Ω_u} t_ij e^{-s_ij})

    t = 1 for observed positives (Ω_p), 0 for observed negatives (Ω_n) and ``eps`` for the
    unobserved labels (Ω_u).  ``eps`` is a number or a tensor broadcastable to (N, C)
    (OPML-SP passes ε_ij = AP_j^k · p_ij, see :mod:`mlpl_lab.methods.opml`); only its unknown
    entries are used and it is treated as a constant (detached).  ``eps = 0`` is
    :func:`opml_loss`.  Reduction as in :func:`opml_loss`.
    """
    check_inputs(logits, labels)
    la, lb = log_alpha_beta(a, b, alpha, beta)
    eps_t = torch.as_tensor(eps, dtype=logits.dtype, device=logits.device).detach()
    try:
        eps_t = eps_t.expand_as(logits)
    except RuntimeError:
        raise ValueError(f"eps must be a number or broadcastable to logits {tuple(logits.shape)}, "
                         f"got shape {tuple(eps_t.shape)}") from None
    unknown = labels == -1
    if bool(((eps_t[unknown] < 0) | (eps_t[unknown] > 1) | torch.isnan(eps_t[unknown])).any()):
        raise ValueError("eps (the soft target of unknown labels) must lie in [0, 1]")
    targets = torch.where(unknown, eps_t, (labels == 1).to(logits.dtype))
    return opml_from_targets(logits, targets, la, lb, reduction)


def high_rank_penalty(probs: torch.Tensor, delta: float = 1e-3, form: str = "auto") -> torch.Tensor:
    """The high-rank regulariser of Eq. 10 (reconstruction [R-med]), without its weight λ.

    R(P) = -log det(PᵀP + δ I_C) = -Σ_i log(σ_i(P)² + δ)

    on the B x C matrix P of the batch's predicted probabilities (the training objective adds
    λ·R).  Minimising R raises every singular value of P, i.e. pushes the label columns
    apart ("different labels fall into different subspaces"); the -log det surrogate
    (Fazel et al. 2003, the paper's ref. [39]) is used "rather than the minus trace norm …
    because it is differentiable".  δ > 0 keeps the determinant away from 0 (default 1e-3,
    the notes' choice; the paper's value is lost).

    ``form``: "auto" uses the B x B Gram matrix when B < C, by Sylvester's identity
    log det(PᵀP + δI_C) = log det(PPᵀ + δI_B) + (C - B) log δ (same value, same gradient,
    cheaper); "C" / "B" force one form.  Computed with autocast disabled (a log det under
    bf16/fp16 is unreliable) in the probabilities' dtype, float32 at least (float64 stays
    float64, so it can be gradchecked), via a Cholesky factorisation of the Gram matrix
    (float64 ``slogdet`` fallback if the Cholesky factorisation fails).
    """
    if not torch.is_tensor(probs) or probs.ndim != 2:
        raise ValueError(f"probs must be a (B, C) tensor of predicted probabilities, got "
                         f"{getattr(probs, 'shape', type(probs).__name__)}")
    delta = float(delta)
    if not (delta > 0 and math.isfinite(delta)):
        raise ValueError(f"delta must be a positive number (the log det needs PᵀP + δI > 0), got {delta}")
    if form not in ("auto", "B", "C"):
        raise ValueError(f"form must be 'auto', 'B' or 'C', got {form!r}")
    with torch.autocast(device_type=probs.device.type, enabled=False):
        p = probs if probs.dtype == torch.float64 else probs.float()
        if not bool(torch.isfinite(p).all()) or bool(((p < 0) | (p > 1)).any()):
            raise ValueError("probs must be finite probabilities in [0, 1]; pass torch.sigmoid(logits)")
        bsz, c = p.shape
        use_b = (bsz < c) if form == "auto" else (form == "B")
        gram = p @ p.T if use_b else p.T @ p
        k = gram.shape[0]
        gram = gram + delta * torch.eye(k, dtype=gram.dtype, device=gram.device)
        chol, info = torch.linalg.cholesky_ex(gram)
        if int(info) == 0:
            logdet = 2.0 * torch.log(torch.diagonal(chol)).sum()
        else:  # numerically indefinite in float32: redo in float64
            logdet = torch.linalg.slogdet(gram.double())[1].to(p.dtype)
        if use_b:
            logdet = logdet + (c - bsz) * math.log(delta)
        return -logdet
