"""Build a model by name (what profiles and notebooks pass around)."""
from __future__ import annotations

from functools import partial

from .resnet import ResNetClassifier
from .small_cnn import SmallCNN

MODELS = {
    "small_cnn": SmallCNN,
    "resnet18": partial(ResNetClassifier, arch="resnet18"),
    "resnet50": partial(ResNetClassifier, arch="resnet50"),
}


def build_model(name: str, num_classes: int, **kwargs):
    """``build_model("small_cnn", 20, width=32)``; ``build_model("resnet50", 80,
    weights="IMAGENET1K_V1")``."""
    if name not in MODELS:
        raise ValueError(f"unknown model {name!r}; choose one of {sorted(MODELS)}")
    return MODELS[name](num_classes, **kwargs)
