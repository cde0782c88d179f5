"""Networks: a small CNN for 2-core CPUs and torchvision ResNets, all with one interface.

Every model exposes, by these documented attribute names:

* ``model.backbone`` — everything up to the last feature map;
* ``model.last_conv`` — the last convolutional block (the Grad-CAM target layer);
* ``model.head`` — a registered head (:mod:`mlpl_lab.models.heads`; ``"linear"`` by default:
  global average pooling + ``model.classifier``, a ``Linear(D, C)``; ``"label_query"``: LAC's
  label-wise embeddings with cross-attention maps, :mod:`mlpl_lab.models.label_query`;
  ``"boostlu"``: BoostLU's 1x1-convolution class activation map with its positive part boosted,
  :mod:`mlpl_lab.models.boostlu`);
* ``model.feature_dim`` and ``model.feature_stride`` — width and stride of the feature map:
  the small CNN has stride 4 (8 x 8 at 32 px, 16 x 16 at 64 px), the ResNets stride 32
  (2 x 2 at 64 px, 7 x 7 at 224 px, 14 x 14 at 448 px; 16 with ``last_layer="layer3"``);
* ``model.feature_map(x)`` (B, D, h, w), ``model.embed(x)`` (B, D), ``model(x)`` logits (B, C)
  and ``model.outputs(x)`` (a dict: logits plus what the head can show).
"""
from .heads import HEADS, build_head, register_head  # noqa: F401
from .label_query import LabelQueryHead  # noqa: F401  (registers head="label_query")
from .boostlu import BoostLUHead  # noqa: F401  (registers head="boostlu")
from .small_cnn import SmallCNN  # noqa: F401
from .resnet import ResNetClassifier, WeightsUnavailableError, load_pretrained_state  # noqa: F401
from .factory import MODELS, build_model  # noqa: F401
