"""Multi-label Grad-CAM on pytorch-grad-cam, overlays, and localisation scores against masks.

The OPML paper (Sec. IV-E, Fig. 7) shows Grad-CAM maps (Selvaraju et al. 2017) finding
objects that the annotation missed; it scores nothing.  The embedded scenes keep a mask per
class, so here the maps are also *measured*:

* **energy share**: Σ_{mask} CAM / Σ CAM, the share of the map's (non-negative) energy that
  falls on the class's visible pixels (1 = all of it; a flat map scores the mask's area
  share);
* **pointing game** (Zhang et al. 2016): 1 if the map's maximum lies inside the mask.  Ties
  (several pixels at the maximum, e.g. a flat map) score the share of the tied pixels inside
  the mask, so a flat map again scores the area share rather than depending on which pixel
  ``argmax`` happens to return.

A map that is zero everywhere (pytorch-grad-cam applies a ReLU, then min-max scales each map
to [0, 1], so a map without positive evidence, or a constant one, comes back as zeros)
counts as flat.

Pitfalls of pytorch-grad-cam 1.5.7 handled here: targets are
``ClassifierOutputTarget(k)`` on the raw logits (the softmax target would couple independent
classes); ``targets`` is zipped with the batch, so a short list silently yields zero maps —
we check the counts; its constructor calls ``model.eval()`` — we restore every module's
mode; its context manager swallows ``IndexError`` — we validate class indices ourselves and
release the hooks in ``finally`` instead.  The target layer is the model's documented
``last_conv`` attribute (:mod:`mlpl_lab.models`).
"""
from __future__ import annotations

from typing import Dict, Mapping, Sequence

import numpy as np
import torch
from torch import nn

__all__ = ["methods_of", "as_model", "target_layer", "pair_cams", "class_cams", "localisation_scores",
           "localisation_pairs", "evaluate_localisation", "localisation_table", "class_status",
           "hidden_examples", "plot_cam_gallery"]


def methods_of(results: Mapping[str, Sequence], labels: Sequence[str]) -> Dict[str, object]:
    """``{label: trained method}`` of the first seed for ``labels`` of one or several
    ``compare`` results (later dicts win), e.g. ``methods_of(sp | full, ["AN", "OPML"])``."""
    missing = [k for k in labels if k not in results]
    if missing:
        raise KeyError(f"no results for {missing}; available: {sorted(results)}")
    return {k: results[k][0].method for k in labels}


def as_model(model_or_method) -> nn.Module:
    """The network of a trained method (``method.networks()["net"]`` or its only network),
    or the module itself."""
    if isinstance(model_or_method, nn.Module):
        return model_or_method
    nets = getattr(model_or_method, "networks", None)
    if callable(nets):
        nets = nets()
        if "net" in nets:
            return nets["net"]
        if len(nets) == 1:
            return next(iter(nets.values()))
        raise ValueError(f"the method has several networks {sorted(nets)}; pass the one to explain")
    raise TypeError(f"expected an nn.Module or a trained mlpl_lab Method, got {type(model_or_method).__name__}")


def target_layer(model: nn.Module) -> nn.Module:
    """The Grad-CAM target layer: the model's documented ``last_conv`` block."""
    layer = getattr(model, "last_conv", None)
    if not isinstance(layer, nn.Module):
        raise AttributeError(f"{type(model).__name__} has no `last_conv` module; mlpl_lab models "
                             "document it as the Grad-CAM target layer (see mlpl_lab.models)")
    return layer


def _num_classes(model: nn.Module) -> int:
    n = getattr(model, "num_classes", None)
    if n is None:
        head = getattr(model, "classifier", None)
        n = getattr(head, "out_features", None)
    if n is None:
        raise AttributeError("cannot tell the model's number of classes (no num_classes / classifier)")
    return int(n)


def pair_cams(model_or_method, images: torch.Tensor, classes: Sequence[int],
              batch_size: int = 256) -> np.ndarray:
    """Grad-CAM maps (P, H, W) in [0, 1] for P (image, class) pairs: map p explains logit
    ``classes[p]`` of ``images[p]``.  For several classes of one image, repeat the image
    (see :func:`class_cams`).  Training mode is restored and the hooks are released."""
    from pytorch_grad_cam import GradCAM
    from pytorch_grad_cam.utils.model_targets import ClassifierOutputTarget

    model = as_model(model_or_method)
    if not torch.is_tensor(images) or images.ndim != 4:
        raise ValueError(f"images must be a (P, 3, H, W) tensor, got {getattr(images, 'shape', type(images))}")
    classes = [int(c) for c in np.asarray(classes).reshape(-1)]
    if len(classes) != images.shape[0]:
        raise ValueError(f"{len(classes)} target classes for {images.shape[0]} images: pytorch-grad-cam "
                         "zips them and would silently return zero maps for the extra images; pass "
                         "one class per image (repeat an image once per class)")
    n_cls = _num_classes(model)
    bad = [c for c in classes if not 0 <= c < n_cls]
    if bad:
        raise IndexError(f"class index {bad[0]} out of range for a model with {n_cls} classes "
                         "(pytorch-grad-cam would swallow this IndexError)")
    if batch_size < 1:
        raise ValueError("batch_size must be >= 1")
    modes = {m: m.training for m in model.modules()}
    grads = {p: p.requires_grad for p in model.parameters()}
    device = next(model.parameters()).device
    layer = target_layer(model)
    # the maps need d logit / d activation of the target layer only: every parameter frozen and the
    # layer's output made a leaf that requires grad (a hook run before pytorch-grad-cam's), so
    # autograd stops there instead of computing every layer's gradients down to the image (the
    # maps are the same, bit for bit; the backward pass is several times cheaper)
    for p in grads:
        p.requires_grad_(False)

    def _leaf(module, inputs, output):
        return output.detach().requires_grad_(True) if torch.is_tensor(output) else output

    leaf = layer.register_forward_hook(_leaf, prepend=True)
    out, cam = [], None
    try:
        cam = GradCAM(model=model, target_layers=[layer])  # calls model.eval()
        with torch.enable_grad():
            for start in range(0, len(classes), batch_size):
                x = images[start:start + batch_size].to(device).float()
                targets = [ClassifierOutputTarget(c) for c in classes[start:start + batch_size]]
                maps = cam(input_tensor=x, targets=targets)
                if maps.shape[0] != len(targets):
                    raise RuntimeError(f"Grad-CAM returned {maps.shape[0]} maps for {len(targets)} targets")
                out.append(np.asarray(maps, dtype=np.float32))
    finally:
        leaf.remove()
        if cam is not None:
            cam.activations_and_grads.release()
        for m, mode in modes.items():
            m.train(mode)
        for p, needed in grads.items():
            p.requires_grad_(needed)
            p.grad = None
    if not out:
        return np.zeros((0,) + tuple(images.shape[-2:]), dtype=np.float32)
    return np.concatenate(out)


def class_cams(model_or_method, image: torch.Tensor, classes: Sequence[int]) -> np.ndarray:
    """One Grad-CAM map (K, H, W) per requested class of ONE image (3, H, W): the image is
    repeated once per class, each copy with its own ``ClassifierOutputTarget``."""
    if not torch.is_tensor(image) or image.ndim != 3:
        raise ValueError(f"image must be one (3, H, W) tensor, got {getattr(image, 'shape', type(image))}")
    classes = [int(c) for c in np.asarray(classes).reshape(-1)]
    if not classes:
        raise ValueError("classes is empty: ask for at least one class")
    return pair_cams(model_or_method, image.unsqueeze(0).expand(len(classes), -1, -1, -1), classes)


def localisation_scores(cams, masks) -> Dict[str, np.ndarray]:
    """Per map: ``energy`` (share of CAM energy inside the mask) and ``pointing`` (the map's
    maximum inside the mask; ties share the credit).  ``cams`` (P, H, W) >= 0 and ``masks``
    (P, H, W) bool; an all-zero map counts as flat (both scores = the mask's area share)."""
    c = np.asarray(cams, dtype=np.float64)
    m = np.asarray(masks).astype(bool)
    if c.ndim == 2:
        c, m = c[None], m[None]
    if c.shape != m.shape or c.ndim != 3:
        raise ValueError(f"cams {c.shape} and masks {m.shape} must both be (P, H, W)")
    if np.isnan(c).any() or (c < 0).any():
        raise ValueError("cams must be non-negative maps without NaN (Grad-CAM applies a ReLU)")
    empty = ~m.reshape(len(m), -1).any(1)
    if empty.any():
        raise ValueError(f"{int(empty.sum())} masks are empty: score only classes present in the image")
    flat = c.reshape(len(c), -1)
    mk = m.reshape(len(m), -1)
    area = mk.mean(1)
    total = flat.sum(1)
    zero = total <= 0
    energy = np.where(zero, area, (flat * mk).sum(1) / np.where(zero, 1.0, total))
    peak = flat.max(1, keepdims=True)
    at_max = flat >= peak * (1 - 1e-6)
    pointing = (at_max & mk).sum(1) / at_max.sum(1)
    pointing = np.where(zero, area, pointing)
    return {"energy": energy, "pointing": pointing, "area": area}


def class_status(observed: int, truth: int) -> str:
    """'observed positive', 'hidden positive' (in the truth, not observed as positive), or
    'not present' (absent from the truth; an observed positive there would be label noise,
    which the lab's regimes never create: 'noisy positive')."""
    if truth == 1:
        return "observed positive" if observed == 1 else "hidden positive"
    return "noisy positive" if observed == 1 else "not present"


def localisation_pairs(dataset, which: str = "present", max_images: int | None = None):
    """(image indices, class indices) of the pairs to score: every (image, true class)
    (``"present"``), only the hidden positives of a partially observed set (``"hidden"``),
    or only its observed positives (``"observed"``), over the first ``max_images`` images."""
    y = dataset.labels
    n = len(dataset) if max_images is None else min(int(max_images), len(dataset))
    sel = y[:n] == 1
    if which == "hidden":
        sel = sel & (dataset.observed[:n] != 1)
    elif which == "observed":
        sel = sel & (dataset.observed[:n] == 1)
    elif which != "present":
        raise ValueError(f"which must be 'present', 'hidden' or 'observed', got {which!r}")
    img, cls = torch.nonzero(sel, as_tuple=True)
    return img, cls


def scored_pairs(dataset, which: str, max_images: int | None):
    """``(img, cls, images)``: the pairs of :func:`localisation_pairs` and their images, with a
    clear error for a dataset without masks or without such pairs."""
    if not hasattr(dataset, "masks"):
        raise TypeError("dataset has no per-class masks; use an embedded SceneDataset")
    img, cls = localisation_pairs(dataset, which, max_images)
    if len(img) == 0:
        raise ValueError(f"no {which} (image, class) pairs to score in this dataset")
    return img, cls, dataset.images[img]


def evaluate_localisation(model_or_method, dataset, which: str = "present",
                          max_images: int | None = None, batch_size: int = 256) -> Dict[str, float]:
    """Mean energy share and pointing-game hit over the (image, class) pairs of ``dataset``
    (see :func:`localisation_pairs`), and the mean area share of the masks (the flat-map
    baseline).  Needs a dataset with per-class masks (``SceneDataset.masks``)."""
    img, cls, images = scored_pairs(dataset, which, max_images)
    masks = dataset.masks[img, cls].numpy()
    cams = pair_cams(model_or_method, images, cls.tolist(), batch_size=batch_size)
    s = localisation_scores(cams, masks)
    return {"energy": float(s["energy"].mean()), "pointing": float(s["pointing"].mean()),
            "area": float(s["area"].mean()), "pairs": int(len(img))}


def localisation_table(models: Mapping[str, object], dataset, which: str = "present",
                       max_images: int | None = None):
    """A DataFrame (one row per model): energy share, pointing game, flat-map baseline, pairs."""
    import pandas as pd

    rows = {label: evaluate_localisation(m, dataset, which, max_images) for label, m in models.items()}
    return pd.DataFrame(rows).T[["energy", "pointing", "area", "pairs"]]


def hidden_examples(dataset, n: int = 3, min_objects: int = 3) -> list:
    """Indices of the first ``n`` images with at least one hidden positive (and at least
    ``min_objects`` true classes): the images where a map can find what the annotation missed."""
    hidden = ((dataset.labels == 1) & (dataset.observed != 1)).any(1)
    many = (dataset.labels == 1).sum(1) >= min_objects
    idx = torch.nonzero(hidden & many).flatten().tolist()
    if len(idx) < n:
        raise ValueError(f"only {len(idx)} images with hidden positives; ask for fewer")
    return idx[:n]


def plot_cam_gallery(models: Mapping[str, object], dataset, indices: Sequence[int],
                     class_names: Sequence[str] | None = None, extra_absent: int = 1, size: float = 1.6):
    """Grad-CAM overlays: one row per (image, model); the first column the image, then one
    column per class of the image (its true classes, then the ``extra_absent`` highest-scoring
    absent classes of the first model), each titled with the class name and its status
    (observed positive / hidden positive / not present).  Returns the Figure."""
    import matplotlib.pyplot as plt
    from pytorch_grad_cam.utils.image import show_cam_on_image

    if not models:
        raise ValueError("models is empty")
    names = list(class_names) if class_names is not None else list(dataset.class_names)
    indices = [int(i) for i in indices]
    first = as_model(next(iter(models.values())))
    plan = []
    for i in indices:
        y = dataset.labels[i]
        present = torch.nonzero(y == 1).flatten().tolist()
        with torch.no_grad():
            was = first.training
            first.eval()
            logits = first(dataset.images[i:i + 1].to(next(first.parameters()).device))[0].cpu()
            first.train(was)
        absent = [int(c) for c in torch.argsort(logits, descending=True).tolist() if y[c] == 0][:extra_absent]
        plan.append((i, present + absent))
    ncols = 1 + max(len(c) for _, c in plan)
    nrows = len(plan) * len(models)
    fig, axes = plt.subplots(nrows, ncols, figsize=(size * ncols, size * 1.15 * nrows), squeeze=False)
    r = 0
    for i, classes in plan:
        img = dataset.images[i].permute(1, 2, 0).clamp(0, 1).numpy().astype(np.float32)
        for label, m in models.items():
            maps = class_cams(m, dataset.images[i], classes)
            axes[r, 0].imshow(img)
            axes[r, 0].set_title(f"{label}\nimage {i}", fontsize=7)
            for k, c in enumerate(classes):
                ax = axes[r, 1 + k]
                ax.imshow(show_cam_on_image(img, maps[k], use_rgb=True))
                status = class_status(int(dataset.observed[i, c]), int(dataset.labels[i, c]))
                ax.set_title(f"{names[c]}\n{status}", fontsize=7,
                             color={"hidden positive": "tab:orange", "not present": "grey"}.get(status, "k"))
            for ax in axes[r]:
                ax.set_xticks([])
                ax.set_yticks([])
            for k in range(1 + len(classes), ncols):
                axes[r, k].axis("off")
            r += 1
    fig.tight_layout()
    return fig
