"""Plots of the OPML chapter: gradient analysis (Eq. 8/9), hidden-positive confidence
(Fig. 3) and mAP per epoch with and without the high-rank term (Fig. 4).

Every gradient is ``torch.autograd`` of the registered training loss (through
:func:`mlpl_lab.viz.gradients.loss_and_gradient`, or directly on the registered loss when
several logits move together); nothing here re-derives a formula.  "BCE" in the single-
positive plots is the AN loss (BCE with unknowns as negatives), as in the paper's Sec. III-C.
"""
from __future__ import annotations

from typing import Dict, Mapping, Sequence

import matplotlib.pyplot as plt
import numpy as np
import torch

from .. import losses
from ..analysis.confidence import confidence_histograms, positive_confidences
from .gradients import loss_and_gradient
from .palette import colours_for
from .results import plot_curves
from .words import metric_words
from ..catalogue import LABEL

__all__ = ["gradient_comparison", "negatives_gradient_sum", "plot_gradient_comparison",
           "row_gradients", "plot_row_gradients", "plot_confidence_histogram", "plot_high_rank_curves"]

DEFAULT_GRID = np.linspace(-6.0, 6.0, 121)


def negatives_gradient_sum(loss: str, grid=DEFAULT_GRID, n_unknown: int = 19,
                           positive_logit: float = 0.0, **hp) -> np.ndarray:
    """Σ_n ∂L/∂s_n over the unknowns of one row (one positive at ``positive_logit``,
    ``n_unknown`` unknowns all at logit z), for z on ``grid``: the total push on the
    negatives.  Autograd of the registered loss ``loss`` (row summed)."""
    fn = losses.get(loss)
    if n_unknown < 1:
        raise ValueError("n_unknown must be >= 1")
    out = []
    labels = torch.tensor([[1] + [-1] * n_unknown])
    for z in np.asarray(grid, dtype=np.float64):
        unk = torch.full((n_unknown,), float(z), dtype=torch.float64, requires_grad=True)
        row = torch.cat([torch.tensor([positive_logit], dtype=torch.float64), unk]).view(1, -1)
        (g,) = torch.autograd.grad(fn(row, labels, reduction="sum", **hp), unk)
        out.append(float(g.sum()))
    return np.array(out)


def gradient_comparison(a: float = 0.0, b: float = 0.0, n_unknown: int = 19, grid=DEFAULT_GRID,
                        context_logit: float = 0.0) -> Dict[str, Dict[str, Dict[str, np.ndarray]]]:
    """Gradients of BCE (AN) and OPML(a, b) for one sample with ONE positive and
    ``n_unknown`` unknowns (the other logits at ``context_logit``):

    * ``"positive"``: ∂L/∂s_p as the positive's logit sweeps the grid (Eq. 9: at α = β = 1
      OPML's curve is BCE's σ(s_p) − 1);
    * ``"unknown"``: ∂L/∂s_n of one unknown as its logit sweeps the grid (OPML's is smaller);
    * ``"sum"``: Σ_n ∂L/∂s_n with all unknowns at the same logit (OPML's stays below 1,
      BCE's grows to n_unknown).
    """
    grid = np.asarray(grid, dtype=np.float64)
    unk_ctx = [context_logit] * n_unknown
    out: Dict[str, Dict[str, Dict[str, np.ndarray]]] = {"positive": {}, "unknown": {}, "sum": {}}
    for name, loss, hp in ((LABEL.bce_an, "an", {}), (f"OPML a={a:g}, b={b:g}", "opml", {"a": a, "b": b})):
        out["positive"][name] = loss_and_gradient(loss, 1, grid, context_logits=unk_ctx,
                                                  context_labels=[-1] * n_unknown, **hp)
        out["unknown"][name] = loss_and_gradient(loss, -1, grid,
                                                 context_logits=[context_logit] + unk_ctx[1:],
                                                 context_labels=[1] + [-1] * (n_unknown - 1), **hp)
        out["sum"][name] = {"logit": grid, "grad": negatives_gradient_sum(loss, grid, n_unknown, context_logit, **hp)}
    return out


def plot_gradient_comparison(curves, x: str = "logit"):
    """Three panels from :func:`gradient_comparison`: positive, one unknown, all unknowns."""
    fig, axes = plt.subplots(1, 3, figsize=(13, 3.5))
    titles = {"positive": "∂L/∂s_p of the single positive", "unknown": "∂L/∂s_n of one unknown",
              "sum": "Σ_n ∂L/∂s_n, all unknowns at z"}
    for ax, key in zip(axes, ("positive", "unknown", "sum")):
        colours = colours_for(curves[key])  # one colour per method (viz.palette)
        for label, res in curves[key].items():
            xs = 1 / (1 + np.exp(-res["logit"])) if x == "prob" else res["logit"]
            ax.plot(xs, res["grad"], label=label, color=colours[label])
        ax.axhline(0, c="k", lw=0.6)
        ax.set_title(titles[key], fontsize=10)
        ax.set_xlabel("σ(z)" if x == "prob" else "logit z")
        ax.legend(fontsize=8)
    axes[2].axhline(1, c="grey", ls=":", lw=1)
    axes[2].set_yscale("symlog", linthresh=1)
    fig.tight_layout()
    return fig


def row_gradients(logits: Sequence[float], labels: Sequence[int],
                  loss_specs: Mapping[str, tuple] | None = None) -> Dict[str, np.ndarray]:
    """∂L/∂s_j of every entry of ONE sample under each loss (autograd, row summed):
    ``loss_specs`` maps a legend label to (registered loss, hyperparameters); default BCE (AN)
    and ZLPR/OPML at a = b = 0."""
    specs = loss_specs or {LABEL.bce_an: ("an", {}), "OPML a=b=0": ("opml", {})}
    s = torch.tensor([list(logits)], dtype=torch.float64)
    y = torch.tensor([list(labels)])
    out = {}
    for label, (name, hp) in specs.items():
        x = s.clone().requires_grad_(True)
        (g,) = torch.autograd.grad(losses.get(name)(x, y, reduction="sum", **hp), x)
        out[label] = g[0].numpy()
    return out


def plot_row_gradients(logits: Sequence[float], labels: Sequence[int], grads: Mapping[str, np.ndarray],
                       class_names: Sequence[str] | None = None):
    """Bars of every entry's gradient for each loss, entries sorted by logit (positive first).
    BCE pushes every unknown down by σ(s); OPML concentrates a total push below 1 on the
    highest-scoring unknowns ("one pair at a time")."""
    logits = np.asarray(logits, dtype=float)
    labels = np.asarray(labels)
    order = np.lexsort((-logits, labels != 1))
    fig, ax = plt.subplots(figsize=(max(6, 0.35 * len(order) + 2), 3.4))
    w = 0.8 / len(grads)
    colours = colours_for(grads)  # one colour per method (viz.palette)
    for k, (label, g) in enumerate(grads.items()):
        ax.bar(np.arange(len(order)) + k * w, np.asarray(g)[order], width=w, label=label, color=colours[label])
    names = [class_names[i] if class_names else f"{i}" for i in order]
    ticks = [f"{n}\n{'pos' if labels[i] == 1 else 'unk'} {logits[i]:+.1f}" for n, i in zip(names, order)]
    ax.set_xticks(np.arange(len(order)) + 0.4 - w / 2, ticks, fontsize=6, rotation=90)
    ax.axhline(0, c="k", lw=0.6)
    ax.set_ylabel("gradient ∂L/∂s_j")
    ax.legend(fontsize=8)
    ax.set_title("gradient on each entry of one sample (1 positive, the rest unknown)", fontsize=10)
    fig.tight_layout()
    return fig


def plot_confidence_histogram(probs_by_method: Mapping[str, torch.Tensor], truth, observed=None,
                              which: str = "positives", bins: int = 10, ax=None):
    """Fig. 3: histograms (side by side bars) of the predicted confidence at true positives
    (``which="positives"``) or at hidden positives (``which="hidden"``) per method."""
    h = confidence_histograms(probs_by_method, truth, observed, which, bins)
    edges = h.pop("edges")
    ax = ax or plt.subplots(figsize=(7, 3.4))[1]
    centers = (edges[:-1] + edges[1:]) / 2
    w = (edges[1] - edges[0]) * 0.8 / max(len(h), 1)
    colours = colours_for(h)  # one colour per method (viz.palette)
    for k, (label, counts) in enumerate(h.items()):
        ax.bar(centers - 0.4 * (edges[1] - edges[0]) + (k + 0.5) * w, counts, width=w, label=label,
               color=colours[label])
    ax.set_xticks(edges, [f"{e:g}" for e in edges])
    ax.set_xlabel("predicted confidence σ(s) at " + ("true positives" if which == "positives" else f"{which} positives"))
    ax.set_ylabel("positives (count)")
    ax.legend(fontsize=8)
    n = len(positive_confidences(next(iter(probs_by_method.values())), truth, observed, which))
    ax.set_title(f"confidence of {n} {'true' if which == 'positives' else which} positives", fontsize=10)
    return ax


def plot_high_rank_curves(results: Mapping[str, Sequence], labels: Sequence[str] = (LABEL.an, LABEL.opml, LABEL.opml_hr),
                          key: str = "val_mAP", ax=None):
    """Fig. 4: ``key`` per epoch for the runs ``labels`` (the paper: BCE, OPML, OPML + high-rank),
    each curve's legend entry giving its drop from its peak to the last epoch (in the legend, not
    next to the curves' ends, where the labels of close curves overlapped)."""
    missing = [k for k in labels if k not in results]
    if missing:
        raise KeyError(f"no results for {missing}; available: {sorted(results)}")
    named = {}
    for label in labels:
        c = np.array([r.curve(key) for r in results[label]], dtype=float).mean(0)
        named[f"{label} · peak − last {c.max() - c[-1]:.1f}"] = results[label]
    return plot_curves(named, key, ax=ax, title=f"{metric_words(key)} per epoch, with and without high-rank")
