"""Plots of training results: bar charts of a metric per method, curves per epoch."""
from __future__ import annotations

from typing import Mapping, Sequence

import matplotlib.pyplot as plt
import numpy as np

from .layout import spread_tick_labels
from .palette import colour_list, colours_for
from .words import metric_words


def plot_metric_bars(table, metric: str = "mAP", ax=None, title: str | None = None,
                     reference: str | None = None):
    """Bars of ``table[metric]`` (a DataFrame indexed by method, from ``results_table``),
    with error bars when ``metric + '_std'`` exists and the value printed on each bar.
    ``reference`` draws a dashed line at that method's value (e.g. the full-label oracle)."""
    ax = ax or plt.subplots(figsize=(max(4, 0.8 * len(table) + 2), 3.6))[1]
    values = table[metric].to_numpy(dtype=float)
    err = table[metric + "_std"].to_numpy(dtype=float) if metric + "_std" in table else None
    colors = colour_list([str(i) for i in table.index])  # one colour per method (viz.palette)
    bars = ax.bar(range(len(table)), values, yerr=err, color=colors, capsize=3)
    ax.bar_label(bars, fmt="%.1f", fontsize=8)
    ax.set_xticks(range(len(table)), table.index, rotation=30, ha="right", rotation_mode="anchor")
    ax.set_ylabel(metric_words(metric))
    lo = max(0.0, np.nanmin(values) - 10)
    ax.set_ylim(lo, min(100.0, np.nanmax(values) + 6))
    if reference is not None and reference in table.index:
        ax.axhline(table.loc[reference, metric], ls="--", c=colours_for([reference])[reference], lw=1,
                   label=reference)
        ax.legend(loc="lower right")
    ax.set_title(title or metric_words(metric))
    spread_tick_labels(ax, "x", rotations=(30, 60, 90))
    return ax


def plot_curves(results: Mapping[str, Sequence], key: str = "val_mAP", ax=None, title=None):
    """``key`` per epoch for each method (mean over seeds, shaded min-max). Default: the clean
    validation mAP (the test set is scored once, at the best-val epoch, under the profiles)."""
    ax = ax or plt.subplots(figsize=(6, 3.6))[1]
    colours = colours_for(results)  # one colour per method (viz.palette)
    for label, runs in results.items():
        curves = np.array([r.curve(key) for r in runs], dtype=float)
        epochs = np.arange(1, curves.shape[1] + 1)
        line, = ax.plot(epochs, curves.mean(0), marker="o", ms=3, label=label, color=colours[label])
        if len(runs) > 1:
            ax.fill_between(epochs, curves.min(0), curves.max(0), color=line.get_color(), alpha=0.2)
    ax.set_xlabel("epoch")
    ax.set_ylabel(metric_words(key))
    ax.set_title(title or f"{metric_words(key)} per epoch")
    ax.legend(fontsize=8)
    return ax


def plot_regime_bars(table, ax=None, title: str | None = None, fmt: str = "%.1f"):
    """Grouped bars: one group per regime (rows of ``regimes_table``), one bar per method."""
    ax = ax or plt.subplots(figsize=(max(5, 1.6 * len(table) + 2), 3.6))[1]
    n_methods = table.shape[1]
    width = 0.8 / n_methods
    xs = np.arange(len(table))
    colours = colours_for([str(c) for c in table.columns])  # one colour per method (viz.palette)
    for j, method in enumerate(table.columns):
        bars = ax.bar(xs + (j - (n_methods - 1) / 2) * width, table[method].to_numpy(dtype=float),
                      width, label=method, color=colours[str(method)])
        ax.bar_label(bars, fmt=fmt, fontsize=7)
    ax.set_xticks(xs, table.index)
    ax.set_ylabel("test mAP (%)")
    ax.set_ylim(max(0, np.nanmin(table.to_numpy(dtype=float)) - 15), 100)
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    ax.set_title(title or "test mAP by regime")
    return ax
