"""Pictures of what a partial-label regime hides.

* :func:`plot_label_stats`: per-class stacked bars of observed positives, hidden positives
  (the false negatives of the Assume-Negative baseline) and negatives -- the shape of Fig. 4
  of the GR Loss paper (Chen et al., IJCAI 2024), which plots "pos", "pos (missing)" and the
  number of samples per class.
* :func:`show_label_matrix`: an image of an N x C slice of the label matrix, one colour per
  status.

Both draw on a given or new Axes, return it, and never call ``plt.show()`` (safe under the
Agg backend used by papermill and the tests).
"""

from __future__ import annotations

from typing import Any, Dict, Optional, Sequence

import matplotlib.pyplot as plt
import numpy as np
import seaborn as sns
from matplotlib.colors import ListedColormap
from matplotlib.patches import Patch

from mlpl_lab.core import labels as L

__all__ = ["plot_label_stats", "show_label_matrix", "STATUS_COLORS", "STATUS_NAMES"]

# one colour per status, shared by both plots so a reader learns it once
STATUS_NAMES = ("observed positive", "hidden positive (FN under AN)", "observed negative",
                "unknown negative")
_palette = sns.color_palette("deep")
STATUS_COLORS = (_palette[0], _palette[3], (0.55, 0.55, 0.55), (0.88, 0.88, 0.88))


def plot_label_stats(stats: Dict[str, Any], class_names: Optional[Sequence[str]] = None,
                     ax=None, title: Optional[str] = None, show_negatives: bool = True,
                     orientation: str = "auto"):
    """Stacked bars per class: observed positives, hidden positives, negatives.

    Parameters
    ----------
    stats: the dict returned by :func:`mlpl_lab.core.labels.label_stats`.
    class_names: tick labels (default ``0 .. C-1``).
    ax: Axes to draw on (default: a new figure sized to the number of classes).
    title: title prefix; the share of hidden positives is always appended, since it is the
        number this picture is about.
    show_negatives: stack observed and unknown negatives on top (pale), so that each bar
        reaches the number of images as in GR Loss Fig. 4's dashed "total" line.  Turn it
        off to zoom in on the positives.
    orientation: "vertical", "horizontal", or "auto" (horizontal above 25 classes, so
        that class names stay readable).

    Returns the matplotlib Axes.
    """
    if not isinstance(stats, dict) or "per_class" not in stats:
        raise TypeError("stats must be the dict returned by mlpl_lab.core.labels.label_stats(Y, "
                        "observed)")
    pc = stats["per_class"]
    parts = [np.asarray(pc["observed_positive"]), np.asarray(pc["hidden_positive"])]
    names = list(STATUS_NAMES[:2])
    colors = list(STATUS_COLORS[:2])
    if show_negatives:
        parts += [np.asarray(pc["observed_negative"]), np.asarray(pc["unknown_negative"])]
        names += list(STATUS_NAMES[2:])
        colors += list(STATUS_COLORS[2:])
    C = len(parts[0])
    if class_names is None:
        class_names = [str(i) for i in range(C)]
    if len(class_names) != C:
        raise ValueError(f"class_names has {len(class_names)} entries but stats has {C} classes")
    if orientation not in ("auto", "vertical", "horizontal"):
        raise ValueError(f"orientation must be 'auto', 'vertical' or 'horizontal', got "
                         f"{orientation!r}")
    horizontal = orientation == "horizontal" or (orientation == "auto" and C > 25)

    # seaborn's style only applies to Axes created inside the context
    with sns.axes_style("whitegrid"):
        if ax is None:
            size = (7, max(3.0, 0.22 * C + 1)) if horizontal else (max(5.0, 0.35 * C + 2), 3.8)
            _, ax = plt.subplots(figsize=size)
        pos = np.arange(C)
        bottom = np.zeros(C)
        for values, name, color in zip(parts, names, colors):
            if horizontal:
                ax.barh(pos, values, left=bottom, color=color, label=name, height=0.8)
            else:
                ax.bar(pos, values, bottom=bottom, color=color, label=name, width=0.8)
            bottom = bottom + values
        n_img = stats.get("num_images")
        if n_img is not None and not show_negatives and bottom.max() > 0.3 * n_img:
            # GR Loss Fig. 4 draws the number of samples as a dashed line (skipped when it
            # would squash the bars: rare classes next to thousands of images)
            line = ax.axvline if horizontal else ax.axhline
            line(n_img, ls="--", c="k", lw=1, label="images")
        if horizontal:
            ax.set_yticks(pos, class_names)
            ax.invert_yaxis()
            ax.set_xlabel("images")
        else:
            # upright names for a few classes, vertical ones beyond: slanted names' boxes overlap
            ax.set_xticks(pos, class_names, rotation=90 if C > 8 else 0, ha="center")
            ax.set_ylabel("images")
        ax.grid(True, axis="x" if horizontal else "y", alpha=0.3)
        ax.legend(fontsize=8, loc="best")
    share = float(stats.get("hidden_positive_share", 0.0))
    head = title if title else "Labels per class"
    ax.set_title(f"{head}: {share:.1%} of true positives are hidden")
    return ax


def show_label_matrix(Y, observed, ax=None, max_rows: int = 60,
                      class_names: Optional[Sequence[str]] = None, title: Optional[str] = None):
    """Image of the first ``max_rows`` rows of the label matrix, coloured by status.

    Status of each entry: observed positive, hidden positive (true positive that is UNK:
    a false negative under Assume-Negative), observed negative, unknown negative.
    ``Y`` are the true {0,1} labels and ``observed`` the observed matrix (POS=1, NEG=0,
    UNK=-1), numpy or torch.  Returns the Axes.
    """
    y = L._as_binary(Y)
    L.validate(observed)
    o = L._to_numpy(observed).astype(np.int64)
    if o.shape != y.shape:
        raise ValueError(f"Y has shape {y.shape} but observed has shape {o.shape}")
    if max_rows < 1:
        raise ValueError(f"max_rows must be >= 1, got {max_rows}")
    y, o = y[:max_rows], o[:max_rows]
    status = np.full(y.shape, 3, dtype=np.int64)          # unknown negative
    status[(y == 1) & (o == L.POS)] = 0                   # observed positive
    status[(y == 1) & (o != L.POS)] = 1                   # hidden positive
    status[(y == 0) & (o == L.NEG)] = 2                   # observed negative
    # POS where Y = 0 would be a wrong label: show it as observed positive, but say so
    wrong = int(((y == 0) & (o == L.POS)).sum())
    status[(y == 0) & (o == L.POS)] = 0

    n, c = status.shape
    if ax is None:
        _, ax = plt.subplots(figsize=(max(4.0, 0.25 * c + 1.5), max(3.0, 0.12 * n + 1.5)))
    ax.imshow(status, cmap=ListedColormap(STATUS_COLORS), vmin=-0.5, vmax=3.5,
              interpolation="nearest", aspect="auto")
    ax.set_xlabel("class")
    ax.set_ylabel("image")
    if class_names is not None:
        if len(class_names) != c:
            raise ValueError(f"class_names has {len(class_names)} entries, matrix has {c} columns")
        ax.set_xticks(np.arange(c), class_names, rotation=90, fontsize=7)
    handles = [Patch(facecolor=col, edgecolor="k", lw=0.3, label=name)
               for col, name in zip(STATUS_COLORS, STATUS_NAMES)]
    ax.legend(handles=handles, fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    head = title or "Label status"
    suffix = f" ({wrong} observed positives contradict Y)" if wrong else ""
    ax.set_title(f"{head}: first {n} images{suffix}")
    return ax


def plot_cooccurrence(Y, class_names: Optional[Sequence[str]] = None, ax=None, title: Optional[str] = None):
    """Lift of each class pair: P(i and j) / (P(i) P(j)); 1 = independent, > 1 = co-occur.

    The embedded scenes draw objects from scene contexts, so some classes co-occur much
    more than chance: the label-correlation structure methods may exploit (or be fooled by).
    """
    import matplotlib.pyplot as plt
    import numpy as np
    import seaborn as sns

    Yn = np.asarray(Y.numpy() if hasattr(Y, "numpy") else Y, dtype=float)
    p = Yn.mean(0)
    joint = Yn.T @ Yn / len(Yn)
    lift = joint / np.maximum(np.outer(p, p), 1e-12)
    np.fill_diagonal(lift, np.nan)
    ax = ax or plt.subplots(figsize=(6.5, 5.5))[1]
    names = list(class_names) if class_names is not None else [str(i) for i in range(Yn.shape[1])]
    sns.heatmap(lift, ax=ax, cmap="vlag", center=1.0, xticklabels=names, yticklabels=names,
                cbar_kws={"label": "lift P(i,j)/(P(i)P(j))"})
    ax.tick_params(labelsize=6)
    ax.set_title(title or "label co-occurrence (lift over independence)")
    return ax
