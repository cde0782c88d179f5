"""Label cardinality as side information (Gharib, Murena, Klami, TMLR 2025): top-k pseudo-labels from
the maximum cardinality, the distribution P(k) or each image's k. The pseudo-labels and the loss are
:mod:`mlpl_lab.losses.cardinality` (what the lab could read of the paper, and what it could not, is
written there); this module supplies the side information and, for P(k), the per-image k̂.

``grain``:

* ``"max"`` (default): K = the most labels an image has; every batch, the labels below each
  image's top K are pseudo-negatives (loss ``cardinality``, ``grain="max"``);
* ``"distribution"``: P(k); at the start of every epoch from the warm-up on, each image gets a k̂_i
  by matching the N images, ranked by the current model's expected count Σ_c p_ic
  (``ctx.predict_train()``), to the N cardinalities P(k) implies
  (:func:`~mlpl_lab.losses.cardinality.match_cardinalities`; floored at the image's observed
  positives), then trains as ``"per_image"`` with k̂;
* ``"per_image"``: each image's k_i; every batch, the top k_i labels are pseudo-positives and the
  rest pseudo-negatives.

The side information comes from the training set's ``side_info`` when it has one, else from its
true labels, read once at setup (:mod:`~mlpl_lab.methods.side_information`); ``max_k`` (an
integer) or ``distribution`` (a list of P(k), k = 0, 1, ...) give it in the spec instead.

``k_offset`` (default 0) adds a whole number to the k each grain gives (K, the matched k̂_i or
k_i), floored at the image's observed positives (and at 0) and capped at the number of classes:
the lab's knob for *wrong* side information (chapter 08's sweep: the cardinality off by ±1, or
P(k) shifted by one).

Warm-up: the first ``warmup_epochs`` epochs (default ``None``: a sixth of the run's epochs, at least
one, :func:`~mlpl_lab.methods.side_information.warmup_length`; the lab's choice: a fresh head's ranking is
noise) train with AN. Per-epoch diagnostic for ``"distribution"``: ``cardinality_exact`` (the
share of images whose k̂ equals their true k, where the truth is kept; for the log only).
"""
from __future__ import annotations

from typing import Optional, Sequence

import torch

from .. import losses
from ..losses.cardinality import match_cardinalities, slot_counts
from .loss_method import LossMethod
from .registry import register_method
from .side_information import side_information, warmup_length

METHOD_GRAINS = ("max", "distribution", "per_image")


@register_method("cardinality")
class CardinalityMethod(LossMethod):
    """Top-k pseudo-labels from label-cardinality side information at one ``grain`` (module
    docstring). Hyperparameters: ``grain``, ``max_k`` / ``distribution`` (the side information in
    the spec, optional), ``warmup_epochs`` (None: a sixth of the run), ``k_offset`` (0: the side information as given)."""

    def __init__(self, grain: str = "max", max_k: Optional[int] = None,
                 distribution: Optional[Sequence[float]] = None, warmup_epochs: Optional[int] = None,
                 k_offset: int = 0):
        if grain not in METHOD_GRAINS:
            raise ValueError(f"grain must be one of {METHOD_GRAINS}, got {grain!r}")
        super().__init__(loss="cardinality", grain="max" if grain == "max" else "per_image")
        if max_k is not None and (grain != "max" or isinstance(max_k, bool) or not isinstance(max_k, int)
                                  or max_k < 0):
            raise ValueError(f"max_k (an integer >= 0) goes with grain='max' only, got {max_k!r} "
                             f"with grain={grain!r}")
        if distribution is not None:
            if grain != "distribution":
                raise ValueError(f"distribution goes with grain='distribution' only, not {grain!r}")
            slot_counts(distribution, 1)  # a valid P(k)
            distribution = [float(v) for v in distribution]
        if warmup_epochs is not None and (isinstance(warmup_epochs, bool) or not isinstance(warmup_epochs, int)
                                          or warmup_epochs < 0):
            raise ValueError(f"warmup_epochs must be an integer >= 0, got {warmup_epochs!r}")
        if isinstance(k_offset, bool) or not isinstance(k_offset, int):
            raise ValueError(f"k_offset must be a whole number (0: the cardinality as given), got {k_offset!r}")
        self.k_offset = k_offset
        self.grain, self.max_k, self.distribution = grain, max_k, distribution
        self.warmup_epochs = warmup_epochs
        self.hparams = {"grain": grain, "max_k": max_k, "distribution": distribution,
                        "warmup_epochs": warmup_epochs, "k_offset": k_offset}
        self.an = losses.get("an")
        self.k: Optional[torch.Tensor] = None

    def setup(self, ctx):
        super().setup(ctx)
        self.warmup = warmup_length(self.warmup_epochs, ctx.epochs)
        self.num_classes = ctx.num_classes
        if self.grain == "max":
            K = self.max_k if self.max_k is not None else int(side_information(ctx, "max_cardinality"))
            self.k = torch.tensor(min(max(K + self.k_offset, 0), self.num_classes))
        elif self.grain == "per_image":
            k = torch.as_tensor(side_information(ctx, "cardinality")).long().flatten().cpu()
            if k.numel() != ctx.num_train:
                raise ValueError(f"side information 'cardinality' has {k.numel()} entries for "
                                 f"{ctx.num_train} training images")
            self.k = self.shifted(k)
        else:
            self.pk = (self.distribution if self.distribution is not None
                       else side_information(ctx, "cardinality_distribution"))
            self.k = None
        self.true_k = ctx.train_true_labels.eq(1).sum(1).cpu() if ctx.train_true_labels is not None else None

    def shifted(self, k: torch.Tensor) -> torch.Tensor:
        """Per-image ``k`` plus :attr:`k_offset`, floored at each image's observed positives and
        capped at the number of classes (unchanged at offset 0)."""
        if self.k_offset == 0:
            return k
        floor = (self.labels == 1).sum(dim=1).cpu()
        return torch.maximum(k + self.k_offset, floor).clamp(0, self.num_classes)

    def on_epoch_start(self, epoch):
        if self.grain != "distribution" or epoch < self.warmup:
            return
        probs = self.ctx.predict_train()
        self.k = self.shifted(match_cardinalities(probs.sum(dim=1), self.pk, min_k=(self.labels == 1).sum(dim=1)))
        if self.true_k is not None:  # diagnostics only
            self.log_epoch(cardinality_exact=float((self.k == self.true_k).double().mean()))

    def batch_k(self, batch) -> torch.Tensor:
        """The k the loss gets for this batch: K (max), or k_i of the batch's rows."""
        if self.grain == "max":
            return self.k
        return self.k[batch["index"].cpu()]

    def training_step(self, batch, epoch):
        labels = self.batch_labels(batch)
        logits = self.net(batch["image"])
        if epoch < self.warmup:
            return self.an(logits, labels), {}
        k = self.batch_k(batch).to(logits.device)
        return self.loss_fn(logits, labels, k=k, **self.loss_hparams), {}

    def extra_state(self):
        return {"labels": self.labels, "k": self.k}

    def load_extra_state(self, state):
        self.labels = state["labels"]
        self.k = state.get("k")
