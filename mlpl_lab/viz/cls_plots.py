"""Pictures of the CLS chapter: what a selection removes, the R(e) schedules, the selection
precision/recall curves and the tau sensitivity (paper Figs. 4, 6, 7, 8)."""
from __future__ import annotations

from typing import Mapping, Sequence

import matplotlib.pyplot as plt
import numpy as np
import torch
from matplotlib.colors import ListedColormap
from matplotlib.patches import Patch

from ..core.labels import NEG, POS
from .layout import spread_tick_labels
from .palette import colour_list, colours_for
from .words import metric_words

#: (name, colour) of each entry category of :func:`selection_categories`, in code order
CATEGORIES = (
    ("observed positive", "#1b7837"),
    ("observed negative", "#878787"),
    ("kept negative (true negative)", "#f7f7f7"),
    ("kept negative (HIDDEN positive)", "#fdb863"),
    ("removed high-loss (hidden positive: right)", "#2166ac"),
    ("removed high-loss (true negative: wasted)", "#d6604d"),
    ("removed low-loss (true negative)", "#c2a5cf"),
    ("removed low-loss (hidden positive)", "#762a83"),
)


def selection_categories(selection, observed: torch.Tensor, true_labels: torch.Tensor) -> np.ndarray:
    """B x C integer map of :data:`CATEGORIES` codes: each entry's selection status crossed with
    its true status (the truth is used for the picture only)."""
    obs = torch.as_tensor(observed).cpu()
    truth = torch.as_tensor(true_labels).cpu() == 1
    kept, high, low = (selection.kept.cpu(), selection.removed_high.cpu(), selection.removed_low.cpu())
    out = np.full(tuple(obs.shape), -1, dtype=np.int64)
    out[(obs == POS).numpy()] = 0
    out[(obs == NEG).numpy()] = 1
    out[(kept & ~truth).numpy()] = 2
    out[(kept & truth).numpy()] = 3
    out[(high & truth).numpy()] = 4
    out[(high & ~truth).numpy()] = 5
    out[(low & ~truth).numpy()] = 6
    out[(low & truth).numpy()] = 7
    if (out < 0).any():
        raise ValueError("some entries are neither observed nor in the selection; pass the "
                         "observed labels the selection was made on")
    return out


def plot_selection_batch(selection, observed, true_labels, ax=None, class_names: Sequence[str] | None = None,
                         title: str | None = None, max_rows: int | None = 32, legend: bool = True):
    """One mini-batch (rows = images, columns = classes) coloured by what the selection did to
    each entry and whether it is truly a hidden positive. Blue = a hidden positive correctly
    removed, red = a true negative removed as high-loss, orange = a hidden positive still
    trained as a negative. The legend gives the count of each category in the shown rows."""
    cats = selection_categories(selection, observed, true_labels)
    if max_rows is not None:
        cats = cats[:max_rows]
    B, C = cats.shape
    ax = ax or plt.subplots(figsize=(min(12, 2 + 0.35 * C), min(10, 1.5 + 0.22 * B)))[1]
    cmap = ListedColormap([c for _, c in CATEGORIES])
    ax.imshow(cats, cmap=cmap, vmin=-0.5, vmax=len(CATEGORIES) - 0.5, aspect="auto",
              interpolation="nearest")
    ax.set_xticks(np.arange(C) - 0.5, minor=True)
    ax.set_yticks(np.arange(B) - 0.5, minor=True)
    ax.grid(which="minor", color="white", lw=0.5)
    ax.grid(which="major", visible=False)
    ax.tick_params(which="minor", length=0)
    if class_names is not None:
        ax.set_xticks(range(C), list(class_names)[:C], rotation=90, fontsize=7)
    else:
        ax.set_xlabel("class")
    ax.set_ylabel("image in the batch")
    ax.set_title(title or "label selection of one batch")
    if legend:
        counts = np.bincount(cats.reshape(-1), minlength=len(CATEGORIES))
        handles = [Patch(facecolor=c, edgecolor="k", lw=0.3, label=f"{n} ({k})")
                   for (n, c), k in zip(CATEGORIES, counts) if k > 0]
        ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.01, 1), fontsize=7,
                  frameon=False)
    return ax


def plot_schedules(curves: Mapping[str, Sequence[float]], ax=None, title: str | None = None,
                   E_k: float | None = None):
    """R(e) (or any per-epoch rate) per training epoch: ``curves`` maps a label to the values
    of epochs 1, 2, ... (the first training epoch uses R(0) = 1)."""
    ax = ax or plt.subplots(figsize=(5.5, 3.4))[1]
    for label, values in curves.items():
        values = np.asarray(values, dtype=float)
        ax.step(np.arange(1, len(values) + 1), values, where="mid", marker="o", ms=3, label=label)
    if E_k is not None:
        ax.axvline(E_k + 1, ls=":", c="k", lw=1, label=f"E_k = {E_k:g}: full rate from epoch {E_k + 1:g}")
    ax.set_xlabel("training epoch")
    ax.set_ylabel("reserving rate R(e)")
    ax.set_title(title or "selection schedules")
    ax.legend(fontsize=8)
    return ax


def plot_selection_curves(frame, axes=None, title: str | None = None):
    """Precision (share of removed labels that are hidden positives) and recall (share of all
    hidden positives removed) per epoch, one line per method (mean over its networks and runs).

    ``frame`` is :func:`mlpl_lab.methods.selection.selection_frame`. For sample selection the
    removed labels are all C labels of every dropped image, so its precision is low by design."""
    if axes is None:
        fig, axes = plt.subplots(1, 2, figsize=(11, 3.6))
    sums = frame.groupby(["method", "epoch"])[["removed", "removed_hidden", "hidden"]].sum()
    colours = colours_for([str(m) for m in frame["method"].unique()])  # one colour per method
    for method in frame["method"].unique():
        s = sums.loc[method]
        with np.errstate(invalid="ignore", divide="ignore"):
            prec = 100 * s["removed_hidden"] / s["removed"].where(s["removed"] > 0)
            rec = 100 * s["removed_hidden"] / s["hidden"].where(s["hidden"] > 0)
        axes[0].plot(s.index, prec, marker="o", ms=3, label=method, color=colours[str(method)])
        axes[1].plot(s.index, rec, marker="o", ms=3, label=method, color=colours[str(method)])
    axes[0].set_ylabel("precision of removal (%)")
    axes[1].set_ylabel("recall of hidden positives (%)")
    for ax, t in zip(axes, ("removed labels that are hidden positives", "hidden positives removed")):
        ax.set_xlabel("epoch")
        ax.set_title(t)
        ax.legend(fontsize=8)
    if title:
        axes[0].figure.suptitle(title)
    return axes


def plot_sensitivity(table, ax=None, metric: str = "mAP", reference: float | None = None,
                     title: str | None = None):
    """Fig. 7/8: ``metric`` against a tau value. ``table``: a DataFrame indexed by the tau
    values with a ``metric`` column (``cls_chapter.sensitivity_table``). ``reference`` draws a
    dashed line (e.g. AN under the same regime)."""
    ax = ax or plt.subplots(figsize=(4.8, 3.4))[1]
    x = np.asarray(table.index, dtype=float)
    ax.plot(x, table[metric].to_numpy(dtype=float), marker="o")
    for xi, yi in zip(x, table[metric].to_numpy(dtype=float)):
        ax.annotate(f"{yi:.1f}", (xi, yi), textcoords="offset points", xytext=(0, 5),
                    ha="center", fontsize=8)
    if reference is not None:
        ax.axhline(reference, ls="--", c="k", lw=1, label=f"AN ({reference:.1f})")
        ax.legend(fontsize=8)
    ax.set_xlabel(metric_words(table.index.name or "tau"))
    ax.set_xticks(x, [f"{v:g}" for v in x])
    spread_tick_labels(ax, "x")
    ax.set_ylabel(metric_words(metric))
    ax.set_title(title or f"{metric_words(metric)} vs {metric_words(table.index.name or 'tau')}")
    return ax


def plot_table2(table, metric: str = "mAP", ax=None, title: str | None = None):
    """Grouped bars of one metric of ``cls_chapter.table2``: one group per regime, one bar per
    method (missing cells — methods not run under a regime — are left out)."""
    sub = table.xs(metric, axis=1, level="metric")
    regimes, methods = list(sub.columns), list(sub.index)
    ax = ax or plt.subplots(figsize=(max(6, 1.6 * len(regimes) + 2), 3.8))[1]
    width = 0.8 / max(1, len(methods))
    colors = colour_list([str(m) for m in methods])  # one colour per method (viz.palette)
    for i, m in enumerate(methods):
        vals = sub.loc[m].to_numpy(dtype=float)
        x = np.arange(len(regimes)) + (i - (len(methods) - 1) / 2) * width
        ok = np.isfinite(vals)
        bars = ax.bar(x[ok], vals[ok], width, label=m, color=colors[i])
        ax.bar_label(bars, fmt="%.1f", fontsize=7, rotation=90, padding=2)
    ax.set_xticks(range(len(regimes)), regimes)
    finite = sub.to_numpy(dtype=float)[np.isfinite(sub.to_numpy(dtype=float))]
    if finite.size:
        ax.set_ylim(max(0, finite.min() - 10), min(100, finite.max() + 8))
    ax.set_ylabel(metric_words(metric))
    ax.set_title(title or f"{metric} per regime (best-val epoch)")
    ax.legend(fontsize=8, ncol=len(methods), loc="upper center", bbox_to_anchor=(0.5, -0.12), frameon=False)
    return ax
