"""LAC — label-wise embeddings, pseudo-labeling consistency, label-aware global consistency
(Xie et al., NeurIPS 2022; ``shared/papers/002_*.txt``; official code ``xiemk/SPML-LAC``,
notes §3.3 and its line-by-line corrections §3.3b).

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
``RunSpec(init_from=...)``): they refuse to run from scratch. Their EMA starts as a copy of
the loaded weights and the projector from its random initialisation (the code's behaviour,
§3.3b-5); the queue starts empty.

**EMA** for evaluation (``val_mAP[ema]``), never for pseudo-labels (§3.3b-6). The code's
decay is 0.9997 per step (``ema_decay="code"``): over its 40 epochs of 143 steps it keeps
0.9997^5720 ≈ 18 % of the starting weights, which is harmless from ImageNet weights but not
from a random start in a few epochs (measured, cpu profile, label-query AN, 8 epochs, with
0.81 per epoch — the same 18 % left at the end: EMA 25 val mAP against 78 for the raw
weights). Default: **0.5 per epoch** (:mod:`mlpl_lab.methods.ema`),
a half-life of one epoch; a number in [0, 1) sets it, ``None`` switches it off.

**Diagnostics** (per epoch, into the run's history): PLC's pseudo-labels on the unknown
entries against the truth (``plc_pos_precision``, ``plc_pos_recall``, ``plc_neg_precision``,
``plc_coverage``), the valid entries per batch (``lac_entries``) and the queue's fill.
"""
from __future__ import annotations

from typing import Any, Dict, Optional, Union

import torch

from ..losses.basic import an_loss
from ..losses.lac import FORMS, lac_loss, plc_loss
from .base import Method
from .registry import register_method

#: the code's EMA decay per optimiser step (``ema_decay="code"``)
CODE_EMA_PER_STEP = 0.9997
#: the lab's default EMA decay per epoch (module docstring)
DEFAULT_EMA_PER_EPOCH = 0.5


class MemoryQueue:
    """A FIFO of the last ``size`` projections and their class ids (the paper's memory queue).

    ``push`` appends the detached entries, overwriting the oldest once full. A push of more
    than ``size`` entries keeps its newest ``size`` (the official code crashes there, notes
    §3.3b-2). ``contents()`` is every filled slot (m ≤ size).
    """

    def __init__(self, size: int, dim: int, device=None, dtype=torch.float32):
        if not isinstance(size, int) or size < 1:
            raise ValueError(f"queue size must be an integer >= 1, got {size!r}")
        self.size, self.dim = size, dim
        self.z = torch.zeros(size, dim, device=device, dtype=dtype)
        self.classes = torch.full((size,), -1, dtype=torch.long, device=device)
        self.ptr = 0
        self.fill = 0

    @torch.no_grad()
    def push(self, z: torch.Tensor, classes: torch.Tensor) -> None:
        if z.ndim != 2 or z.shape[1] != self.dim or classes.shape != z.shape[:1]:
            raise ValueError(f"push expects z (n, {self.dim}) and classes (n,), got {tuple(z.shape)} "
                             f"and {tuple(classes.shape)}")
        z, classes = z.detach(), classes.detach()
        if len(z) > self.size:  # guard: keep the newest `size` entries
            z, classes = z[-self.size:], classes[-self.size:]
        n = len(z)
        if n == 0:
            return
        idx = (self.ptr + torch.arange(n, device=self.z.device)) % self.size
        self.z[idx] = z.to(self.z.dtype)
        self.classes[idx] = classes.to(self.classes.device)
        self.ptr = int((self.ptr + n) % self.size)
        self.fill = min(self.size, self.fill + n)

    def contents(self):
        """(z (m, d), classes (m,)) of the filled slots, oldest first."""
        if self.fill < self.size:
            return self.z[:self.fill], self.classes[:self.fill]
        order = (self.ptr + torch.arange(self.size, device=self.z.device)) % self.size
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
    ``queue_size`` (K; 0 = no queue), ``lambda_plc``, ``lambda_lac``, ``plc_form`` and
    ``lac_form`` (``"paper"`` default, ``"code"``: see :mod:`mlpl_lab.losses.lac`),
    ``stage`` (2: must start from a trained stage 1), ``ema_decay`` (per epoch, ``"code"``
    for 0.9997 per step, or None).
    """

    required_head = "label_query"
    #: torchrun: the step calls the network through ``outputs`` and stage 1 leaves the projector
    #: unused, so gradients are averaged after backward instead of by DDP
    ddp_wrap = False

    def __init__(self, plc: bool = True, lac: bool = False, delta: float = 0.6, tau: float = 0.5,
                 queue_size: int = 0, lambda_plc: float = 1.0, lambda_lac: float = 1.0,
                 plc_form: str = "paper", lac_form: str = "paper", stage: int = 1,
                 ema_decay: Union[float, str, None] = DEFAULT_EMA_PER_EPOCH):
        super().__init__(plc=plc, lac=lac, delta=delta, tau=tau, queue_size=queue_size,
                         lambda_plc=lambda_plc, lambda_lac=lambda_lac, plc_form=plc_form,
                         lac_form=lac_form, stage=stage, ema_decay=ema_decay)
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
        if problems:
            raise ValueError("LAC: " + "; ".join(problems))
        self.use_plc, self.use_lac = bool(plc), bool(lac)
        self.delta, self.tau = float(delta), float(tau)
        self.queue_size = queue_size
        self.lambda_plc, self.lambda_lac = float(lambda_plc), float(lambda_lac)
        self.plc_form, self.lac_form = plc_form, lac_form
        self.stage = stage
        self.requires_init_from = stage == 2
        self._ema_setting = ema_decay
        self.views = ("weak", "strong") if (self.use_plc or self.use_lac) else ("weak",)
        self.queue: Optional[MemoryQueue] = None

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

    def _count(self, **values) -> None:
        for k, v in values.items():
            v = v.detach().sum().float()
            self._counts[k] = self._counts[k] + v if k in self._counts else v

    def training_step(self, batch, epoch):
        obs = self.batch_labels(batch)
        if not (self.use_plc or self.use_lac):
            logits = self.net(batch["image"])
            return an_loss(logits, obs), {}
        h_w, logits_w = self._embed(batch["image"])
        h_s, logits_s = self._embed(batch["image_strong"])
        l_an = an_loss(logits_w, obs)
        loss, logs = l_an, {"loss_an": l_an.detach()}
        p_w = torch.sigmoid(logits_w.detach()).float()
        if self.use_plc:
            l_plc = plc_loss(logits_s, obs, weak_probs=p_w, delta=self.delta, form=self.plc_form)
            loss = loss + self.lambda_plc * l_plc
            logs["loss_plc"] = l_plc.detach()
        if self.use_lac:
            valid = (p_w >= self.delta) | (obs == 1)   # observed positives count as p^w = 1
            cls = torch.nonzero(valid, as_tuple=True)[1]
            z_w = self.net.head.project(h_w[valid])
            z_s = self.net.head.project(h_s[valid])
            q_z, q_c = self.queue.contents() if self.queue is not None else (None, None)
            l_lac = lac_loss(z_w.float(), z_s.float(), cls, q_z, q_c, tau=self.tau, form=self.lac_form,
                             num_embeddings=valid.numel())
            loss = loss + self.lambda_lac * l_lac
            logs["loss_lac"] = l_lac.detach()
            if self.queue is not None:
                self.queue.push(torch.cat([z_w, z_s]).detach().float(), torch.cat([cls, cls]))
            self._count(lac_entries=valid.sum(), lac_batches=torch.ones(()))
        truth = batch.get("labels")  # diagnostics only: never in the loss
        if truth is None:
            return loss, logs
        unknown = obs == -1
        pos_sel = unknown & (p_w >= self.delta)
        neg_sel = unknown & (p_w <= 1.0 - self.delta)
        self._count(unknown=unknown, hidden=unknown & (truth == 1), pos_sel=pos_sel,
                    pos_true=pos_sel & (truth == 1), neg_sel=neg_sel, neg_true=neg_sel & (truth == 0))
        return loss, logs

    def on_epoch_start(self, epoch: int) -> None:
        self._counts = {}

    def on_epoch_end(self, epoch: int) -> None:
        c = {k: float(v) for k, v in self._counts.items()}
        if "unknown" in c:
            nan = float("nan")
            self.log_epoch(
                plc_pos_precision=c["pos_true"] / c["pos_sel"] if c["pos_sel"] else nan,
                plc_pos_recall=c["pos_true"] / c["hidden"] if c["hidden"] else nan,
                plc_neg_precision=c["neg_true"] / c["neg_sel"] if c["neg_sel"] else nan,
                plc_coverage=(c["pos_sel"] + c["neg_sel"]) / c["unknown"] if c["unknown"] else nan,
                plc_pseudo_positives=c["pos_sel"])
        if "lac_batches" in c:
            self.log_epoch(lac_entries=c["lac_entries"] / c["lac_batches"])
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
