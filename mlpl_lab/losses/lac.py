"""LAC's two consistency losses (Xie et al., "Label-Aware Global Consistency for Multi-Label
Learning with Single Positive Labels", NeurIPS 2022).

* :func:`plc_loss` — **pseudo-labeling consistency** (Eq. 4), registered as ``"plc"``: a
  function of the strong view's logits and the observed labels, given the weak view's
  probabilities.
* :func:`lac_loss` — the **label-aware global consistency** loss (Eq. 5–7) over L2-normalised
  projections of label-wise embeddings, with an optional memory queue. It takes embeddings,
  not logits, so it is not in the logit-loss registry.

Both have a ``form``: ``"paper"`` (the equations as printed) and ``"code"`` (what the official
``xiemk/SPML-LAC`` computes, checked line by line). PLC defaults to the
paper's form; the contrastive loss defaults to the code's, because the paper's literal Eq. 7
grows with the memory queue (:func:`lac_loss`).

Measured against the official code (``xiemk/SPML-LAC``: ``second_stage.py`` and
``lib/utils/lacloss.py``; float64, identical inputs; fidelity audit, ``notebooks/fidelity.md``): PLC and
the contrastive loss in ``form="code"`` agree to ≤ 4e-15 with the queue empty or filled, until
the official queue first wraps (its pointer then differs from the lab's ring; see
:class:`mlpl_lab.methods.lac.MemoryQueue`). Two official edge cases differ on purpose: a batch
with **one** valid entry is indexed by a 0-d ``nonzero().squeeze()``, so its pair is stored
(and contrasted) twice — here once; and an empty PLC mask gives 0/0 = NaN there — 0 here.

**Known negatives** (regimes that observe negatives; the paper has none): they never become
positives. Both forms of PLC leave observed negatives to L_AN (a pseudo-label never overrides
an observation), and :func:`lac_valid` never selects them for the contrastive loss.
"""
from __future__ import annotations

from typing import Optional

import torch
import torch.nn.functional as F

from .registry import check_inputs, reduce, register_loss

FORMS = ("paper", "code")


def _check_form(form: str) -> None:
    if form not in FORMS:
        raise ValueError(f"form must be one of {FORMS}, got {form!r}")


def _check_delta(delta: float) -> None:
    if not (isinstance(delta, (int, float)) and 0.5 <= delta < 1.0):
        raise ValueError(f"delta must be in [0.5, 1): a pseudo-positive needs p >= delta and a "
                         f"pseudo-negative p <= 1 - delta; got {delta!r}")


def plc_targets(weak_probs: torch.Tensor, labels: torch.Tensor, delta: float = 0.6,
                form: str = "paper"):
    """(hard targets, mask) of PLC: which entries train the strong view, and towards what.

    ``paper`` (Eq. 4): only the **unknown** entries (label -1; the paper's ŷ_ij = 0 under
    single positive) with p^w ≥ δ (target 1) or p^w ≤ 1 − δ (target 0); observed entries are
    left to L_AN.
    ``code``: pl = p^w + 1[observed positive], mask = (pl ≥ δ) | (pl < 1 − δ), target = (pl ≥ δ),
    over every entry but the observed negatives: observed positives always count, as target 1.
    (The code has no observed negatives; here they are left to L_AN in both forms, so a known
    negative never becomes a pseudo-positive.)
    """
    _check_form(form)
    _check_delta(delta)
    p = weak_probs.detach()
    if form == "paper":
        unknown = labels == -1
        pos = unknown & (p >= delta)
        neg = unknown & (p <= 1.0 - delta)
        return pos.to(p.dtype), pos | neg
    pl = p + (labels == 1).to(p.dtype)
    hard = (pl >= delta) & (labels != 0)
    return hard.to(p.dtype), (hard | (pl < 1.0 - delta)) & (labels != 0)


def lac_valid(weak_probs: torch.Tensor, labels: torch.Tensor, delta: float = 0.9) -> torch.Tensor:
    """The (image, class) entries the contrastive loss uses (paper Sec. 3.2; ``second_stage.py``:
    ``pseudo_label_hard | targets``): observed positives, and **unknown** entries whose weak-view
    probability is ≥ δ (pseudo-positives). Observed negatives never count, whatever p^w says —
    the lab's valid-entry rule for regimes that observe negatives (the paper's single positive
    has none, so there it is the code's rule)."""
    _check_delta(delta)
    if weak_probs.shape != labels.shape:
        raise ValueError(f"weak_probs {tuple(weak_probs.shape)} and labels {tuple(labels.shape)} "
                         "must have one shape")
    return (labels == 1) | ((labels == -1) & (weak_probs.detach() >= delta))


@register_loss("plc")
def plc_loss(logits, labels, *, weak_probs: Optional[torch.Tensor] = None, delta: float = 0.6, form: str = "paper",
             reduction: str = "mean"):
    """Pseudo-labeling consistency, LAC paper Eq. 4 (default δ = 0.6, the code's stage-1 value;
    0.9 in stage 2)::

        L_PLC = -1/b Σ_i Σ_j [ 1(p^w_ij ≥ δ | ŷ_ij unknown) log p^s_ij
                               + 1(p^w_ij ≤ 1-δ | ŷ_ij unknown) log(1 - p^s_ij) ]

    ``logits``: the **strong** view's logits (gradient flows here only); ``weak_probs``: σ of
    the weak view's logits (detached: the pseudo-labels are targets); ``labels`` 1/0/-1.
    See :func:`plc_targets` for the two forms' masks.

    Normalisation: ``form="paper"`` divides the masked sum by b·C (Eq. 4's 1/b Σ_j, and the
    same 1/C that the lab's L_AN carries as a mean over b×C, so the paper's 1 : 1 weighting of
    the two terms per entry is kept); ``form="code"`` is the code's masked mean (Σ over the
    mask / |mask|; 0 when nothing is selected, where the official code divides 0 by 0 and
    gives NaN). ``reduction="none"`` returns the masked b×C
    matrix (unscaled), ``"sum"`` its sum.
    """
    check_inputs(logits, labels)
    if not torch.is_tensor(weak_probs) or weak_probs.shape != logits.shape:
        raise ValueError("plc needs weak_probs=σ(weak-view logits), a tensor of the logits' shape "
                         f"{tuple(logits.shape)}; got {type(weak_probs).__name__}")
    target, mask = plc_targets(weak_probs, labels, delta, form)
    matrix = F.binary_cross_entropy_with_logits(logits, target.to(logits.dtype), reduction="none")
    matrix = matrix * mask.to(logits.dtype)
    return reduce(matrix, reduction,
                  denominator=logits.numel() if form == "paper" else mask.sum().clamp(min=1))


def lac_loss(z_weak: torch.Tensor, z_strong: torch.Tensor, classes: torch.Tensor,
             queue_z: Optional[torch.Tensor] = None, queue_classes: Optional[torch.Tensor] = None,
             tau: float = 0.5, form: str = "code", num_embeddings: Optional[int] = None) -> torch.Tensor:
    """Label-aware global consistency (LAC paper Eq. 5–7, memory queue of Sec. 3.2).

    Inputs are the **valid** entries only — (image, class) pairs whose weak-view pseudo-label
    is ≥ δ or that are observed positives (their pseudo-label is taken as 1, as the paper says):
    ``z_weak``, ``z_strong`` (n, d) L2-normalised projections of the two views of the same
    entries, ``classes`` (n,) their class ids. The memory queue holds **pairs**:
    ``queue_z`` (m, 2, d) — the weak and the strong projection of m past entries (detached) —
    and ``queue_classes`` (m,). Similarity s(a, b) = a·b / τ (τ = 0.5, the code's default).

    ``form="code"`` (**default**; SupCon, Khosla et al. 2020, as the official
    ``lib/utils/lacloss.py`` computes it, which produced the paper's numbers).
    The entry set E is [weak views; strong views] of the current pairs and of the queue's
    pairs (2(n + m) embeddings); **every entry of E is an anchor** a (queue entries too: they
    carry no gradient themselves, but their similarities to the current entries do), its
    positives P(a) are the other entries of its class (its own other view included), and::

        L = -1/|E| Σ_a 1/|P(a)| Σ_{p∈P(a)} [ s(z_a, z_p) − log Σ_{e∈E, e≠a} exp s(z_a, z_e) ]

    Because it averages over positives and over anchors, its scale barely depends on the
    queue: it is a log-ratio of ~log(|E|) whatever K is. Every anchor has a positive (its
    other view), so no anchor is skipped in practice; one without would be skipped (the code
    would give NaN). Measured against the official ``LACLoss`` on the same entry set: ≤ 4e-15.
    The official step stores a batch with a single valid entry twice (a 0-d index); pass it
    once here.

    ``form="paper"`` (Eq. 7 as printed). Anchors: the current batch's weak views z_k.
    Candidates: the current strong views z'_k' (k' = k is the anchor's other view, as the paper
    prescribes to avoid the trivial pair) and the queue's **strong** views (the B × (B+K)
    extension, K pairs)::

        L = -1/B Σ_k Σ_{k'} I_kk' [ s(z_k, z'_k') − log Σ_t Ī_kt exp s(z_k, z'_t) ]

    with I_kk' = 1 for the same class (Eq. 5) and Ī_kt = 1 for a different class (Eq. 6): the
    denominator holds **inter-class entries only**, and the sum over positives is not
    averaged. B = b·C, every embedding of the batch (``num_embeddings``; the n valid ones when
    not given). An anchor with no inter-class entry has an empty denominator and contributes 0.
    Not the default: the literal sum over positives **grows with the queue** — every queued
    same-class entry adds a term (fidelity audit, ``notebooks/fidelity.md``: 64 anchors, 31.9 without a queue, 373
    with 512 queued embeddings), so a queue ablation would measure a loss weight.
    """
    _check_form(form)
    if not (isinstance(tau, (int, float)) and tau > 0):
        raise ValueError(f"tau must be a positive number, got {tau!r}")
    if z_weak.shape != z_strong.shape or z_weak.ndim != 2 or classes.shape != z_weak.shape[:1]:
        raise ValueError(f"z_weak {tuple(z_weak.shape)}, z_strong {tuple(z_strong.shape)} must be (n, d) "
                         f"and classes {tuple(classes.shape)} (n,)")
    if (queue_z is None) != (queue_classes is None):
        raise ValueError("pass both queue_z and queue_classes, or neither")
    d = z_weak.shape[1]
    if queue_z is None:
        queue_z = z_weak.new_zeros((0, 2, d))
        queue_classes = classes.new_zeros((0,))
    if queue_z.ndim != 3 or queue_z.shape[1:] != (2, d) or queue_classes.shape != queue_z.shape[:1]:
        raise ValueError(f"the queue holds pairs: queue_z must be (m, 2, {d}) (weak, strong) and "
                         f"queue_classes (m,); got {tuple(queue_z.shape)} and {tuple(queue_classes.shape)}")
    queue_z = queue_z.detach().to(z_weak.dtype)
    queue_classes = queue_classes.to(classes.device)
    n = z_weak.shape[0]
    if n == 0:
        return z_weak.sum() * 0.0
    if form == "paper":
        cand = torch.cat([z_strong, queue_z[:, 1]])
        cand_cls = torch.cat([classes, queue_classes])
        sim = z_weak @ cand.T / tau                                    # (n, n + m)
        same = classes[:, None] == cand_cls[None, :]
        neg_lse = torch.logsumexp(sim.masked_fill(same, float("-inf")), dim=1)  # -inf: no negatives
        has_neg = torch.isfinite(neg_lse)
        terms = (sim - neg_lse[:, None]).masked_fill(~same | ~has_neg[:, None], 0.0)
        total = n if num_embeddings is None else int(num_embeddings)
        if total < n:
            raise ValueError(f"num_embeddings ({total}) is smaller than the {n} valid entries")
        return -terms.sum() / total
    feats = torch.cat([z_weak, queue_z[:, 0], z_strong, queue_z[:, 1]])
    cls = torch.cat([classes, queue_classes, classes, queue_classes])
    sim = feats @ feats.T / tau
    eye = torch.eye(len(feats), dtype=torch.bool, device=feats.device)
    log_prob = sim - torch.logsumexp(sim.masked_fill(eye, float("-inf")), dim=1, keepdim=True)
    pos = (cls[:, None] == cls[None, :]) & ~eye
    # |P(a)| = the entries of a's class but a itself: from the class counts (the same integers
    # as pos.sum(1), without summing an |E| x |E| matrix)
    _, of_class, counts = torch.unique(cls, return_inverse=True, return_counts=True)
    n_pos = counts[of_class] - 1
    per_anchor = (log_prob.masked_fill(~pos, 0.0)).sum(1) / n_pos.clamp(min=1)
    keep = n_pos > 0
    return -(per_anchor[keep]).mean()
