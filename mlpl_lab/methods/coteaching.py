"""Two networks trained together, and the sample-selection family adapted to multi-label data.

:class:`TwoNetworkMethod` is the shared shape (CLS in :mod:`.cls` builds on it too): ``setup``
builds f and g with ``ctx.make_model()`` (two different random initialisations) and one
optimiser each; ``networks()``/``optimizers()`` return both, so the loop steps both after one
backward of ``loss_f + loss_g`` (disjoint parameters: the gradients are those of the separate
losses). **Evaluation**: ``predict_proba`` is the average of the two networks' probabilities,
(sigmoid(f(x)) + sigmoid(g(x))) / 2 — this is what the tables (``test_mAP``, CF1, OF1) report;
``extra_predictions`` adds f and g alone (history keys ``test_mAP[f]``, ``test_mAP[g]``). The
Co-teaching and JoCoR codes print both networks; the CLS paper does not say which it reports.

The family, adapted to multi-label partial labels (the CLS paper, Sec. "Comparison": "we
replace their original loss function with Binary Cross Entropy loss"):

* every sample's loss is its assume-negative BCE (unknown = negative), **averaged over its C
  labels** — the per-sample analogue of the single-label cross-entropy;
* the forget rate follows :func:`.selection.forget_rate` (the papers' schedule by default,
  the codes' ``linspace`` as ``schedule="code"``), T_k = 10 and c = 1 by default;
* the forget rate tau is the papers' "noise rate". Multi-label partial labels have no single
  noise rate (most images with two objects carry a hidden positive), so the default is the
  codes' default noise rate 0.2; pass ``forget_rate=`` to change it.

Per-sample losses are averaged over the selected samples (Co-teaching's code additionally
divides that mean by the number of selected samples — a constant-per-epoch rescaling that
Adam absorbs as long as there is no coupled weight decay (the lab's profiles use
weight_decay = 0); not reproduced).

The methods log what their selection throws away (see :mod:`.selection`): per epoch and per
network, how many labels of the dropped samples were hidden positives and how many were clean.
"""
from __future__ import annotations

from typing import Dict

import torch
import torch.nn.functional as F

from .. import losses
from .base import Method
from .registry import register_method
from .selection import SelectionLog
from .selection import forget_rate as forget_rate_at
from .selection import sample_selection_counts, select_small_loss_samples


class TwoNetworkMethod(Method):
    """Base of the co-training methods: networks f and g, an optimiser each, averaged prediction."""

    def setup(self, ctx) -> None:
        self.ctx = ctx
        # two calls, two different random initialisations (the global RNG advances)
        self.f = ctx.make_model().to(ctx.device)
        self.g = ctx.make_model().to(ctx.device)
        self.opt_f = ctx.make_optimizer(self.f.parameters())
        self.opt_g = ctx.make_optimizer(self.g.parameters())
        self.labels = ctx.train_observed.clone()
        self.selection_log = SelectionLog()
        self._cache = None

    def networks(self) -> Dict[str, torch.nn.Module]:
        return {"f": self.f, "g": self.g}

    def optimizers(self):
        return {"f": self.opt_f, "g": self.opt_g}

    def on_epoch_start(self, epoch: int) -> None:
        self.selection_log.start_epoch()

    @staticmethod
    def true_labels(batch):
        """The batch's TRUE labels when the loop provides them — for diagnostics only."""
        return batch.get("labels")

    # -- prediction: the tables use the average of the two networks' probabilities -------
    def _both(self, x: torch.Tensor):
        if self._cache is not None and self._cache[0] is x:
            return self._cache[1], self._cache[2]
        pf, pg = torch.sigmoid(self.f(x)), torch.sigmoid(self.g(x))
        self._cache = (x, pf, pg)  # extra_predictions on the same batch reuses these
        return pf, pg

    def predict_proba(self, x: torch.Tensor) -> torch.Tensor:
        pf, pg = self._both(x)
        return (pf + pg) / 2

    def predict_logits(self, x: torch.Tensor) -> torch.Tensor:
        return torch.logit(self.predict_proba(x), eps=1e-6)

    def extra_predictions(self, x: torch.Tensor) -> Dict[str, torch.Tensor]:
        pf, pg = self._both(x)
        self._cache = None
        return {"f": pf, "g": pg}

    # -- state ------------------------------------------------------------------------------
    def extra_state(self):
        return {"labels": self.labels}

    def load_extra_state(self, state) -> None:
        self.labels = state["labels"]


def per_sample_an_loss(logits: torch.Tensor, observed: torch.Tensor) -> torch.Tensor:
    """Assume-negative BCE of each sample, averaged over its C labels: shape (B,)."""
    return losses.get("an")(logits, observed, reduction="none").mean(dim=1)


class _ForgetSchedule:
    """The forget-rate hyperparameters shared by the sample-selection methods."""

    def _init_schedule(self, forget_rate: float, T_k: float, exponent: float, schedule: str) -> None:
        # validate now (bad values fail at construction, before any training)
        forget_rate_at(0, forget_rate, T_k, exponent, schedule)
        self.tau, self.T_k, self.exponent, self.schedule = forget_rate, T_k, exponent, schedule

    def forget(self, epoch: int) -> float:
        return forget_rate_at(epoch, self.tau, self.T_k, self.exponent, self.schedule)


@register_method("coteaching")
class CoTeaching(_ForgetSchedule, TwoNetworkMethod):
    """Co-teaching (Han et al., NeurIPS 2018), multi-label: cross update on small-loss samples.

    In each mini-batch each network ranks the samples by its own per-sample AN loss and keeps
    the ``floor((1 - forget(e)) B)`` smallest; **f is updated on g's selection and g on f's**
    (cross update, Alg. 1). forget(e) = tau * min(e / T_k, 1) (paper; ``schedule="code"`` for
    the code's linspace). Defaults: ``forget_rate`` tau = 0.2 (the code's default noise rate),
    ``T_k`` = 10 and ``exponent`` c = 1 (paper and code).
    """

    def __init__(self, forget_rate: float = 0.2, T_k: float = 10, exponent: float = 1.0,
                 schedule: str = "paper"):
        super().__init__(forget_rate=forget_rate, T_k=T_k, exponent=exponent, schedule=schedule)
        self._init_schedule(forget_rate, T_k, exponent, schedule)

    def _cross_update(self, lf, lg, rate, among=None):
        keep_f = select_small_loss_samples(lf.detach(), rate, among)  # f's small-loss samples
        keep_g = select_small_loss_samples(lg.detach(), rate, among)
        return keep_g, keep_f  # f learns from g's choice, g from f's

    def _log(self, used_f, used_g, observed, batch) -> None:
        truth = self.true_labels(batch)
        if truth is None:
            return
        with torch.no_grad():
            self.selection_log.add("f", sample_selection_counts(used_f, observed, truth))
            self.selection_log.add("g", sample_selection_counts(used_g, observed, truth))

    def training_step(self, batch, epoch):
        observed = self.batch_labels(batch)
        lf = per_sample_an_loss(self.f(batch["image"]), observed)
        lg = per_sample_an_loss(self.g(batch["image"]), observed)
        rate = 1.0 - self.forget(epoch)
        used_f, used_g = self._cross_update(lf, lg, rate)
        loss_f, loss_g = lf[used_f].mean(), lg[used_g].mean()
        self._log(used_f, used_g, observed, batch)
        return loss_f + loss_g, {"loss_f": loss_f.detach(), "loss_g": loss_g.detach(),
                                 "forget_rate": 1.0 - rate}

    def on_epoch_end(self, epoch: int) -> None:
        self.log_epoch(**self.selection_log.flush(forget_rate=self.forget(epoch)))


@register_method("coteaching_plus")
class CoTeachingPlus(CoTeaching):
    """Co-teaching+ (Yu et al., ICML 2019), multi-label: co-teaching on the disagreement set.

    Both networks predict the batch and only the samples on which their predictions disagree
    are used; co-teaching's cross update then runs on that set. What "the predictions disagree"
    means for C independent labels is the adaptation:

    * ``disagreement="top1"`` (default): their top-scoring classes differ — the official code's
      ``argmax`` prediction applied to the C logits;
    * ``disagreement="threshold"`` (our multi-label adaptation): their predicted label sets
      differ, i.e. the 0.5 decisions (logit >= 0) differ in at least one of the C labels.

    Every step logs which branch ran (``branch_warmup``, ``branch_empty`` — no disagreement,
    the whole batch is used —, ``branch_disagree``; their epoch means are the fractions of
    steps) and how many samples each network was updated on (``used_f``, ``used_g``; epoch
    means per step), so a collapse can be traced to tiny updates: with Adam, a step on 1–2
    samples moves the weights as far as a step on the whole batch.

    An earlier cpu run (single positive, 8 epochs) ended near 30 test mAP with either rule
    (threshold 30.0, top1 29.8) against 76.1 for AN; the branch logs above measure why
    (the chapter prints them).

    Code details kept: before ``init_epoch`` plain co-teaching runs (the code uses 0 for MNIST,
    5 for CIFAR-100, 20 for CIFAR-10, of 200 epochs; default 0, the code's MNIST value); an
    empty disagreement set updates both networks on the whole batch (the code does this for its
    first 5000 steps — all of our runs); a selection of 0 samples keeps the whole disagreement
    set (the code's fallback).
    """

    def __init__(self, forget_rate: float = 0.2, T_k: float = 10, exponent: float = 1.0,
                 schedule: str = "paper", init_epoch: int = 0, disagreement: str = "top1"):
        super().__init__(forget_rate=forget_rate, T_k=T_k, exponent=exponent, schedule=schedule)
        if isinstance(init_epoch, bool) or not isinstance(init_epoch, int) or init_epoch < 0:
            raise ValueError(f"init_epoch must be an integer >= 0, got {init_epoch!r}")
        if disagreement not in ("top1", "threshold"):
            raise ValueError(f"disagreement must be 'top1' or 'threshold', got {disagreement!r}")
        self.init_epoch, self.disagreement = init_epoch, disagreement
        self.hparams.update(init_epoch=init_epoch, disagreement=disagreement)

    def disagree(self, logits_f: torch.Tensor, logits_g: torch.Tensor) -> torch.Tensor:
        """(B,) mask of the samples on which the two networks' predictions differ."""
        with torch.no_grad():
            if self.disagreement == "top1":
                return logits_f.argmax(dim=1) != logits_g.argmax(dim=1)
            return ((logits_f >= 0) != (logits_g >= 0)).any(dim=1)

    def training_step(self, batch, epoch):
        observed = self.batch_labels(batch)
        logits_f, logits_g = self.f(batch["image"]), self.g(batch["image"])
        lf, lg = per_sample_an_loss(logits_f, observed), per_sample_an_loss(logits_g, observed)
        rate = 1.0 - self.forget(epoch)
        disagree = self.disagree(logits_f, logits_g)
        branch = {"branch_warmup": 0.0, "branch_empty": 0.0, "branch_disagree": 0.0}
        if epoch < self.init_epoch:
            used_f, used_g = self._cross_update(lf, lg, rate)
            branch["branch_warmup"] = 1.0
        elif not bool(disagree.any()):
            used_f = used_g = torch.ones_like(disagree)
            branch["branch_empty"] = 1.0
        else:
            used_f, used_g = self._cross_update(lf, lg, rate, among=disagree)
            branch["branch_disagree"] = 1.0
        loss_f, loss_g = lf[used_f].mean(), lg[used_g].mean()
        self._log(used_f, used_g, observed, batch)
        return loss_f + loss_g, {"loss_f": loss_f.detach(), "loss_g": loss_g.detach(),
                                 "disagree_fraction": disagree.float().mean(),
                                 "used_f": used_f.sum(), "used_g": used_g.sum(),
                                 "forget_rate": 1.0 - rate, **branch}


def bernoulli_kl(logits_p: torch.Tensor, logits_q: torch.Tensor) -> torch.Tensor:
    """Per-entry KL(Bern(sigmoid(s_p)) || Bern(sigmoid(s_q))), computed from logits (finite for
    any logits): p (log p - log q) + (1 - p)(log(1 - p) - log(1 - q))."""
    p = torch.sigmoid(logits_p)
    log_p, log_1p = -F.softplus(-logits_p), -F.softplus(logits_p)
    log_q, log_1q = -F.softplus(-logits_q), -F.softplus(logits_q)
    return p * (log_p - log_q) + (1 - p) * (log_1p - log_1q)


@register_method("jocor")
class JoCoR(_ForgetSchedule, TwoNetworkMethod):
    """JoCoR (Wei et al., CVPR 2020), multi-label: joint loss with co-regularisation.

    Per sample i, with Bernoulli outputs p = sigmoid(f(x)), q = sigmoid(g(x)) per label::

        l_i = (1 - lambda) (BCE_AN(p_i) + BCE_AN(q_i)) + lambda (KL(p_i || q_i) + KL(q_i || p_i))

    (JoCoR Eq. 2-5 with the softmax cross-entropy replaced by the AN BCE and the categorical KL
    by the per-label Bernoulli KL; every term averaged over the C labels). The
    ``floor((1 - forget(e)) B)`` samples with the smallest joint loss are kept and **both**
    networks are updated with the same mean selected loss (no cross update; the KL targets are
    not detached, as in the code). ``co_lambda`` default 0.1: the official code's default
    (``--co_lambda 0.1``; we could not read the paper's value). The authors' README recommends
    0.5-0.9 for CIFAR after 200 epochs; an earlier cpu run (8 epochs from scratch, single
    positive) gave 38.9 test mAP at lambda = 0.9 against 75.4 at lambda = 0.1 — always quote
    JoCoR with its lambda (the chapter's tables name it). Schedule defaults as
    :class:`CoTeaching`.
    """

    def __init__(self, forget_rate: float = 0.2, T_k: float = 10, exponent: float = 1.0,
                 schedule: str = "paper", co_lambda: float = 0.1):
        super().__init__(forget_rate=forget_rate, T_k=T_k, exponent=exponent, schedule=schedule,
                         co_lambda=co_lambda)
        self._init_schedule(forget_rate, T_k, exponent, schedule)
        if not 0.0 <= float(co_lambda) <= 1.0:
            raise ValueError(f"co_lambda must be in [0, 1], got {co_lambda!r}")
        self.co_lambda = float(co_lambda)

    def joint_loss(self, logits_f, logits_g, observed) -> torch.Tensor:
        lam = self.co_lambda
        sup = per_sample_an_loss(logits_f, observed) + per_sample_an_loss(logits_g, observed)
        con = (bernoulli_kl(logits_f, logits_g) + bernoulli_kl(logits_g, logits_f)).mean(dim=1)
        return (1 - lam) * sup + lam * con

    def training_step(self, batch, epoch):
        observed = self.batch_labels(batch)
        joint = self.joint_loss(self.f(batch["image"]), self.g(batch["image"]), observed)
        rate = 1.0 - self.forget(epoch)
        used = select_small_loss_samples(joint.detach(), rate)
        loss = joint[used].mean()
        truth = self.true_labels(batch)
        if truth is not None:
            with torch.no_grad():
                self.selection_log.add("joint", sample_selection_counts(used, observed, truth))
        return loss, {"forget_rate": 1.0 - rate}

    def on_epoch_end(self, epoch: int) -> None:
        self.log_epoch(**self.selection_log.flush(forget_rate=self.forget(epoch)))
