"""LAC's attention maps: shown next to Grad-CAM and scored against the objects.

The paper's Fig. 6 shows attention maps and its code never computes them. The
lab's reconstruction: the cross-attention weights of the label-query head's last decoder
layer, averaged over heads (:mod:`mlpl_lab.models.label_query`), one h x w map per class that
sums to 1, upsampled bilinearly to the image. They are scored with the **same** energy-share
and pointing-game scores as Grad-CAM (:func:`mlpl_lab.viz.cam.localisation_scores`): the
share of the map inside the class's true mask, and whether its maximum lies there; a flat
map scores the mask's area share.
"""
from __future__ import annotations

from typing import Dict, Mapping, Sequence

import numpy as np
import torch
import torch.nn.functional as F

from .cam import as_model, class_status, localisation_scores, pair_cams, scored_pairs

__all__ = ["attention_maps", "pair_attention", "evaluate_maps", "map_localisation_table",
           "plot_attention_gallery"]


def _label_query(model_or_method):
    model = as_model(model_or_method)
    if not hasattr(getattr(model, "head", None), "label_embeddings"):
        raise TypeError("attention maps need a model with the label-query head "
                        "(build_model(..., head='label_query'))")
    return model


@torch.no_grad()
def attention_maps(model_or_method, images: torch.Tensor, upsample: bool = True,
                   batch_size: int = 256) -> torch.Tensor:
    """(B, C, H, W) attention maps of every class (eval mode; the mode is restored), upsampled
    to the images' size (``upsample=False``: the raw (B, C, h, w) weights, summing to 1)."""
    model = _label_query(model_or_method)
    if not torch.is_tensor(images) or images.ndim != 4:
        raise ValueError(f"images must be a (B, 3, H, W) tensor, got {getattr(images, 'shape', type(images))}")
    was = model.training
    model.eval()
    device = next(model.parameters()).device
    out = []
    try:
        for start in range(0, len(images), batch_size):
            x = images[start:start + batch_size].to(device)
            a = model.outputs(x)["attention"].float()
            if upsample:
                a = F.interpolate(a, size=x.shape[-2:], mode="bilinear", align_corners=False).clamp(min=0)
            out.append(a.cpu())
    finally:
        model.train(was)
    return torch.cat(out)


def pair_attention(model_or_method, images: torch.Tensor, classes: Sequence[int]) -> np.ndarray:
    """(P, H, W) attention maps for P (image, class) pairs (as :func:`~mlpl_lab.viz.cam.pair_cams`)."""
    classes = torch.as_tensor(np.asarray(classes).reshape(-1), dtype=torch.long)
    if len(classes) != len(images):
        raise ValueError(f"{len(classes)} classes for {len(images)} images: pass one class per image")
    maps = attention_maps(model_or_method, images)
    n_cls = maps.shape[1]
    if len(classes) and (classes.min() < 0 or classes.max() >= n_cls):
        raise IndexError(f"class index out of range for a model with {n_cls} classes")
    return maps[torch.arange(len(images)), classes].numpy()


def evaluate_maps(model_or_method, dataset, which: str = "present", kind: str = "attention",
                  max_images: int | None = None) -> Dict[str, float]:
    """Mean energy share and pointing hit of ``kind`` maps (``"attention"`` or ``"grad-cam"``)
    over the (image, class) pairs of ``dataset`` chosen by ``which`` (``present``, ``observed``,
    ``hidden``; see :func:`~mlpl_lab.viz.cam.localisation_pairs`)."""
    if kind not in ("attention", "grad-cam"):
        raise ValueError(f"kind must be 'attention' or 'grad-cam', got {kind!r}")
    img, cls, images = scored_pairs(dataset, which, max_images)
    maps = pair_attention(model_or_method, images, cls) if kind == "attention" else \
        pair_cams(model_or_method, images, cls.tolist())
    s = localisation_scores(maps, dataset.masks[img, cls].numpy())
    return {"energy": float(s["energy"].mean()), "pointing": float(s["pointing"].mean()),
            "area": float(s["area"].mean()), "pairs": int(len(img))}


def map_localisation_table(models: Mapping[str, object], dataset, which=("observed", "hidden"),
                           kinds=("attention", "grad-cam"), max_images: int | None = None):
    """DataFrame indexed by (model, map, pairs scored): energy share, pointing game and the
    flat-map baseline ``area``, for each model, map kind and pair set."""
    import pandas as pd

    rows = []
    for label, m in models.items():
        for kind in kinds:
            for w in ([which] if isinstance(which, str) else which):
                r = evaluate_maps(m, dataset, w, kind, max_images)
                rows.append({"model": label, "map": kind, "pairs scored": w} | r)
    return pd.DataFrame(rows).set_index(["model", "map", "pairs scored"])


def plot_attention_gallery(models: Mapping[str, object], dataset, index: int, class_names=None,
                           extra_absent: int = 1, size: float = 1.5):
    """One image: per model, a row of attention maps and a row of Grad-CAM maps, one column
    per class (its true classes, then the ``extra_absent`` highest-scoring absent ones of the
    first model), titled with the class and its status (observed positive / hidden positive /
    not present). Returns the Figure."""
    import matplotlib.pyplot as plt
    from pytorch_grad_cam.utils.image import show_cam_on_image

    if not models:
        raise ValueError("models is empty")
    names = list(class_names) if class_names is not None else list(dataset.class_names)
    i = int(index)
    y = dataset.labels[i]
    first = _label_query(next(iter(models.values())))
    with torch.no_grad():
        was = first.training
        first.eval()
        logits = first(dataset.images[i:i + 1].to(next(first.parameters()).device))[0].cpu()
        first.train(was)
    present = torch.nonzero(y == 1).flatten().tolist()
    absent = [int(c) for c in torch.argsort(logits, descending=True).tolist() if y[c] == 0][:extra_absent]
    classes = present + absent
    img = dataset.images[i].permute(1, 2, 0).clamp(0, 1).numpy().astype(np.float32)
    rows = 2 * len(models)
    fig, axes = plt.subplots(rows, 1 + len(classes), figsize=(size * (1 + len(classes)), size * 1.2 * rows),
                             squeeze=False)
    r = 0
    for label, m in models.items():
        att = pair_attention(m, dataset.images[i:i + 1].expand(len(classes), -1, -1, -1), classes)
        cams = pair_cams(m, dataset.images[i:i + 1].expand(len(classes), -1, -1, -1), classes)
        for kind, maps in (("attention", att), ("Grad-CAM", cams)):
            axes[r, 0].imshow(img)
            axes[r, 0].set_title(f"{label}\n{kind}", fontsize=7)
            for k, c in enumerate(classes):
                m01 = maps[k] / maps[k].max() if maps[k].max() > 0 else maps[k]
                axes[r, 1 + k].imshow(show_cam_on_image(img, m01.astype(np.float32), use_rgb=True))
                status = class_status(int(dataset.observed[i, c]), int(y[c]))
                axes[r, 1 + k].set_title(f"{names[c]}\n{status}", fontsize=7,
                                         color={"hidden positive": "tab:orange", "not present": "grey"}.get(status, "k"))
            for ax in axes[r]:
                ax.set_xticks([])
                ax.set_yticks([])
            r += 1
    fig.tight_layout()
    return fig
