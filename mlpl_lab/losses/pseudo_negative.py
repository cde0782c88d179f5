"""Expected-negative pseudo-labelling (EN; Verelst et al. WACV 2023), as GR Loss describes it.

GR Loss Appendix B, Eq. (20): at the start of each epoch the N - N_i training images with the
lowest (EMA-smoothed) confidence of class i are pseudo-labelled negative; the loss is BCE on
observed positives and on those pseudo-negatives, and nothing on the other unknown labels:

    L = -log p (observed positive); -log(1 - p) (pseudo-negative); 0 (other unknown).

Which unknown entries are pseudo-negatives is given either by a boolean mask ``negatives``
(what the ``en`` method passes: its epoch-start ranking) or by the threshold form of GR
Loss Table 1, p ≤ τ1 with p detached (``tau``, a number or one per class). Observed
negatives are certain negatives: -log(1 - p). Mean over N x C (Eq. 20 averages over classes).
"""
from __future__ import annotations

import torch

from .registry import check_inputs, reduce, register_loss
from .terms import masks, nll_neg, nll_pos


def pseudo_negatives(logits: torch.Tensor, labels: torch.Tensor, tau=None, negatives=None):
    """Boolean (N, C) mask of unknown entries treated as negatives (mask or p ≤ τ)."""
    unk = labels == -1
    if negatives is not None:
        if not torch.is_tensor(negatives) or negatives.shape != labels.shape:
            raise ValueError("negatives must be a boolean (N, C) tensor shaped like labels")
        return unk & negatives.to(torch.bool)
    if tau is None:
        raise ValueError("en needs the pseudo-negatives: pass tau (threshold on p, a number or "
                         "one per class) or negatives (a boolean (N, C) mask)")
    tau = torch.as_tensor(tau, dtype=logits.dtype, device=logits.device)
    if tau.ndim not in (0, 1) or (tau.ndim == 1 and tau.numel() != logits.shape[1]):
        raise ValueError(f"tau must be a number or one value per class ({logits.shape[1]})")
    return unk & (torch.sigmoid(logits.detach()) <= tau)


@register_loss("en")
def en_loss(logits, labels, *, tau=None, negatives=None, reduction="mean"):
    """Expected negatives (EN, GR Loss Eq. 20 / Table 1 first column); see the module doc."""
    check_inputs(logits, labels)
    pos, neg, _ = masks(labels)
    pseudo = pseudo_negatives(logits, labels, tau, negatives)
    zero = torch.zeros_like(logits)
    matrix = torch.where(pos, nll_pos(logits), torch.where(neg | pseudo, nll_neg(logits), zero))
    return reduce(matrix, reduction)
