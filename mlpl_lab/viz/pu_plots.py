"""Plots of the PU-MLC chapter: the noisy-negative sweep and the per-class temperatures."""
from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np

from .layout import spread_tick_labels
from .palette import colours_for
from ..catalogue import LABEL


def plot_noisy_negative_sweep(table, cross=None, ax=None, equal: str | None = None, baseline: str = ""):
    """Test mAP (mean ± sd over seeds) of PU-MLC, partial BCE and the control (missed positives
    reported unknown) against the share of the true positives reported negative
    (:func:`mlpl_lab.chapters.pu_mlc.sweep_table`; each tick also gives the fn_rate among the
    observed negatives). ``equal``: the table's column of partial BCE trained longer (its name gives both lengths),
    drawn too where it is a number. ``cross``: the crossing of the mean curves on the same axis
    (share), drawn as a dotted line when it is a number, annotated with ``baseline`` (which
    partial BCE the crossing reads: :func:`mlpl_lab.chapters.pu_mlc.crossings`). The title names
    the axes, not an outcome."""
    if ax is None:
        _, ax = plt.subplots(figsize=(5.6, 3.6))
    x = 100 * table["positives reported negative"].to_numpy(dtype=float)
    lines = ((LABEL.partial_bce, "s-"), (LABEL.partial_bce_missed, "s--"), (LABEL.pu_mlc, "o-"))
    if equal is not None and equal in table and np.isfinite(table[equal].to_numpy(dtype=float)).any():
        lines += ((equal, "d:"),)
    colours = colours_for([col for col, _ in lines])  # one colour per method (viz.palette)
    for col, style in lines:
        ax.errorbar(x, table[col], yerr=table[f"{col} sd"].fillna(0), fmt=style, capsize=3, label=col,
                    color=colours[col])
    said = f" ({baseline})" if baseline else ""
    if cross is not None and np.isfinite(cross):
        ax.axvline(100 * cross, ls=":", c="k", lw=1)
        ax.annotate(f"mean curves cross at {100 * cross:.0f} %{said}", (100 * cross, ax.get_ylim()[0]),
                    textcoords="offset points", xytext=(4, 6), fontsize=8)
    elif baseline:
        ax.annotate(f"no crossing on the sweep{said}", (0.02, 0.03), xycoords="axes fraction", fontsize=8)
    ax.set_xticks(x)
    ax.set_xticklabels([f"{v:.0f} %\n(fn {fn:g})" for v, fn in zip(x, table.index)], fontsize=8)
    spread_tick_labels(ax, "x")
    ax.set_xlabel("positives reported negative (%)\nfn: the share of the observed negatives", fontsize=9)
    ax.set_ylabel("test mAP (%), mean ± sd")
    ax.set_title("test mAP against the share of positives reported negative", fontsize=10)
    ax.legend(fontsize=8)
    return ax


def plot_temperatures(frame, class_names=None, ax=None):
    """One line per class: the adaptive temperature T_c over the epochs (mean over batches)."""
    if ax is None:
        _, ax = plt.subplots(figsize=(5.2, 3.4))
    for c in frame.columns:
        ax.plot(frame.index, frame[c], lw=1, alpha=0.7,
                label=(class_names[c] if class_names is not None else str(c)))
    ax.plot(frame.index, frame.mean(axis=1), "k-", lw=2.5, label="mean")
    ax.set_xlabel("epoch")
    ax.set_ylabel("temperature $T_c = \\min(\\alpha\\,\\mathrm{std}(s_c), 1)$")
    ax.set_title("per-class temperature during training", fontsize=10)
    ax.legend(fontsize=6, ncol=3)
    return ax
