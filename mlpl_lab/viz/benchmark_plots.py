"""The benchmark's views: the mAP grid as a heatmap, a critical-difference diagram of the mean
ranks, the share of the AN → full gap closed with its intervals, per-class gains of the top
methods, and the cost relative to AN."""
from __future__ import annotations

import math
import textwrap

import matplotlib.pyplot as plt
import numpy as np
import seaborn as sns
from matplotlib.ticker import FormatStrFormatter

from ..analysis.benchmark import unconverged_mark
from ..analysis.selection import HALF
from .layout import spread_tick_labels
from .palette import colours_for


def _column_labels(ax, columns, width: int = 18) -> None:
    """A heatmap's column labels (the regimes) wrapped onto lines of at most ``width`` characters,
    then spread (:func:`spread_tick_labels`) if they still collide."""
    ax.set_xticklabels([textwrap.fill(str(c), width) for c in columns], rotation=0)
    spread_tick_labels(ax, "x")


def plot_grid(mean, seeds=None, converged=None, ax=None, title: str = "test mAP (mean over seeds)"):
    """Rows = methods, columns = regimes; grey where a method did not run; a † where a run of
    the cell did not converge (``converged``: same shape, False there), a § where the runs that did
    not are schedule-bound ("schedule-bound" there: :func:`mlpl_lab.analysis.benchmark.cell_flag`)."""
    ax = ax or plt.subplots(figsize=(1.3 * mean.shape[1] + 3, 0.32 * mean.shape[0] + 1.5))[1]
    annot = mean.map(lambda v: "" if not math.isfinite(v) else f"{v:.1f}")
    if seeds is not None:
        annot = annot + seeds.map(lambda n: "" if not (isinstance(n, float) and math.isfinite(n)) or n < 2
                                  else f" ({int(n)})")
    if converged is not None:
        marks = {"schedule-bound": " §", True: " †", False: ""}
        annot = annot + converged.reindex_like(mean).map(lambda c: marks[unconverged_mark(c)])
    sns.heatmap(mean.astype(float), annot=annot, fmt="", cmap="viridis", ax=ax,
                cbar_kws={"label": "test mAP (%)"}, linewidths=0.5, linecolor="white")
    ax.set_facecolor("#dddddd")
    ax.set_xlabel("")
    ax.set_ylabel("")
    _column_labels(ax, mean.columns)
    bound = converged is not None and bool((converged == "schedule-bound").to_numpy().any())
    ax.set_title(title + " · (n) = seeds when more than one · † = a run did not converge"
                 + (" · § = schedule-bound" if bound else ""))
    return ax


def plot_ranks(rank, ax=None, test: bool = True):
    """Critical-difference diagram (Demšar 2006, Fig. 1): each method at its mean rank over the
    compared regimes (1 = best, left), the Nemenyi CD as a bar, and a thick line under every
    maximal group of methods whose mean ranks lie within CD of each other (not told apart).
    ``rank``: :func:`mlpl_lab.analysis.benchmark.rank_summary`'s dict. ``test=False``: the mean
    ranks alone, no CD and no p (ranks over label regimes of one data set are description only)."""
    table, cd, fr = rank["table"], rank["cd"] if test else math.nan, rank["friedman"]
    k = len(table)
    ax = ax or plt.subplots(figsize=(7, 0.28 * k + 2.0))[1]
    ranks = table["mean_rank"].to_numpy(dtype=float)
    ax.set_xlim(0.5, max(k, 2) + 0.5)
    ax.set_ylim(-(k + 1), 2.2)
    ax.axhline(0, c="k", lw=1)
    colours = colours_for([str(m) for m in table.index])  # one colour per method (viz.palette)
    for i, (m, r) in enumerate(zip(table.index, ranks)):
        y = -(i + 1)
        ax.plot([r, r], [0, y], c=colours[str(m)], lw=0.8)
        ax.plot(r, 0, "o", c=colours[str(m)])
        ax.text(r + 0.05, y, f"{m} ({r:.2f})", va="center", fontsize=8)
    if math.isfinite(cd):
        ax.plot([1, 1 + cd], [1.4, 1.4], c="k", lw=2)
        ax.text(1 + cd / 2, 1.65, f"CD = {cd:.2f}", ha="center", fontsize=8)
        order = np.argsort(ranks)
        groups = []
        for i in range(k):  # maximal runs of sorted ranks within CD of their first
            j = max(j for j in range(i, k) if ranks[order[j]] - ranks[order[i]] <= cd)
            if j > i and not any(g[0] <= i and j <= g[1] for g in groups):
                groups.append((i, j))
        for n, (i, j) in enumerate(groups):
            y = 0.35 + 0.25 * (n % 3)
            ax.plot([ranks[order[i]] - 0.05, ranks[order[j]] + 0.05], [y, y], c="C3", lw=3, alpha=0.7)
    ax.set_yticks([])
    ax.set_xlabel("mean rank over the compared regimes (1 = best)")
    if not test:
        ax.set_title(f"ranks: {k} methods × {fr['N']} regimes · description only (no test over label regimes)",
                     fontsize=9)
    else:
        p = "< 0.001" if fr["p"] < 0.001 else f"= {fr['p']:.3f}"
        text = (f"Friedman χ² = {fr['statistic']:.2f}, p {p}" if math.isfinite(fr["p"])
                else "no Friedman test")
        ax.set_title(f"ranks: {k} methods × {fr['N']} regimes · {text}", fontsize=9)
    for side in ("left", "right", "top"):
        ax.spines[side].set_visible(False)
    return ax


def plot_gap(gap, lo=None, hi=None, ax=None):
    """Share of the AN → full-label gap closed (0 = AN, 1 = full labels); with ``lo``/``hi``
    (same shape) each cell shows its 95 % bootstrap interval; grey: no estimate (see the table)."""
    ax = ax or plt.subplots(figsize=(1.6 * gap.shape[1] + 3, 0.4 * gap.shape[0] + 1.5))[1]

    def cell(m, c):
        v = gap.loc[m, c]
        if not math.isfinite(v):
            return ""
        if lo is None or hi is None:
            return f"{v:.2f}"
        return f"{v:.2f}\n[{lo.loc[m, c]:.2f}, {hi.loc[m, c]:.2f}]"

    annot = gap.copy().astype(object)
    for m in gap.index:
        for c in gap.columns:
            annot.loc[m, c] = cell(m, c)
    sns.heatmap(gap.astype(float), annot=annot, fmt="", cmap="RdBu", center=0.0, vmin=-1, vmax=1,
                ax=ax, cbar_kws={"label": "mean gain / mean gap"}, linewidths=0.5,
                linecolor="white", annot_kws={"fontsize": 7})
    ax.set_facecolor("#dddddd")
    ax.set_xlabel("")
    ax.set_ylabel("")
    _column_labels(ax, gap.columns)
    ax.set_title("share of the AN → full-label gap closed [95 % bootstrap over seeds]")
    return ax


def plot_per_class(gain, regime: str, ax=None):
    """Per-class AP gain over AN, classes sorted from rare to frequent (training frequency).
    The class names run vertically under the bars (with the share of training images holding the
    class), so the labels of 20 neighbouring classes never overlap."""
    methods = [c for c in gain.columns if c != "train_frequency"]
    g = gain.sort_values("train_frequency") if "train_frequency" in gain else gain
    ax = ax or plt.subplots(figsize=(max(6, 0.45 * len(g) + 2), 4.4))[1]
    x = np.arange(len(g))
    w = 0.8 / max(1, len(methods))
    colours = colours_for([str(m) for m in methods])  # one colour per method (viz.palette)
    for i, m in enumerate(methods):
        ax.bar(x + (i - (len(methods) - 1) / 2) * w, g[m], w, label=m, color=colours[str(m)])
    labels = [f"{c} ({f:.0%})" for c, f in zip(g.index, g["train_frequency"])] if "train_frequency" in g \
        else [str(c) for c in g.index]
    ax.set_xticks(x, labels, fontsize=7, rotation=90)
    ax.axhline(0, c="k", lw=0.8)
    ax.set_ylabel("AP − AN's AP (points)")
    ax.set_title(f"{regime}: which classes gain (rare → frequent; % = share of train images)", fontsize=10)
    ax.legend(fontsize=8)
    spread_tick_labels(ax, "x", rotations=(90,))
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
    ax.set_xlabel("cost relative to AN (1 = AN's)")
    ax.legend(fontsize=8)
    ax.set_title("training cost")
    return ax


def plot_rank_cost(cost, ax=None):
    """What a place in the ranking costs: each ranked method's mean rank over the compared block
    (1 = best, at the top) against its seconds per run relative to AN's (log scale), in the
    method's colour. Methods outside the block (no mean rank) are not drawn."""
    cols = {"mean rank", "seconds_vs_AN"}
    ax = ax or plt.subplots(figsize=(7, 4.5))[1]
    if not cols <= set(cost.columns):
        ax.set_axis_off()
        ax.set_title("no mean ranks or no AN to compare costs with")
        return ax
    shown = cost[["mean rank", "seconds_vs_AN"]].astype(float).dropna()
    colours = colours_for(list(shown.index))
    for name, (rank, seconds) in shown.iterrows():
        ax.scatter(seconds, rank, s=40, color=colours[name], zorder=3)
        ax.annotate(name, (seconds, rank), xytext=(4, 3), textcoords="offset points", fontsize=8)
    ax.set_xscale("log")
    ax.xaxis.set_major_formatter(FormatStrFormatter("%g"))
    ax.xaxis.set_minor_formatter(FormatStrFormatter("%g"))
    ax.axvline(1.0, c="k", lw=0.8, ls="--")
    ax.invert_yaxis()
    ax.set_xlabel("seconds per run relative to AN's (log scale; 1 = AN's)")
    ax.set_ylabel("mean rank over the compared block (1 = best)")
    ax.set_title("what each place in the ranking costs")
    ax.grid(alpha=0.3)
    return ax


def plot_selection(frame, ax=None):
    """How much clean validation flatters each method: per cell of
    :func:`mlpl_lab.chapters.benchmark.selection_frame`, the difference in test mAP between the
    epoch the clean and the epoch the observed validation labels pick, with its paired 95 %
    t-interval as a bar (none below 2 seeds), in the method's colour, one band per regime. Right
    of 0: reading the clean validation split flatters the method by that much."""
    ax = ax or plt.subplots(figsize=(7.5, 0.26 * max(len(frame), 1) + 1.6))[1]
    if frame.empty:
        ax.set_axis_off()
        ax.set_title("no cell knows the test score at its observed-validation epoch yet")
        return ax
    colours = colours_for([str(m) for m in frame["method"]])
    labels, y = [], 0
    for i, (regime, cells) in enumerate(frame.groupby("regime", sort=False)):
        if i:
            ax.axhline(-(y - 0.5), c="#bbbbbb", lw=0.6)
        for _, row in cells.iterrows():
            half = float(row[HALF])
            ax.errorbar(float(row["difference"]), -y, xerr=half if math.isfinite(half) else None,
                        fmt="o", color=colours[str(row["method"])], ms=4, capsize=2, lw=1)
            labels.append(f"{row['method']} · {regime}")
            y += 1
    ax.axvline(0.0, c="k", lw=0.8, ls="--")
    ax.set_yticks(-np.arange(y), labels, fontsize=7)
    ax.set_ylim(-(y - 0.5), 0.5)
    ax.set_xlabel("test mAP at the clean-validation epoch − at the observed-validation epoch (points)")
    ax.set_title("what clean validation flatters (mean over seeds, paired 95 % t-interval)", fontsize=10)
    return ax


def plot_family_ranks(test, ax=None):
    """The critical-difference diagram over the data sets (``test``: the chapter's
    ``family_ranks``), drawn only where it can separate something
    (:func:`mlpl_lab.analysis.ranks.cd_separates`); else None."""
    import pandas as pd

    from ..analysis.ranks import cd_separates

    if test.get("p") is None or not cd_separates(test):
        return None
    table = pd.DataFrame({"mean_rank": pd.Series(test["mean_ranks"])}).sort_values("mean_rank")
    rank = {"table": table, "cd": test["cd"], "friedman": {"p": test["p"], "statistic": math.nan, "N": test["N"]}}
    ax = plot_ranks(rank, ax=ax)
    ax.set_xlabel("mean rank over the data sets (1 = best)")
    ax.set_title(f"ranks: {test['k']} methods × {test['N']} data sets · Iman–Davenport F = {test['F']:.2f}, "
                 f"p = {test['p']:.2g}", fontsize=9)
    return ax
