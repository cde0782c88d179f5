"""Large Loss Matters (Kim et al. CVPR 2022): reject or correct the largest assumed-negative losses.

Follows ``snucml/LargeLossMatters`` (``losses.py: compute_batch_loss``). Under assume
negative, every unknown label gets -log(1 - p); a hidden positive the model already
recognises has a *large* loss. In each batch the unknown entries of the whole flattened B x C
batch are ranked by that loss and the k largest are

* rejected (loss 0)                                   LL-R, k = ceil(B·C·(1 - clean_rate))
* corrected: given the flipped-target loss -log p      LL-Ct, same k
* corrected, and written into the stored labels        LL-Cp, k = ceil(B·C·Δ_rel)

``clean_rate`` starts at 1 (the first epoch is plain AN) and drops by Δ_rel after every epoch
(the ``ll_*`` methods keep it). Observed positives and observed negatives are never ranked.
Entries with loss ≥ the k-th largest are modified (the code's ``unobserved_loss <
topk_lossvalue`` keeps the others); LL-Cp stores only those strictly above it (the code's
``correction_idx`` uses ``>``) — a tie-level quirk kept for fidelity.

Default Δ_rel = 0.002 (0.2 % per epoch): the README's grid is {0.1, ..., 0.5} % (the CLI value
is divided by 100). Reduction: mean over N x C (``loss_matrix / (B·C)`` summed, as the code).

Measured against the official code (float64, identical inputs; fidelity audit,
``notebooks/fidelity.md``): LL-R, LL-Ct and LL-Cp select the same entries and agree to 5e-14 wherever
their k agrees. Where they differ, and why:

* **k.** The code computes ceil(B·C·(1 − clean_rate)) with a clean rate built by repeated
  subtraction, so float noise takes **one entry more** whenever the exact product is an
  integer (batch 16, 20 classes, Δ_rel 0.5 %, epoch 6: clean_rate = 1 − 5·0.005 by five
  subtractions, k = 9 there against the exact 8 here; :func:`num_selected` rounds first).
* **LL-Cp.** The released code picks LL-Cp's k with ``P['mod_scheme'] is 'LL-Cp'`` — a string
  identity test, normally False — so it runs with LL-Ct's k (and stores the corrections).
  Here ``ll_cp`` uses k = ceil(B·C·Δ_rel) as the paper says.
* **Ranking.** The code ranks the losses softplus(z) as computed; here the unknown entries are
  ranked **by their logit**, which orders -log(1 − σ(z)) = softplus(z) exactly (softplus is
  increasing). Rounded softplus is not: torch switches it to the identity above z = 20, so in
  float64 softplus(20) > softplus(20.000000001), and ranking by it keeps the larger logit and
  rejects the smaller one.
* Names: an earlier official ``train.py`` decrements ``P['llr_rel']``; the current code calls
  that value ``clean_rate`` (as here).
"""
from __future__ import annotations

import math

import torch

from .registry import check_inputs, reduce, register_loss
from .terms import masks, nll_neg, nll_pos

DELTA_REL = 0.002


def num_selected(num_entries: int, rate: float) -> int:
    """ceil(num_entries·rate), rounded first to 9 decimals so that float noise in a
    clean-rate built by repeated subtraction (1 - 0.998 = 0.0020000000000000018) cannot add
    one entry — as it does in the official code (module docstring: 9 against 8 at B·C = 320,
    Δ_rel = 0.005, epoch 6)."""
    return int(math.ceil(round(num_entries * rate, 9)))


def large_loss_selection(logits: torch.Tensor, labels: torch.Tensor, k: int):
    """The unknown entries among the k largest assume-negative losses of the flattened batch.

    Returns ``(modify, correct_permanently)`` boolean masks: loss ≥ the k-th largest, and
    loss > it (LL-Cp's stored corrections). k is capped at the number of unknown entries.
    The loss -log(1 − σ(z)) = softplus(z) is increasing in z, so the entries are ranked by
    their **logit**: the exact order, which a rounded softplus is not (module docstring).
    """
    unk = labels == -1
    n_unknown = int(unk.sum())
    k = min(int(k), n_unknown)
    none = torch.zeros_like(unk)
    if k <= 0:
        return none, none
    z = logits.detach()
    ranked = torch.where(unk, z, torch.full_like(z, -math.inf))
    threshold = torch.topk(ranked.flatten(), k).values[-1]
    return unk & (z >= threshold), unk & (z > threshold)


def _check_rate(name: str, value: float) -> None:
    if not 0.0 <= float(value) <= 1.0:
        raise ValueError(f"{name} must be in [0, 1], got {value!r}")


def _large_loss(logits, labels, k, correct: bool, reduction: str):
    pos, _, _ = masks(labels)
    an = torch.where(pos, nll_pos(logits), nll_neg(logits))
    modify, _ = large_loss_selection(logits, labels, k)
    replacement = nll_pos(logits) if correct else torch.zeros_like(logits)
    return reduce(torch.where(modify, replacement, an), reduction)


@register_loss("ll_r")
def ll_r_loss(logits, labels, *, clean_rate=1.0, reduction="mean"):
    """LL-R (Kim et al. 2022, "rejection"): AN with the k = ceil(B·C·(1 - clean_rate)) largest unknown
    losses of the batch set to 0. ``clean_rate`` = 1 - (epochs done)·Δ_rel (method ``ll_r``)."""
    check_inputs(logits, labels)
    _check_rate("clean_rate", clean_rate)
    k = 0 if clean_rate >= 1 else num_selected(logits.numel(), 1 - clean_rate)
    return _large_loss(logits, labels, k, correct=False, reduction=reduction)


@register_loss("ll_ct")
def ll_ct_loss(logits, labels, *, clean_rate=1.0, reduction="mean"):
    """LL-Ct (Kim et al. 2022, "temporary correction"): like LL-R but the selected entries get the flipped-target
    loss -log p (a temporary correction to positive, this batch only)."""
    check_inputs(logits, labels)
    _check_rate("clean_rate", clean_rate)
    k = 0 if clean_rate >= 1 else num_selected(logits.numel(), 1 - clean_rate)
    return _large_loss(logits, labels, k, correct=True, reduction=reduction)


@register_loss("ll_cp")
def ll_cp_loss(logits, labels, *, clean_rate=1.0, delta_rel=DELTA_REL, reduction="mean"):
    """LL-Cp (Kim et al. 2022, "permanent correction"): from the second epoch (clean_rate < 1) the
    k = ceil(B·C·Δ_rel) largest unknown losses get -log p; the ``ll_cp`` method also writes
    those labels as positives into its stored label matrix for good. (The released code tests
    the scheme with ``is`` and so runs LL-Cp with LL-Ct's k; module docstring.)"""
    check_inputs(logits, labels)
    _check_rate("clean_rate", clean_rate)
    _check_rate("delta_rel", delta_rel)
    k = 0 if clean_rate >= 1 else num_selected(logits.numel(), delta_rel)
    return _large_loss(logits, labels, k, correct=True, reduction=reduction)
