"""A widget for chapter 08: how wrong may the class priors be, and what does a coverage level cost?

Two sliders: the **prior factor** (the true priors times it, on a log scale over the sweep's range)
and the miscoverage level **α**. ``SideInfoPanel.compute(factor, alpha)`` is pure: from the prior
sweep's curve (:func:`mlpl_lab.analysis.side_information.gain_curve`) it reads the mean gain over
AN at the factor (linear between the sweep's points, in log factor), and from each method's stored
probabilities it computes class-wise conformal thresholds at α on a fixed clean calibration draw and
the observed-label thresholds, scored on the test scenes (coverage and mean set size). The sliders
call ``update`` through ``.observe``; setting ``panel.alpha.value`` in code recomputes
``panel.state``. Nothing trains."""
from __future__ import annotations

from typing import Any, Dict, Mapping

import matplotlib.pyplot as plt
import numpy as np

from ..analysis import conformal as cf
from ..catalogue import LABEL
from .palette import colours_for
from .panel_display import show_in
from .slider_range import check_value

#: the α grid the coverage curves are drawn over (the slider moves a marker along them)
ALPHA_GRID = tuple(round(a, 2) for a in np.arange(0.05, 0.31, 0.01))


class SideInfoPanel:
    """``prior_curve``: the prior sweep's gain curve (index: factors, columns ``gain``, ``low``,
    ``high``); ``scores``: ``{method: {"p_val", "y_val", "obs_val", "p_test", "y_test"}}`` (one run
    each); ``calibration``: clean validation images per calibration draw; ``factor``, ``alpha``:
    where the sliders start."""

    def __init__(self, prior_curve, scores: Mapping[str, Mapping[str, Any]], calibration: int = 200,
                 factor: float = 1.0, alpha: float = 0.1, seed: int = 0):
        import ipywidgets as W

        if not scores:
            raise ValueError("SideInfoPanel needs the probabilities of at least one method (scores)")
        xs = np.asarray(prior_curve.index, dtype=float)
        if len(xs) < 2 or (xs <= 0).any():
            raise ValueError(f"the prior curve needs two or more positive factors, got {list(xs)}")
        self.curve = prior_curve.sort_index()
        self.xs = np.asarray(self.curve.index, dtype=float)
        check_value("SideInfoPanel", "factor", factor, float(self.xs.min()), float(self.xs.max()),
                    f" (the sweep's factors span {self.xs.min():g} to {self.xs.max():g})")
        check_value("SideInfoPanel", "alpha", alpha, ALPHA_GRID[0], ALPHA_GRID[-1])
        self.scores = {m: {k: np.asarray(v) for k, v in s.items() if k != "class_names"} for m, s in scores.items()}
        rng = np.random.default_rng(seed)
        self.cal_rows = {m: rng.choice(len(s["p_val"]), size=min(int(calibration), len(s["p_val"])), replace=False)
                         for m, s in self.scores.items()}
        self.grid = {m: [self._sets(m, a) for a in ALPHA_GRID] for m in self.scores}
        style = {"description_width": "initial"}
        lo, hi = float(np.log2(self.xs.min())), float(np.log2(self.xs.max()))
        self.factor = W.FloatSlider(value=float(np.log2(factor)), min=lo, max=hi, step=0.05,
                                    description="log2 of the prior factor", style=style)
        self.alpha = W.FloatSlider(value=float(alpha), min=ALPHA_GRID[0], max=ALPHA_GRID[-1], step=0.01,
                                   description="α (miscoverage)", style=style)
        self.readout = W.HTML()
        self.output = W.Output()
        self.state: Dict[str, Any] = {}
        self.figure = None
        for s in (self.factor, self.alpha):
            s.observe(self.update, names="value")
        self.widget = W.VBox([W.HBox([self.factor, self.alpha], layout=W.Layout(flex_flow="row wrap")),
                              self.readout, self.output])
        self.widget.add_class("mlpl-panel")
        self.widget.add_class("mlpl-panel-side-info")  # what the browser tests find
        self.update()

    def _sets(self, method: str, alpha: float) -> Dict[str, float]:
        s, idx = self.scores[method], self.cal_rows[method]
        cal = cf.evaluate(s["p_test"], s["y_test"], cf.classwise_thresholds(s["p_val"][idx], s["y_val"][idx], alpha))
        obs = cf.evaluate(s["p_test"], s["y_test"], cf.observed_thresholds(s["p_val"], s["obs_val"], alpha))
        return {"calibrated": float(cal["overall"]), "calibrated_size": float(cal["mean_set_size"]),
                "observed": float(obs["overall"]), "observed_size": float(obs["mean_set_size"])}

    def gain_at(self, factor: float) -> float:
        """The prior sweep's mean gain over AN at ``factor`` (linear in log factor between points)."""
        return float(np.interp(np.log2(factor), np.log2(self.xs), self.curve["gain"].to_numpy(float)))

    def compute(self, factor: float, alpha: float) -> Dict[str, Any]:
        """Pure: the gain at ``factor`` and, per method, the label sets at ``alpha``."""
        return {"factor": float(factor), "alpha": float(alpha), "gain": self.gain_at(factor),
                "sets": {m: self._sets(m, alpha) for m in self.scores}}

    def values(self) -> Dict[str, float]:
        return {"factor": float(2 ** self.factor.value), "alpha": float(self.alpha.value)}

    def update(self, change=None) -> None:
        v = self.values()
        self.state = st = self.compute(**v)
        sets = "; ".join(f"{m}: calibrated {r['calibrated']:.3f} ({r['calibrated_size']:.2f} labels), observed "
                         f"{r['observed']:.3f}" for m, r in st["sets"].items())
        self.readout.value = (f"<b>priors × {st['factor']:.2f}</b>: mean gain over AN "
                              f"{st['gain']:+.2f} points ({'kept' if st['gain'] > 0 else 'gone'}). "
                              f"<b>α = {st['alpha']:.2f}</b> (target coverage {1 - st['alpha']:.2f}): {sets}")
        if self.figure is None:
            self._build_figure()
        self.factor_line.set_xdata([st["factor"], st["factor"]])
        self.gain_dot.set_data([st["factor"]], [st["gain"]])
        self.alpha_line.set_xdata([st["alpha"], st["alpha"]])
        self.target_line.set_ydata([1 - st["alpha"], 1 - st["alpha"]])
        show_in(self.output, self.figure)

    def _build_figure(self) -> None:
        """The figure and its artists, once; updates move the markers only (fast redraws)."""
        fig, (ax_g, ax_c) = plt.subplots(1, 2, figsize=(11, 3.6))
        colours = colours_for([LABEL.crisp_true, *self.scores])
        c = colours[LABEL.crisp_true]
        ax_g.fill_between(self.xs, self.curve["low"].to_numpy(float), self.curve["high"].to_numpy(float),
                          color=c, alpha=0.2)
        ax_g.plot(self.xs, self.curve["gain"], "o-", color=c, label="mean gain over AN")
        ax_g.axhline(0, color="#666666", ls="--", lw=1)
        ax_g.set_xscale("log", base=2)
        ax_g.set_xticks(self.xs, [f"{x:g}" for x in self.xs])
        ax_g.set_xlabel("the true priors times")
        ax_g.set_ylabel("test mAP gain over AN (points)")
        ax_g.set_title(f"{LABEL.crisp} given wrong priors", fontsize=9)
        (self.factor_line,) = ax_g.plot([1, 1], list(ax_g.get_ylim()), color="black", lw=1.5, alpha=0.6)
        (self.gain_dot,) = ax_g.plot([1], [0], "o", color="black", ms=8)
        for m, rows in self.grid.items():
            ax_c.plot(ALPHA_GRID, [r["calibrated"] for r in rows], "-", color=colours[m], label=f"{m}: calibrated")
            ax_c.plot(ALPHA_GRID, [r["observed"] for r in rows], ":", color=colours[m], label=f"{m}: observed labels")
        (self.target_line,) = ax_c.plot([ALPHA_GRID[0], ALPHA_GRID[-1]], [0.9, 0.9], color="#666666", ls="--", lw=1)
        (self.alpha_line,) = ax_c.plot([0.1, 0.1], [0.5, 1.0], color="black", lw=1.5, alpha=0.6)
        ax_c.set_xlabel("α")
        ax_c.set_ylabel("coverage of the test positives")
        ax_c.set_title("label sets: calibrated (solid) and observed-label (dotted) thresholds", fontsize=9)
        ax_c.legend(fontsize=6, loc="lower left")
        fig.tight_layout()
        plt.close(fig)  # drawn into the Output widget, not as a stray inline figure
        self.figure = fig

    def _ipython_display_(self):
        from IPython.display import display

        display(self.widget)
