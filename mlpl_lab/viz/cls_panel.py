"""A widget for CLS: tau_h, tau_l and E_k draw the R(e) schedules and, for a trained pair, which
entries of a fixed batch would be removed at a chosen epoch.

``CLSPanel.compute(**values)`` is pure (numpy arrays and masks from precomputed logits, no
network call), ``update()`` redraws from it; sliders are wired with ``.observe``, so the
panel can be driven headlessly: ``panel.sliders["tau_h"].value = 0.05`` recomputes
``panel.state``.
"""
from __future__ import annotations

from typing import Dict

import matplotlib.pyplot as plt
import numpy as np

from ..methods.selection import (LabelSelection, co_label_selection, label_selection_counts,
                                 negative_entry_loss, reserve_rate, reserve_schedule)
from .cls_plots import plot_schedules, plot_selection_batch
from ..methods.cls import explain_batch

from .panel_display import show_in
from .slider_range import check_slider


class CLSPanel:
    """Sliders ``tau_h``, ``tau_l``, ``E_k`` and ``epoch`` (the training epoch, 1 to ``epochs``, as
    the schedule plot's axis counts it, whose rates are applied to the batch: R(e) with e = epoch - 1
    completed epochs; the slider, the plot's marker, the title and the readout all say that number). ``method`` (a trained ``cls``-family method), ``dataset`` and ``indices``
    (the fixed batch) are optional: without them only the schedules are drawn.

    Defaults: the paper's MS-COCO single-label values (tau_h = 0.012, tau_l = 0.06, E_k = 10)
    over ``epochs`` = 20 epochs.
    """

    def __init__(self, method=None, dataset=None, indices=None, tau_h: float = 0.012,
                 tau_l: float = 0.06, E_k: int = 10, epochs: int = 20, network: str = "f",
                 class_names=None, max_rows: int = 24):
        import ipywidgets as W

        if network not in ("f", "g"):
            raise ValueError(f"network must be 'f' or 'g', got {network!r}")
        if (method is None) != (dataset is None):
            raise ValueError("pass both method and dataset (with indices) to show a batch, or neither")
        reserve_rate(0, tau_h, E_k)
        reserve_rate(0, tau_l, E_k)
        self.epochs, self.network, self.max_rows = int(epochs), network, max_rows
        self.class_names = class_names
        self.batch = None
        if method is not None:
            if indices is None:
                indices = list(range(min(len(dataset), 32)))
            info = explain_batch(method, dataset, indices)
            # precomputed once: compute() never calls a network
            self.batch = {k: info[k] for k in ("observed", "labels", "logits_f", "logits_g")}
            self.batch["loss_f"] = negative_entry_loss(info["logits_f"])
            self.batch["loss_g"] = negative_entry_loss(info["logits_g"])
            if class_names is None:
                self.class_names = getattr(dataset, "class_names", None)
        style = {"description_width": "initial"}
        self.sliders = {
            "tau_h": W.FloatSlider(value=tau_h, min=0.0, max=0.15, step=0.001, readout_format=".3f",
                                   description="τ_h (high-loss)", style=style),
            "tau_l": W.FloatSlider(value=tau_l, min=0.0, max=0.3, step=0.01, readout_format=".2f",
                                   description="τ_l (low-loss)", style=style),
            "E_k": W.IntSlider(value=int(E_k), min=1, max=max(20, int(E_k)), description="E_k", style=style),
            "epoch": W.IntSlider(value=self.epochs, min=1, max=self.epochs,
                                 description="training epoch", style=style),
        }
        for name, value in (("tau_h", tau_h), ("tau_l", tau_l), ("E_k", E_k)):
            check_slider("CLSPanel", name, self.sliders[name], value)  # ipywidgets would clamp silently
        self.output = W.Output()
        self.state: Dict[str, object] = {}
        self.figure = None
        for s in self.sliders.values():
            s.observe(self.update, names="value")
        self.readout = W.HTML()
        wrap = W.Layout(flex_flow="row wrap")  # wrap rather than squeeze the sliders' readouts
        self.widget = W.VBox([W.HBox([self.sliders["tau_h"], self.sliders["tau_l"]], layout=wrap),
                              W.HBox([self.sliders["E_k"], self.sliders["epoch"]], layout=wrap),
                              self.readout, self.output])
        self.widget.add_class("mlpl-panel")
        self.widget.add_class("mlpl-panel-cls")  # what the browser tests find
        self.update()

    def values(self) -> Dict[str, float]:
        return {k: s.value for k, s in self.sliders.items()}

    def compute(self, tau_h: float, tau_l: float, E_k: int, epoch: int) -> Dict[str, object]:
        """Schedules over ``self.epochs`` and, with a batch, both networks' selections in training
        epoch ``epoch`` (1-based: its rates are R(epoch - 1))."""
        completed = int(epoch) - 1
        out: Dict[str, object] = {
            "epochs": np.arange(1, self.epochs + 1),
            "R_h": reserve_schedule(tau_h, E_k, self.epochs),
            "R_l": reserve_schedule(tau_l, E_k, self.epochs),
            "R_h_now": reserve_rate(completed, tau_h, E_k),
            "R_l_now": reserve_rate(completed, tau_l, E_k),
        }
        if self.batch is not None:
            b = self.batch
            for me, peer in (("f", "g"), ("g", "f")):
                sel = co_label_selection(b[f"loss_{me}"], b[f"loss_{peer}"], b["observed"],
                                         out["R_h_now"], out["R_l_now"])
                out[f"selection_{me}"] = sel
                out[f"counts_{me}"] = label_selection_counts(sel, b["observed"], b["labels"])
        return out

    def update(self, change=None) -> None:

        self.state = self.compute(**self.values())
        self.readout.value = self.readout_text()
        ncols = 2 if self.batch is not None else 1
        fig, axes = plt.subplots(1, ncols, figsize=(6 * ncols + 2, 4.2), squeeze=False)
        v = self.values()
        plot_schedules({fr"$R_h$ ($\tau_h$ = {v['tau_h']:.3f})": self.state["R_h"],
                        fr"$R_l$ ($\tau_l$ = {v['tau_l']:.2f})": self.state["R_l"]}, ax=axes[0, 0],
                       E_k=v["E_k"], title="reserving rates R(e)")
        axes[0, 0].axvline(v["epoch"], c="r", lw=1, alpha=0.5)
        if self.batch is not None:
            sel = self.state[f"selection_{self.network}"]
            # the title counts the rows the panel draws (its legend does too), not the whole batch
            n_rows = int(sel.kept.shape[0])
            shown = slice(0, n_rows if self.max_rows is None else min(n_rows, self.max_rows))
            c = label_selection_counts(LabelSelection(sel.candidates[shown], sel.kept[shown],
                                                      sel.removed_high[shown], sel.removed_low[shown]),
                                       self.batch["observed"][shown], self.batch["labels"][shown])
            drawn = shown.stop
            plot_selection_batch(sel, self.batch["observed"], self.batch["labels"], ax=axes[0, 1],
                                 class_names=self.class_names, max_rows=self.max_rows,
                                 title=(f"network {self.network}, training epoch {v['epoch']}"
                                        + (f", the first {drawn} of {n_rows} images" if drawn < n_rows else "")
                                        + f": removed {c['removed']} high-loss ({c['removed_hidden']} "
                                        f"hidden pos.), {c['removed_low']} low-loss"))
        fig.tight_layout()
        self.figure = fig
        show_in(self.output, fig)
        plt.close(fig)  # drawn into the Output widget, not as a stray inline figure

    def readout_text(self) -> str:
        v, st = self.values(), self.state
        text = (f"<b>τ_h = {v['tau_h']:.3f}, τ_l = {v['tau_l']:.2f}, E_k = {v['E_k']}, training epoch {v['epoch']}</b> "
                f"(e = {v['epoch'] - 1} completed): R_h(e) = {st['R_h_now']:.3f}, R_l(e) = {st['R_l_now']:.3f}")
        if self.batch is not None:
            c = st[f"counts_{self.network}"]
            text += (f"; in its batch of {int(self.batch['observed'].shape[0])} images network {self.network} "
                     f"removes {c['removed']} high-loss entries ({c['removed_hidden']} hidden positives) "
                     f"and {c['removed_low']} low-loss ones")
        return text

    def _ipython_display_(self):
        from IPython.display import display

        display(self.widget)
