"""The hook interface every method implements; :func:`mlpl_lab.train.fit` is the one loop.

A method owns its networks, optimisers and any state (a label matrix, a memory queue, a
selection schedule). The loop owns everything else: seeding, batching, augmentation views,
AMP, backward and optimiser steps, evaluation, history, checkpoints and progress bars.

Hooks, in the order the loop calls them::

    setup(ctx)                     once; build networks/optimisers from ctx
    on_epoch_start(epoch)          every epoch (0-based)
    training_step(batch, epoch)    every batch -> (loss, logs); the loop does backward/step
    on_epoch_end(epoch)            every epoch, after the last step, before evaluation
    predict_proba(x)               evaluation: probabilities (B, C) of the reported model
    extra_predictions(x)           optional extra heads evaluated too (e.g. CLS's f and g)
    state_dict()/load_state_dict() checkpoints (networks, optimisers, extra_state())

``batch`` is a dict: ``image`` (weak view), ``image_strong`` (when ``"strong"`` is in
``views``), ``observed`` (the dataset's observed labels, 1/0/-1), ``index`` (row in the train
set) and ``labels`` (the TRUE labels: for diagnostics and logs only — a method that trains
on them is cheating; the engine's tests check the baselines do not read them).
Methods that change labels (LL-Cp, OPML correction, APL) keep their own copy,
``self.labels`` (N x C), and read ``self.labels[batch["index"]]`` instead of ``observed``.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Dict, Iterable, Tuple

import torch
from torch import nn


@dataclass
class TrainContext:
    """What the loop tells a method at setup."""

    num_classes: int
    num_train: int
    epochs: int
    device: torch.device
    train_observed: torch.Tensor  # (N, C) int64, 1/0/-1, on CPU
    make_model: Callable[[], nn.Module]
    make_optimizer: Callable[[Iterable], torch.optim.Optimizer]
    predict_train: Callable[[], torch.Tensor] = None  # eval-mode probs over the train set
    train_true_labels: torch.Tensor | None = None  # diagnostics only
    seed: int = 0
    extras: Dict[str, Any] = field(default_factory=dict)


class Method:
    """Base class: one network, one optimiser, a mutable copy of the observed labels.

    Subclasses override :meth:`training_step` (and any other hook they need).
    """

    name = "method"
    #: which views the batch carries: "weak" always; "strong" adds batch["image_strong"].
    views: Tuple[str, ...] = ("weak",)

    def __init__(self, **hparams):
        self.hparams = dict(hparams)
        self.ctx: TrainContext | None = None

    # -- setup -------------------------------------------------------------------------
    def setup(self, ctx: TrainContext) -> None:
        self.ctx = ctx
        self.net = ctx.make_model().to(ctx.device)
        self.optimizer = ctx.make_optimizer(self.net.parameters())
        self.labels = ctx.train_observed.clone()

    def networks(self) -> Dict[str, nn.Module]:
        """Every trained network by name (train/eval mode, checkpoints, Grad-CAM)."""
        return {"net": self.net}

    def optimizers(self) -> Dict[str, torch.optim.Optimizer]:
        return {"net": self.optimizer}

    # -- training hooks ----------------------------------------------------------------
    def on_epoch_start(self, epoch: int) -> None:
        pass

    def training_step(self, batch: Dict[str, torch.Tensor], epoch: int):
        raise NotImplementedError(f"{type(self).__name__} must implement training_step")

    def on_epoch_end(self, epoch: int) -> None:
        pass

    # -- prediction --------------------------------------------------------------------
    def predict_logits(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(x)

    def predict_proba(self, x: torch.Tensor) -> torch.Tensor:
        return torch.sigmoid(self.predict_logits(x))

    def extra_predictions(self, x: torch.Tensor) -> Dict[str, torch.Tensor]:
        return {}

    # -- state -------------------------------------------------------------------------
    def extra_state(self) -> Dict[str, Any]:
        return {"labels": self.labels}

    def load_extra_state(self, state: Dict[str, Any]) -> None:
        self.labels = state["labels"]

    def state_dict(self) -> Dict[str, Any]:
        return {
            "networks": {k: v.state_dict() for k, v in self.networks().items()},
            "optimizers": {k: v.state_dict() for k, v in self.optimizers().items()},
            "extra": self.extra_state(),
        }

    def load_state_dict(self, state: Dict[str, Any]) -> None:
        for k, net in self.networks().items():
            net.load_state_dict(state["networks"][k])
        for k, opt in self.optimizers().items():
            opt.load_state_dict(state["optimizers"][k])
        self.load_extra_state(state["extra"])

    def train(self, mode: bool = True) -> None:
        for net in self.networks().values():
            net.train(mode)

    def __repr__(self) -> str:
        hp = ", ".join(f"{k}={v!r}" for k, v in self.hparams.items())
        return f"{type(self).__name__}({hp})"
