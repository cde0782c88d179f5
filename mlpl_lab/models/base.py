"""The shared head: global average pooling and a linear classifier."""
from __future__ import annotations

import torch
from torch import nn


class PooledClassifier(nn.Module):
    """Subclasses set ``backbone`` (ending with ``last_conv``), ``feature_dim`` and call
    :meth:`_build_head`."""

    backbone: nn.Module
    last_conv: nn.Module
    feature_dim: int

    def _build_head(self, num_classes: int) -> None:
        if num_classes < 1:
            raise ValueError(f"num_classes must be >= 1, got {num_classes}")
        self.num_classes = num_classes
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.classifier = nn.Linear(self.feature_dim, num_classes)

    def feature_map(self, x: torch.Tensor) -> torch.Tensor:
        """The last convolutional feature map, (B, D, h, w)."""
        return self.backbone(x)

    def embed(self, x: torch.Tensor) -> torch.Tensor:
        """Globally average-pooled features, (B, D)."""
        return self.pool(self.feature_map(x)).flatten(1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if x.ndim != 4:
            raise ValueError(f"expected images (B, 3, H, W), got shape {tuple(x.shape)}")
        return self.classifier(self.embed(x))
