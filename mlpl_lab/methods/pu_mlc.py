"""PU-MLC — positive-unlabeled multi-label classification (Zhixiang Yuan, Kaixin Zhang, Tao Huang, ICME 2024;
official code ``TAKELAMAG/PU-MLC``; where the two differ: the list at the end of this docstring).

The method reads **only the observed positives** (``labels == 1``): per class, P_c = those
images and the unlabeled set U = the whole batch. Observed negatives and unknowns are the same
to it — it never reads a negative (tests poison them). Loss per batch::

    L = Σ_c L_var^(c)(s; α, γ)  +  λ_mix · R_mix                          (paper Eq. 8)

* L_var — :func:`mlpl_lab.losses.pu.vpu_loss` (Eq. 7, re-balance γ Eq. 9, adaptive temperature
  α Eq. 10, together Eq. 11; paper
  form of the re-balance factor by default, ``rebalance="code"`` for the code's);
* R_mix — vPU's MixUp regulariser (Chen et al., NeurIPS 2020; the code's form): the
  batch is split into halves x1 (first ⌊B/2⌋ rows), x2 (last ⌊B/2⌋); λ ~ Beta(0.3, 0.3), one per
  batch (:meth:`PUMLCMethod.draw_mix`); x̃ = λ·x1[perm] + (1−λ)·x2,
  t̃ = λ·t1[perm] + (1−λ)·t2 with t = 1 on observed positives and σ(s) of the first pass
  elsewhere; R = Σ_c mean_i (log t̃ − log σ(f(x̃)))². The official code does **not** detach t
  (gradient flows into the first pass through the target, item 2 below): ``detach_target=False``
  (default, the code and vPU); ``True`` treats the target as a constant.

  ``mixup_form`` — how the two logs are taken (:func:`mixup_regulariser`):
  ``"exact"`` (**default**) takes both exactly, in log space: log t̃ =
  logsumexp(log λ + log t1[perm], log(1−λ) + log t2) with log t = 0 on positives and logσ(s)
  elsewhere, and log σ(f(x̃)) = logσ(f(x̃)); a prediction equal to its target costs nothing
  at any logit. ``"official"`` is the code's guarded form: t = σ(s) + 1e-10 off the positives,
  log(t̃ + 1e-10) and log(σ(f(x̃)) + 1e-10) — both sides guarded, so a matched pair costs at
  most (ln 2)² (the two guards add 2e-10 on one side and 1e-10 on the other). The form this
  lab had before guarded the target only; with t̃ = σ(v) and f(x̃) = v it charged 2.2e-3 at
  v = −20, 0.46 at −23, 4.4 at −25 and 48.7 at −30 (gradient −13.9), a hidden floor that
  pushed confident negatives back up to about −23 (fidelity audit, ``notebooks/fidelity.md``; the
  figures are recomputed in ``tests/test_pu_loss.py``). Neither correct form has that floor.

Registered (defaults: the paper's and code's COCO values α = 1.0, γ = 0.55, mixup weight 1):

* ``vpu_plain`` — plain vPU: γ = 0, no temperature, no mixup;
* ``pu_mlc_gamma`` — + re-balance factor γ;
* ``pu_mlc_gamma_alpha`` — + adaptive temperature α;
* ``pu_mlc`` — + mixup: the full method;
* ``partial_bce`` (in :mod:`mlpl_lab.losses.partial`) — BCE on the observed positives *and*
  negatives, the baseline that uses annotated negatives.

**Scale**: L_vPU is summed over classes (as the code), so it grows with C: 20 classes here
against 80 on COCO. With Adam a constant factor on the whole loss hardly matters; it does set the
relative weight of R_mix (also summed over classes), which keeps the code's 1 : 1.

**LgConv** (``model_kwargs={"lgconv": True}``, :mod:`mlpl_lab.models.lgconv`) and the paper's
partial fine-tuning (``trainable="paper"``: only the global branches, the last stage and the
head train, every BatchNorm in eval mode) are options of the model and the method.

**Diagnostics** per epoch: the per-class temperature T_c (mean over the epoch's batches),
``temperature[c]``, and its mean over classes ``temperature_mean``.

**Where the paper and its official code differ** (checked against ``TAKELAMAG/PU-MLC`` and vPU's
code ``HC-Feynman/vpu``). The lab implements the paper and offers the code's form as an option:

1. The code's ResNet ends with an extra 2 × 2 average pool (a 7 × 7 feature map at 448 px).
2. The mixup target σ(s) of the first pass is **not detached** (vPU's code does the same); one λ
   is drawn per batch; Beta(0.3, 0.3) comes from the code only (``detach_target``).
3. The loop stops after ``Stop_epoch`` + 1 epochs of an 80-epoch OneCycle schedule, so training
   ends at about two thirds of the maximum learning rate, never annealed.
4. Every BatchNorm is in eval mode, the LgConv branch's too, so their statistics stay at (0, 1)
   and they act as learnable affine layers; the branch's γ starts from N(0, 1e-4) with random
   sign (the paper: "initialised at 0.0001"; :mod:`mlpl_lab.models.lgconv`).
5. The variational loss has no guard for a class whose logits have zero spread in a batch
   (T = 0), its logs add 1e-10, and it is summed over classes (the scale above).
6. The re-balance factor averages the **tempered** q in the code and the untempered σ(s) in the
   paper's Eq. 9 (``rebalance="code"`` / ``"paper"``).
7. The rest of the code's head (word-vector semantic decoupling and a gated GNN) is not claimed
   by the paper; the lab uses its own head.
8. The code selects the best test mAP over epochs of max(raw, EMA): it has no validation split.
   The lab selects on the clean validation split and scores the test set once.
"""
from __future__ import annotations

import math
from typing import Optional

import torch
import torch.nn.functional as F

from ..losses.pu import REBALANCE, at_least_float32, pu_temperature, vpu_loss
from ..models.lgconv import freeze_batchnorm, lgconv_trainable
from .base import Method
from .loss_method import loss_method_factory
from .registry import register_method

EPS = 1e-10  # the code's guard inside its logs
#: how the mixup regulariser takes its logs (:func:`mixup_regulariser`): exact (default) or the
#: official code's guarded form
MIXUP_FORMS = ("exact", "official")


def _check_mixup_form(form: str) -> None:
    if form not in MIXUP_FORMS:
        raise ValueError(f"mixup_form must be one of {MIXUP_FORMS} ('exact': both logs exact, the default; "
                         f"'official': the code's log(x + 1e-10) on both sides), got {form!r}")


def mixup_target(logits: torch.Tensor, labels: torch.Tensor, detach: bool = False,
                 form: str = "exact") -> torch.Tensor:
    """t = 1 on observed positives, σ(s) elsewhere (the first pass's untempered probabilities);
    ``form="official"`` adds the code's 1e-10 to σ(s) (its ``exp(log(σ(s) + 1e-10))``).
    Computed in the logits' dtype (float32 at least)."""
    _check_mixup_form(form)
    p = torch.sigmoid(at_least_float32(logits))
    if form == "official":
        p = p + EPS
    if detach:
        p = p.detach()
    return torch.where(labels == 1, torch.ones_like(p), p)


def mixup_log_target(logits: torch.Tensor, labels: torch.Tensor, detach: bool = False) -> torch.Tensor:
    """log t, exactly: 0 on observed positives, logσ(s) elsewhere (finite for any logit)."""
    log_p = F.logsigmoid(at_least_float32(logits))
    if detach:
        log_p = log_p.detach()
    return torch.where(labels == 1, torch.zeros_like(log_p), log_p)


def mix_log_targets(log_t1: torch.Tensor, log_t2: torch.Tensor, lam: float) -> torch.Tensor:
    """log(λ·t1 + (1−λ)·t2) from log t1 and log t2, as a log-sum-exp (exact; λ = 0 or 1 give
    log t2 or log t1)."""
    lam = float(lam)
    if not 0.0 <= lam <= 1.0:
        raise ValueError(f"the mixing weight lam must be in [0, 1], got {lam!r}")
    if lam == 0.0:
        return log_t2
    if lam == 1.0:
        return log_t1
    return torch.logaddexp(math.log(lam) + log_t1, math.log1p(-lam) + log_t2)


def mixup_regulariser(mixed_logits: torch.Tensor, mixed_target: Optional[torch.Tensor] = None, *,
                      mixed_log_target: Optional[torch.Tensor] = None, form: str = "exact") -> torch.Tensor:
    """R = Σ_c mean_i (log t̃_ic − log σ(s̃_ic))² (vPU's MixUp term, the code's scale: summed
    over classes, averaged over the mixed rows).

    ``form="exact"`` (default): log σ(s̃) = logσ(s̃) and log t̃ exactly — pass
    ``mixed_log_target`` (from :func:`mixup_log_target` and :func:`mix_log_targets`, finite at
    any logit) or ``mixed_target`` (its log is taken as it is, so a target that underflowed to
    0 gives inf). A prediction equal to its target gives R = 0 and gradient 0 at any logit.
    ``form="official"``: the code's ``log(t̃ + 1e-10)`` and ``log(σ(s̃) + 1e-10)``, from
    ``mixed_target`` (built with ``mixup_target(..., form="official")``) or the exp of
    ``mixed_log_target``. Computed in the inputs' dtype (float32 at least)."""
    _check_mixup_form(form)
    if (mixed_target is None) == (mixed_log_target is None):
        raise ValueError("mixup_regulariser takes one of mixed_target (probabilities) or "
                         "mixed_log_target (their logs)")
    s = at_least_float32(mixed_logits)
    if form == "exact":
        log_t = (at_least_float32(mixed_log_target) if mixed_log_target is not None
                 else torch.log(at_least_float32(mixed_target).clamp(min=0)))
        log_p = F.logsigmoid(s)
    else:
        t = (torch.exp(at_least_float32(mixed_log_target)) if mixed_log_target is not None
             else at_least_float32(mixed_target))
        log_t = torch.log(t.clamp(min=0) + EPS)
        log_p = torch.log(torch.sigmoid(s) + EPS)
    return ((log_t - log_p) ** 2).mean(dim=0).sum()


class PUMLCMethod(Method):
    """vPU per class with optional α, γ and mixup (module docstring).

    Options (defaults): ``alpha`` 1.0, ``gamma`` 0.55, ``mixup`` True, ``mix_alpha`` 0.3,
    ``mix_weight`` 1, ``detach_target`` False, ``rebalance`` ``"paper"`` | ``"code"``,
    ``min_temperature`` 1e-3, ``trainable`` ``"all"`` | ``"paper"``, ``ema_decay`` None,
    ``mixup_form`` ``"exact"`` | ``"official"`` (:func:`mixup_regulariser`)."""

    #: torchrun: the mixup regulariser runs a second forward pass in the same step, so
    #: gradients are averaged after backward instead of by DDP
    ddp_wrap = False

    def __init__(self, alpha: Optional[float] = 1.0, gamma: float = 0.55, mixup: bool = True,
                 mix_alpha: float = 0.3, mix_weight: float = 1.0, detach_target: bool = False,
                 rebalance: str = "paper", min_temperature: float = 1e-3, trainable: str = "all",
                 ema_decay: Optional[float] = None, mixup_form: str = "exact"):
        # the mixup form is recorded only where mixup runs (it changes nothing otherwise)
        super().__init__(alpha=alpha, gamma=gamma, mixup=mixup, mix_alpha=mix_alpha, mix_weight=mix_weight,
                         detach_target=detach_target, rebalance=rebalance, min_temperature=min_temperature,
                         trainable=trainable, ema_decay=ema_decay,
                         **({"mixup_form": mixup_form} if mixup else {}))
        problems = []
        if mixup_form not in MIXUP_FORMS:
            problems.append(f"mixup_form must be one of {MIXUP_FORMS} ('exact': both logs exact, the default; "
                            f"'official': the code's log(x + 1e-10) on both sides), got {mixup_form!r}")
        if alpha is not None and not (isinstance(alpha, (int, float)) and alpha > 0):
            problems.append(f"alpha must be > 0 or None (no temperature), got {alpha!r}")
        if not (isinstance(gamma, (int, float)) and gamma >= 0):
            problems.append(f"gamma must be >= 0, got {gamma!r}")
        if not (isinstance(mix_alpha, (int, float)) and mix_alpha > 0):
            problems.append(f"mix_alpha (the Beta parameter) must be > 0, got {mix_alpha!r}")
        if not (isinstance(mix_weight, (int, float)) and mix_weight >= 0):
            problems.append(f"mix_weight must be >= 0, got {mix_weight!r}")
        if rebalance not in REBALANCE:
            problems.append(f"rebalance must be one of {REBALANCE}, got {rebalance!r}")
        if trainable not in ("all", "paper"):
            problems.append(f"trainable must be 'all' or 'paper', got {trainable!r}")
        if ema_decay is not None and not (isinstance(ema_decay, (int, float)) and 0 <= ema_decay < 1):
            problems.append(f"ema_decay must be None or in [0, 1) per epoch, got {ema_decay!r}")
        if problems:
            raise ValueError("PU-MLC: " + "; ".join(problems))
        self.alpha, self.gamma = alpha, float(gamma)
        self.mixup, self.mix_alpha, self.mix_weight = bool(mixup), float(mix_alpha), float(mix_weight)
        self.detach_target, self.rebalance = bool(detach_target), rebalance
        self.min_temperature, self.trainable = float(min_temperature), trainable
        self.ema_decay = ema_decay
        self.mixup_form = mixup_form

    def setup(self, ctx) -> None:
        self.ctx = ctx
        self.net = ctx.make_model().to(ctx.device)
        params = lgconv_trainable(self.net, self.trainable)
        self.optimizer = ctx.make_optimizer(params)
        self.labels = ctx.train_observed.clone()
        self._t_sum, self._t_n = None, 0

    def train(self, mode: bool = True) -> None:
        super().train(mode)
        if mode and self.trainable == "paper":
            freeze_batchnorm(self.net)

    def observed_positives(self, batch) -> torch.Tensor:
        """The only label information PU-MLC reads: which entries are observed positives."""
        return (self.batch_labels(batch) == 1).long()

    def training_step(self, batch, epoch):
        pos = self.observed_positives(batch)
        x = batch["image"]
        logits = self.net(x)
        loss = vpu_loss(logits, pos, alpha=self.alpha, gamma=self.gamma, rebalance=self.rebalance,
                        min_temperature=self.min_temperature)
        logs = {"loss_vpu": loss.detach()}
        with torch.no_grad():
            t = pu_temperature(logits.float(), self.alpha, self.min_temperature)
            self._t_sum = t if self._t_sum is None else self._t_sum + t
            self._t_n += 1
        if self.mixup and self.mix_weight > 0 and len(x) >= 2:
            half = len(x) // 2
            lam, perm = self.draw_mix(half, x.device)
            # the code's halves: x1 = the first ⌊B/2⌋ rows, x2 = the last ⌊B/2⌋ (an odd batch
            # leaves out its middle row)
            x1, x2 = x[:half], x[len(x) - half:]
            x_mix = lam * x1[perm] + (1 - lam) * x2
            if self.mixup_form == "exact":
                log_t = mixup_log_target(logits, pos, self.detach_target)
                lt1, lt2 = log_t[:half], log_t[len(x) - half:]
                reg = mixup_regulariser(self.net(x_mix), mixed_log_target=mix_log_targets(lt1[perm], lt2, lam))
            else:
                target = mixup_target(logits, pos, self.detach_target, form="official")
                t1, t2 = target[:half], target[len(x) - half:]
                t_mix = lam * t1[perm] + (1 - lam) * t2
                reg = mixup_regulariser(self.net(x_mix), t_mix, form="official")
            loss = loss + self.mix_weight * reg
            logs["loss_mix"] = reg.detach()
        return loss, logs

    def draw_mix(self, half: int, device):
        """One mixup draw per batch: λ ~ Beta(mix_alpha, mix_alpha) and a permutation of the
        first half (the code's ``mixup``)."""
        lam = float(torch.distributions.Beta(self.mix_alpha, self.mix_alpha).sample())
        return lam, torch.randperm(half, device=device)

    def on_epoch_start(self, epoch: int) -> None:
        self._t_sum, self._t_n = None, 0

    def on_epoch_end(self, epoch: int) -> None:
        if self._t_n:
            t = (self._t_sum / self._t_n).cpu()
            self.log_epoch(temperature_mean=float(t.mean()),
                           **{f"temperature[{c}]": float(v) for c, v in enumerate(t)})


def _factory(name: str, doc: str, **defaults):
    def factory(**hp):
        return PUMLCMethod(**(defaults | hp))

    factory.__name__ = f"{name}_method"
    factory.__doc__ = doc
    register_method(name)(factory)


_factory("vpu_plain", "Plain vPU per class: no re-balance (γ = 0), no temperature, no mixup.",
         alpha=None, gamma=0.0, mixup=False)
_factory("pu_mlc_gamma", "vPU + the re-balance factor γ (0.55).", alpha=None, gamma=0.55, mixup=False)
_factory("pu_mlc_gamma_alpha", "vPU + γ (0.55) + the adaptive temperature α (1.0).",
         alpha=1.0, gamma=0.55, mixup=False)
_factory("pu_mlc", "PU-MLC: vPU + γ (0.55) + α (1.0) + mixup (weight 1, Beta(0.3, 0.3); exact logs, "
                   "mixup_form='official' for the code's guarded ones).",
         alpha=1.0, gamma=0.55, mixup=True)

# the baseline that trusts annotated negatives (losses/partial.py)
register_method("partial_bce")(loss_method_factory("partial_bce"))
