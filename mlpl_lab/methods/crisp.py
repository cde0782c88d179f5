"""Crisp (Liu, Xu, Wang, Geng, NeurIPS 2025): re-estimate the class priors every epoch, train on the
prior-weighted risk (Algorithm 1). The estimator (Eq. 2) and the risk (Eq. 7) are plain functions in
:mod:`mlpl_lab.losses.crisp`; this module only alternates them through the engine's hooks.

* **Warm-up** (Appendix A.6: "we first initialize the predictive network by performing warm-up
  training with AN"): the first ``warmup_epochs`` epochs train with AN. The paper does not say
  how long; the lab's default (``None``) is a sixth of the run's epochs, at least one
  (:func:`~mlpl_lab.methods.side_information.warmup_length`): Eq. 2 reads the classifier's scores,
  and after one epoch of AN on the cpu profile they were too poor for a pure top bin (the runs of
  that first default are described in the commit that changed it).
* **Estimation** (Algorithm 1, steps 2–6; Appendix A.6: "after each epoch, the class prior is
  re-estimated via the trained model"): at the start of every epoch from the warm-up on,
  ``ctx.predict_train()`` (eval-mode probabilities over the training set) gives f_j(x), and
  :func:`~mlpl_lab.losses.crisp.estimate_class_priors` the priors from the current observed
  positives. ``estimate_every=3`` re-estimates every third epoch (the paper's Crisp-3EP, Table 5).
* **Training** (step 7): the registered loss ``crisp`` at those priors.

``priors`` chooses where the priors come from: ``"estimated"`` (default, the paper), ``"true"``
(the training set's true priors, side information read once at setup:
:mod:`~mlpl_lab.methods.side_information` — the comparison a chapter draws), or numbers (one for
every class, or one per class: the paper's fixed-prior ablation, Fig. 2c). ``prior_scale`` (default 1)
multiplies whatever priors the source gives, clipped to [0, 1]: the lab's knob for *wrong* side
information (chapter 08's sweep: the true priors off by a factor).

Per-epoch diagnostics: ``prior_mean`` (mean π over classes) and, where the training set keeps its
true labels, ``prior_abs_error`` (mean |π − π_true|; the truth read for the log only).
"""
from __future__ import annotations

from typing import Optional

import torch

from .. import losses
from ..losses.crisp import CRISP_DELTA, CRISP_TAU, check_delta_tau, estimate_class_priors, prior_vector
from .loss_method import LossMethod
from .registry import register_method
from .side_information import side_information, warmup_length

PRIOR_SOURCES = ("estimated", "true")


@register_method("crisp")
class CrispMethod(LossMethod):
    """Crisp: AN warm-up, then the risk of Eq. (7) at priors re-estimated each epoch (module
    docstring). Hyperparameters: ``priors`` ("estimated" | "true" | numbers), ``delta``, ``tau``
    (Eq. 2; 0.01 each, the paper's), ``absolute`` (Eq. 7; False: Eq. 5), ``warmup_epochs`` (None: a sixth of the run),
    ``estimate_every`` (1), ``prior_scale`` (1: the priors as the source gives them; else multiplied
    by it and clipped to [0, 1])."""

    def __init__(self, priors="estimated", delta: float = CRISP_DELTA, tau: float = CRISP_TAU,
                 absolute: bool = True, warmup_epochs: Optional[int] = None, estimate_every: int = 1,
                 prior_scale: float = 1.0):
        super().__init__(loss="crisp", absolute=bool(absolute))
        if isinstance(priors, str):
            if priors not in PRIOR_SOURCES:
                raise ValueError(f"priors must be one of {PRIOR_SOURCES} or numbers, got {priors!r}")
        else:
            prior_vector(priors, torch.as_tensor(priors).numel() or 1)  # numbers in [0, 1]
            priors = [float(v) for v in torch.as_tensor(priors, dtype=torch.float64).flatten()]
            priors = priors[0] if len(priors) == 1 else priors
        for name, value, low in (("warmup_epochs", warmup_epochs, 0), ("estimate_every", estimate_every, 1)):
            if value is None and name == "warmup_epochs":
                continue
            if isinstance(value, bool) or not isinstance(value, int) or value < low:
                raise ValueError(f"{name} must be an integer >= {low}, got {value!r}")
        check_delta_tau(delta, tau)
        if isinstance(prior_scale, bool) or not isinstance(prior_scale, (int, float)) or not prior_scale > 0:
            raise ValueError(f"prior_scale must be a number > 0 (1: the priors as given), got {prior_scale!r}")
        self.prior_scale = float(prior_scale)
        self.priors_source = priors
        self.delta, self.tau = float(delta), float(tau)
        self.warmup_epochs, self.estimate_every = warmup_epochs, estimate_every
        self.hparams = {"priors": priors, "delta": delta, "tau": tau, "absolute": bool(absolute),
                        "warmup_epochs": warmup_epochs, "estimate_every": estimate_every,
                        "prior_scale": self.prior_scale}
        self.an = losses.get("an")
        self.priors: Optional[torch.Tensor] = None

    def setup(self, ctx):
        super().setup(ctx)
        self.warmup = warmup_length(self.warmup_epochs, ctx.epochs)
        C = ctx.num_classes
        if self.priors_source == "true":
            self.priors = self.scaled(prior_vector(side_information(ctx, "class_priors"), C))
        elif self.priors_source == "estimated":
            self.priors = None
        else:
            self.priors = self.scaled(prior_vector(self.priors_source, C))
        self.true_priors = (prior_vector(side_information(ctx, "class_priors"), C)
                            if ctx.train_true_labels is not None or "class_priors" in ctx.extras else None)

    def scaled(self, priors: torch.Tensor) -> torch.Tensor:
        """``priors`` times :attr:`prior_scale`, clipped to [0, 1] (unchanged at scale 1)."""
        return priors if self.prior_scale == 1.0 else (priors * self.prior_scale).clamp(0.0, 1.0)

    def on_epoch_start(self, epoch):
        if epoch < self.warmup:
            return
        due = (epoch - self.warmup) % self.estimate_every == 0
        if self.priors_source == "estimated" and (due or self.priors is None):
            self.priors = self.scaled(estimate_class_priors(self.ctx.predict_train(), self.labels,
                                                            delta=self.delta, tau=self.tau))
        self.log_epoch(prior_mean=float(self.priors.mean()))
        if self.true_priors is not None:  # diagnostics only
            self.log_epoch(prior_abs_error=float((self.priors - self.true_priors).abs().mean()))

    def training_step(self, batch, epoch):
        labels = self.batch_labels(batch)
        logits = self.net(batch["image"])
        if epoch < self.warmup:
            return self.an(logits, labels), {}
        priors = self.priors.to(logits.device)
        return self.loss_fn(logits, labels, priors=priors, **self.loss_hparams), {}

    def extra_state(self):
        return {"labels": self.labels, "priors": self.priors}

    def load_extra_state(self, state):
        self.labels = state["labels"]
        self.priors = state.get("priors")
