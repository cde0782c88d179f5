"""Chapter 08's figures: estimated against true class priors, the sweeps of wrong side information
(gain over AN with its interval, where it vanishes), and label sets (coverage and size per α)."""
from __future__ import annotations

import math
from typing import Mapping

import matplotlib.pyplot as plt
import numpy as np

from ..catalogue import LABEL
from .palette import colours_for

#: the three threshold sources, one marker each (their colour is the method's)
SOURCE_MARKERS = {"calibrated": "o", "observed": "s", "oracle": "^"}


def plot_prior_estimates(table, ax=None, title: str | None = None):
    """Estimated (Eq. 2) against true prior, one point per class, the diagonal where they agree;
    ``table``: :func:`mlpl_lab.analysis.side_information.prior_table`."""
    if ax is None:
        _, ax = plt.subplots(figsize=(4.6, 4.2))
    colour = colours_for([LABEL.crisp])[LABEL.crisp]
    top = float(max(table["true prior"].max(), table["estimated"].max())) * 1.08 + 1e-3
    ax.plot([0, top], [0, top], color="#999999", lw=1, ls="--", label="estimate = truth")
    ax.scatter(table["true prior"], table["estimated"], color=colour, s=28, label="a class", zorder=3)
    ax.set_xlim(0, top)
    ax.set_ylim(0, top)
    ax.set_xlabel("true prior π_j (training labels)")
    ax.set_ylabel("estimated π̂_j (Eq. 2)")
    mae = float(np.abs(table["error"]).mean())
    ax.set_title(title or f"{LABEL.crisp}'s class priors: mean |error| {mae:.3f}", fontsize=10)
    ax.legend(fontsize=8, loc="upper left")
    return ax


def plot_sweeps(curves: Mapping[str, tuple], vanishing=None, highlight: Mapping[str, float] | None = None,
                axes=None):
    """One panel per sweep (``{name: (curve, truth)}``, :func:`mlpl_lab.chapters.side_information.
    sweep_curves`): the mean gain over AN against the sweep's x with its 95 % interval, 0 dashed,
    the truth dotted, and the vanishing points (``vanishing``: the chapter's table) marked ✕ where
    there is a gain at the truth to lose.
    ``highlight``: ``{name: x}`` marks one x per panel (the widget's slider)."""
    names = list(curves)
    if axes is None:
        fig, axes = plt.subplots(1, len(names), figsize=(4.4 * len(names), 3.4), squeeze=False)
        axes = axes[0]
    colours = colours_for([n.split(":")[0] for n in names])
    for ax, name in zip(axes, names):
        curve, truth = curves[name]
        x = np.asarray(curve.index, dtype=float)
        c = colours[name.split(":")[0]]
        ax.fill_between(x, curve["low"].to_numpy(float), curve["high"].to_numpy(float), color=c, alpha=0.2,
                        label="95 % interval (seeds)")
        ax.plot(x, curve["gain"], "o-", color=c, label="mean gain over AN")
        ax.axhline(0, color="#666666", lw=1, ls="--")
        ax.axvline(truth, color="#999999", lw=1, ls=":", label="side information right")
        at_truth = [float(g) for xv, g in zip(x, curve["gain"]) if abs(xv - truth) < 1e-12]
        if vanishing is not None and name in vanishing.index and at_truth and at_truth[0] > 0:
            for side in ("vanishes below at", "vanishes above at"):
                v = vanishing.loc[name, side]
                if v is not None and not (isinstance(v, float) and math.isnan(v)):
                    ax.plot([v], [0], "x", color="black", ms=9, mew=2)
        if highlight and name in highlight:
            ax.axvline(highlight[name], color="black", lw=1.5, alpha=0.6)
        ax.set_xlabel(name.split(": ", 1)[1])
        ax.set_title(name.split(":")[0], fontsize=9)
        ax.set_xticks(x, [f"{v:g}" for v in x])
    axes[0].set_ylabel("test mAP gain over AN (points)")
    axes[0].legend(fontsize=7, loc="lower left")
    axes[0].figure.tight_layout()
    return axes


def plot_label_sets(table, alpha: float | None = None, axes=None):
    """Coverage (left) and mean set size (right) per method, one marker per threshold source; the
    target 1 − α dashed. ``table``: :func:`mlpl_lab.analysis.side_information.label_set_table`;
    ``alpha``: the level shown (default: the smallest in the table)."""
    frame = table.reset_index()
    alpha = float(alpha if alpha is not None else frame["α"].min())
    frame = frame[np.isclose(frame["α"], alpha)]
    methods = list(dict.fromkeys(frame["method"]))
    colours = colours_for(methods)
    if axes is None:
        _, axes = plt.subplots(1, 2, figsize=(10, 3.4))
    for i, m in enumerate(methods):
        for j, (source, marker) in enumerate(SOURCE_MARKERS.items()):
            row = frame[(frame["method"] == m) & (frame["thresholds"] == source)]
            if row.empty:
                continue
            xpos = i + (j - 1) * 0.22
            axes[0].plot([xpos], row["coverage"], marker, color=colours[m], ms=8,
                         label=source if i == 0 else None, mfc=colours[m] if source == "calibrated" else "white")
            axes[1].plot([xpos], row["mean_set_size"], marker, color=colours[m], ms=8,
                         mfc=colours[m] if source == "calibrated" else "white")
    axes[0].axhline(1 - alpha, color="#666666", ls="--", lw=1, label=f"target 1 − α = {1 - alpha:.2f}")
    axes[0].set_ylabel("coverage of the test positives")
    axes[1].set_ylabel("labels per image (mean set size)")
    for ax in axes:
        ax.set_xticks(range(len(methods)), methods, fontsize=8)
    axes[0].legend(fontsize=7, loc="lower left")
    axes[0].set_title(f"coverage at α = {alpha:g} (filled: calibrated; open: observed ■, oracle ▲)", fontsize=9)
    axes[1].set_title("what the coverage costs: labels per set", fontsize=9)
    axes[0].figure.tight_layout()
    return axes
