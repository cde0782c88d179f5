"""Networks: a small CNN for 2-core CPUs and torchvision ResNets, all with one interface.

Every model exposes, by these documented attribute names:

* ``model.backbone`` — everything up to the last feature map;
* ``model.last_conv`` — the last convolutional block (the Grad-CAM target layer);
* ``model.classifier`` — the linear head over C classes (after global average pooling);
* ``model.feature_dim`` — the width of the pooled feature;
* ``model.feature_map(x)`` (B, D, h, w), ``model.embed(x)`` (B, D) and ``model(x)`` logits (B, C).
"""
from .small_cnn import SmallCNN  # noqa: F401
from .resnet import ResNetClassifier, WeightsUnavailableError, load_pretrained_state  # noqa: F401
from .factory import MODELS, build_model  # noqa: F401
