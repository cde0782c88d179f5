"""Plots of generated scenes: image grids with their (partially observed) labels, masks.

Both functions return the matplotlib ``Figure`` and never call ``plt.show()``.
Label marks in :func:`show_scenes` (observed encoding 1 / 0 / -1):

* ``✓ red circle``  (black)         true positive, observed as positive;
* ``? blue ring``   (grey, italic)  true positive, unknown to the learner (hidden);
* ``✗ green cross`` (red)           true positive, observed as *negative* (label noise);
* ``+ red square``  (red)           observed positive that is not in the image (noise).
"""
from __future__ import annotations

import math
from typing import Sequence

import matplotlib.pyplot as plt
import numpy as np
import torch
from matplotlib.patches import Rectangle

from ..data.scenes import Scenes


def _unpack(data):
    """(scenes, dataset observed or None) from a Scenes or a SceneDataset."""
    if isinstance(data, Scenes):
        return data, None
    scenes = getattr(data, "scenes", None)
    if isinstance(scenes, Scenes):
        return scenes, getattr(data, "observed", None)
    raise TypeError(f"expected a Scenes or a SceneDataset, got {type(data).__name__}")


def _to_hwc(img: torch.Tensor) -> np.ndarray:
    return img.detach().cpu().permute(1, 2, 0).clamp(0, 1).numpy()


def show_scenes(data, indices: Sequence[int] | None = None, observed=None,
                class_names: Sequence[str] | None = None, ncols: int = 4,
                figsize: tuple[float, float] | None = None, axes=None, fontsize: float = 8):
    """A grid of scenes, each captioned with its true labels.

    ``data``: a ``Scenes`` or ``SceneDataset``; ``indices``: which images (default the
    first 8).  ``observed``: an (N, C) observed-label matrix aligned with ``data`` (1 / 0 /
    -1); if None and ``data`` is a SceneDataset whose labels are not fully observed,
    its own ``observed`` is used; pass ``observed=False`` for plain captions.  ``axes``:
    optional sequence of at least ``len(indices)`` Axes to draw into.
    """
    scenes, ds_obs = _unpack(data)
    if indices is None:
        indices = list(range(min(8, len(scenes))))
    indices = [int(i) for i in np.asarray(indices).reshape(-1)]
    if not indices:
        raise ValueError("indices is empty")
    for i in indices:
        if not -len(scenes) <= i < len(scenes):
            raise IndexError(f"index {i} out of range for {len(scenes)} scenes")
    names = list(class_names) if class_names is not None else list(scenes.class_names)
    if len(names) != scenes.num_classes:
        raise ValueError(f"{len(names)} class names for {scenes.num_classes} classes")
    if observed is None and ds_obs is not None and not torch.equal(ds_obs, scenes.labels):
        observed = ds_obs
    if observed is False:
        observed = None
    if observed is not None:
        observed = torch.as_tensor(np.asarray(observed) if not torch.is_tensor(observed) else observed)
        if tuple(observed.shape) != tuple(scenes.labels.shape):
            raise ValueError(f"observed must have shape {tuple(scenes.labels.shape)} (aligned with "
                             f"the data), got {tuple(observed.shape)}")

    n = len(indices)
    ncols = max(1, min(int(ncols), n))
    nrows = math.ceil(n / ncols)
    if axes is None:
        max_labels = max(int(scenes.labels[i].sum()) for i in indices)
        extra = 0
        if observed is not None:
            extra = max(int(((observed[i] == 1) & (scenes.labels[i] == 0)).sum()) for i in indices)
        text_h = 0.17 * (max_labels + extra) * fontsize / 8
        figsize = figsize or (2.2 * ncols, (2.2 + text_h) * nrows)
        fig, ax_grid = plt.subplots(nrows, ncols, figsize=figsize, squeeze=False)
        axes_list = list(ax_grid.ravel())
    else:
        axes_list = list(np.asarray(axes, dtype=object).ravel())
        if len(axes_list) < n:
            raise ValueError(f"need {n} axes, got {len(axes_list)}")
        fig = axes_list[0].figure

    for ax in axes_list[n:]:
        ax.axis("off")
    for ax, i in zip(axes_list, indices):
        ax.imshow(_to_hwc(scenes.images[i]), interpolation="nearest")
        ax.set_xticks([])
        ax.set_yticks([])
        ax.set_title(f"#{i % len(scenes)}", fontsize=fontsize, loc="left")
        lines = []
        for c in torch.nonzero(scenes.labels[i]).flatten().tolist():
            if observed is None:
                lines.append((names[c], dict(color="black")))
            elif observed[i, c] == 1:
                lines.append((f"✓ {names[c]}", dict(color="black")))
            elif observed[i, c] == -1:
                lines.append((f"? {names[c]}", dict(color="0.5", style="italic")))
            else:
                lines.append((f"✗ {names[c]}", dict(color="tab:red")))
        if observed is not None:
            for c in torch.nonzero((observed[i] == 1) & (scenes.labels[i] == 0)).flatten().tolist():
                lines.append((f"+ {names[c]}", dict(color="tab:red")))
        for k, (text, style) in enumerate(lines):
            ax.annotate(text, xy=(0.0, 0.0), xycoords="axes fraction", xytext=(0, -3 - k * (fontsize + 2)),
                        textcoords="offset points", va="top", ha="left", fontsize=fontsize, **style)
    if axes is None:
        fig.tight_layout()
    return fig


def show_masks(data, index: int, class_names: Sequence[str] | None = None,
               boxes: bool = True, figsize: tuple[float, float] | None = None):
    """The image and, beside it, the visible mask of each class present (with its box)."""
    scenes, _ = _unpack(data)
    index = int(index)
    if not -len(scenes) <= index < len(scenes):
        raise IndexError(f"index {index} out of range for {len(scenes)} scenes")
    names = list(class_names) if class_names is not None else list(scenes.class_names)
    present = torch.nonzero(scenes.labels[index]).flatten().tolist()
    masks = scenes.mask(index)
    n = 1 + len(present)
    fig, axs = plt.subplots(1, n, figsize=figsize or (2.2 * n, 2.6), squeeze=False)
    axs = axs[0]
    axs[0].imshow(_to_hwc(scenes.images[index]), interpolation="nearest")
    axs[0].set_title(f"scene #{index % len(scenes)}", fontsize=9)
    for ax, c in zip(axs[1:], present):
        ax.imshow(masks[c].numpy(), cmap="gray", vmin=0, vmax=1, interpolation="nearest")
        ax.set_title(names[c], fontsize=9)
        if boxes:
            x0, y0, x1, y1 = scenes.boxes[index, c].tolist()
            for a in (ax, axs[0]):
                a.add_patch(Rectangle((x0 - 0.5, y0 - 0.5), x1 - x0, y1 - y0, fill=False,
                                      edgecolor="tab:orange", linewidth=1.2))
    for ax in axs:
        ax.set_xticks([])
        ax.set_yticks([])
    fig.tight_layout()
    return fig
