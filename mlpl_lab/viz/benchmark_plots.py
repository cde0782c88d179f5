"""The benchmark's views: the mAP grid as a heatmap, mean ranks, the share of the AN → full
gap closed, per-class gains of the top methods, and the cost relative to AN."""
from __future__ import annotations

import math

import matplotlib.pyplot as plt
import numpy as np
import seaborn as sns


def plot_grid(mean, seeds=None, ax=None, title: str = "test mAP (mean over seeds)"):
    """Rows = methods, columns = regimes; grey where a method did not run."""
    ax = ax or plt.subplots(figsize=(1.3 * mean.shape[1] + 3, 0.32 * mean.shape[0] + 1.5))[1]
    annot = mean.map(lambda v: "" if not math.isfinite(v) else f"{v:.1f}")
    if seeds is not None:
        annot = annot + seeds.map(lambda n: "" if not (isinstance(n, float) and math.isfinite(n)) or n < 2
                                  else f" ({int(n)})")
    sns.heatmap(mean.astype(float), annot=annot, fmt="", cmap="viridis", ax=ax,
                cbar_kws={"label": "mAP"}, linewidths=0.5, linecolor="white")
    ax.set_facecolor("#dddddd")
    ax.set_xlabel("")
    ax.set_ylabel("")
    ax.set_title(title + " · (n) = seeds when more than one")
    return ax


def plot_ranks(ranks, ax=None):
    """Mean rank across regimes (1 = best) with 95 % intervals; methods ranked in one regime
    only have no interval (marked hollow)."""
    ax = ax or plt.subplots(figsize=(6, 0.32 * len(ranks) + 1.2))[1]
    y = np.arange(len(ranks))[::-1]
    err = ranks["ci95"].to_numpy(dtype=float)
    several = np.isfinite(err)
    ax.errorbar(ranks["mean_rank"][several], y[several], xerr=err[several], fmt="o", c="C0",
                capsize=3, label="≥ 2 regimes: 95 % interval over regimes")
    ax.plot(ranks["mean_rank"][~several], y[~several], "o", mfc="none", c="C0",
            label="one regime: no interval")
    ax.set_yticks(y, [f"{m} ({int(n)})" for m, n in zip(ranks.index, ranks["regimes"])])
    ax.set_xlabel("mean rank across regimes (1 = best) · (n) = regimes")
    ax.legend(loc="lower right", fontsize=8)
    ax.grid(axis="x", alpha=0.3)
    ax.set_title("mean rank across regimes (the oracle is not ranked)")
    return ax


def plot_gap(gap, ax=None):
    """Share of the AN → full-label gap closed (0 = AN, 1 = full labels)."""
    ax = ax or plt.subplots(figsize=(1.3 * gap.shape[1] + 3, 0.32 * gap.shape[0] + 1.5))[1]
    annot = gap.map(lambda v: "" if not math.isfinite(v) else f"{v:.2f}")
    sns.heatmap(gap.astype(float), annot=annot, fmt="", cmap="RdBu", center=0.0, vmin=-1, vmax=1,
                ax=ax, cbar_kws={"label": "(method − AN) / (full − AN)"}, linewidths=0.5,
                linecolor="white")
    ax.set_facecolor("#dddddd")
    ax.set_xlabel("")
    ax.set_ylabel("")
    ax.set_title("share of the AN → full-label gap closed")
    return ax


def plot_per_class(gain, regime: str, ax=None):
    """Per-class AP gain over AN, classes sorted from rare to frequent (training frequency)."""
    methods = [c for c in gain.columns if c != "train_frequency"]
    g = gain.sort_values("train_frequency") if "train_frequency" in gain else gain
    ax = ax or plt.subplots(figsize=(max(6, 0.45 * len(g) + 2), 3.6))[1]
    x = np.arange(len(g))
    w = 0.8 / max(1, len(methods))
    for i, m in enumerate(methods):
        ax.bar(x + (i - (len(methods) - 1) / 2) * w, g[m], w, label=m)
    labels = [f"{c}\n{f:.0%}" for c, f in zip(g.index, g["train_frequency"])] if "train_frequency" in g \
        else list(g.index)
    ax.set_xticks(x, labels, fontsize=7)
    ax.axhline(0, c="k", lw=0.8)
    ax.set_ylabel("AP − AN's AP")
    ax.set_title(f"{regime}: which classes gain (rare → frequent; % = share of train images)")
    ax.legend(fontsize=8)
    return ax


def plot_cost(cost, ax=None):
    """Seconds and peak memory per method relative to AN (1 = AN's cost)."""
    cols = [c for c in ("seconds_vs_AN", "memory_vs_AN") if c in cost]
    ax = ax or plt.subplots(figsize=(7, 0.32 * len(cost) + 1.2))[1]
    y = np.arange(len(cost))[::-1]
    h = 0.8 / max(1, len(cols))
    names = {"seconds_vs_AN": "seconds", "memory_vs_AN": "peak memory"}
    for i, c in enumerate(cols):
        ax.barh(y + (i - (len(cols) - 1) / 2) * h, cost[c].astype(float), h, label=names[c])
    ax.axvline(1.0, c="k", lw=0.8, ls="--")
    ax.set_yticks(y, cost.index)
    ax.set_xlabel("relative to AN (1 = AN)")
    ax.legend(fontsize=8)
    ax.set_title("training cost")
    return ax
