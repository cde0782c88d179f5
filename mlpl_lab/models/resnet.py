"""torchvision ResNet-18/50 with global average pooling and a linear head.

Pretrained weights go through torchvision's weights API and its cache
(``$TORCH_HOME/hub/checkpoints``). Our machines cannot download: when the file is not
cached and the download fails, :func:`load_pretrained_state` raises
:class:`WeightsUnavailableError` within seconds, naming the weight, the cache path and how to
place the file there. It never hangs: the download runs under a short socket timeout.
"""
from __future__ import annotations

import socket
from pathlib import Path
from urllib.parse import urlparse

import torch
from torch import nn

from .base import Classifier

ARCHS = ("resnet18", "resnet50")


class WeightsUnavailableError(RuntimeError):
    """Pretrained weights are neither cached nor downloadable."""


def weights_enum(arch: str, weights: str):
    """Resolve ``weights`` ("IMAGENET1K_V1", "DEFAULT", ...) through torchvision's API."""
    if arch not in ARCHS:
        raise ValueError(f"unknown architecture {arch!r}; choose one of {ARCHS}")
    import torchvision  # imported when a ResNet is asked for (its import costs a notebook ~1-2 s)

    enum = torchvision.models.get_model_weights(arch)
    try:
        return enum[weights] if weights != "DEFAULT" else enum.DEFAULT
    except KeyError:
        names = ", ".join(["DEFAULT"] + [w.name for w in enum])
        raise ValueError(f"unknown weights {weights!r} for {arch}; choose one of: {names}") from None


def cache_path(weight) -> Path:
    """Where torchvision looks for ``weight``'s file (``$TORCH_HOME/hub/checkpoints/<file>``)."""
    return Path(torch.hub.get_dir()) / "checkpoints" / Path(urlparse(weight.url).path).name


def load_pretrained_state(arch: str, weights: str, timeout: float = 10.0) -> dict:
    """Return the state dict of torchvision's ``arch`` ``weights``, from the cache if present."""
    weight = weights_enum(arch, weights)
    path = cache_path(weight)
    if path.exists():
        return torch.load(path, map_location="cpu", weights_only=True)
    old = socket.getdefaulttimeout()
    socket.setdefaulttimeout(timeout)
    try:
        return weight.get_state_dict(progress=False, check_hash=True)
    except Exception as exc:  # URLError, timeout, SSL error, hash mismatch ...
        raise WeightsUnavailableError(
            f"cannot load {arch} weights {weight}: not cached at {path} and the download "
            f"from {weight.url} failed ({type(exc).__name__}: {exc}). Copy the file "
            f"{path.name} into {path.parent} (set TORCH_HOME to use another cache), or pass "
            "weights=None to train from scratch."
        ) from exc
    finally:
        socket.setdefaulttimeout(old)


class ResNetClassifier(Classifier):
    """ResNet-18/50 trunk (``conv1 … layer4``) + global average pooling + ``Linear(D, C)``.

    This is Cole et al.'s ``ImageClassifier`` shape. ``last_conv`` is ``layer4``.
    ``weights=None`` trains from scratch (what the embedded data uses).
    The feature map has stride 32: 2 x 2 at 64 px, 7 x 7 at 224 px, 14 x 14 at 448 px.
    ``last_layer="layer3"`` drops ``layer4`` (stride 16, width 256 on ResNet-18, 1024 on
    ResNet-50; ``last_conv`` is then ``layer3``): a finer map for attention maps and Grad-CAM
    at small inputs (4 x 4 at 64 px, 8 x 8 at 128 px).
    """

    def __init__(self, num_classes: int, arch: str = "resnet18", weights: str | None = None,
                 head: str = "linear", head_kwargs=None, last_layer: str = "layer4"):
        super().__init__()
        if arch not in ARCHS:
            raise ValueError(f"unknown architecture {arch!r}; choose one of {ARCHS}")
        import torchvision

        net = getattr(torchvision.models, arch)(weights=None)
        if weights is not None:
            net.load_state_dict(load_pretrained_state(arch, weights))
        self.arch = arch
        if last_layer not in ("layer3", "layer4"):
            raise ValueError(f"last_layer must be 'layer3' or 'layer4', got {last_layer!r}")
        layers = [net.conv1, net.bn1, net.relu, net.maxpool, net.layer1, net.layer2, net.layer3]
        if last_layer == "layer4":
            layers.append(net.layer4)
        self.last_conv = layers[-1]
        self.backbone = nn.Sequential(*layers)
        self.feature_dim = net.fc.in_features if last_layer == "layer4" else net.fc.in_features // 2
        self.feature_stride = 32 if last_layer == "layer4" else 16
        self._build_head(num_classes, head, head_kwargs)
