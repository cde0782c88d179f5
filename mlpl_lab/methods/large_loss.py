"""LL-R, LL-Ct, LL-Cp (Kim et al. CVPR 2022) with their clean-rate schedule.

``clean_rate`` starts at 1 (the first epoch is plain AN) and drops by ``delta_rel`` after every
epoch (``train.py``: ``P['clean_rate'] -= P['delta_rel']`` at the end of the epoch in the
current official code; an earlier ``train.py`` names it ``llr_rel``). LL-Cp also writes its
corrections into ``self.labels`` permanently (``dataset.label_matrix_obs[...] = 1.0`` in the
code): a corrected label is an observed positive from then on.

Differences from the official code (measured; :mod:`mlpl_lab.losses.large_loss`): its k takes
one entry more whenever B·C·(1 − clean_rate) is an integer (float noise of the repeated
subtraction), its LL-Cp tests the scheme name with ``is`` and so runs with LL-Ct's k, and the
entries are ranked here by logit (exact) rather than by a rounded softplus.
"""
from __future__ import annotations

import torch

from ..losses.large_loss import DELTA_REL, large_loss_selection, num_selected
from .loss_method import LossMethod
from .registry import register_method

SCHEMES = ("ll_r", "ll_ct", "ll_cp")


class LargeLossMethod(LossMethod):
    """One of ``ll_r`` / ``ll_ct`` / ``ll_cp``; ``delta_rel`` default 0.002 (0.2 % per epoch)."""

    def __init__(self, scheme: str = "ll_r", delta_rel: float = DELTA_REL):
        if scheme not in SCHEMES:
            raise ValueError(f"scheme must be one of {SCHEMES}, got {scheme!r}")
        if not 0.0 < float(delta_rel) < 1.0:
            raise ValueError(f"delta_rel must be in (0, 1) (0.002 = 0.2 % per epoch), got {delta_rel!r}")
        hp = {"delta_rel": delta_rel} if scheme == "ll_cp" else {}
        super().__init__(loss=scheme, **hp)
        self.scheme = scheme
        self.delta_rel = float(delta_rel)
        self.hparams["delta_rel"] = self.delta_rel

    def setup(self, ctx):
        super().setup(ctx)
        self.clean_rate = 1.0
        self.corrections = 0

    def loss_kwargs(self, epoch):
        return super().loss_kwargs(epoch) | {"clean_rate": self.clean_rate}

    def training_step(self, batch, epoch):
        rows = batch["index"].cpu()
        labels = self.labels[rows].to(batch["image"].device)
        logits = self.net(batch["image"])
        loss = self.loss_fn(logits, labels, **self.loss_kwargs(epoch))
        if self.scheme == "ll_cp" and self.clean_rate < 1:
            k = num_selected(logits.numel(), self.delta_rel)
            _, permanent = large_loss_selection(logits, labels, k)
            where = torch.nonzero(permanent.cpu())
            if where.numel():
                self.labels[rows[where[:, 0]], where[:, 1]] = 1
                self.corrections += int(where.shape[0])
        return loss, {"clean_rate": self.clean_rate, "corrections": float(self.corrections)}

    def on_epoch_end(self, epoch):
        self.clean_rate = max(0.0, self.clean_rate - self.delta_rel)

    def extra_state(self):
        return {"labels": self.labels, "clean_rate": self.clean_rate, "corrections": self.corrections}

    def load_extra_state(self, state):
        self.labels = state["labels"]
        self.clean_rate = state["clean_rate"]
        self.corrections = state["corrections"]


def _factory(scheme: str):
    def factory(delta_rel: float = DELTA_REL):
        return LargeLossMethod(scheme, delta_rel=delta_rel)

    factory.__name__ = f"{scheme}_method"
    factory.__doc__ = f"Large Loss Matters, {scheme.upper().replace('_', '-')} (see LargeLossMethod)."
    return factory


# schedule-bound: the clean rate drops by delta_rel after every epoch up to the last, so the
# targets (which large losses are dropped or corrected) move until the end by construction
for _scheme in SCHEMES:
    register_method(_scheme, schedule_bound=True)(_factory(_scheme))
