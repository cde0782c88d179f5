r"""Label cardinality as side information: top-k pseudo-labels (Gharib, Murena, Klami,
*Single-positive Multi-label Learning with Label Cardinality*, TMLR 2025, OpenReview XEPPXH2nKu).

The label cardinality k_i of image i is its number of true positives. The paper uses side
information on it at three grains — the maximum K = max_i k_i over the data, the distribution
P(k), and each image's own k_i — to turn a single positive into more labels. Here each grain
becomes a pseudo-label matrix from the batch's **detached** logits, ranked per image with the
observed positives first (always kept), the observed negatives last, and ties broken by the
lower class index (a stable sort, the rule of :mod:`mlpl_lab.methods.topk`):

* ``grain="per_image"`` (k_i known, one per image, aligned with the batch): the top k_i labels
  of image i are pseudo-positives (its observed positives among them), every other label a
  pseudo-negative — a full label vector.
* ``grain="max"`` (K known, one integer): an image holds at most K positives, so the labels
  below its top K are pseudo-negatives; the top K other than the observed positives stay
  unknown and get no loss.
* the distribution grain P(k) is turned into a per-image k̂_i first, by matching the images to
  the N cardinalities P(k) implies (:func:`match_cardinalities`), then trained as
  ``"per_image"`` (:mod:`mlpl_lab.methods.cardinality` does this over the whole training set at
  every epoch start).

The loss is BCE on the pseudo-labels: −log σ(z) on a pseudo-positive (and an observed positive),
−log(1 − σ(z)) on a pseudo-negative (and an observed negative), nothing on a label left unknown;
``reduction="mean"`` is the mean over all N × C entries (the lab's convention, AN's scale).

What the lab could read: the paper's abstract and summary (the three grains; the distribution
grain solved as a perfect bipartite matching between two sets of N elements, globally optimal in
O(N log N) by matching sequentially). Its method sections and the official code
(``shayangharib/SPMLL_with_Label_Cardinality``) were not available to the lab, so the pseudo-label
rules above and the matching's cost (the model's expected count Σ_c σ(z_ic) against k, matched
by rank) are the lab's reading; no code-form option is offered.
"""
from __future__ import annotations

from typing import Optional, Sequence

import torch

from .registry import check_inputs, reduce, register_loss
from .terms import nll_neg, nll_pos

GRAINS = ("max", "per_image")


def _ranks(logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """Each entry's 0-based rank in its row: observed positives first, observed negatives last,
    the rest by logit, largest first; ties to the lower class index (stable sort)."""
    z = logits.detach().double()
    key = torch.where(labels == 1, torch.full_like(z, float("inf")),
                      torch.where(labels == 0, torch.full_like(z, float("-inf")), z))
    order = torch.sort(key, dim=1, descending=True, stable=True).indices
    ranks = torch.empty_like(order)
    ranks.scatter_(1, order, torch.arange(z.shape[1], device=z.device).expand_as(order).contiguous())
    return ranks


def _per_row_k(k, n_rows: int, device) -> torch.Tensor:
    kt = torch.as_tensor(k, device=device)
    if kt.is_floating_point():
        if not bool((kt == kt.round()).all()):
            raise ValueError(f"k must be whole numbers, got {kt.flatten()[:5].tolist()}")
    kt = kt.long().flatten()
    if kt.numel() == 1:
        kt = kt.expand(n_rows)
    if kt.numel() != n_rows:
        raise ValueError(f"k: one integer or one per image of the batch ({n_rows}), got {kt.numel()}")
    if bool((kt < 0).any()):
        raise ValueError(f"k must be >= 0, got {kt.min().item()}")
    return kt


def cardinality_targets(logits: torch.Tensor, labels: torch.Tensor, k, grain: str = "max") -> torch.Tensor:
    """The pseudo-labels (N, C), int64 in {1, 0, -1}, of the module docstring: ``grain="max"`` with
    ``k`` one integer K (labels below the top K -> 0, the rest of the top K stay -1) or
    ``grain="per_image"`` with ``k`` one integer per image (top k_i -> 1, the rest -> 0). Observed
    labels are kept as they are: a positive stays 1 whatever k says, a negative 0."""
    if grain not in GRAINS:
        raise ValueError(f"grain must be one of {GRAINS} (the distribution grain is matched to a "
                         f"per-image k first: match_cardinalities), got {grain!r}")
    if k is None:
        raise ValueError("cardinality: pass k (max: one integer; per_image: one per image)")
    if grain == "max" and torch.as_tensor(k).numel() != 1:
        raise ValueError("grain='max' takes one integer K (the most labels an image has)")
    labels = labels.to(logits.device)
    kt = _per_row_k(k, logits.shape[0], logits.device)
    top = _ranks(logits, labels) < kt[:, None]
    unknown = labels == -1
    fill = torch.full_like(labels, -1) if grain == "max" else torch.ones_like(labels)
    pseudo = torch.where(top, fill, torch.zeros_like(labels))
    return torch.where(unknown, pseudo, labels).long()


@register_loss("cardinality")
def cardinality_loss(logits, labels, *, k=None, grain: str = "max", reduction: str = "mean"):
    """BCE on the top-k pseudo-labels of :func:`cardinality_targets` (module docstring):
    −log σ(z) where the pseudo-label is 1, −log(1 − σ(z)) where it is 0, nothing where it stays
    unknown. ``k``: one integer K (``grain="max"``) or one per image of the batch
    (``grain="per_image"``). ``reduction``: ``"mean"`` over N × C (default), ``"sum"``, ``"none"``."""
    check_inputs(logits, labels)
    t = cardinality_targets(logits, labels, k, grain)
    matrix = torch.where(t == 1, nll_pos(logits), torch.where(t == 0, nll_neg(logits), torch.zeros_like(logits)))
    return reduce(matrix, reduction)


def slot_counts(distribution: Sequence[float], n: int) -> torch.Tensor:
    """How many of ``n`` images get each cardinality k = 0, 1, ...: n·P(k) rounded by the largest
    remainder (the counts sum to n; remainder ties go to the lower k)."""
    p = torch.as_tensor(distribution, dtype=torch.float64).flatten()
    if p.numel() == 0 or torch.isnan(p).any() or bool((p < 0).any()) or float(p.sum()) <= 0:
        raise ValueError(f"the cardinality distribution must be non-negative numbers with a positive "
                         f"sum, got {p.tolist()[:8]}")
    if not isinstance(n, int) or n < 0:
        raise ValueError(f"n must be an integer >= 0, got {n!r}")
    exact = p / p.sum() * n
    counts = torch.floor(exact).long()
    short = n - int(counts.sum())
    if short > 0:
        order = torch.sort(-(exact - counts), stable=True).indices
        counts[order[:short]] += 1
    return counts


def match_cardinalities(expected: torch.Tensor, distribution: Sequence[float],
                        min_k: Optional[torch.Tensor] = None) -> torch.Tensor:
    """A cardinality k̂_i (N,) for every image from P(k) alone: the N cardinalities P(k) implies
    (:func:`slot_counts`) matched to the images by rank of ``expected`` (each image's predicted
    count, e.g. Σ_c σ(z_ic)): the smallest k to the lowest count, ties to the lower index. Sorting
    both sides is the perfect bipartite matching that minimises Σ_i |expected_i − k̂_i| (and any
    convex cost of the difference), in O(N log N). ``min_k`` (e.g. each image's observed
    positives) floors the result: an image never gets fewer labels than it shows."""
    e = torch.as_tensor(expected, dtype=torch.float64).detach().flatten().cpu()
    if torch.isnan(e).any():
        raise ValueError("match_cardinalities: expected counts contain NaN")
    counts = slot_counts(distribution, e.numel())
    slots = torch.repeat_interleave(torch.arange(counts.numel()), counts)
    out = torch.empty(e.numel(), dtype=torch.long)
    out[torch.sort(e, stable=True).indices] = slots
    if min_k is not None:
        out = torch.maximum(out, torch.as_tensor(min_k).long().flatten().cpu())
    return out

