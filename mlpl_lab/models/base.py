"""The shared model shape: a backbone that ends in a feature map, and a registered head."""
from __future__ import annotations

from typing import Dict

import torch
from torch import nn

from .heads import build_head


class Classifier(nn.Module):
    """Subclasses set ``backbone`` (ending with ``last_conv``), ``feature_dim`` and
    ``feature_stride`` and call :meth:`_build_head`.

    ``feature_map(x)`` is (B, D, H/stride, W/stride): the map every head and Grad-CAM see.
    """

    backbone: nn.Module
    last_conv: nn.Module
    feature_dim: int
    feature_stride: int

    def _build_head(self, num_classes: int, head: str = "linear", head_kwargs=None) -> None:
        if not isinstance(num_classes, int) or num_classes < 1:
            raise ValueError(f"num_classes must be an integer >= 1, got {num_classes!r}")
        self.num_classes = num_classes
        self.head_name = head
        self.head = build_head(head, self.feature_dim, num_classes, **dict(head_kwargs or {}))

    @property
    def classifier(self) -> nn.Module:
        """The linear classifier of the ``linear`` head (``head.fc``)."""
        fc = getattr(self.head, "fc", None)
        if fc is None:
            raise AttributeError(f"the {self.head_name!r} head has no single linear classifier")
        return fc

    def feature_map(self, x: torch.Tensor) -> torch.Tensor:
        """The last convolutional feature map, (B, D, h, w)."""
        return self.backbone(x)

    def embed(self, x: torch.Tensor) -> torch.Tensor:
        """Globally average-pooled features, (B, D)."""
        return self.feature_map(x).mean(dim=(2, 3))

    def _check(self, x: torch.Tensor) -> None:
        if x.ndim != 4:
            raise ValueError(f"expected images (B, 3, H, W), got shape {tuple(x.shape)}")

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self._check(x)
        return self.head(self.feature_map(x))

    def outputs(self, x: torch.Tensor, **kwargs) -> Dict[str, torch.Tensor]:
        """Everything the head can show for ``x`` (logits, embeddings, attention maps);
        ``kwargs`` go to the head's ``outputs`` (e.g. ``attention=False``)."""
        self._check(x)
        return self.head.outputs(self.feature_map(x), **kwargs)

