"""Build a model by name (what profiles and notebooks pass around)."""
from __future__ import annotations

from functools import partial

from .heads import HEADS
from .resnet import ResNetClassifier
from .small_cnn import SmallCNN

MODELS = {
    "small_cnn": SmallCNN,
    "resnet18": partial(ResNetClassifier, arch="resnet18"),
    "resnet50": partial(ResNetClassifier, arch="resnet50"),
}


def build_model(name: str, num_classes: int, head: str = "linear", **kwargs):
    """``build_model("small_cnn", 20, width=32)``; ``build_model("resnet50", 80,
    weights="IMAGENET1K_V1")``; ``build_model("small_cnn", 20, head="label_query",
    head_kwargs={...})`` picks a registered head (:mod:`mlpl_lab.models.heads`)."""
    if name not in MODELS:
        raise ValueError(f"unknown model {name!r}; choose one of {sorted(MODELS)}")
    if head not in HEADS:
        raise ValueError(f"unknown head {head!r}; registered heads: {sorted(HEADS)}")
    return MODELS[name](num_classes, head=head, **kwargs)
