"""The one top-k selection routine every method uses, with one tie rule.

``top_k_mask(scores, k, candidates, largest)`` marks the ``k`` candidate entries with the
largest (or smallest) scores. **Ties are broken by position: the entry with the lower flat
index wins** (a stable sort), so a selection never depends on the sort implementation or
the device. Non-candidates are never selected; ``k`` larger than the number of candidates
selects every candidate. Works on any shape (entries are ranked over the flattened tensor)
or per column with ``dim=0`` (each column ranked on its own, ``k`` a scalar or a (C,) tensor).

Used by CLS's label selection and the co-teaching family's sample selection, EN's
pseudo-negatives, APL's rounds and OPML's label correction. The one selection that does not
use it is LL's loss rejection (``losses/large_loss.py``), which, as its official code does,
keeps the losses strictly above the k-th largest value (a threshold, not a top-k set).
"""
from __future__ import annotations

import torch


def _flat_top_k(scores: torch.Tensor, cand: torch.Tensor, k: int, largest: bool) -> torch.Tensor:
    n = int(cand.sum())
    k = max(0, min(int(k), n))
    mask = torch.zeros_like(cand)
    if k == 0:
        return mask
    idx = torch.nonzero(cand, as_tuple=False).flatten()
    vals = scores[idx].double()
    order = torch.sort(vals, descending=largest, stable=True).indices
    mask[idx[order[:k]]] = True
    return mask


def top_k_mask(scores: torch.Tensor, k, candidates: torch.Tensor | None = None,
               largest: bool = True, dim: int | None = None) -> torch.Tensor:
    """A bool mask (same shape as ``scores``) of the selected entries; see the module docstring."""
    if not torch.is_tensor(scores):
        raise TypeError(f"scores must be a tensor, got {type(scores).__name__}")
    cand = torch.ones_like(scores, dtype=torch.bool) if candidates is None else candidates.bool()
    if cand.shape != scores.shape:
        raise ValueError(f"candidates {tuple(cand.shape)} must match scores {tuple(scores.shape)}")
    s = scores.detach()
    if torch.isnan(s).any():
        raise ValueError("top_k_mask: scores contain NaN")
    if dim is None:
        return _flat_top_k(s.flatten(), cand.flatten(), int(k), largest).view_as(cand)
    if dim != 0 or s.ndim != 2:
        raise ValueError("top_k_mask supports dim=None (flattened) or dim=0 on a 2-D tensor")
    ks = torch.as_tensor(k).flatten()
    if ks.numel() == 1:
        ks = ks.expand(s.shape[1])
    if ks.numel() != s.shape[1]:
        raise ValueError(f"k must be a scalar or one count per column ({s.shape[1]}), got {ks.numel()}")
    out = torch.zeros_like(cand)
    for j in range(s.shape[1]):
        out[:, j] = _flat_top_k(s[:, j], cand[:, j], int(ks[j]), largest)
    return out
