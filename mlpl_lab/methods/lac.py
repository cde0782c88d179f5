"""LAC — label-wise embeddings, pseudo-labeling consistency, label-aware global consistency
(Xie et al., NeurIPS 2022; official code ``xiemk/SPML-LAC``, checked against it line by line).

One method class, :class:`LACMethod`, trained by the one loop, on a network with the
``label_query`` head (:mod:`mlpl_lab.models.label_query`); the runs of Table 3 differ only in
their losses::

    L = L_AN(weak) + λ_PLC · L_PLC(strong | weak pseudo-labels) + λ_LAC · L_LAC      (Eq. 3)

Registered names (defaults from the paper and code: δ 0.6 in stage 1 and 0.9 in stage 2,
τ 0.5, K 512, λ_PLC = λ_LAC = 1):

* ``lac_an`` — L_AN only, on the label-query head (Table 3's first row);
* ``lac_plc`` — stage 1: L_AN + L_PLC (δ = 0.6);
* ``lac_end_to_end`` — Eq. 3 from scratch in one stage (δ = 0.9, no queue, as Table 3's
  "+LAC end-to-end" row);
* ``lac_no_queue`` — stage 2 without the memory queue (Table 3's "two-stage" row);
* ``lac`` — stage 2 with the memory queue (the paper's method, Table 3's last row).

Stage-2 methods (``stage=2``) must start from a trained stage 1 (``fit(..., init_from=...)``,
``RunSpec(init_from=...)``): they refuse to run from scratch. By default
(``stage2_start="raw"``, the paper: stage 2 continues stage 1's model) they load stage 1's
**raw** best-val weights. ``stage2_start="raw_or_ema"`` is the official code's start: its
stage-1 checkpoint holds whichever of the raw and the EMA weights had the better val mAP
(the official code); the loop evaluates both at stage 1's best raw-validation epoch on the validation
split and starts from the better (``Method.init_weights``; the choice and both scores land in
the run's ``initial``). The code picks its checkpoint epoch by the better of the two, the lab
by the raw weights. Either way the EMA starts as a copy of the loaded weights and the projector
from its random initialisation, as in the official code; the queue starts empty. Under the cpu profile the
EMA validated higher than the raw weights in most stage-1 runs; notebook 05 prints the
comparison from the records.

**EMA** for evaluation (``val_mAP[ema]``), never for pseudo-labels (as in the official code). The code's
decay is 0.9997 per step (``ema_decay="code"``): over its 40 epochs of 143 steps it keeps
0.9997^5720 ≈ 18 % of the starting weights, which is harmless from ImageNet weights but not
from a random start in a few epochs (measured, cpu profile, label-query AN, 8 epochs, with
0.81 per epoch — the same 18 % left at the end: EMA 25 val mAP against 78 for the raw
weights). Default: **0.5 per epoch** (:mod:`mlpl_lab.methods.ema`),
a half-life of one epoch; a number in [0, 1) sets it, ``None`` switches it off.

**Diagnostics** (per epoch, into the run's history): PLC's pseudo-labels on the unknown
entries against the truth (``plc_pos_precision``, ``plc_pos_recall``, ``plc_neg_precision``,
``plc_coverage``) and their count (``plc_pseudo_positives``: unknown entries with p^w ≥ δ,
summed over the epoch's steps — at δ = 0.9 it can be 0, and LAC then contrasts observed
positives only), the valid entries per batch (``lac_entries``), the pairs each step contrasts
(``lac_contrast_pairs``: the batch's and the queue's), the queue's fill, and
``lac_an_ratio`` = the epoch's mean L_LAC / mean L_AN (the contrastive term's weight in the
total loss).
"""
from __future__ import annotations

from typing import Any, Dict, Optional, Union

import torch

from ..losses.basic import an_loss
from ..losses.lac import FORMS, lac_loss, lac_valid, plc_loss
from .base import Method
from .registry import register_method

#: where stage 2 starts: stage 1's raw best-val weights (the paper) or the better on validation
#: of those and their EMA (the code)
STAGE2_STARTS = ("raw", "raw_or_ema")
#: the code's EMA decay per optimiser step (``ema_decay="code"``)
CODE_EMA_PER_STEP = 0.9997
#: the lab's default EMA decay per epoch (module docstring)
DEFAULT_EMA_PER_EPOCH = 0.5
#: how the two views go through the network (:class:`LACMethod`)
FORWARDS = ("joint", "separate")


class MemoryQueue:
    """The memory queue of the official code: **K pairs**, each the (weak, strong) projections of
    one valid (image, class) entry and its class id, the current batch **included**
    (``second_stage.py`` writes the batch into ``queue_feats`` (K, 2, d) and computes the loss
    over the filled queue).

    The lab keeps a FIFO ring of the last ``size`` pairs: a step contrasts its n current pairs
    with the newest ``size − n`` stored ones (:meth:`contents` with ``limit``), then
    :meth:`push` stores its own, detached. So every step sees min(K, n + stored) pairs.

    That equals the code **only until the code's queue first wraps**. The code writes the
    batch at ``[ptr − n, ptr)`` and, when ``ptr + n ≥ K``, resets the pointer to n (the batch
    goes to the front) and keeps the entries behind it: the contrasted set is then the prefix
    up to the largest fill reached, a stale tail included, and can fall as much as n below K
    (measured in the fidelity audit, ``notebooks/fidelity.md``: 99 of 128 pairs at K = 128). Before
    the first wrap the two agree to ≤ 4e-15 (:mod:`mlpl_lab.losses.lac`); after it the lab
    contrasts exactly min(K, n + stored) of the newest pairs. A batch of n > K pairs crashes
    the code; here the step contrasts its own n pairs only and the queue keeps the newest K.
    The code stores a batch's single valid entry twice (a 0-d index); here once.
    """

    def __init__(self, size: int, dim: int, device=None, dtype=torch.float32):
        if not isinstance(size, int) or size < 1:
            raise ValueError(f"queue size must be an integer >= 1, got {size!r}")
        self.size, self.dim = size, dim
        self.z = torch.zeros(size, 2, dim, device=device, dtype=dtype)
        self.classes = torch.full((size,), -1, dtype=torch.long, device=device)
        self.ptr = 0
        self.fill = 0

    @torch.no_grad()
    def push(self, z_weak: torch.Tensor, z_strong: torch.Tensor, classes: torch.Tensor) -> None:
        """Store n pairs (weak (n, d), strong (n, d), classes (n,)), overwriting the oldest."""
        if (z_weak.ndim != 2 or z_weak.shape[1] != self.dim or z_strong.shape != z_weak.shape
                or classes.shape != z_weak.shape[:1]):
            raise ValueError(f"push expects z_weak and z_strong (n, {self.dim}) and classes (n,), got "
                             f"{tuple(z_weak.shape)}, {tuple(z_strong.shape)} and {tuple(classes.shape)}")
        z = torch.stack([z_weak.detach(), z_strong.detach()], dim=1)
        classes = classes.detach()
        if len(z) > self.size:  # keep the newest `size` pairs
            z, classes = z[-self.size:], classes[-self.size:]
        n = len(z)
        if n == 0:
            return
        idx = (self.ptr + torch.arange(n, device=self.z.device)) % self.size
        self.z[idx] = z.to(self.z.device, self.z.dtype)
        self.classes[idx] = classes.to(self.classes.device)
        self.ptr = int((self.ptr + n) % self.size)
        self.fill = min(self.size, self.fill + n)

    def contents(self, limit: Optional[int] = None):
        """(z (m, 2, d), classes (m,)) of the newest m = min(fill, limit) stored pairs, oldest first."""
        m = self.fill if limit is None else max(0, min(self.fill, int(limit)))
        order = (self.ptr - m + torch.arange(m, device=self.z.device)) % self.size
        return self.z[order], self.classes[order]

    def state_dict(self) -> Dict[str, Any]:
        return {"z": self.z.clone(), "classes": self.classes.clone(), "ptr": self.ptr, "fill": self.fill}

    def load_state_dict(self, state: Dict[str, Any]) -> None:
        self.z.copy_(state["z"])
        self.classes.copy_(state["classes"])
        self.ptr, self.fill = int(state["ptr"]), int(state["fill"])


class LACMethod(Method):
    """L_AN on the weak view, optionally + PLC and + LAC (module docstring).

    Hyperparameters: ``plc``, ``lac`` (switch the terms), ``delta`` (δ), ``tau`` (τ),
    ``queue_size`` (K pairs, the current batch included; 0 = no queue), ``lambda_plc``,
    ``lambda_lac``, ``plc_form`` (``"paper"`` default) and ``lac_form`` (``"code"`` default: the
    paper's literal Eq. 7 grows with the queue; see :mod:`mlpl_lab.losses.lac`), ``stage`` (2:
    must start from a trained stage 1), ``stage2_start`` (``"raw"``: the paper, stage 1's raw
    best-val weights; ``"raw_or_ema"``: the code, the better on validation of those and their
    EMA — stage 2 only), ``ema_decay`` (per epoch, ``"code"`` for 0.9997 per step, or None),
    ``forward``:

    * ``"joint"`` (default, the code's): **one** forward pass over ``cat([weak, strong])`` in
      every row, AN's included (AN reads the weak half only). BatchNorm then normalises each
      training batch with the statistics of both views and its running statistics — what
      evaluation uses — come from the same mixture in every row, so the rows of Table 3 differ
      only in their losses. (The code freezes BatchNorm, which a network trained from scratch
      cannot do; with frozen BN the joint and separate passes give the same logits.)
    * ``"separate"``: the lab's former behaviour, kept to measure the difference — two passes
      (weak, then strong) with live BatchNorm, and AN on the weak view only.
    """

    required_head = "label_query"
    #: torchrun: the step calls the network through ``outputs`` and stage 1 leaves the projector
    #: unused, so gradients are averaged after backward instead of by DDP
    ddp_wrap = False

    def __init__(self, plc: bool = True, lac: bool = False, delta: float = 0.6, tau: float = 0.5,
                 queue_size: int = 0, lambda_plc: float = 1.0, lambda_lac: float = 1.0,
                 plc_form: str = "paper", lac_form: str = "code", stage: int = 1,
                 ema_decay: Union[float, str, None] = DEFAULT_EMA_PER_EPOCH, forward: str = "joint",
                 stage2_start: str = "raw"):
        super().__init__(plc=plc, lac=lac, delta=delta, tau=tau, queue_size=queue_size,
                         lambda_plc=lambda_plc, lambda_lac=lambda_lac, plc_form=plc_form,
                         lac_form=lac_form, stage=stage, ema_decay=ema_decay, forward=forward,
                         stage2_start=stage2_start)
        problems = []
        if not (isinstance(delta, (int, float)) and 0.5 <= delta < 1):
            problems.append(f"delta must be in [0.5, 1), got {delta!r}")
        if not (isinstance(tau, (int, float)) and tau > 0):
            problems.append(f"tau must be > 0, got {tau!r}")
        if not (isinstance(queue_size, int) and queue_size >= 0):
            problems.append(f"queue_size must be an integer >= 0 (0: no queue), got {queue_size!r}")
        if queue_size and not lac:
            problems.append("queue_size > 0 needs lac=True (the queue holds LAC's embeddings)")
        for name, form in (("plc_form", plc_form), ("lac_form", lac_form)):
            if form not in FORMS:
                problems.append(f"{name} must be one of {FORMS}, got {form!r}")
        for name, lam in (("lambda_plc", lambda_plc), ("lambda_lac", lambda_lac)):
            if not (isinstance(lam, (int, float)) and lam >= 0):
                problems.append(f"{name} must be a number >= 0, got {lam!r}")
        if stage not in (1, 2):
            problems.append(f"stage must be 1 or 2, got {stage!r}")
        if not (ema_decay is None or ema_decay == "code"
                or (isinstance(ema_decay, (int, float)) and 0 <= ema_decay < 1)):
            problems.append(f"ema_decay must be a number in [0, 1) per epoch, 'code' or None, got {ema_decay!r}")
        if forward not in FORWARDS:
            problems.append(f"forward must be one of {FORWARDS}, got {forward!r}")
        if stage2_start not in STAGE2_STARTS:
            problems.append(f"stage2_start must be one of {STAGE2_STARTS}, got {stage2_start!r}")
        elif stage2_start != "raw" and stage != 2:
            problems.append(f"stage2_start={stage2_start!r} chooses where stage 2 starts; this is "
                            "stage 1 (use stage=2, or leave stage2_start='raw')")
        if problems:
            raise ValueError("LAC: " + "; ".join(problems))
        self.use_plc, self.use_lac = bool(plc), bool(lac)
        self.delta, self.tau = float(delta), float(tau)
        self.queue_size = queue_size
        self.lambda_plc, self.lambda_lac = float(lambda_plc), float(lambda_lac)
        self.plc_form, self.lac_form = plc_form, lac_form
        self.stage = stage
        self.forward = forward
        self.requires_init_from = stage == 2
        self.init_weights = stage2_start  # the loop's name for it (Method.init_weights)
        self._ema_setting = ema_decay
        two_views = self.use_plc or self.use_lac or forward == "joint"
        self.views = ("weak", "strong") if two_views else ("weak",)
        self.queue: Optional[MemoryQueue] = None

    def keeps_ema(self) -> bool:
        return self._ema_setting is not None

    def setup(self, ctx) -> None:
        super().setup(ctx)
        head = getattr(self.net, "head", None)
        if not hasattr(head, "label_embeddings"):
            raise ValueError(f"{self.name}: LAC needs the label-query head; build the model with "
                             "model_kwargs={'head': 'label_query'} (got head "
                             f"{getattr(self.net, 'head_name', type(head).__name__)!r})")
        if self._ema_setting == "code":
            self.ema_decay = CODE_EMA_PER_STEP ** ctx.steps_per_epoch
        else:
            self.ema_decay = self._ema_setting
        self.queue = (MemoryQueue(self.queue_size, head.proj_dim, device=ctx.device)
                      if self.queue_size else None)
        self._counts: Dict[str, torch.Tensor] = {}

    # -- training ----------------------------------------------------------------------
    def _embed(self, x: torch.Tensor):
        h, _ = self.net.head.label_embeddings(self.net.feature_map(x))
        return h, self.net.head.fc(h)

    def embed_views(self, weak: torch.Tensor, strong: torch.Tensor):
        """(h_w, logits_w, h_s, logits_s): one pass over ``cat([weak, strong])`` (``forward="joint"``)
        or one pass per view (``"separate"``)."""
        if self.forward == "joint":
            h, logits = self._embed(torch.cat([weak, strong]))
            b = len(weak)
            return h[:b], logits[:b], h[b:], logits[b:]
        return (*self._embed(weak), *self._embed(strong))

    def _count(self, **values) -> None:
        for k, v in values.items():
            v = v.detach().sum().float()
            self._counts[k] = self._counts[k] + v if k in self._counts else v

    def training_step(self, batch, epoch):
        obs = self.batch_labels(batch)
        if not (self.use_plc or self.use_lac):
            if self.forward == "joint":
                logits = self.embed_views(batch["image"], batch["image_strong"])[1]
            else:
                logits = self.net(batch["image"])
            l_an = an_loss(logits, obs)
            return l_an, {"loss_an": l_an.detach()}
        h_w, logits_w, h_s, logits_s = self.embed_views(batch["image"], batch["image_strong"])
        l_an = an_loss(logits_w, obs)
        loss, logs = l_an, {"loss_an": l_an.detach()}
        p_w = torch.sigmoid(logits_w.detach()).float()
        unknown = obs == -1
        self._count(pseudo_positives=unknown & (p_w >= self.delta))
        if self.use_plc:
            l_plc = plc_loss(logits_s, obs, weak_probs=p_w, delta=self.delta, form=self.plc_form)
            loss = loss + self.lambda_plc * l_plc
            logs["loss_plc"] = l_plc.detach()
        if self.use_lac:
            valid = lac_valid(p_w, obs, self.delta)  # observed positives and unknowns with p ≥ δ
            cls = torch.nonzero(valid, as_tuple=True)[1]
            z_w = self.net.head.project(h_w[valid]).float()
            z_s = self.net.head.project(h_s[valid]).float()
            q_z, q_c = (self.queue.contents(limit=self.queue_size - len(cls))
                        if self.queue is not None else (None, None))
            l_lac = lac_loss(z_w, z_s, cls, q_z, q_c, tau=self.tau, form=self.lac_form,
                             num_embeddings=valid.numel())
            loss = loss + self.lambda_lac * l_lac
            logs["loss_lac"] = l_lac.detach()
            if self.queue is not None:
                self.queue.push(z_w, z_s, cls)
            self._count(lac_entries=valid.sum(), lac_batches=torch.ones(()),
                        lac_contrast_pairs=torch.tensor(float(len(cls) + (0 if q_c is None else len(q_c)))),
                        sum_loss_lac=l_lac, sum_loss_an=l_an)
        truth = batch.get("labels")  # diagnostics only: never in the loss
        if truth is None:
            return loss, logs
        pos_sel = unknown & (p_w >= self.delta)
        neg_sel = unknown & (p_w <= 1.0 - self.delta)
        self._count(unknown=unknown, hidden=unknown & (truth == 1), pos_sel=pos_sel,
                    pos_true=pos_sel & (truth == 1), neg_sel=neg_sel, neg_true=neg_sel & (truth == 0))
        return loss, logs

    def on_epoch_start(self, epoch: int) -> None:
        self._counts = {}

    def on_epoch_end(self, epoch: int) -> None:
        c = {k: float(v) for k, v in self._counts.items()}
        nan = float("nan")
        if "pseudo_positives" in c:
            # unknown entries with p^w ≥ δ, summed over the epoch's steps (δ = 0.9 may give none)
            self.log_epoch(plc_pseudo_positives=c["pseudo_positives"])
        if "unknown" in c:
            self.log_epoch(
                plc_pos_precision=c["pos_true"] / c["pos_sel"] if c["pos_sel"] else nan,
                plc_pos_recall=c["pos_true"] / c["hidden"] if c["hidden"] else nan,
                plc_neg_precision=c["neg_true"] / c["neg_sel"] if c["neg_sel"] else nan,
                plc_coverage=(c["pos_sel"] + c["neg_sel"]) / c["unknown"] if c["unknown"] else nan)
        if "lac_batches" in c:
            self.log_epoch(lac_entries=c["lac_entries"] / c["lac_batches"],
                           lac_contrast_pairs=c["lac_contrast_pairs"] / c["lac_batches"],
                           # the epoch's mean L_LAC over its mean L_AN: the contrastive term's weight
                           lac_an_ratio=c["sum_loss_lac"] / c["sum_loss_an"] if c["sum_loss_an"] else nan)
        if self.queue is not None:
            self.log_epoch(queue_fill=self.queue.fill)

    # -- state -------------------------------------------------------------------------
    def extra_state(self) -> Dict[str, Any]:
        state = super().extra_state()
        if self.queue is not None:
            state["queue"] = self.queue.state_dict()
        return state

    def load_extra_state(self, state: Dict[str, Any]) -> None:
        super().load_extra_state(state)
        if self.queue is not None and "queue" in state:
            self.queue.load_state_dict(state["queue"])


def _factory(name: str, doc: str, **defaults):
    def factory(**hp):
        return LACMethod(**(defaults | hp))

    factory.__name__ = f"{name}_method"
    factory.__doc__ = doc
    register_method(name)(factory)
    return factory


_factory("lac_an", "AN (BCE, unknowns as negatives) on the label-query head: Table 3's first row.",
         plc=False, lac=False)
_factory("lac_plc", "LAC stage 1: L_AN + L_PLC (δ = 0.6).", plc=True, lac=False, delta=0.6)
_factory("lac_end_to_end", "L_AN + L_PLC + L_LAC from scratch, one stage (δ = 0.9, no queue).",
         plc=True, lac=True, delta=0.9, queue_size=0)
_factory("lac_no_queue", "LAC stage 2 without the memory queue (δ = 0.9; starts from stage 1).",
         plc=True, lac=True, delta=0.9, queue_size=0, stage=2)
_factory("lac", "LAC stage 2 with the memory queue (δ = 0.9, K = 512, τ = 0.5; starts from stage 1).",
         plc=True, lac=True, delta=0.9, queue_size=512, stage=2)
