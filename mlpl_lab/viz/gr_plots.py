"""The GR Loss chapter's figures: Fig. 1a/1b (loss and gradient curves), Fig. 3 and Fig. 5.

Every loss or gradient curve is computed by autograd on the registered training loss
(:func:`mlpl_lab.viz.gradients.loss_and_gradient`); nothing here differentiates by hand.
"""
from __future__ import annotations

from typing import Dict, Mapping, Sequence

import matplotlib.pyplot as plt
import numpy as np
import seaborn as sns
import torch

from ..losses.gr import GR_SCHEDULE_DEFAULTS, k_hat
from .gradients import loss_and_gradient, plot_gradient_curves
from .palette import colours_for
from ..analysis.gr_diagnostics import k_from_assumption
from ..catalogue import LABEL


def prob_grid(n: int = 199, lo: float = 0.005, hi: float = 0.995) -> np.ndarray:
    """Logits whose probabilities are evenly spaced in [lo, hi] (the paper plots against p)."""
    p = np.linspace(lo, hi, n)
    return np.log(p / (1 - p))


def l3_curves(q3s: Sequence[float] = (0.001, 0.25, 0.5, 0.75, 1.0), grid=None):
    """{label: loss_and_gradient result} of L3 = (1 - (1-p)^{q3})/q3 for several q3 (Fig. 1a).

    L3 is what ``gr`` applies to an observed negative (k̂ = 0, v = 1), so the curves come
    straight from the registered loss with ``label="negative"``."""
    grid = prob_grid() if grid is None else grid
    return {f"q3 = {q:g}": loss_and_gradient("gr", "negative", grid, q3=q) for q in q3s}


def plot_l3_curves(q3s: Sequence[float] = (0.001, 0.25, 0.5, 0.75, 1.0), ax=None):
    """Fig. 1a: L3 against p for several q3 (q3 -> 0: BCE; q3 = 1: MAE)."""
    ax = plot_gradient_curves(l3_curves(q3s), ax=ax, what="loss", x="prob",
                              title="Fig. 1a: $\\mathcal{L}_3$ for several $q_3$")
    ax.set_ylabel("$\\mathcal{L}_3(p)$")
    return ax


def _beta(w0, b0, w_T, b_T):
    """k̂'s (w0, b0, w_T, b_T), each None taking GR's schedule default."""
    given = dict(w0=w0, b0=b0, w_T=w_T, b_T=b_T)
    return tuple(GR_SCHEDULE_DEFAULTS[k] if v is None else v for k, v in given.items())


def unknown_gradient_curves(w0: float | None = None, b0: float | None = None, w_T: float | None = None,
                            b_T: float | None = None, q2: float = 0.01, q3: float = 1.0, em_alpha: float = 1.0,
                            hill_lamb: float = 1.5, grid=None) -> Dict[str, Dict[str, np.ndarray]]:
    """∂L∅/∂z of an unknown label (Fig. 1b): GR Loss at β(0) = (w0, b0) and β(T) = (w_T, b_T)
    (None: GR's schedule default), next to AN, EM (α = 1, as Appendix C.2) and Hill (λ = 1.5).

    The figure's L∅ = k̂ L2 + (1 - k̂) L3 has no v (Eq. 18), so GR is evaluated with v off
    (``mu = sigma = None``)."""
    grid = prob_grid() if grid is None else grid
    w0, b0, w_T, b_T = _beta(w0, b0, w_T, b_T)
    gr = dict(mu=None, sigma=None, q2=q2, q3=q3)
    return {
        f"GR, β(0) = ({w0:g}, {b0:g})": loss_and_gradient("gr", "unknown", grid, w=w0, b=b0, **gr),
        f"GR, β(T) = ({w_T:g}, {b_T:g})": loss_and_gradient("gr", "unknown", grid, w=w_T, b=b_T, **gr),
        LABEL.an: loss_and_gradient("an", "unknown", grid),
        f"EM (α = {em_alpha:g})": loss_and_gradient("em", "unknown", grid, alpha=em_alpha),
        f"Hill (λ = {hill_lamb:g})": loss_and_gradient("hill", "unknown", grid, lamb=hill_lamb),
    }


def plot_unknown_gradients(ax=None, **kwargs):
    """Fig. 1b: the gradients on a missing label (positive = pushes p down)."""
    ax = plot_gradient_curves(unknown_gradient_curves(**kwargs), ax=ax, x="prob",
                              title="Fig. 1b: $\\partial\\mathcal{L}_\\varnothing/\\partial z$ on an unknown label")
    return ax


def plot_assumption_check(check: Mapping[str, Mapping[str, np.ndarray]], w0: float | None = None,
                          b0: float | None = None, w_T: float | None = None, b_T: float | None = None,
                          a: float | None = None, axes=None):
    """Fig. 5: FN / (FN + TN) per confidence bucket before and after training (dots, size ~
    bucket count), with k̂(p) at the start and end of the β schedule and, if ``a`` is given,
    Eq. (6)'s (1 - a)p/(1 - ap)."""
    if axes is None:
        _, axes = plt.subplots(1, 2, figsize=(9.5, 3.6), sharey=True)
    w0, b0, w_T, b_T = _beta(w0, b0, w_T, b_T)
    p = np.linspace(0, 1, 201)
    colors = sns.color_palette("deep", 4)
    for ax, (phase, (w, b)) in zip(axes, (("start", (w0, b0)), ("end", (w_T, b_T)))):
        stats = check[phase]
        size = 8 + 120 * stats["count"] / max(stats["count"].max(), 1)
        ax.scatter(stats["centers"], stats["rate"], s=size, color=colors[0], alpha=0.8,
                   label="observed FN/(FN+TN)")
        ax.plot(p, k_hat(torch.as_tensor(p), w, b).numpy(), color=colors[1],
                label=fr"$\hat{{k}}(p)$, w={w:g}, b={b:g}")
        if a is not None and phase == "end":
            ax.plot(p, k_from_assumption(p, a), color=colors[2], ls="--",
                    label=f"Eq. 6, a = {a:.2f}")
        ax.set_xlabel("confidence p")
        ax.set_title(f"{'before the first' if phase == 'start' else 'after the last'} epoch")
        ax.set_xlim(0, 1)
        ax.set_ylim(-0.02, 1.02)
        ax.legend(fontsize=8, loc="upper left")
    axes[0].set_ylabel("fraction of hidden positives")
    return axes


def plot_separation(curves: Mapping[str, Sequence[float]], ax=None):
    """Fig. 3a: W1 distance between hidden-positive and true-negative confidences per epoch
    (epoch 0 = before training)."""
    ax = ax or plt.subplots(figsize=(5.5, 3.4))[1]
    colours = colours_for(curves)  # one colour per method (viz.palette)
    for label, values in curves.items():
        ax.plot(range(len(values)), values, marker="o", ms=3, label=label, color=colours[label])
    ax.set_xlabel("epoch (0 = before training)")
    ax.set_ylabel("Wasserstein-1 distance")
    ax.set_title("Fig. 3a: hidden positives vs true negatives among unknown labels")
    ax.legend(fontsize=8)
    return ax


def plot_unknown_histograms(confidences: Mapping[str, tuple], bins: int = 40, axes=None):
    """Fig. 3b/c: confidence histograms of hidden positives and true negatives among the
    unknown training labels, one panel per run: ``{label: (hidden, negatives)}`` arrays
    (``chapters.gr.unknown_confidences_of``)."""
    items = list(confidences.items())
    if axes is None:
        _, axes = plt.subplots(1, len(items), figsize=(4.5 * len(items), 3.2), squeeze=False)
        axes = axes[0]
    edges = np.linspace(0, 1, bins + 1)
    for ax, (label, (hidden, negatives)) in zip(axes, items):
        ax.hist(negatives, bins=edges, density=True, alpha=0.6, label="true negatives")
        ax.hist(hidden, bins=edges, density=True, alpha=0.6, label="hidden positives")
        ax.set_title(label)
        ax.set_xlabel("confidence p")
        ax.legend(fontsize=8)
    return axes


def plot_gr_schedule(table, axes=None):
    """The (w, b, μ, σ) of every training epoch under the paper's and the official code's
    schedules, one panel per parameter (``table``: :func:`mlpl_lab.chapters.gr.schedule_table`,
    columns (parameter, schedule), index the epoch)."""
    params = list(dict.fromkeys(p for p, _ in table.columns))
    if axes is None:
        _, axes = plt.subplots(1, len(params), figsize=(3.0 * len(params), 2.8), squeeze=False)
        axes = axes[0]
    styles = {"paper": dict(color="#1f77b4", ls="-"), "code": dict(color="#d55e00", ls="--")}
    for ax, p in zip(axes, params):
        for sched in table[p].columns:
            ax.plot(table.index, table[(p, sched)], label=f"{sched}'s schedule", lw=1.6, **styles.get(sched, {}))
        ax.set_title({"mu": "μ", "sigma": "σ"}.get(p, p), fontsize=10)
        ax.set_xlabel("training epoch")
    axes[0].set_ylabel("parameter value")
    axes[0].legend(fontsize=8)
    axes[0].figure.suptitle("GR's schedule of (w, b, μ, σ) over the epochs", fontsize=10)
    axes[0].figure.tight_layout()
    return axes
