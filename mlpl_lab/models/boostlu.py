"""The BoostLU head of BoostLU (CVPR 2023): a class activation map whose positive part is boosted.

BoostLU ("Bridging the Gap between Model Explanations in Partially Annotated Multi-label
Classification", arXiv 2304.01804) observes that a network trained with partial labels
(unknown counted as negative) explains its predictions with the same regions as one trained
with full labels, but with **lower attribution scores**: the false negatives push the class
activation map (CAM) down. It boosts the positive attributions, at training and at inference:

* a 1x1 convolution (``Conv2d(D, C, 1)`` with bias) turns the feature map f (B, D, h, w) into
  the CAM, M_c(x, y) = w_c · f(x, y) + b_c, one map per class;
* **BoostLU** scales the positive part of every map and keeps the negative part:
  BoostLU(M) = α·M where M > 0, M elsewhere (α > 1 boosts);
* global average pooling of the boosted maps gives the logits:
  z_c = (1/hw) Σ_{x,y} BoostLU(M_c(x, y)).

The official code writes the operation as one line, ``CAM = torch.where(CAM > 0, CAM *
self.alpha, CAM)`` (``youngwk/BridgeGapExplanationPAMC``, ``models.py``,
``ImageClassifier.forward``, commented "BoostLU operation"), between the 1x1 convolution and the
average pooling; this module computes the same thing (``notebooks/fidelity.md`` gives the measured
difference). **Default α = 5**, the code's ``--alpha 5`` (``config.py``) and the README's command.

With α = 1 the head *is* the linear head (:class:`mlpl_lab.models.heads.LinearHead`): pooling
and a linear map commute, so GAP then ``Linear(D, C)`` equals a 1x1 convolution with the same
weights then GAP — the identity that makes every linear head a CAM head. With α ≠ 1 they differ:
the boost acts per location, before the pooling, so it rewards maps with strong positive
evidence somewhere over maps that are mildly positive everywhere.

The boosted CAM is the explanation the paper studies: :meth:`BoostLUHead.outputs` returns it as
``"cam"`` (B, C, h, w), with the pooled embedding. BoostLU runs with the Large Loss Matters schemes
(LL-R, LL-Ct, LL-Cp: their loss reads the boosted logits, as they come out of this head); the lab's
benchmark pairs it with them (``protocol/recipes.py``, rows "LL-R + BoostLU", ...).
"""
from __future__ import annotations

import math
import numbers
from typing import Dict

import torch
from torch import nn

from .heads import register_head

__all__ = ["BoostLUHead", "boostlu", "DEFAULT_ALPHA"]

#: the official code's default (``config.py``: ``--alpha 5``)
DEFAULT_ALPHA = 5.0


def boostlu(cam: torch.Tensor, alpha: float) -> torch.Tensor:
    """α·M where M > 0, M elsewhere (the official ``torch.where(CAM > 0, CAM * alpha, CAM)``).
    At M = 0 both branches give 0; autograd takes the slope of the negative side (1) there."""
    return torch.where(cam > 0, cam * alpha, cam)


def _check_alpha(alpha) -> float:
    ok = isinstance(alpha, numbers.Real) and not isinstance(alpha, bool)
    value = float(alpha) if ok else float("nan")
    if not ok or not math.isfinite(value) or value <= 0:
        raise ValueError(f"boostlu head: alpha must be a finite number > 0 (the factor on the positive part of "
                         f"the class activation map; 1 = the linear head, the paper's default is "
                         f"{DEFAULT_ALPHA:g}), got {alpha!r}: set head_kwargs={{'alpha': {DEFAULT_ALPHA:g}}}")
    return value


@register_head("boostlu")
class BoostLUHead(nn.Module):
    """1x1 convolution → BoostLU (α on the positive part) → global average pooling (module docstring).

    ``conv`` is the (C, D, 1, 1) classifier with bias, initialised as ``Conv2d``'s default (the
    same distribution as ``Linear(D, C)``'s); ``alpha`` the boost (default 5, the paper's)."""

    def __init__(self, feature_dim: int, num_classes: int, alpha: float = DEFAULT_ALPHA):
        super().__init__()
        self.alpha = _check_alpha(alpha)
        self.conv = nn.Conv2d(feature_dim, num_classes, kernel_size=1, bias=True)

    def cam(self, fmap: torch.Tensor) -> torch.Tensor:
        """The boosted class activation map, (B, C, h, w)."""
        return boostlu(self.conv(fmap), self.alpha)

    def forward(self, fmap: torch.Tensor) -> torch.Tensor:
        return self.cam(fmap).mean(dim=(2, 3))

    def outputs(self, fmap: torch.Tensor) -> Dict[str, torch.Tensor]:
        cam = self.cam(fmap)
        return {"logits": cam.mean(dim=(2, 3)), "cam": cam, "embedding": fmap.mean(dim=(2, 3))}

    def extra_repr(self) -> str:
        return f"alpha={self.alpha:g}"
