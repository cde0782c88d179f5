"""An exponential moving average of a network's weights, evaluated as an extra head.

After every *real* optimiser step (the loop's ``on_step_end`` hook; a step that AMP skipped
does not count), for every parameter and floating-point buffer::

    θ_ema ← d · θ_ema + (1 − d) · θ,     d = decay_per_epoch ** (1 / steps_per_epoch)

The decay is given **per epoch**, so a run behaves the same with 60 or 3,000 steps per
epoch: after one epoch the old average keeps a weight of ``decay_per_epoch``. (timm's
``ModelEmaV2`` and LAC's code give a per-step decay, e.g. 0.9997; at S steps per epoch that is
``decay_per_epoch = 0.9997 ** S``.) Integer buffers (BatchNorm's step counter) are copied.
"""
from __future__ import annotations

import copy

import torch
from torch import nn


def per_step_decay(decay_per_epoch: float, steps_per_epoch: int) -> float:
    """d such that d ** steps_per_epoch == decay_per_epoch."""
    if not (isinstance(decay_per_epoch, (int, float)) and 0.0 <= decay_per_epoch < 1.0):
        raise ValueError(f"the EMA decay per epoch must be in [0, 1), got {decay_per_epoch!r}")
    if not isinstance(steps_per_epoch, int) or steps_per_epoch < 1:
        raise ValueError(f"steps_per_epoch must be an integer >= 1, got {steps_per_epoch!r}")
    return float(decay_per_epoch) ** (1.0 / steps_per_epoch)


class EMA:
    """A frozen copy of ``net`` kept as the moving average of its weights (eval mode)."""

    def __init__(self, net: nn.Module, decay_per_epoch: float, steps_per_epoch: int):
        self.decay_per_epoch = float(decay_per_epoch)
        self.decay = per_step_decay(decay_per_epoch, steps_per_epoch)
        self.module = copy.deepcopy(net)
        self.module.eval()
        for p in self.module.parameters():
            p.requires_grad_(False)
        self.updates = 0

    @torch.no_grad()
    def update(self, net: nn.Module) -> None:
        d = self.decay
        # parameters() and buffers() visit each tensor once, even when a module is reachable
        # under two names (``last_conv`` is also inside ``backbone``): a state_dict would
        # update such tensors twice per step
        pairs = list(zip(self.module.parameters(), net.parameters())) + \
            list(zip(self.module.buffers(), net.buffers()))
        floats = [(t, v.detach().to(t.dtype)) for t, v in pairs if t.dtype.is_floating_point]
        # one call per operation for all tensors (the per-tensor mul_ and add_ of each tensor,
        # bit for bit, without a Python loop of two calls per tensor)
        torch._foreach_mul_([t for t, _ in floats], d)
        torch._foreach_add_([t for t, _ in floats], [v for _, v in floats], alpha=1.0 - d)
        for target, value in pairs:
            if not target.dtype.is_floating_point:
                target.copy_(value)
        self.updates += 1

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        return self.module(x)

    def state_dict(self):
        return {"module": self.module.state_dict(), "updates": self.updates}

    def load_state_dict(self, state) -> None:
        self.module.load_state_dict(state["module"])
        self.updates = int(state["updates"])
