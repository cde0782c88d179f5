"""A widget over OPML's a, b (α = e^a, β = e^b) and the high-rank weight λ.

:class:`OPMLPanel` has a pure :meth:`~OPMLPanel.compute` (curves as numpy arrays, from
autograd on the registered losses and on the training objective
:func:`mlpl_lab.methods.opml.opml_objective`) and :meth:`~OPMLPanel.update`, which redraws
from it; the sliders call ``update`` through ``.observe``, so setting ``slider.value`` in
code (tests, papermill) recomputes without a front end.

Panels: (1) ∂L/∂s_p of the single positive, BCE vs OPML; (2) ∂L/∂s_n of one unknown;
(3) the gradient on a *hidden positive* (an unknown entry) of a toy batch of 8 samples,
under OPML alone and under OPML + λ·R (Eq. 10): with λ > 0 the high-rank term changes how
hard that hidden positive is pushed towards "absent".
"""
from __future__ import annotations

from typing import Dict

import numpy as np
import torch

from ..methods.opml import opml_objective
from .gradients import loss_and_gradient
from .panel_display import show_in
from .slider_range import check_slider
from ..catalogue import LABEL

__all__ = ["OPMLPanel", "toy_batch"]


def toy_batch(n_rows: int = 8, n_classes: int = 12, seed: int = 0):
    """Fixed context for panel 3: (logits (n_rows-1, C), labels) with one positive per row,
    the rest unknown; the first row (added by the caller) holds the hidden positive."""
    g = torch.Generator().manual_seed(seed)
    logits = torch.randn(n_rows - 1, n_classes, generator=g, dtype=torch.float64) - 1.0
    labels = torch.full((n_rows - 1, n_classes), -1, dtype=torch.long)
    pos = torch.randint(0, n_classes, (n_rows - 1,), generator=g)
    labels[torch.arange(n_rows - 1), pos] = 1
    logits[torch.arange(n_rows - 1), pos] += 3.0
    return logits, labels


class OPMLPanel:
    """Sliders a, b ∈ [-3, 3], log10 λ ∈ [-5, -1] (and "λ = 0" at the far left), unknowns per
    sample; three gradient panels (see the module docstring)."""

    def __init__(self, a: float = 0.0, b: float = 0.0, log10_lambda: float = -3.0,
                 n_unknown: int = 11, grid=None, show: bool = True):
        import ipywidgets as w
        import matplotlib.pyplot as plt

        # 49 points: each curve is autograd on the training objective point by point, and the
        # panel must follow a slider (update latency measured by the browser tests)
        self.grid = np.linspace(-6, 6, 49) if grid is None else np.asarray(grid, dtype=float)
        style = {"description_width": "initial"}
        self.a = w.FloatSlider(value=a, min=-3, max=3, step=0.25, description="a (α = e^a)", style=style)
        self.b = w.FloatSlider(value=b, min=-3, max=3, step=0.25, description="b (β = e^b)", style=style)
        self.log10_lambda = w.FloatSlider(value=log10_lambda, min=-5.5, max=-1, step=0.25,
                                          description="log10 λ (≤ -5.5: λ = 0)", style=style)
        self.n_unknown = w.IntSlider(value=n_unknown, min=1, max=40, description="unknowns", style=style)
        for name, slider, value in (("a", self.a, a), ("b", self.b, b), ("log10_lambda", self.log10_lambda, log10_lambda),
                                    ("n_unknown", self.n_unknown, n_unknown)):
            check_slider("OPMLPanel", name, slider, value)  # ipywidgets would clamp silently
        self.out = w.Output()
        self.fig, self.axes = plt.subplots(1, 3, figsize=(13, 3.4))
        plt.close(self.fig)  # drawn into the Output widget, not as a stray inline figure
        self.state: Dict[str, np.ndarray] = {}
        self._twin = None
        for s in (self.a, self.b, self.log10_lambda, self.n_unknown):
            s.observe(self.update, names="value")
        self.readout = w.HTML()
        wrap = w.Layout(flex_flow="row wrap")  # wrap rather than squeeze the sliders' readouts
        self.widget = w.VBox([w.HBox([self.a, self.b], layout=wrap),
                              w.HBox([self.log10_lambda, self.n_unknown], layout=wrap), self.readout, self.out])
        self.widget.add_class("mlpl-panel")
        self.widget.add_class("mlpl-panel-opml")  # what the browser tests find
        self.update()
        if show:
            from IPython.display import display

            display(self.widget)

    @staticmethod
    def lam(log10_lambda: float) -> float:
        return 0.0 if log10_lambda <= -5.5 else float(10.0 ** log10_lambda)

    def compute(self, a: float, b: float, log10_lambda: float, n_unknown: int) -> Dict[str, np.ndarray]:
        """Pure: the curves for these values (numpy arrays over ``self.grid``)."""
        grid = self.grid
        ctx_unk = [0.0] * n_unknown
        # panel 3 (a batch objective with a log-det, autograd point by point) on every other
        # grid point: the curve is smooth and the panel must follow a slider
        hidden_grid = grid[::2] if len(grid) > 25 else grid
        res = {"grid": grid, "hidden_grid": hidden_grid}
        cache = self.__dict__.setdefault("_bce_cache", {})
        for key, loss, hp in (("bce", "an", {}), ("opml", "opml", {"a": a, "b": b})):
            if key == "bce" and n_unknown in cache:  # BCE does not depend on a, b or λ
                res.update(cache[n_unknown])
                continue
            res[f"pos_{key}"] = loss_and_gradient(loss, 1, grid, context_logits=ctx_unk,
                                                  context_labels=[-1] * n_unknown, **hp)["grad"]
            res[f"unk_{key}"] = loss_and_gradient(loss, -1, grid, context_logits=[0.0] + ctx_unk[1:],
                                                  context_labels=[1] + [-1] * (n_unknown - 1), **hp)["grad"]
            if key == "bce":
                cache[n_unknown] = {"pos_bce": res["pos_bce"], "unk_bce": res["unk_bce"]}
        lam = self.lam(log10_lambda)
        ctx_logits, ctx_labels = toy_batch(n_classes=n_unknown + 1)

        def objective(row, labels, reduction="sum", hr_lambda=0.0):
            # the first row (hidden positive at column 0, positive at column 1) + fixed context rows
            logits = torch.cat([row, ctx_logits.to(row.dtype)])
            labs = torch.cat([labels, ctx_labels])
            return opml_objective(logits, labs, a=a, b=b, hr_lambda=hr_lambda)[0]

        row_ctx = [3.0] + [-1.0] * (n_unknown - 1)
        row_lab = [1] + [-1] * (n_unknown - 1)
        res["hidden_opml"] = loss_and_gradient(objective, -1, hidden_grid, row_ctx, row_lab, hr_lambda=0.0)["grad"]
        res["hidden_opml_hr"] = loss_and_gradient(objective, -1, hidden_grid, row_ctx, row_lab,
                                                  hr_lambda=lam)["grad"]
        res["lambda"] = np.array(lam)
        return res

    def values(self) -> Dict[str, float]:
        return {"a": self.a.value, "b": self.b.value, "log10_lambda": self.log10_lambda.value,
                "n_unknown": self.n_unknown.value}

    def readout_text(self) -> str:
        v = self.values()
        return (f"<b>a = {v['a']:.2f} (α = e^a = {np.exp(v['a']):.2f}), b = {v['b']:.2f} "
                f"(β = e^b = {np.exp(v['b']):.2f}), λ = {self.lam(v['log10_lambda']):.1e}</b>, "
                f"{v['n_unknown']} unknown labels per sample")

    def update(self, change=None) -> None:
        self.state = self.compute(**self.values())
        self.readout.value = self.readout_text()
        st, g = self.state, self.state["grid"]
        v = self.values()
        ab = f"a={v['a']:.2f}, b={v['b']:.2f}"
        titles = (f"∂L/∂s_p, single positive ({ab})", f"∂L/∂s_n, one of {v['n_unknown']} unknowns ({ab})",
                  f"hidden positive in a batch, λ = {float(st['lambda']):.1e}")
        series = (((LABEL.bce_an, st["pos_bce"]), (LABEL.opml, st["pos_opml"])),
                  ((LABEL.bce_an, st["unk_bce"]), (LABEL.opml, st["unk_opml"])),
                  ((LABEL.opml, st["hidden_opml"]), ("OPML + λR", st["hidden_opml_hr"])))
        for ax, title, lines, x in zip(self.axes, titles, series, (g, g, st["hidden_grid"])):
            ax.clear()
            for label, y in lines:
                ax.plot(x, y, label=label)
            ax.axhline(0, c="k", lw=0.6)
            ax.set_title(title, fontsize=10)
            ax.set_xlabel("logit z")
            ax.legend(fontsize=8, loc="upper left")
        # the high-rank part alone, on its own scale (at small λ it is invisible next to OPML's)
        if getattr(self, "_twin", None) is None:
            self._twin = self.axes[2].twinx()
        self._twin.clear()
        self._twin.plot(st["hidden_grid"], st["hidden_opml_hr"] - st["hidden_opml"], c="tab:red", ls="--", lw=1)
        self._twin.grid(False)
        self._twin.set_ylabel("λR part (dashed)", color="tab:red", fontsize=7)
        self._twin.tick_params(axis="y", colors="tab:red", labelsize=7)
        if not getattr(self, "_laid_out", False):  # the layout is measured once, not per step
            self.fig.tight_layout()
            self._laid_out = True
        show_in(self.out, self.fig)
