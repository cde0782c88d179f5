"""The hook interface every method implements; :func:`mlpl_lab.engine.train.fit` is the one loop.

A method owns its networks, optimisers and any state (a label matrix, a memory queue, a
selection schedule). The loop owns everything else: seeding, batching, augmentation views,
AMP, backward and optimiser steps, evaluation, history, checkpoints and progress bars.

Hooks, in the order the loop calls them::

    setup(ctx)                     once; build networks/optimisers from ctx
    on_epoch_start(epoch)          every epoch (0-based)
    training_step(batch, epoch)    every batch -> (loss, logs); the loop does backward/step
    on_step_end(step)              after every REAL optimiser step (not one AMP skipped):
                                   EMA updates and anything that must see the new weights
    on_epoch_end(epoch)            every epoch, after the last step, before evaluation
    predict_proba(x)               evaluation: probabilities (B, C) of the reported model
    extra_predictions(x)           optional extra heads evaluated too (e.g. CLS's f and g)
    state_dict()/load_state_dict() checkpoints (networks, optimisers, extra_state())

``batch`` is a dict: ``image`` (weak view), ``image_strong`` (when ``"strong"`` is in
``views``), ``observed`` (the dataset's observed labels, 1/0/-1), ``index`` (row in the train
set) and ``labels`` (the TRUE labels: for diagnostics and logs only — a method that trains
on them is cheating; the engine's tests check the baselines do not read them).
Methods that change labels (LL-Cp, OPML correction, APL) keep their own copy,
``self.labels`` (N x C); every method reads its batch's labels with :meth:`Method.batch_labels`.
**Side information** the training set gives (a ``side_info`` mapping on the dataset: class priors,
per-image label cardinalities) reaches the method as ``ctx.extras`` at setup; a per-image value is
read for the batch by ``batch["index"]``, like the labels (:mod:`mlpl_lab.methods.side_information`).

**Per-epoch diagnostics** (selection precision, pseudo-label counts, train AP, ...): a method
calls ``self.log_epoch(name=value, ...)`` (numbers only) any time during an epoch; the loop
collects them after ``on_epoch_end`` into that epoch's ``history`` row, so they reach the run
store with the metrics. This is the one mechanism; nothing else keeps per-epoch logs.

**EMA**: a method with ``ema_decay`` (per epoch, see :mod:`mlpl_lab.methods.ema`) set before
``setup`` gets ``self.ema_model`` of its main network, updated in ``on_step_end`` and evaluated as
the extra head ``"ema"``.
"""
from __future__ import annotations

import numbers
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, Iterable, Optional, Tuple

import torch
from torch import nn

from .ema import EMA


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
    steps_per_epoch: int = 1  # optimiser steps per epoch (drop_last batches)
    #: side information the training set gives (its ``side_info`` mapping, copied by the loop at
    #: setup): class priors, label cardinalities — per image in the training set's row order, read
    #: by ``batch["index"]`` (:mod:`mlpl_lab.methods.side_information`); empty for a plain dataset
    extras: Dict[str, Any] = field(default_factory=dict)


class Method:
    """Base class: one network, one optimiser, a mutable copy of the observed labels.

    Subclasses override :meth:`training_step` (and any other hook they need).
    """

    name = "method"
    #: which views the batch carries: "weak" always; "strong" adds batch["image_strong"].
    views: Tuple[str, ...] = ("weak",)

    #: EMA decay per epoch (None: no EMA); see :mod:`mlpl_lab.methods.ema`
    ema_decay: Optional[float] = None

    #: a second stage (``init_from``) starts from the first stage's ``"raw"`` best-validation
    #: weights, or (``"raw_or_ema"``) from whichever of those and their EMA copy scores the
    #: higher validation mAP — the loop evaluates both and records the choice
    init_weights: str = "raw"

    #: under torchrun, wrap the networks in DistributedDataParallel (True: the training step
    #: calls each network's forward once). False: gradients are averaged after backward
    #: instead — same numbers, for steps that call a network twice or through ``outputs``.
    ddp_wrap: bool = True

    def __init__(self, **hparams):
        self.hparams = dict(hparams)
        self.ctx: TrainContext | None = None
        self.ema_model: EMA | None = None
        self._epoch_logs: Dict[str, float] = {}

    # -- setup -------------------------------------------------------------------------
    def setup(self, ctx: TrainContext) -> None:
        self.ctx = ctx
        self.net = ctx.make_model().to(ctx.device)
        self.optimizer = ctx.make_optimizer(self.net.parameters())
        self.labels = ctx.train_observed.clone()

    def keeps_ema(self) -> bool:
        """Whether training will keep an EMA copy (known before :meth:`setup`)."""
        return self.ema_decay is not None

    def setup_ema(self) -> None:
        """Called by the loop after :meth:`setup`: build ``self.ema_model`` of the main network when
        ``ema_decay`` is set."""
        if self.ema_decay is None:
            self.ema_model = None
            return
        main = next(iter(self.networks().values()))
        self.ema_model = EMA(main, self.ema_decay, self.ctx.steps_per_epoch)

    def batch_labels(self, batch: Dict[str, torch.Tensor]) -> torch.Tensor:
        """The method's current labels (1/0/-1) of the batch's rows: ``self.labels[index]`` on
        the batch's device. The one place a method reads its training labels.

        On an accelerator the whole label matrix is copied to the device once and kept there
        (no host-to-device copy per step); the copy is renewed when ``self.labels`` is replaced
        or changed in place (the tensor's identity and its in-place version counter), as LL-R's
        and OPML-SP's label corrections do."""
        labels, device = self.labels, batch["image"].device
        if labels.device == device:
            return labels[batch["index"].to(device)]
        key = (id(labels), labels._version, str(device))
        cached = getattr(self, "_labels_on_device", None)
        if cached is None or cached[0] != key:
            cached = self._labels_on_device = (key, labels.to(device))
        return cached[1][batch["index"].to(device)]

    def log_epoch(self, **values) -> None:
        """Report per-epoch diagnostics (numbers); they land in this epoch's history row."""
        for k, v in values.items():
            if isinstance(v, bool) or not isinstance(v, numbers.Real) and not (
                    torch.is_tensor(v) and v.numel() == 1):
                raise TypeError(f"log_epoch({k}=...) takes a number, got {type(v).__name__}")
            self._epoch_logs[k] = float(v)

    def pop_epoch_logs(self) -> Dict[str, float]:
        """What :meth:`log_epoch` collected since the last call (the loop calls this)."""
        logs, self._epoch_logs = self._epoch_logs, {}
        return logs

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

    def on_step_end(self, step: int) -> None:
        """After every real optimiser step (``step`` counts them from 0 over the run)."""
        if self.ema_model is not None:
            self.ema_model.update(next(iter(self.networks().values())))

    def on_epoch_end(self, epoch: int) -> None:
        pass

    # -- prediction --------------------------------------------------------------------
    def predict_logits(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(x)

    def predict_proba(self, x: torch.Tensor) -> torch.Tensor:
        return torch.sigmoid(self.predict_logits(x))

    def extra_predictions(self, x: torch.Tensor) -> Dict[str, torch.Tensor]:
        """Extra heads evaluated every epoch (``val_mAP[<head>]``): the EMA when there is one."""
        if self.ema_model is not None:
            return {"ema": torch.sigmoid(self.ema_model(x))}
        return {}

    # -- state -------------------------------------------------------------------------
    def extra_state(self) -> Dict[str, Any]:
        return {"labels": self.labels}

    def load_extra_state(self, state: Dict[str, Any]) -> None:
        self.labels = state["labels"]

    def weights_state(self) -> Dict[str, Any]:
        """The networks' (and EMA's) weights: what the best-epoch restore and the run store keep."""
        return {"networks": {k: v.state_dict() for k, v in self.networks().items()},
                "ema": self.ema_model.state_dict() if self.ema_model is not None else None}

    def load_weights_state(self, state: Dict[str, Any]) -> None:
        for k, net in self.networks().items():
            net.load_state_dict(state["networks"][k])
        if state.get("ema") is not None and self.ema_model is not None:
            self.ema_model.load_state_dict(state["ema"])

    def state_dict(self, optimizers: bool = True) -> Dict[str, Any]:
        state = {
            "networks": {k: v.state_dict() for k, v in self.networks().items()},
            "extra": self.extra_state(),
            "ema": self.ema_model.state_dict() if self.ema_model is not None else None,
        }
        if optimizers:
            state["optimizers"] = {k: v.state_dict() for k, v in self.optimizers().items()}
        return state

    def load_state_dict(self, state: Dict[str, Any]) -> None:
        """Load networks, extra state, EMA and (when present) optimiser states."""
        for k, net in self.networks().items():
            net.load_state_dict(state["networks"][k])
        if "optimizers" in state:
            for k, opt in self.optimizers().items():
                opt.load_state_dict(state["optimizers"][k])
        self.load_extra_state(state["extra"])
        if state.get("ema") is not None and self.ema_model is not None:
            self.ema_model.load_state_dict(state["ema"])

    def train(self, mode: bool = True) -> None:
        for net in self.networks().values():
            net.train(mode)

    def __repr__(self) -> str:
        hp = ", ".join(f"{k}={v!r}" for k, v in self.hparams.items())
        return f"{type(self).__name__}({hp})"
