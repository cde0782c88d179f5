"""Plots of the LAC chapter: PLC's pseudo-labels per epoch against the truth, and the
geometry of the label-wise embeddings before and after stage 2."""
from __future__ import annotations

from typing import Mapping

import matplotlib.pyplot as plt
import numpy as np

from .palette import colours_for

_TITLES = {"plc_pos_precision": "pseudo-positives: precision", "plc_pos_recall": "pseudo-positives: recall",
           "plc_neg_precision": "pseudo-negatives: precision", "plc_coverage": "unknowns with a target"}


def plot_plc_curves(curves, title: str | None = None):
    """One panel per quantity of :func:`mlpl_lab.analysis.lac_diagnostics.plc_curves`
    (mean over seeds per run and epoch, one line per run). Returns the Figure."""
    quantities = [q for q in _TITLES if q in set(curves["quantity"])]
    colours = colours_for([str(r) for r in dict.fromkeys(curves["run"])])  # one colour per method
    fig, axes = plt.subplots(1, len(quantities), figsize=(3.4 * len(quantities), 3.0), squeeze=False)
    for ax, q in zip(axes[0], quantities):
        part = curves[curves["quantity"] == q].groupby(["run", "epoch"])["value"].mean().reset_index()
        for run, g in part.groupby("run", sort=False):
            ax.plot(g["epoch"], g["value"], marker="o", ms=3, label=run, color=colours[str(run)])
        ax.set_title(_TITLES[q], fontsize=9)
        ax.set_xlabel("epoch")
        ax.set_ylim(-0.02, 1.02)
    axes[0, 0].set_ylabel("share (0–1)")
    handles = {}
    for ax in axes[0]:  # one legend for the figure: a run may have no point in some panel (NaN)
        for h, label in zip(*ax.get_legend_handles_labels()):
            handles.setdefault(label, h)
    if title:
        fig.suptitle(title, fontsize=10)
    fig.tight_layout(rect=(0, 0, 1, 0.88))
    fig.legend(list(handles.values()), list(handles), loc="upper center", ncol=len(handles), fontsize=8,
               frameon=False)
    return fig


def plot_embedding_geometry(geometries: Mapping[str, dict], bins: int = 40):
    """Histograms of within-class and between-class cosine similarities, one panel per model
    (:func:`mlpl_lab.analysis.lac_diagnostics.embedding_geometry`), gap in the title."""
    fig, axes = plt.subplots(1, len(geometries), figsize=(3.6 * len(geometries), 3.0), squeeze=False,
                             sharey=True)
    edges = np.linspace(-1, 1, bins + 1)
    for ax, (label, g) in zip(axes[0], geometries.items()):
        ax.hist(g["between"], bins=edges, density=True, alpha=0.6, label="between classes")
        ax.hist(g["within"], bins=edges, density=True, alpha=0.6, label="within a class")
        ax.set_title(f"{label}\nwithin {g['mean_within']:.2f} · between {g['mean_between']:.2f}", fontsize=9)
        ax.set_xlabel("cosine similarity")
    axes[0, 0].set_ylabel("density")
    axes[0, 0].legend(fontsize=7)
    fig.tight_layout()
    return fig
