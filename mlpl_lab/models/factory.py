"""Build a model by name (what profiles and notebooks pass around)."""
from __future__ import annotations

from functools import partial

from .heads import HEADS
from .lgconv import convert_to_lgconv
from .resnet import ResNetClassifier
from .small_cnn import SmallCNN

MODELS = {
    "small_cnn": SmallCNN,
    "resnet18": partial(ResNetClassifier, arch="resnet18"),
    "resnet50": partial(ResNetClassifier, arch="resnet50"),
}


def build_model(name: str, num_classes: int, head: str = "linear", lgconv: bool = False,
                lgconv_gamma_init: float | None = 1e-4, **kwargs):
    """``build_model("small_cnn", 20, width=32)``; ``build_model("resnet50", 80,
    weights="IMAGENET1K_V1")``; ``build_model("small_cnn", 20, head="label_query",
    head_kwargs={...})`` picks a registered head (:mod:`mlpl_lab.models.heads`);
    ``lgconv=True`` gives every eligible 3x3 convolution of the backbone PU-MLC's global
    branch (:mod:`mlpl_lab.models.lgconv`; ``lgconv_gamma_init`` the branch BN's initial γ
    scale, 0 = exactly the base network at initialisation)."""
    if name not in MODELS:
        raise ValueError(f"unknown model {name!r}; choose one of {sorted(MODELS)}")
    if head not in HEADS:
        raise ValueError(f"unknown head {head!r}; registered heads: {sorted(HEADS)}")
    model = MODELS[name](num_classes, head=head, **kwargs)
    if lgconv:
        if convert_to_lgconv(model.backbone, gamma_init=lgconv_gamma_init) == 0:
            raise ValueError(f"lgconv=True found no 3x3 convolution with >= 8 input channels in {name!r}")
        model.lgconv = True
    return model
