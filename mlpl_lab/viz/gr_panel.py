"""A live panel for GR Loss: sliders for q2, q3, the final β = (w, b), α = (μ, σ) and the epoch t.

The sliders set the *final* values of the schedules (w_T, b_T, μ_T, σ_T) and the epoch; the
panel computes the epoch's (w, b, μ, σ) with :func:`mlpl_lab.losses.gr.gr_schedule` and draws

* k̂(p) = σ(w·p + b)           the soft pseudo-label of an unknown label,
* v(p) = exp(-(p-μ)²/(2σ²))    its weight,
* the unknown-label loss v·[k̂ L2 + (1 - k̂) L3] and its gradient ∂L/∂z,

the last two by autograd on the registered ``gr`` loss. :meth:`GRPanel.compute` is pure
(values in, numpy curves out), so tests drive the panel headlessly: set ``slider.value`` and
read ``panel.state``.

The panel opens at the **last epoch** t = T − 1, where the schedule reaches the final values, so
every slider moves the plot. At an epoch where the schedule still uses a parameter's start value
(t = 0 under the paper's schedule) its final-value slider cannot move the plot, and the readout
says so. A value passed in code outside a slider's range is a ``ValueError``
(:mod:`.slider_range`), not a silent clamp.
"""
from __future__ import annotations

from typing import Dict

import matplotlib.pyplot as plt
import numpy as np
import torch

from ..losses.gr import GR_SCHEDULE_DEFAULTS, gr_schedule, k_hat, v_weight
from .gradients import loss_and_gradient
from .panel_display import show_in
from .slider_range import check_slider, check_value


class GRPanel:
    """``GRPanel(num_epochs=8)``; display it in a notebook with ``panel.widget`` (or just
    ``panel`` as the last expression). Initial values: the defaults of the ``gr`` method, at the
    last epoch (``epoch``, 0-based, default ``num_epochs - 1``)."""

    def __init__(self, num_epochs: int = 8, schedule: str = "paper", q2: float = 0.01,
                 q3: float = 1.0, n_points: int = 101, epoch: int | None = None, **schedule_values):
        import ipywidgets as W

        unknown = set(schedule_values) - set(GR_SCHEDULE_DEFAULTS)
        if unknown:
            raise ValueError(f"unknown schedule values {sorted(unknown)}; valid: {sorted(GR_SCHEDULE_DEFAULTS)}")
        if not isinstance(num_epochs, int) or num_epochs < 1:
            raise ValueError(f"num_epochs must be an integer >= 1, got {num_epochs!r}")
        self.num_epochs = num_epochs
        epoch = num_epochs - 1 if epoch is None else epoch
        if isinstance(epoch, bool) or not isinstance(epoch, int):
            raise ValueError(f"GRPanel: epoch must be a 0-based integer in [0, {num_epochs - 1}], got {epoch!r}")
        check_value("GRPanel", "epoch", epoch, 0, num_epochs - 1)
        self.schedule = schedule
        self.values0 = dict(GR_SCHEDULE_DEFAULTS) | schedule_values
        p = np.linspace(0.005, 0.995, n_points)
        self.logits = np.log(p / (1 - p))
        style = {"description_width": "90px"}
        layout = W.Layout(width="320px")
        v0 = self.values0
        self.sliders = {
            "q2": W.FloatLogSlider(value=q2, base=10, min=-3, max=0, step=0.1, description="q₂",
                                   style=style, layout=layout),
            "q3": W.FloatSlider(value=q3, min=0.01, max=2.0, step=0.01, description="q₃",
                                style=style, layout=layout),
            "w_T": W.FloatSlider(value=v0["w_T"], min=0.0, max=20.0, step=0.5, description="β: w (final)",
                                 style=style, layout=layout),
            "b_T": W.FloatSlider(value=v0["b_T"], min=-12.0, max=2.0, step=0.5, description="β: b (final)",
                                 style=style, layout=layout),
            "mu_T": W.FloatSlider(value=v0["mu_T"], min=0.0, max=1.0, step=0.05, description="α: μ (final)",
                                  style=style, layout=layout),
            "sigma_T": W.FloatSlider(value=v0["sigma_T"], min=0.05, max=3.0, step=0.05,
                                     description="α: σ (final)", style=style, layout=layout),
            "epoch": W.IntSlider(value=epoch, min=0, max=num_epochs - 1, step=1, description="epoch t",
                                 style=style, layout=layout),
        }
        given = {"q2": q2, "q3": q3, **{k: v for k, v in schedule_values.items() if k in self.sliders}}
        for name, value in given.items():  # ipywidgets would clamp silently
            check_slider("GRPanel", name, self.sliders[name], value)
        self.output = W.Output()
        self.readout = W.HTML()
        self.redraws = 0
        self.state: Dict[str, object] = self.compute(**self.values())
        for slider in self.sliders.values():
            slider.observe(self.update, names="value")
        # the control column must not shrink below its sliders (a flex item shrinks by default,
        # which squeezed 320 px sliders into 244 px and hid their value readouts under the plot)
        controls = W.VBox(list(self.sliders.values()),
                          layout=W.Layout(min_width="340px", flex="0 0 auto"))
        self.widget = W.VBox([W.HBox([controls, self.output], layout=W.Layout(flex_flow="row wrap")),
                              self.readout])
        self.widget.add_class("mlpl-panel")
        self.widget.add_class("mlpl-panel-gr")  # what the browser tests find
        self.readout.value = self.readout_text()

    def values(self) -> Dict[str, float]:
        """The current slider values by name."""
        return {name: s.value for name, s in self.sliders.items()}

    def compute(self, *, q2: float, q3: float, w_T: float, b_T: float, mu_T: float,
                sigma_T: float, epoch: int) -> Dict[str, object]:
        """Pure: the epoch's (w, b, μ, σ) and the curves over p, as numpy arrays."""
        sched = dict(self.values0) | dict(w_T=w_T, b_T=b_T, mu_T=mu_T, sigma_T=sigma_T)
        params = gr_schedule(int(epoch), self.num_epochs, schedule=self.schedule, **sched)
        p = torch.sigmoid(torch.as_tensor(self.logits))
        curves = loss_and_gradient("gr", "unknown", self.logits, q2=q2, q3=q3, **params)
        return {
            "p": p.numpy(),
            "k_hat": k_hat(p, params["w"], params["b"]).numpy(),
            "v": v_weight(p, params["mu"], params["sigma"]).numpy(),
            "loss": curves["loss"],
            "grad": curves["grad"],
            **params,
        }

    def update(self, change=None) -> None:
        """Recompute from the sliders and redraw (the ``observe`` callback)."""
        self.state = self.compute(**self.values())
        self.redraws += 1
        self.readout.value = self.readout_text()
        self._draw()

    def inert(self) -> list:
        """The final-value sliders that cannot move the plot at the current epoch: those whose
        parameter the schedule still holds at its start value there (e.g. all four at t = 0
        under the paper's schedule). Found by moving each final value and recomputing."""
        v = self.values()
        sched = dict(self.values0) | {k: v[k] for k in ("w_T", "b_T", "mu_T", "sigma_T")}
        base = gr_schedule(int(v["epoch"]), self.num_epochs, schedule=self.schedule, **sched)
        out = []
        for slider, param in (("w_T", "w"), ("b_T", "b"), ("mu_T", "mu"), ("sigma_T", "sigma")):
            moved = gr_schedule(int(v["epoch"]), self.num_epochs, schedule=self.schedule,
                                **(sched | {slider: sched[slider] + 1.0}))
            if moved[param] == base[param]:
                out.append(slider)
        return out

    def readout_text(self) -> str:
        """The values a student set and what they give at this epoch (shown under the plots)."""
        v, s = self.values(), self.state
        text = (f"<b>q₂ = {v['q2']:.3g}, q₃ = {v['q3']:.2f}, epoch t = {v['epoch']}</b> "
                f"(epochs 0–{self.num_epochs - 1}): β = (w, b) = ({s['w']:.2f}, {s['b']:.2f}), "
                f"α = (μ, σ) = ({s['mu']:.2f}, {s['sigma']:.2f}) "
                f"(final values w = {v['w_T']:.1f}, b = {v['b_T']:.1f}, μ = {v['mu_T']:.2f}, σ = {v['sigma_T']:.2f})")
        inert = self.inert()
        if inert:
            names = {"w_T": "w", "b_T": "b", "mu_T": "μ", "sigma_T": "σ"}
            text += (f"<br>At epoch t = {v['epoch']} the schedule still uses the start value of "
                     f"{', '.join(names[n] for n in inert)}, so {'that slider does' if len(inert) == 1 else 'those sliders do'} "
                     "not move the plot here: move t towards the last epoch to see the final values act.")
        return text

    def _draw(self) -> None:

        s = self.state
        fig, axes = plt.subplots(1, 3, figsize=(11, 3.0))
        axes[0].plot(s["p"], s["k_hat"], label=r"$\hat{k}(p;\beta)$")
        axes[0].plot(s["p"], s["v"], label=r"$v(p;\alpha)$")
        axes[0].set_ylim(-0.02, 1.02)
        axes[0].set_title(f"β = (w, b) = ({s['w']:.2f}, {s['b']:.2f}), α = (μ, σ) = ({s['mu']:.2f}, {s['sigma']:.2f})",
                          fontsize=9)
        axes[1].plot(s["p"], s["loss"])
        axes[1].set_title(f"unknown-label loss (q₂ = {self.sliders['q2'].value:.3g}, "
                          f"q₃ = {self.sliders['q3'].value:.2f})", fontsize=9)
        axes[2].plot(s["p"], s["grad"])
        axes[2].axhline(0, c="k", lw=0.6)
        axes[2].set_title(f"∂L/∂z (autograd), epoch t={self.sliders['epoch'].value}", fontsize=9)
        for ax in axes:
            ax.set_xlabel("p")
        axes[0].legend(fontsize=8)
        fig.tight_layout()
        show_in(self.output, fig)
        plt.close(fig)

    def _ipython_display_(self):
        from IPython.display import display

        self._draw()
        display(self.widget)
