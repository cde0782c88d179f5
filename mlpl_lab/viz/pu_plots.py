"""Plots of the PU-MLC chapter: the noisy-negative sweep and the per-class temperatures."""
from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np


def plot_noisy_negative_sweep(table, cross=None, ax=None):
    """Test mAP of PU-MLC and partial BCE against the false-negative rate among the observed
    negatives (:func:`mlpl_lab.chapters.pu_mlc.sweep_table`); the crossing, when there is one,
    as a dotted line."""
    if ax is None:
        _, ax = plt.subplots(figsize=(5.2, 3.4))
    x = np.asarray(table.index, dtype=float)
    for col, style in (("partial BCE", "s-"), ("PU-MLC", "o-")):
        ax.plot(x, table[col], style, label=col)
    if cross is not None:
        ax.axvline(cross, ls=":", c="k", lw=1)
        ax.annotate(f"cross ≈ {cross:.2f}", (cross, ax.get_ylim()[0]), textcoords="offset points",
                    xytext=(4, 6), fontsize=8)
    ax.set_xlabel("false negatives among the observed negatives")
    ax.set_ylabel("test mAP")
    ax.set_title("noisy negatives: who reads them pays", fontsize=10)
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
    ax.set_ylabel("T_c = min(α·std(s_c), 1)")
    ax.set_title("per-class temperature during training", fontsize=10)
    ax.legend(fontsize=6, ncol=3)
    return ax
