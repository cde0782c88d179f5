"""Model heads: what turns the backbone's feature map (B, D, h, w) into logits (B, C).

A head is registered by name and built by :func:`mlpl_lab.models.build_model` with
``head=<name>``; a chapter adds one (LAC's label-query decoder, PU-MLC's LgConv) by
registering it here, without touching the backbones or the training loop.

Contract of a head module:

* ``__init__(feature_dim, num_classes, **kwargs)``;
* ``forward(fmap) -> logits`` (B, C) — the training path;
* ``outputs(fmap) -> dict`` with at least ``"logits"``, plus whatever the head can show
  (pooled embedding, label-wise embeddings, attention maps), for visualisation. It must not
  change what ``forward`` computes.
"""
from __future__ import annotations

from typing import Callable, Dict

import torch
from torch import nn

HEADS: Dict[str, Callable[..., nn.Module]] = {}


def register_head(name: str):
    """Register a head class under ``name`` (``build_model(..., head=name)``)."""
    def deco(cls):
        if name in HEADS and HEADS[name] is not cls:
            raise KeyError(f"head {name!r} is already registered")
        HEADS[name] = cls
        return cls

    return deco


def build_head(name: str, feature_dim: int, num_classes: int, **kwargs) -> nn.Module:
    if name not in HEADS:
        raise ValueError(f"unknown head {name!r}; registered heads: {sorted(HEADS)}")
    if not isinstance(num_classes, int) or num_classes < 1:
        raise ValueError(f"num_classes must be an integer >= 1, got {num_classes!r}")
    return HEADS[name](feature_dim, num_classes, **kwargs)


@register_head("linear")
class LinearHead(nn.Module):
    """Global average pooling and one linear layer: Cole et al.'s ``ImageClassifier`` head.

    ``fc`` is the (C, D) classifier; ``outputs`` adds the pooled embedding (B, D).
    """

    def __init__(self, feature_dim: int, num_classes: int):
        super().__init__()
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(feature_dim, num_classes)

    def forward(self, fmap: torch.Tensor) -> torch.Tensor:
        return self.fc(self.pool(fmap).flatten(1))

    def outputs(self, fmap: torch.Tensor) -> Dict[str, torch.Tensor]:
        emb = self.pool(fmap).flatten(1)
        return {"logits": self.fc(emb), "embedding": emb}
