"""ROLE (Cole et al. CVPR 2021): a classifier and a learnable N x C label matrix trained together.

The label matrix is method state (an ``nn.Parameter`` with its own Adam optimiser at
``lr_mult`` = 10 x the classifier's learning rate, Cole's ``lr_mult``); the batch's rows are
picked with ``batch["index"]``. The loss is :func:`mlpl_lab.losses.cole.role_loss`.
"""
from __future__ import annotations

import math

import torch
from torch import nn

from ..losses.cole import EXPECTED_NUM_POS
from .loss_method import LossMethod
from .registry import register_method


def _logit(p: float) -> float:
    return math.log(p / (1 - p))


def role_initial_logits(observed: torch.Tensor, generator: torch.Generator) -> torch.Tensor:
    """Cole's ``LabelEstimator`` initialisation, in logits: observed positives logit(0.995),
    observed negatives logit(0.005), unknown labels U(-logit(0.6), logit(0.6))."""
    q = _logit(0.6)
    init = q * (2 * torch.rand(observed.shape, generator=generator) - 1)
    init[observed == 1] = _logit(0.995)
    init[observed == 0] = _logit(0.005)
    return init


@register_method("role")
class ROLEMethod(LossMethod):
    """ROLE: ``role`` loss with a learnable label matrix (``label_logits``, N x C).

    Hyperparameters: ``expected_num_pos`` (default 1.5, Cole's PASCAL value) and ``lr_mult``
    (default 10, Cole). The label-matrix initialisation draws from a generator seeded with
    the run's seed, so it does not disturb the loop's random stream.
    """

    def __init__(self, expected_num_pos: float = EXPECTED_NUM_POS, lr_mult: float = 10.0):
        super().__init__(loss="role", expected_num_pos=expected_num_pos)
        if not lr_mult > 0:
            raise ValueError(f"lr_mult must be positive, got {lr_mult!r}")
        self.lr_mult = float(lr_mult)
        self.hparams["lr_mult"] = self.lr_mult

    def setup(self, ctx):
        super().setup(ctx)
        gen = torch.Generator().manual_seed(int(ctx.seed))
        self.label_logits = nn.Parameter(role_initial_logits(ctx.train_observed, gen).to(ctx.device))
        self.label_optimizer = ctx.make_optimizer([self.label_logits])
        for group in self.label_optimizer.param_groups:
            group["lr"] *= self.lr_mult

    def optimizers(self):
        return {"net": self.optimizer, "label_matrix": self.label_optimizer}

    def training_step(self, batch, epoch):
        idx = batch["index"].to(self.label_logits.device)
        labels = self.batch_labels(batch)
        logits = self.net(batch["image"])
        loss = self.loss_fn(logits, labels, label_logits=self.label_logits[idx],
                            **self.loss_kwargs(epoch))
        return loss, {}

    def extra_state(self):
        return {"labels": self.labels, "label_logits": self.label_logits.detach().clone()}

    def load_extra_state(self, state):
        self.labels = state["labels"]
        with torch.no_grad():
            self.label_logits.copy_(state["label_logits"])
