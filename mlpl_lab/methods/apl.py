"""EM + APL (Zhou et al. ECCV 2022): entropy maximisation with asymmetric pseudo-labelling.

APL, as ``main.py: aysmmetric_pseudo_labeling`` of ``Correr-Zhou/SPML-AckTheUnknown`` does it:
at the end of every epoch e (1-based) with e ≥ ``warmup_epoch``, predict the whole training
set (eval mode: ``ctx.predict_train()``, no augmentation — Zhou's pass uses the train
transforms), and for each class i take the unknown entries that have no pseudo-label yet,
sort their predictions ascending and make the lowest

    int(neg_proportion · U_i / (T - warmup_epoch))

soft negatives whose target is their current prediction p̂ (U_i = the number of unknown
labels of class i, counted once at the start; T = number of epochs). They then take
β·BCE(p, p̂) instead of -α·H(p) (loss ``em_apl``). The soft targets are method state
(``soft_targets``, N x C, NaN where none); the hard labels are never changed.

Differences from the official code (fidelity audit, ``notebooks/fidelity.md``): **ties** in the ranking
of predictions are broken by row index (the lab's one stable top-k,
:mod:`mlpl_lab.methods.topk`), where the official code's unstable sort over a shuffled loader
breaks them at random; and the official code **never pseudo-labels when an epoch has a single
batch**, while here a round runs whatever the number of batches.
"""
from __future__ import annotations

import torch

from ..losses.entropy import APL_BETA, EM_ALPHA
from .loss_method import LossMethod
from .topk import top_k_mask
from .registry import register_method


def apl_round(probs: torch.Tensor, labels: torch.Tensor, soft_targets: torch.Tensor,
              unlabel_num: torch.Tensor, neg_proportion: float, rounds: int) -> int:
    """One APL round in place on ``soft_targets``; returns how many entries it labelled.

    For each class i: the ``int(neg_proportion · unlabel_num[i] / rounds)`` lowest predictions
    among the unknown entries without a soft target get their prediction as soft target.
    Ties are broken by row index (the official code's unstable sort breaks them at random).
    """
    added = 0
    for i in range(labels.shape[1]):
        quota = int(neg_proportion * int(unlabel_num[i]) / rounds)
        if quota <= 0:
            continue
        cand = (labels[:, i] == -1) & torch.isnan(soft_targets[:, i])
        if not bool(cand.any()):
            continue
        chosen = torch.nonzero(top_k_mask(probs[:, i], quota, cand, largest=False)).flatten()
        soft_targets[chosen, i] = probs[chosen, i].to(soft_targets.dtype)
        added += int(chosen.numel())
    return added


# schedule-bound: APL labels a share of the unknown entries after every epoch from warm-up to the
# last (its rounds span the rest of the run), so the targets move until the end by construction
@register_method("em_apl", schedule_bound=True)
class EMAPLMethod(LossMethod):
    """EM + APL. Defaults α = 0.2, β = 0.02, warmup_epoch = 5, neg_proportion = 0.9
    (Zhou's PASCAL VOC settings; he trains 10 epochs, the cpu profile 8). With fewer epochs
    than ``warmup_epoch`` no APL round happens and the method is plain EM."""

    def __init__(self, alpha: float = EM_ALPHA, beta: float = APL_BETA, warmup_epoch: int = 5,
                 neg_proportion: float = 0.9, loss: str = "em_apl"):
        if loss not in ("em_apl", "gr_as_em"):
            raise ValueError(f"loss must be 'em_apl' or its framework form 'gr_as_em', got {loss!r}")
        super().__init__(loss=loss, alpha=alpha, beta=beta)
        if not isinstance(warmup_epoch, int) or warmup_epoch < 1:
            raise ValueError(f"warmup_epoch must be an integer >= 1 (1-based), got {warmup_epoch!r}")
        if not 0.0 < neg_proportion <= 1.0:
            raise ValueError(f"neg_proportion must be in (0, 1], got {neg_proportion!r}")
        self.warmup_epoch = warmup_epoch
        self.neg_proportion = float(neg_proportion)
        self.hparams.update(warmup_epoch=warmup_epoch, neg_proportion=neg_proportion)

    def setup(self, ctx):
        super().setup(ctx)
        self.soft_targets = torch.full(self.labels.shape, float("nan"))
        self.unlabel_num = (self.labels == -1).sum(0)
        self.pseudo_labelled = 0

    def training_step(self, batch, epoch):
        rows = batch["index"].cpu()
        device = batch["image"].device
        labels = self.labels[rows].to(device)
        logits = self.net(batch["image"])
        loss = self.loss_fn(logits, labels, soft_targets=self.soft_targets[rows].to(device),
                            **self.loss_kwargs(epoch))
        return loss, {"apl_soft_negatives": float(self.pseudo_labelled)}

    def on_epoch_end(self, epoch):
        rounds = self.ctx.epochs - self.warmup_epoch
        if epoch + 1 < self.warmup_epoch or rounds <= 0:
            return
        probs = self.ctx.predict_train()
        self.pseudo_labelled += apl_round(probs, self.labels, self.soft_targets, self.unlabel_num,
                                          self.neg_proportion, rounds)

    def extra_state(self):
        return {"labels": self.labels, "soft_targets": self.soft_targets,
                "pseudo_labelled": self.pseudo_labelled}

    def load_extra_state(self, state):
        self.labels = state["labels"]
        self.soft_targets = state["soft_targets"]
        self.pseudo_labelled = state["pseudo_labelled"]
